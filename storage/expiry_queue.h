#ifndef COPS_STORAGE_EXPIRY_QUEUE_H_
#define COPS_STORAGE_EXPIRY_QUEUE_H_

// The documents with an expiry in expiry order: one empty entry per such document in the
// meta column family, index_layout::kExpiryPrefix + BE64 expiry (micros) + BE64 document id,
// written and deleted in the write batches that write and delete the document. Internal to
// storage/; docs/storage-format.md.
//
// Thread-safety: const methods, safe from any thread.

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/match.h"
#include "storage/index_db.h"

namespace rocksdb {
class WriteBatch;
}

namespace cops {

class ExpiryQueue {
 public:
  explicit ExpiryQueue(const IndexDb& db) : db_(db) {}

  struct Entry {
    std::string key;
    int64_t expires_unix_micros = 0;
    DocId id = 0;
  };

  // REQUIRES: expires_unix_micros != 0.
  void Add(rocksdb::WriteBatch* b, int64_t expires_unix_micros, DocId id) const;
  void Remove(rocksdb::WriteBatch* b, int64_t expires_unix_micros, DocId id) const;
  void RemoveEntry(rocksdb::WriteBatch* b, const Entry& entry) const;
  // Calls `visit` with each entry due at or before `now_unix_micros`, earliest first, until
  // it returns false or fails (its error is returned); reads no entry beyond. An entry may be
  // stale (its document gone or re-timed by a build without expiries): the visitor compares
  // it with the record. DATA_LOSS on a malformed key.
  absl::Status ForEachDue(int64_t now_unix_micros,
                          const std::function<absl::StatusOr<bool>(const Entry&)>& visit) const;

 private:
  const IndexDb& db_;
};

}  // namespace cops

#endif  // COPS_STORAGE_EXPIRY_QUEUE_H_
