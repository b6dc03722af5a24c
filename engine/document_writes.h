#ifndef COPS_ENGINE_DOCUMENT_WRITES_H_
#define COPS_ENGINE_DOCUMENT_WRITES_H_

// How documents are written: to the local index, or through the registration log
// (LoggedWrites, server/log_replica.h) or nowhere (ReadOnlyWrites, a follower). The service
// and the retention sweeper write through this interface and never ask which it is.
//
// Thread-safety: implementations are safe for concurrent use.

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/copy_detector.h"

namespace cops {

class DocumentWrites {
 public:
  virtual ~DocumentWrites() = default;
  // As CopyDetector::Register.
  virtual absl::StatusOr<RegisterResultInfo> Register(std::string_view content,
                                                      DocumentFormat format,
                                                      const DocumentRecord& metadata) = 0;
  // As CopyDetector::Unregister.
  virtual absl::Status Unregister(DocId id) = 0;
};

}  // namespace cops

#endif  // COPS_ENGINE_DOCUMENT_WRITES_H_
