#ifndef COPS_CLIENT_BATCH_CHECK_H_
#define COPS_CLIENT_BATCH_CHECK_H_

// Checking many documents at once (`cops check PATH...`, `cops compare`): documents go to
// the server over CheckStream calls (client/check_stream.h, the call cops-milter keeps per
// SMTP connection), several calls in flight, and come back one result per document, in
// input order. Each document has the client's timeout (ClientOptions::timeout).
//
// Memory: at most BatchCheckOptions::window documents (their bytes and replies) are held at
// any time, whatever the batch's length; a list of file names is all a batch keeps.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/client.h"

namespace cops {

// The files named by `args`, in order: a file as is, a directory as the regular files below
// it (recursive, sorted by path). A name that does not exist stays in the list (reading it
// reports the error), so a typo is a failed document, not a silently shorter batch.
std::vector<std::string> ExpandPaths(const std::vector<std::string>& args);

// The most of a file ReadDocument reads: no request carries more (ClientOptions's
// max_message_bytes), and a device or pipe without end (/dev/zero) must not be read forever.
inline constexpr size_t kMaxReadDocumentBytes = size_t{64} << 20;

// The bytes of a file ("-" = standard input; a pipe or device is read as it comes).
// NOT_FOUND when it cannot be opened, INVALID_ARGUMENT for a directory, RESOURCE_EXHAUSTED
// past `max_bytes`, DATA_LOSS on a read error. (An empty file is read: the server refuses it.)
absl::StatusOr<std::string> ReadDocument(const std::string& path,
                                         size_t max_bytes = kMaxReadDocumentBytes);

struct BatchCheckOptions {
  // Everything but content and request_id is sent as is with every document (options,
  // format, collections).
  v1::CheckDocumentRequest request;
  // CheckStream calls in flight. The server checks one document per call at a time, so
  // this is the batch's parallelism on the server.
  int streams = 4;
  // Documents read but not yet handed to the result callback, at most (>= streams).
  size_t window = 64;
};

// One document's outcome. `content` holds the document as read (for excerpts and reports);
// empty when it could not be read.
struct BatchCheckResult {
  size_t index = 0;  // position in the batch
  std::string path;
  std::string content;
  absl::StatusOr<v1::CheckDocumentReply> reply = absl::UnknownError("not checked");
};

struct BatchCheckSummary {
  size_t documents = 0;
  size_t violations = 0;
  size_t failed = 0;  // could not be read or checked

  // The exit code of `cops check`: 2 if a document failed, else 1 on a violation, else 0.
  int ExitCode() const { return failed > 0 ? 2 : violations > 0 ? 1 : 0; }
};

// Checks `paths` (read with ReadDocument) and calls `on_result` once per document, in
// order of `paths`, from the calling thread. A document that cannot be read or checked is a
// result with its error; the batch goes on.
BatchCheckSummary CheckBatch(Client* client, const std::vector<std::string>& paths,
                             const BatchCheckOptions& options,
                             const std::function<void(BatchCheckResult&)>& on_result);

// Progress on a terminal: "\r[12/300] 1 violation, 0 failed  PATH" on stderr, erased by
// Clear() (call it before writing to a terminal's stdout, so the two do not mix). Redraws at
// most every 100 ms. Does nothing unless `enabled` (the caller passes isatty(stderr)).
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled) {}
  void Update(size_t done, size_t total, const BatchCheckSummary& so_far,
              const std::string& path);
  void Clear();

 private:
  const bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace cops

#endif  // COPS_CLIENT_BATCH_CHECK_H_
