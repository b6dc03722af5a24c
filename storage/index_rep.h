#ifndef COPS_STORAGE_INDEX_REP_H_
#define COPS_STORAGE_INDEX_REP_H_

// What an Index is made of: the database and the parts that own its column families, the
// writer's state, and the block-cache warm-up thread. Internal to storage/: the Index's
// methods are defined over it in index.cc (open, reads), index_write.cc (registrations,
// removals, expiry) and index_maintenance.cc (stats, compaction, bulk load, warm-up,
// snapshots).
//
// Thread-safety: every call holds db_mu shared while it uses the database (Recover holds it
// exclusively to reopen it); writers serialize on write_mu, taken after db_mu.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "rocksdb/write_batch.h"
#include "storage/codec.h"
#include "storage/document_store.h"
#include "storage/duplicate_maps.h"
#include "storage/expiry_queue.h"
#include "storage/index.h"
#include "storage/index_db.h"
#include "storage/index_meta.h"
#include "storage/postings_store.h"
#include "storage/stem_pair_store.h"

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

  // Held shared by every call for as long as it uses the database, its handles or an
  // iterator of them; exclusively while Recover closes and reopens it. (IndexDb's members
  // are not annotated ABSL_GUARDED_BY(db_mu): the parts read them, and the entry points,
  // which hold the lock, are the place to see it.) Taken before write_mu.
  mutable absl::Mutex db_mu;
  // The database is closed after a failed reopen; every call tries again.
  std::atomic<bool> closed{false};
  absl::Mutex recover_mu;  // serializes Recover
  // AbortManualCompactions was called: applied again to a reopened database.
  std::atomic<bool> manual_compactions_aborted{false};
  // Before a call takes db_mu: when the database is closed, or when `writing` and an
  // earlier write failed on an I/O error, checks that the disk has space again
  // (IndexDb::ProbeSpace), then closes and reopens the database under db_mu held
  // exclusively (calls in flight finish first, later ones wait) and reloads the meta data.
  // RESOURCE_EXHAUSTED while the disk is still full; nothing acknowledged is lost either
  // way (every acknowledged write is in the log).
  absl::Status Recover(bool writing) ABSL_LOCKS_EXCLUDED(db_mu, write_mu);
  // UNAVAILABLE while the database is closed after a failed reopen. REQUIRES: db_mu held.
  absl::Status CheckOpen() const;
  IndexMeta meta;
  PostingsStore postings;
  DocumentStore documents;
  DuplicateMaps maps;
  ExpiryQueue expiries;
  StemPairStore stem_pairs;

  // Serializes writers (Register, Unregister, RemoveExpired, ...): the external-id and
  // duplicate checks and the id assignment must not interleave. Readers never take it.
  absl::Mutex write_mu;
  DocId next_doc_id ABSL_GUARDED_BY(write_mu) = 1;
  IndexCounters counters ABSL_GUARDED_BY(write_mu);
  // The schema the writer records (raised to ...Lifetimes or ...RecomputedChunks by the
  // first write that needs it).
  uint64_t schema_version ABSL_GUARDED_BY(write_mu) = storage_codec::kSchemaVersionBase;
  // The registrations' write batch, kept between writes with its buffer: a window's
  // (~40 MB for 4,096 documents of 4 KB) fresh from malloc each time is mapped anew and
  // costs a page fault per page written. Index::ReleaseWriteBuffers frees it.
  rocksdb::WriteBatch write_batch ABSL_GUARDED_BY(write_mu);
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
  // Loads (or initializes) the meta data into the writer's state; a writable open of a
  // schema-1 index upgrades its duplicate map first.
  absl::Status LoadMeta() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu);

  // Writes `group` in one WriteBatch under the writer lock and sets each outcome.
  // `log_sequence` != 0 is written as the applied sequence in the same batch
  // (storage/index_write.cc).
  absl::Status WriteRegistrations(std::span<PreparedDocument*> group, uint64_t log_sequence)
      ABSL_LOCKS_EXCLUDED(write_mu);
  // Adds to `b` the removal of `record` (as stored): its postings, record, chunk list,
  // text, grams, expiry entry, and the external-id and duplicate entries that point at it;
  // updates `next`.
  // `recomputed`, when not null, is the document's chunk list as RecomputeBeforeRemoval
  // made it; otherwise a document without a list has it recomputed here.
  absl::Status AddRemoval(const DocumentRecord& record, rocksdb::WriteBatch* b,
                          IndexCounters* next, const std::string* recomputed = nullptr) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu);
  // The BE64 distinct hashes of a document kept without a chunk list, from the index's
  // ChunkRecomputer and its stored `text` (nullptr: none); DATA_LOSS naming the document
  // when there is no recomputer or text, or the recomputer's error.
  absl::StatusOr<std::string> RecomputeChunkList(const DocumentRecord& record,
                                                 const std::string* text) const;
  // Before Unregister takes the writer lock (fingerprinting a long text there would hold up
  // every registration): the chunk list of document `id` recomputed, when it has none and
  // that succeeds; std::nullopt otherwise, and AddRemoval decides under the lock.
  std::optional<std::string> RecomputeBeforeRemoval(DocId id) const;

  // Index::WarmBlockCache, and StartWarmingBlockCache's thread (index_maintenance.cc).
  absl::StatusOr<uint64_t> WarmBlockCache(double fill, const std::function<bool()>& stop) const;
  // Index::StartWarmingBlockCache.
  void StartWarming(double fill);
  std::thread warm_thread;
  // Stops the warm-up and the filter's filling: set while Recover closes and reopens the
  // database, and for good when the index closes (then `closing` too).
  std::atomic<bool> stop_warming{false};
  std::atomic<bool> closing{false};
  std::atomic<bool> warming{false};

  // Fills the postings' filter of stored hashes (PostingsStore::FillFilter) on a thread of
  // its own at low priority, started by Open; a fill stopped by Recover starts over once the
  // database is open again. Index::WaitForHashFilter waits for `filter_done`.
  void StartFillingFilter();
  std::thread filter_thread;
  mutable absl::Mutex filter_mu;
  bool filter_done ABSL_GUARDED_BY(filter_mu) = false;
  absl::Status filter_status ABSL_GUARDED_BY(filter_mu);

  // IndexOptions::idle_compaction_seconds: a thread at low priority that compacts the
  // postings (PostingsStore::CompactLayers) once the database's sequence number has not
  // moved for that long and they are layered; started by Open, stopped by `closing`.
  void StartIdleCompaction();
  bool IdleCompactionDue() const;
  std::thread idle_thread;
  absl::Mutex idle_mu;  // for its waits, which `closing` ends
  std::atomic<bool> idle_compacting{false};

 private:
  explicit IndexRep(std::unique_ptr<IndexDb> opened);
};

}  // namespace cops

#endif  // COPS_STORAGE_INDEX_REP_H_
