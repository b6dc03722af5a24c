#include "engine/document_writes.h"

#include <utility>

#include "core/status_macros.h"

namespace cops {

absl::Status DocumentWrites::RegisterBatch(std::span<const RegisterInput> inputs,
                                           std::vector<absl::StatusOr<RegisterResultInfo>>* out) {
  out->clear();
  out->reserve(inputs.size());
  for (const RegisterInput& in : inputs) {
    if (in.metadata == nullptr) {
      out->push_back(absl::InvalidArgumentError("no metadata"));
    } else {
      out->push_back(Register(in.content, in.format, *in.metadata));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<RegisterResultInfo> LocalWrites::Register(std::string_view content,
                                                         DocumentFormat format,
                                                         const DocumentRecord& metadata) {
  RegisterResultInfo result;
  COPS_RETURN_IF_ERROR(generations_->WithWriter([&](CopyDetector& detector) -> absl::Status {
    COPS_ASSIGN_OR_RETURN(result, detector.Register(content, format, metadata));
    return absl::OkStatus();
  }));
  return result;
}

absl::Status LocalWrites::RegisterBatch(std::span<const RegisterInput> inputs,
                                        std::vector<absl::StatusOr<RegisterResultInfo>>* out) {
  return generations_->WithWriter(
      [&](CopyDetector& detector) { return detector.RegisterBatch(inputs, out); });
}

absl::StatusOr<uint64_t> LocalWrites::Unregister(DocId id) {
  COPS_RETURN_IF_ERROR(
      generations_->WithWriter([&](CopyDetector& detector) { return detector.Unregister(id); }));
  return 0;
}

}  // namespace cops
