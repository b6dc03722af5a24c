#ifndef COPS_CLIENT_BATCH_REGISTER_H_
#define COPS_CLIENT_BATCH_REGISTER_H_

// Registering many files (`cops register PATH...`, `cops compare --register-into`): one
// RegisterDocuments stream per window of files, which the server writes to its index
// together (much faster than a call per file).
//
// Memory: one window of documents (at most kRegisterWindowFiles files or about
// kRegisterWindowBytes bytes) at a time.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/client.h"

namespace cops {

inline constexpr size_t kRegisterWindowFiles = 4096;
inline constexpr size_t kRegisterWindowBytes = 64u << 20;

// Reads each file (client/batch_check.h ReadDocument), turns it into a Document with
// `make_document(path, content)` and registers it; calls `on_result(path, reply or error)`
// once per file in order. `on_window(files_sent_so_far, last_path)` is called before each
// window is sent (progress). A file that cannot be read or is refused does not stop the
// others. Without `receipts` the server signs none (RegisterDocumentRequest.omit_receipt).
void RegisterFiles(
    Client* client, const std::vector<std::string>& files, bool receipts,
    const std::function<v1::Document(const std::string& path, std::string content)>& make_document,
    const std::function<void(const std::string& path,
                             const absl::StatusOr<v1::RegisterDocumentReply>& reply)>& on_result,
    const std::function<void(size_t sent, const std::string& path)>& on_window = nullptr);

// The title a file is registered under when none is given: its name, with the bytes of a name
// that is not UTF-8 (a Latin-1 name from an old archive) shown as U+FFFD, since a request
// carries UTF-8 text only.
std::string TitleOfPath(const std::string& path);

// One line of `cops register --json`: {"doc_id", "path", "chunks", "stored_chunks",
// "duplicate_of" (null unless a duplicate), "created", "format", "charset"}; no newline.
std::string RegisterJsonLine(const std::string& path, const v1::RegisterDocumentReply& reply);
// The terminal form: "registered  #12  PATH  (40 chunks, 12 stored)" and the like.
std::string RegisterLine(const std::string& path, const v1::RegisterDocumentReply& reply);

}  // namespace cops

#endif  // COPS_CLIENT_BATCH_REGISTER_H_
