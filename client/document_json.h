#ifndef COPS_CLIENT_DOCUMENT_JSON_H_
#define COPS_CLIENT_DOCUMENT_JSON_H_

// A registered document's record as JSON: one object per document of `cops --json get` and
// `cops --json list`, and of the HTTP API's GET /v1/documents (http/api.h); and the checks
// that reported an owner's documents, as `cops --json matches` and GET /v1/matches show them.
//
// Thread-safety: stateless functions.

#include <string>

#include "proto/cops.pb.h"

namespace cops {

// {"doc_id", "title", "author", "owner", "collection", "external_id", "format",
//  "registered_unix_micros", "sha256", "chunks", "stored_chunks", "size_bytes",
//  "expires_unix_micros", "not_before_unix_micros"}, no newline.
std::string DocumentInfoJson(const v1::DocumentInfo& info);

// {"matches": [{"time" (RFC 3339), "unix_micros", "doc_id", "collection", "checker",
//  "ratio", "containment", "matched_chunks", "violation", "test_sha256"}, ...]}, oldest
// first, no newline.
std::string MatchesJson(const v1::ListMatchesReply& reply);

}  // namespace cops

#endif  // COPS_CLIENT_DOCUMENT_JSON_H_
