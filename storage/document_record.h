#ifndef COPS_STORAGE_DOCUMENT_RECORD_H_
#define COPS_STORAGE_DOCUMENT_RECORD_H_

// The record the index keeps of each registered document: a domain type of its own, so that
// what encodes, logs or transports a record (storage/codec.h, replication/, engine/, server/)
// includes this and not the Index. Its encoding on disk is storage/codec.h's.
//
// Thread-safety: plain value type.

#include <array>
#include <cstdint>
#include <string>

#include "core/match.h"

namespace cops {

struct DocumentRecord {
  DocId id = 0;
  std::string title;
  std::string author;
  std::string owner;
  std::string collection;
  std::string external_id;
  std::string format;  // declared or detected format, e.g. "text", "pdf"
  int64_t registered_unix_micros = 0;
  std::array<uint8_t, 32> sha256{};  // of the canonical text
  uint32_t total_chunks = 0;
  uint32_t stored_chunks = 0;
  uint64_t size_bytes = 0;  // original input size
  // Lifetime, microseconds since the Unix epoch; 0 = none. From expires_unix_micros on, the
  // document is no longer matched and RemoveExpired() deletes it; before
  // not_before_unix_micros it is registered but not matched (an embargo). The index stores
  // them; the detection pipeline (engine/copy_detector.cc) applies them.
  int64_t expires_unix_micros = 0;
  int64_t not_before_unix_micros = 0;

  // Whether a check at `now_unix_micros` may report the document.
  bool MatchableAt(int64_t now_unix_micros) const {
    return now_unix_micros >= not_before_unix_micros &&
           (expires_unix_micros == 0 || now_unix_micros < expires_unix_micros);
  }
};

}  // namespace cops

#endif  // COPS_STORAGE_DOCUMENT_RECORD_H_
