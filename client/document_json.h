#ifndef COPS_CLIENT_DOCUMENT_JSON_H_
#define COPS_CLIENT_DOCUMENT_JSON_H_

// A registered document's record as JSON: one object per document of `cops --json get` and
// `cops --json list`, and of the HTTP API's GET /v1/documents (http/api.h).
//
// Thread-safety: a stateless function.

#include <string>

#include "proto/cops.pb.h"

namespace cops {

// {"doc_id", "title", "author", "owner", "collection", "external_id", "format",
//  "registered_unix_micros", "sha256", "chunks", "stored_chunks", "size_bytes",
//  "expires_unix_micros", "not_before_unix_micros"}, no newline.
std::string DocumentInfoJson(const v1::DocumentInfo& info);

}  // namespace cops

#endif  // COPS_CLIENT_DOCUMENT_JSON_H_
