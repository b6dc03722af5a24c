#ifndef COPS_ENGINE_DOCUMENT_WRITES_H_
#define COPS_ENGINE_DOCUMENT_WRITES_H_

// How documents are written. The service and the retention sweeper write through this
// interface and never ask which implementation they hold:
//
//   LocalWrites     (here) the live index generation, under its registration lock: a copsd
//                   on its own.
//   LoggedWrites    (replication/log_replica.h) through the registration log, answered once this
//                   node applied the event: copsd --log.
//   ReadOnlyWrites  (replication/log_replica.h) refused: copsd --follow.
//
// Thread-safety: implementations are safe for concurrent use.

#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/copy_detector.h"
#include "engine/index_generations.h"

namespace cops {

class DocumentWrites {
 public:
  virtual ~DocumentWrites() = default;
  // As CopyDetector::Register. RegisterResultInfo::params are those of the generation that
  // registered the document.
  virtual absl::StatusOr<RegisterResultInfo> Register(std::string_view content,
                                                      DocumentFormat format,
                                                      const DocumentRecord& metadata) = 0;
  // As CopyDetector::RegisterBatch: out->at(i) is the outcome of inputs[i]. The default
  // registers one document after the other (through the log, one event each); LocalWrites
  // writes the batch in one atomic index write.
  virtual absl::Status RegisterBatch(std::span<const RegisterInput> inputs,
                                     std::vector<absl::StatusOr<RegisterResultInfo>>* out);
  // As CopyDetector::Unregister. The value is the registration-log event that unregistered
  // the document (for a check's min_log_sequence), 0 when the write does not go through a log.
  virtual absl::StatusOr<uint64_t> Unregister(DocId id) = 0;
};

// Writes to the live generation of `generations` (not owned; must outlive this), under its
// registration lock (IndexGenerations::WithWriter), so a key rotation's catch-up sees every
// write.
class LocalWrites : public DocumentWrites {
 public:
  explicit LocalWrites(IndexGenerations* generations) : generations_(generations) {}

  absl::StatusOr<RegisterResultInfo> Register(std::string_view content, DocumentFormat format,
                                              const DocumentRecord& metadata) override;
  absl::Status RegisterBatch(std::span<const RegisterInput> inputs,
                             std::vector<absl::StatusOr<RegisterResultInfo>>* out) override;
  absl::StatusOr<uint64_t> Unregister(DocId id) override;  // 0: no log

 private:
  IndexGenerations* const generations_;
};

}  // namespace cops

#endif  // COPS_ENGINE_DOCUMENT_WRITES_H_
