#ifndef COPS_STORAGE_INDEX_META_H_
#define COPS_STORAGE_INDEX_META_H_

// The index's meta data in the meta column family: schema version, chunking parameters,
// next document id, counters and the applied registration-log sequence (keys in
// storage/index_layout.h, prose in docs/storage-format.md). Internal to storage/.
//
// Thread-safety: const methods, safe from any thread; the values are the Index's writer's
// to keep consistent (IndexRep::write_mu).

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/match.h"
#include "storage/index_db.h"

namespace rocksdb {
class WriteBatch;
}

namespace cops {

struct IndexCounters {
  uint64_t documents = 0;
  uint64_t postings = 0;
  uint64_t text_bytes = 0;
};

// What an open reads back.
struct IndexMetaState {
  // The schema the index is in (storage_codec::kSchemaVersion...); older than
  // kSchemaVersionBase only in a read-only open or until UpgradeDuplicateMap has run.
  uint64_t schema = 0;
  DocId next_doc_id = 1;
  IndexCounters counters;
  uint64_t applied_log_sequence = 0;
};

class IndexMeta {
 public:
  explicit IndexMeta(const IndexDb& db) : db_(db) {}

  // Reads the meta data; a new writable index is initialized first (schema
  // kSchemaVersionBuckets and the bucket layout when IndexDb chose one, else
  // kSchemaVersionBase; the requested parameters). FAILED_PRECONDITION when a read-only
  // index has no meta data, its schema is newer than this build's or its parameters differ
  // from IndexOptions::params (naming the fields); DATA_LOSS on a malformed value.
  absl::StatusOr<IndexMetaState> LoadOrInit() const;

  void PutSchemaVersion(rocksdb::WriteBatch* b, uint64_t schema) const;
  // The bucketed postings' layout (kBucketLayoutKey); recorded with schema 4.
  void PutBucketLayout(rocksdb::WriteBatch* b, const bucket_codec::BucketLayout& layout) const;
  void PutNextDocId(rocksdb::WriteBatch* b, DocId next) const;
  void PutCounters(rocksdb::WriteBatch* b, const IndexCounters& c) const;
  void PutAppliedLogSequence(rocksdb::WriteBatch* b, uint64_t sequence) const;

 private:
  const IndexDb& db_;
};

}  // namespace cops

#endif  // COPS_STORAGE_INDEX_META_H_
