#ifndef COPS_STORAGE_POSTINGS_STORE_H_
#define COPS_STORAGE_POSTINGS_STORE_H_

// The inverted index proper, in 1, 2 or 4 column families ("shards") split by the hash's top
// bits, appended to by merge operands and read by batched MultiGet, in one of two layouts:
// bucketed (schema 4: bucket of hashes (BE32 key) -> their postings, storage/bucket_codec.h)
// or per hash (schema 2-3: chunk hash (BE64 key) -> posting list, storage/codec.h). Also
// the postings' bulk-load mode.
// Internal to storage/; docs/storage-format.md.
//
// Thread-safety: safe for concurrent use; BeginBulkLoad/EndBulkLoad serialize on their own
// mutex.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "core/match.h"
#include "storage/index.h"
#include "storage/index_db.h"
#include "storage/parallel_parts.h"
#include "storage/stored_hash_filter.h"

namespace rocksdb {
class WriteBatch;
}

namespace cops {

class PostingsStore {
 public:
  PostingsStore(const IndexDb& db, int lookup_threads);

  // The postings of one new document: hashes[i] is the chunk hash of postings[i], both
  // sorted by (hash, ordinal); every posting's doc_id is `doc`.
  struct DocumentPostings {
    DocId doc = 0;
    std::span<const ChunkHash> hashes;
    std::span<const Posting> postings;
  };
  // Adds one merge operand per (hash, document), all documents' in (hash, document) order:
  // consecutive keys land next to each other in the memtable's skip list, whose insert then
  // resumes from the previous position instead of descending from the top.
  void Add(rocksdb::WriteBatch* b, std::span<const DocumentPostings> documents) const;
  // Frees the buffers Add keeps between calls (Index::ReleaseWriteBuffers).
  void ReleaseAddBuffers() const;
  // Adds the removal of document `doc` from the lists of `chunk_list` (BE64 hashes).
  void AddRemoval(rocksdb::WriteBatch* b, std::string_view chunk_list, DocId doc) const;

  // Index::Lookup.
  absl::Status Lookup(std::span<const ChunkHash> hashes, std::vector<PostingList>* out) const;

  // Index::BeginBulkLoad, EndBulkLoad, bulk_loading.
  absl::Status BeginBulkLoad();
  absl::Status EndBulkLoad();
  bool bulk_loading() const { return bulk_loading_.load(); }
  // Whether some shard holds at least kIdleCompactionPercent of its bytes above its last
  // non-empty level other than level 0 (level-0 files, other levels, the memtables): a
  // lookup reads each such run and merges what it finds there. Level-0 files always count
  // as above, even with nothing under them: they hold a flush's merge operands, which every
  // read merges again until a compaction into the last level merges them once. A few
  // writes to a large index are not worth rewriting its last level for: they touch few
  // buckets, whose runs the others' bloom filters skip.
  static constexpr uint64_t kIdleCompactionPercent = 1;
  bool Layered() const;
  // Flushes the shards and compacts each into one sorted run, side by side (writes go on
  // meanwhile): IndexOptions::idle_compaction_seconds and EndBulkLoad. `what` names it in
  // errors.
  absl::Status CompactLayers(std::string_view what);
  // Applies the bulk-load options again to a reopened database, when a bulk load is on.
  absl::Status ReapplyBulkLoad() const;

  // Adds the postings' figures to `s` (chunk keys, disk bytes, files per level, shards,
  // the hash filter).
  void AddStats(IndexStats* s) const;

  // The bucketed layout's filter of stored hashes (IndexOptions::hash_filter_bits;
  // storage/stored_hash_filter.h). CreateFilter makes it, sized for what is stored
  // (`stored_postings`) or expected, and from then on every Add adds to it; FillFilter then
  // adds every hash the buckets hold, and once it has read them all, lookups skip the hashes
  // the filter rules out. Without a bucketed layout, or with no filter bits, both do nothing.
  // FillFilter: CANCELLED when stop() said so (lookups then read every bucket, as before),
  // DATA_LOSS on a malformed bucket. REQUIRES: CreateFilter ran, the database is open.
  void CreateFilter(uint64_t stored_postings);
  absl::Status FillFilter(const std::function<bool()>& stop);
  bool filter_ready() const { return filter_ready_.load(std::memory_order_acquire); }

 private:
  uint32_t ShardOf(ChunkHash h) const {
    return shard_shift_ >= 64 ? 0 : static_cast<uint32_t>(h >> shard_shift_);
  }
  // The bucketed layout's Add, AddRemoval and Lookup.
  void AddToBuckets(rocksdb::WriteBatch* b, std::span<const DocumentPostings> documents) const;
  void AddBucketRemoval(rocksdb::WriteBatch* b, std::string_view chunk_list, DocId doc) const;
  absl::Status LookupBuckets(std::span<const ChunkHash> hashes,
                             std::vector<PostingList>* out) const;
  // The shard of a bucket: the same top bits of the hash.
  rocksdb::ColumnFamilyHandle* BucketShard(uint32_t bucket) const {
    return shard_shift_ >= 64 ? db_.shards()[0]
                              : db_.shards()[bucket >> (shard_shift_ - (64 - bucket_bits_))];
  }
  rocksdb::ColumnFamilyHandle* Shard(ChunkHash h) const { return db_.shards()[ShardOf(h)]; }

  const IndexDb& db_;
  // Maps a hash to its shard (64 with one shard).
  int shard_shift_ = 64;
  // The bucketed layout (bucket_bits_ != 0) or per-hash postings.
  std::optional<bucket_codec::BucketLayout> layout_;
  uint32_t bucket_bits_ = 0;
  // The shards' column-family ids increase with the shard (they are created in order), so
  // keys sorted by hash are sorted by (column family, key) as a multi-family MultiGet wants.
  bool shard_ids_ascending_ = true;
  // Runs the parts of a large Lookup batch (IndexOptions::lookup_threads).
  std::unique_ptr<ParallelParts> lookup_parts_;
  // Lookup calls in progress. A batch is split only when it is the only one: with several
  // checks running, the cores are busy already, and a part handed to a worker would wait
  // for a core while its caller waits for the part.
  mutable std::atomic<int> lookups_in_flight_{0};
  // CreateFilter's filter, or none; asked by lookups once filter_ready_.
  std::unique_ptr<StoredHashFilter> filter_;
  std::atomic<bool> filter_ready_{false};
  // AddToBuckets' buffers, kept between calls: a window of 4,096 documents of 4 KB needs
  // ~30 MB, which fresh from malloc each time costs a page fault per page written (~a
  // quarter of copsd's faults at registration, docs/performance.md). A call takes them
  // (moved out, so a concurrent call starts with empty ones) and gives them back.
  struct BucketEntry {
    ChunkHash kept;  // the hash's top hash_bits (bucket, then rest), the others zero
    Posting posting;
  };
  struct AddBuffers {
    std::vector<BucketEntry> entries;
    std::vector<BucketEntry> spare;  // ScatterSort's other half
    std::vector<ChunkHash> stored;   // the filter's distinct hashes
  };
  AddBuffers TakeAddBuffers() const;
  void KeepAddBuffers(AddBuffers buffers) const;
  mutable absl::Mutex add_buffers_mu_;
  mutable AddBuffers add_buffers_ ABSL_GUARDED_BY(add_buffers_mu_);
  // Serializes BeginBulkLoad/EndBulkLoad; bulk_loading_ mirrors the mode for readers.
  absl::Mutex bulk_mu_;
  std::atomic<bool> bulk_loading_{false};
};

}  // namespace cops

#endif  // COPS_STORAGE_POSTINGS_STORE_H_
