#ifndef COPS_STORAGE_INDEX_REP_H_
#define COPS_STORAGE_INDEX_REP_H_

// What an Index is made of: the database and the parts that own its column families, the
// writer's state, and the block-cache warm-up thread. Internal to storage/: the Index's
// methods are defined over it in index.cc (open, reads), index_write.cc (registrations,
// removals, expiry) and index_maintenance.cc (stats, compaction, bulk load, warm-up,
// snapshots).
//
// Thread-safety: writers serialize on write_mu; readers take no lock.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "storage/codec.h"
#include "storage/document_store.h"
#include "storage/duplicate_maps.h"
#include "storage/expiry_queue.h"
#include "storage/index.h"
#include "storage/index_db.h"
#include "storage/index_meta.h"
#include "storage/postings_store.h"

namespace rocksdb {
class WriteBatch;
}

namespace cops {

struct PreparedDocument;  // storage/index_write.cc

class IndexRep {
 public:
  // Builds the parts over `db` and loads (or initializes) the meta data; a writable open of
  // a schema-1 index upgrades its duplicate map first.
  static absl::StatusOr<std::unique_ptr<IndexRep>> Open(std::unique_ptr<IndexDb> db);
  ~IndexRep();  // stops the warm-up, then closes the database

  // Declared first: the parts hold references to it.
  const std::unique_ptr<IndexDb> db;
  IndexMeta meta;
  PostingsStore postings;
  DocumentStore documents;
  DuplicateMaps maps;
  ExpiryQueue expiries;

  // Serializes writers (Register, Unregister, RemoveExpired, ...): the external-id and
  // duplicate checks and the id assignment must not interleave. Readers never take it.
  absl::Mutex write_mu;
  DocId next_doc_id ABSL_GUARDED_BY(write_mu) = 1;
  IndexCounters counters ABSL_GUARDED_BY(write_mu);
  // The schema the writer records (codec::kSchemaVersionBase or ...Lifetimes).
  uint64_t schema_version ABSL_GUARDED_BY(write_mu) = storage_codec::kSchemaVersionBase;
  // Mirrors the meta key; written only under write_mu, read without it.
  std::atomic<uint64_t> applied_log_sequence{0};
  // Mirrors of the counters for Stats() without the writer lock.
  std::atomic<uint64_t> documents_count{0}, postings_count{0}, text_bytes{0};

  // The schema the index is in: codec::kSchemaVersionBase or newer, or older in a read-only
  // open (a writable one records kSchemaVersionLifetimes in schema_version, not here).
  uint64_t schema = storage_codec::kSchemaVersionBase;
  // FAILED_PRECONDITION unless the duplicate map is keyed by collection (schema >= 2).
  absl::Status CheckListsCollections() const;

  void PublishCounters() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu);

  // Writes `group` in one WriteBatch under the writer lock and sets each outcome.
  // `log_sequence` != 0 is written as the applied sequence in the same batch
  // (storage/index_write.cc).
  absl::Status WriteRegistrations(std::span<PreparedDocument*> group, uint64_t log_sequence)
      ABSL_LOCKS_EXCLUDED(write_mu);
  // Adds to `b` the removal of `record` (as stored): its postings, record, chunk list,
  // text, grams, expiry entry, and the external-id and duplicate entries that point at it;
  // updates `next`.
  absl::Status AddRemoval(const DocumentRecord& record, rocksdb::WriteBatch* b,
                          IndexCounters* next) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu);

  // Index::WarmBlockCache, and StartWarmingBlockCache's thread (index_maintenance.cc).
  absl::StatusOr<uint64_t> WarmBlockCache(double fill, const std::function<bool()>& stop) const;
  std::thread warm_thread;
  std::atomic<bool> stop_warming{false};
  std::atomic<bool> warming{false};

 private:
  explicit IndexRep(std::unique_ptr<IndexDb> opened);
};

}  // namespace cops

#endif  // COPS_STORAGE_INDEX_REP_H_
