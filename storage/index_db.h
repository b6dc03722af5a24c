#ifndef COPS_STORAGE_INDEX_DB_H_
#define COPS_STORAGE_INDEX_DB_H_

// The RocksDB database under one Index: how it is opened (the options of every column
// family, storage/index_db.cc), its column-family handles, and the few calls every part of
// the Index shares. Internal to storage/; the parts that own a column family
// (PostingsStore, DocumentStore, DuplicateMaps, ExpiryQueue, IndexMeta) hold a reference.
//
// Thread-safety: RocksDB's calls are thread-safe; the database and its handles change only
// in Close and Reopen, which the Index calls with every other call shut out
// (IndexRep::db_mu held exclusively; every other call holds it shared).

#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "rocksdb/db.h"
#include "storage/bucket_codec.h"
#include "storage/index.h"
#include "storage/index_layout.h"

namespace rocksdb {
class Cache;
}

namespace cops {

class IndexDb {
 public:
  // Validates `options` (INVALID_ARGUMENT naming the option) and opens or creates the
  // database: NOT_FOUND when it does not exist and may not be created, DATA_LOSS for an
  // impossible shard count, RocksDB's errors otherwise.
  static absl::StatusOr<std::unique_ptr<IndexDb>> Open(const IndexOptions& options);
  ~IndexDb();  // destroys the handles, then closes the database
  IndexDb(const IndexDb&) = delete;
  IndexDb& operator=(const IndexDb&) = delete;

  // Closes the database, handles first. REQUIRES: no call uses it.
  void Close();
  // Opens the database again as Open did (after Close). On failure it stays closed.
  absl::Status Reopen();
  bool is_open() const { return db_ != nullptr; }

  // Writes `b` (WriteOpts()), and flushes every family, noting an I/O error (a full disk):
  // RocksDB then refuses every later write until the database is reopened.
  rocksdb::Status Write(rocksdb::WriteBatch* b) const;
  rocksdb::Status Write(rocksdb::WriteBatch* b, bool sync) const;
  absl::Status FlushAll() const;
  void NoteWriteError(const rocksdb::Status& s) const;
  bool write_failed() const { return write_failed_.load(); }
  void ClearWriteFailed() { write_failed_.store(false); }
  // Writes and syncs a 1 MiB file beside the database, then removes it: whether a reopen
  // and the next writes have room. RESOURCE_EXHAUSTED (or UNAVAILABLE) when not.
  absl::Status ProbeSpace() const;

  const IndexOptions& options() const { return options_; }
  rocksdb::DB& db() const { return *db_; }
  rocksdb::Cache& cache() const { return *cache_; }
  rocksdb::ColumnFamilyHandle* cf(index_layout::CfIndex i) const { return cfs_[i]; }
  // Every column family (the postings shards and the grams included).
  std::span<rocksdb::ColumnFamilyHandle* const> all() const { return cfs_; }
  // The shards of the postings in use, in hash order: the bucket families when the postings
  // are bucketed (bucket_layout() set), else the per-hash ones (shard 0 is cf(kPostings)).
  std::span<rocksdb::ColumnFamilyHandle* const> shards() const {
    return bucket_layout_.has_value() ? bucket_shards_ : shards_;
  }
  // The per-hash postings' shards and the bucket families present (empty when none), in use
  // or not.
  std::span<rocksdb::ColumnFamilyHandle* const> hash_shards() const { return shards_; }
  std::span<rocksdb::ColumnFamilyHandle* const> bucket_shards() const { return bucket_shards_; }
  // The bucketed postings' layout (schema 4), read from the meta data at open (or chosen
  // for a new index from the options); nullopt for per-hash postings.
  const std::optional<bucket_codec::BucketLayout>& bucket_layout() const { return bucket_layout_; }
  // Whether the index had no meta data when opened (IndexMeta initializes it).
  bool created() const { return created_; }

  // For Index::UpgradePostings (no other call may use the database meanwhile): drops the
  // bucket families present and creates `shards` empty ones; drops the per-hash shards but
  // the first and deletes every key of the first; switches shards() to the buckets.
  absl::Status RecreateBucketShards(uint32_t shards);
  absl::Status DropHashPostings();
  void UseBuckets(const bucket_codec::BucketLayout& layout) { bucket_layout_ = layout; }
  // The verification grams' family; nullptr in an older index opened read-only.
  rocksdb::ColumnFamilyHandle* verify() const { return verify_; }
  // The content-stem pairs' family (storage/stem_pair_store.h); nullptr in an index created
  // without ChunkingParams::stem_pairs.
  rocksdb::ColumnFamilyHandle* stem_pairs() const { return stem_pairs_; }
  // That family's layout (kStemPairsLayout...): recorded in the meta data, 2 for a new index;
  // 0 without the family.
  uint32_t stem_pairs_layout() const { return stem_pairs_layout_; }
  // The postings options the index was opened with (EndBulkLoad restores them).
  const rocksdb::ColumnFamilyOptions& postings_options() const { return postings_options_; }

  rocksdb::WriteOptions WriteOpts() const;
  // FAILED_PRECONDITION on a read-only index; RESOURCE_EXHAUSTED while the file system has
  // less free space than options().min_free_disk_mb (CheckSpace).
  absl::Status CheckWritable() const;
  // RESOURCE_EXHAUSTED when the file system holding the index has less free space than the
  // reserve. The free space is read (statvfs) at most every 100 ms or 1 MiB written while it
  // is above the reserve, on every call while it is below: a write costs an atomic load or
  // two, and writes resume on the first call after space is freed.
  absl::Status CheckSpace() const;
  // One point read; NOT_FOUND as std::nullopt, other errors as a status naming `what`.
  absl::StatusOr<std::optional<std::string>> Get(rocksdb::ColumnFamilyHandle* family,
                                                 std::string_view key, std::string_view what) const;
  absl::StatusOr<std::optional<std::string>> Get(index_layout::CfIndex c, std::string_view key,
                                                 std::string_view what) const {
    return Get(cf(c), key, what);
  }
  // Runs one CompactRange per column family, all at once (one thread each; RocksDB's
  // background pool bounds how many compact together). A compaction interrupted by
  // DisableManualCompaction gives ABORTED.
  absl::Status CompactSideBySide(const rocksdb::CompactRangeOptions& c,
                                 std::span<rocksdb::ColumnFamilyHandle* const> families,
                                 const std::string& what) const;

 private:
  IndexDb() = default;
  // Opens db_ and the handles from db_options_ and descriptors_. REQUIRES: db_ == nullptr.
  rocksdb::Status OpenDb();
  // Reads the bucket layout from the meta data, or picks it for a new index.
  absl::Status LoadBucketLayout();
  // Reads the stem pairs' layout, or picks it for a new index. REQUIRES: LoadBucketLayout ran.
  absl::Status LoadStemPairsLayout();

  IndexOptions options_;
  std::shared_ptr<rocksdb::Cache> cache_;
  rocksdb::DB* db_ = nullptr;  // owned; closed in the destructor after the handles
  // kNumCfs families in CfIndex order, then postings shards 1.., then the grams' family,
  // then the stem pairs' family.
  std::vector<rocksdb::ColumnFamilyHandle*> cfs_;
  std::vector<rocksdb::ColumnFamilyHandle*> shards_;
  std::vector<rocksdb::ColumnFamilyHandle*> bucket_shards_;
  // Families in descriptors_ after the fixed ones: per-hash shards 1.., then bucket shards.
  uint32_t hash_shard_count_ = 1;
  uint32_t bucket_shard_count_ = 0;
  std::optional<bucket_codec::BucketLayout> bucket_layout_;
  bool created_ = false;
  rocksdb::ColumnFamilyHandle* verify_ = nullptr;
  rocksdb::ColumnFamilyHandle* stem_pairs_ = nullptr;
  uint32_t stem_pairs_layout_ = 0;
  rocksdb::ColumnFamilyOptions postings_options_;
  // What db_ was opened with, for Reopen.
  rocksdb::DBOptions db_options_;
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors_;
  mutable std::atomic<bool> write_failed_{false};
  // CheckSpace's cache: the free bytes last read, when (steady clock, ns), and the bytes
  // written since.
  mutable std::atomic<uint64_t> free_bytes_{0};
  mutable std::atomic<int64_t> free_read_ns_{0};
  mutable std::atomic<uint64_t> written_since_read_{0};
};

inline rocksdb::Slice AsSlice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

// While alive, the full merges of bucket keys that RocksDB runs on this thread keep only
// the rests a lookup asks for (bucket_codec::MergeBucketRests) instead of decoding and
// encoding whole buckets: a read of a bucket with merge operands (level-0 files and
// memtables before a compaction) then costs about what a read of a compacted one does, and
// the values the read returns hold only those rests' groups. A read's merges run on the
// reading thread; flushes and compactions run on RocksDB's own threads and merge whole.
// Keys the scope does not name merge whole.
// REQUIRES: created on the thread that reads, around its MultiGet of bucket keys only; not
// nested; keys, first and rests outlive it.
class BucketReadScope {
 public:
  // keys[k] (distinct BE32 bucket keys, ascending) wants rests[first[k], first[k + 1]),
  // sorted ascending. REQUIRES: first.size() == keys.size() + 1.
  BucketReadScope(std::span<const rocksdb::Slice> keys, std::span<const uint32_t> first,
                  std::span<const uint64_t> rests);
  ~BucketReadScope();
  BucketReadScope(const BucketReadScope&) = delete;
  BucketReadScope& operator=(const BucketReadScope&) = delete;

  // The rests wanted from `key` by this thread's scope; nullopt without one or when the
  // scope does not name the key.
  static std::optional<std::span<const uint64_t>> WantedRests(std::string_view key);

 private:
  std::span<const rocksdb::Slice> keys_;
  std::span<const uint32_t> first_;
  std::span<const uint64_t> rests_;
};

}  // namespace cops

#endif  // COPS_STORAGE_INDEX_DB_H_
