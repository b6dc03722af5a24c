#include "storage/index_db.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <thread>

#include "core/status_macros.h"
#include "rocksdb/cache.h"
#include "rocksdb/convenience.h"
#include "rocksdb/env.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/merge_operator.h"
#include "rocksdb/options.h"
#include "rocksdb/slice_transform.h"
#include "rocksdb/table.h"
#include "rocksdb/write_batch.h"
#include "storage/codec.h"
#include "storage/memtable_rep.h"
#include "storage/rocks_dir.h"
#include "storage/rocks_status.h"
#include "storage/stem_pair_store.h"

namespace cops {
namespace {

namespace codec = storage_codec;
using namespace index_layout;  // the column families and keys this file names

// A full merge's existing value (if any) and operands, as views.
std::optional<std::string_view> Operands(const rocksdb::MergeOperator::MergeOperationInput& in,
                                         std::vector<std::string_view>* ops) {
  ops->reserve(in.operand_list.size());
  for (const rocksdb::Slice& s : in.operand_list) ops->push_back(s.ToStringView());
  if (in.existing_value == nullptr) return std::nullopt;
  return in.existing_value->ToStringView();
}

// The lookup whose reads this thread runs (BucketReadScope), if any.
thread_local const BucketReadScope* tls_bucket_read = nullptr;

class PostingListMerge : public rocksdb::MergeOperator {
 public:
  explicit PostingListMerge(uint32_t max_postings) : max_postings_(max_postings) {}
  bool FullMergeV2(const MergeOperationInput& in, MergeOperationOutput* out) const override {
    std::vector<std::string_view> ops;
    const std::optional<std::string_view> existing = Operands(in, &ops);
    return codec::MergePostings(existing, ops, max_postings_, &out->new_value);
  }
  const char* Name() const override { return kMergeOperatorName; }

 private:
  const uint32_t max_postings_;
};

// The bucketed postings' operator (schema 4): add fragments and removes applied in order by
// a full merge (a read, a compaction reaching the bottom); consecutive add fragments combine
// into one in a partial merge (a flush or an upper-level compaction), so that a bucket
// written by many registrations is read as few operands.
class PostingBucketMerge : public rocksdb::MergeOperator {
 public:
  explicit PostingBucketMerge(uint32_t max_postings) : max_postings_(max_postings) {}
  bool FullMergeV2(const MergeOperationInput& in, MergeOperationOutput* out) const override {
    std::vector<std::string_view> ops;
    const std::optional<std::string_view> existing = Operands(in, &ops);
    const std::optional<std::span<const uint64_t>> wanted =
        BucketReadScope::WantedRests(in.key.ToStringView());
    if (wanted.has_value()) {
      return bucket_codec::MergeBucketRests(existing, ops, *wanted, max_postings_,
                                            &out->new_value);
    }
    return bucket_codec::MergeBucket(existing, ops, max_postings_, &out->new_value);
  }
  bool PartialMergeMulti(const rocksdb::Slice& /*key*/,
                         const std::deque<rocksdb::Slice>& operand_list, std::string* new_value,
                         rocksdb::Logger* /*logger*/) const override {
    std::vector<std::string_view> ops;
    ops.reserve(operand_list.size());
    for (const rocksdb::Slice& s : operand_list) {
      // A remove must meet the adds before it: left for the full merge.
      if (!bucket_codec::IsAddFragment(s.ToStringView())) return false;
      ops.push_back(s.ToStringView());
    }
    return bucket_codec::CombineAddFragments(ops, new_value);
  }
  const char* Name() const override { return kBucketMergeOperatorName; }

 private:
  const uint32_t max_postings_;
};

rocksdb::CompressionType Pick(std::initializer_list<rocksdb::CompressionType> preferred) {
  const auto supported = rocksdb::GetSupportedCompressions();
  for (auto c : preferred) {
    if (std::find(supported.begin(), supported.end(), c) != supported.end()) return c;
  }
  return rocksdb::kNoCompression;
}

absl::StatusOr<rocksdb::CompressionType> ParseCompression(const std::string& name) {
  static const std::pair<const char*, rocksdb::CompressionType> kNames[] = {
      {"lz4", rocksdb::kLZ4Compression},
      {"zstd", rocksdb::kZSTD},
      {"snappy", rocksdb::kSnappyCompression},
      {"none", rocksdb::kNoCompression}};
  for (const auto& [n, type] : kNames) {
    if (name != n) continue;
    const auto supported = rocksdb::GetSupportedCompressions();
    if (type != rocksdb::kNoCompression &&
        std::find(supported.begin(), supported.end(), type) == supported.end()) {
      return absl::InvalidArgumentError("compression " + name +
                                        " is not supported by this build of RocksDB");
    }
    return type;
  }
  return absl::InvalidArgumentError("unknown compression \"" + name +
                                    "\" (lz4, zstd, snappy or none)");
}

absl::Status ValidateOptions(const IndexOptions& o) {
  if (o.block_cache_bytes < (1u << 20)) {
    return absl::InvalidArgumentError("block cache must be at least 1 MiB");
  }
  if (o.write_buffer_bytes < (1u << 20)) {
    return absl::InvalidArgumentError("write buffer must be at least 1 MiB");
  }
  if (o.bloom_bits_per_key < 0 || o.bloom_bits_per_key > 30) {
    return absl::InvalidArgumentError("bloom bits per key must be in [0, 30], not " +
                                      std::to_string(o.bloom_bits_per_key));
  }
  if (o.postings_memtables < 1 || o.postings_memtables > 64) {
    return absl::InvalidArgumentError("postings memtables must be in [1, 64], not " +
                                      std::to_string(o.postings_memtables));
  }
  if (o.write_buffer_bytes / o.postings_memtables < (256u << 10)) {
    return absl::InvalidArgumentError(
        "write buffer of " + std::to_string(o.write_buffer_bytes >> 10) + " KiB cut into " +
        std::to_string(o.postings_memtables) + " memtables: each must be at least 256 KiB");
  }
  if (!ValidShardCount(o.postings_shards)) {
    return absl::InvalidArgumentError("postings shards must be 1, 2 or 4, not " +
                                      std::to_string(o.postings_shards));
  }
  if (o.lookup_threads < 1 || o.lookup_threads > 16) {
    return absl::InvalidArgumentError("lookup threads must be in [1, 16], not " +
                                      std::to_string(o.lookup_threads));
  }
  if (o.background_jobs < 1 || o.background_jobs > 64) {
    return absl::InvalidArgumentError("background jobs must be in [1, 64], not " +
                                      std::to_string(o.background_jobs));
  }
  if (o.postings_block_kb < 1 || o.postings_block_kb > 256) {
    return absl::InvalidArgumentError("postings block size must be in [1, 256] KiB, not " +
                                      std::to_string(o.postings_block_kb));
  }
  if (o.expected_documents < 1) {
    return absl::InvalidArgumentError("expected documents must be at least 1");
  }
  {
    const bucket_codec::BucketLayout layout{
        o.postings_bucket_bits != 0 ? o.postings_bucket_bits
                                    : bucket_codec::BucketBitsFor(o.expected_documents),
        o.postings_hash_bits != 0 ? o.postings_hash_bits : o.new_index_hash_bits};
    COPS_RETURN_IF_ERROR(layout.Validate());
  }
  if (o.block_cache != "lru" && o.block_cache != "hyper-clock") {
    return absl::InvalidArgumentError("unknown block cache \"" + o.block_cache +
                                      "\" (lru or hyper-clock)");
  }
  return ParseCompression(o.postings_compression).status();
}

// Block checksums of new SST files. XXH3 instead of RocksDB's default CRC32c: Debian's
// librocksdb computes CRC32c in software, which makes every block read from a file (a cold
// lookup, each compaction input) pay for it. Each file records its own checksum type, so
// files written before keep CRC32c and stay readable.
constexpr rocksdb::ChecksumType kBlockChecksum = rocksdb::kXXH3;

// IndexOptions::cache_flushed_blocks.
constexpr auto kCacheFlushed = rocksdb::BlockBasedTableOptions::PrepopulateBlockCache::kFlushOnly;

// Table options of the small column families: index and filter blocks in the shared cache.
rocksdb::BlockBasedTableOptions SmallTableOptions(const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = cache;
  t.format_version = 5;
  t.checksum = kBlockChecksum;
  t.cache_index_and_filter_blocks = true;
  t.pin_l0_filter_and_index_blocks_in_cache = true;
  return t;
}

rocksdb::ColumnFamilyOptions BaseCfOptions(const IndexOptions& o,
                                           const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::ColumnFamilyOptions cf;
  cf.write_buffer_size = o.write_buffer_bytes;
  cf.level_compaction_dynamic_level_bytes = true;
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(SmallTableOptions(cache)));
  cf.compression = Pick({rocksdb::kLZ4Compression, rocksdb::kSnappyCompression});
  // Every family's memtable is COPS's skip list (storage/memtable_rep.h): Debian's RocksDB
  // build checks the order of its own list's neighbours after each insert. Keys that come
  // in order (a write's postings, ids that grow) start where the previous insert went; others
  // (digests in the maps) search from the head, as any skip list does.
  cf.memtable_factory = std::make_shared<FingerSkipListFactory>();
  return cf;
}

// The bucket families' tables, from the per-hash postings' ones. A bucket value is a few
// hundred bytes and every lookup of a hash reads one (a miss too: every bucket exists), so
// the search inside a data block is most of a lookup's cost: each key is its own restart
// point (no scan from the previous one, where every step is a cache miss over a value), the
// block's hash index has four slots per key (a collision falls back to a binary search), and
// 4 KB blocks keep that search short. Compacted, at 3x10^4 documents: 0.55-0.59 instead of
// 0.92-1.01 ms per 1,000 hashes, for 0.36 more bytes per posting (docs/performance.md).
// Per file: files written with other values stay readable.
rocksdb::BlockBasedTableOptions BucketTableOptions(const rocksdb::BlockBasedTableOptions& postings) {
  rocksdb::BlockBasedTableOptions t = postings;
  t.block_restart_interval = 1;
  t.data_block_hash_table_util_ratio = 0.25;
  t.block_size = 4u << 10;
  return t;
}

// The stored texts' tables. A text is read by a point read off the check path (a document
// asked for with its content, a repeated registration, an unregistration, a key rotation
// reading every text in id order), so its bytes matter more than its read's CPU. 4 KB
// blocks held one document each and zstd saw no context; 32 KB blocks hold ~8 documents and
// a 64 KiB dictionary per SST file, sampled from the file's own data (zstd's training cost
// 2-4x the flushes' CPU for 3% fewer bytes), gives each block the common words. Settled:
// 4 KB synthetic service documents 1,867 -> 1,348 bytes each, prose (manual pages,
// /usr/share/doc, p4p) 1,450 -> 1,171; a cold read decompresses 32 KB, 23 -> 48 us of CPU
// (docs/storage-format.md, texts). The dictionary buffers at most 8 MiB of a file's blocks
// before sampling, so a flush or compaction holds no more than that beside its output. Block
// size and dictionary are recorded per file: files written before keep their 4 KB blocks
// without a dictionary and stay readable until a compaction that takes them in rewrites them.
void TextsCompression(const std::shared_ptr<rocksdb::Cache>& cache,
                      rocksdb::ColumnFamilyOptions* cf) {
  rocksdb::BlockBasedTableOptions t = SmallTableOptions(cache);
  t.block_size = 32u << 10;
  cf->table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  if (cf->compression != rocksdb::kZSTD) return;
  cf->compression_opts.max_dict_bytes = 64u << 10;
  cf->compression_opts.zstd_max_train_bytes = 0;
  cf->compression_opts.max_dict_buffer_bytes = 8u << 20;
}

std::vector<rocksdb::ColumnFamilyDescriptor> Descriptors(
    const IndexOptions& o, const std::shared_ptr<rocksdb::Cache>& cache, uint32_t shards,
    uint32_t bucket_shards, bool with_verify, bool with_stem_pairs = false) {
  std::vector<rocksdb::ColumnFamilyDescriptor> d;
  for (int i = 0; i < kNumCfs; ++i) {
    rocksdb::ColumnFamilyOptions cf = BaseCfOptions(o, cache);
    if (i == kPostings) {
      // Point lookups only (MultiGet of hashes): whole-key bloom filter, hash index inside
      // data blocks, big memtables, blind merges for appends.
      rocksdb::BlockBasedTableOptions t;
      t.block_cache = cache;
      t.format_version = 5;
      t.checksum = kBlockChecksum;
      t.data_block_index_type = rocksdb::BlockBasedTableOptions::kDataBlockBinaryAndHash;
      // Each SST file's whole bloom filter and index live in its table reader (loaded when
      // the file is opened, all files stay open), not in the block cache: a key's probe of
      // a file is then one filter lookup and one binary search with no cache lookup, no
      // shard mutex and no partition search, which costs less CPU per lookup than
      // partitioned filters and indexes pinned in the cache (docs/performance.md). The
      // price is memory outside block_cache_bytes that grows with the index, ~1.25
      // bytes per distinct chunk key for 10 bloom bits plus ~0.15% of the postings for the
      // indexes (16 KB blocks), read in when the index is opened.
      t.cache_index_and_filter_blocks = false;
      t.index_type = rocksdb::BlockBasedTableOptions::kBinarySearch;
      // 16 KB data blocks: a 4x smaller block index than RocksDB's 4 KB, so that the index
      // searched by every probe stays in the CPU caches at 10^6 documents; a cold lookup
      // reads and decompresses 16 KB instead of 4 KB (docs/performance.md). Per file: files
      // written with 4 KB blocks stay readable and are rewritten by compaction.
      t.block_size = size_t{o.postings_block_kb} << 10;
      t.partition_filters = false;
      if (o.cache_flushed_blocks) t.prepopulate_block_cache = kCacheFlushed;
      if (o.bloom_bits_per_key > 0) {
        t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(o.bloom_bits_per_key));
        t.whole_key_filtering = true;
      }
      cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
      cf.compression = ParseCompression(o.postings_compression).value_or(cf.compression);
      cf.merge_operator = std::make_shared<PostingListMerge>(o.max_postings_per_chunk);
      cf.memtable_whole_key_filtering = o.bloom_bits_per_key > 0;
      // Small memtables merged at flush (IndexOptions::postings_memtables): cheap inserts,
      // level-0 files as big as one large memtable would make. Room for half as many more
      // while a flush runs, before writes stall.
      const uint32_t memtables = o.postings_memtables;
      cf.write_buffer_size = o.write_buffer_bytes / memtables;
      cf.min_write_buffer_number_to_merge = static_cast<int>(memtables);
      cf.max_write_buffer_number = static_cast<int>(memtables + std::max(1u, memtables / 2));
      // Memtable bloom filter: 2% of the write buffer in bits. A write batch lands whole in
      // one memtable and may overfill a small one several times, so each memtable gets the
      // bits of an undivided write buffer (RocksDB caps the ratio at 0.25). With the ratio
      // of one 64 MiB memtable, the filters of overfilled 8 MiB memtables pass most probes
      // and a lookup right after a load is much slower (docs/performance.md).
      cf.memtable_prefix_bloom_size_ratio =
          o.bloom_bits_per_key > 0 ? std::min(0.25, 0.02 * memtables) : 0;
    } else if (i == kTexts) {
      cf.compression =
          Pick({rocksdb::kZSTD, rocksdb::kLZ4Compression, rocksdb::kSnappyCompression});
      cf.write_buffer_size = std::min<size_t>(o.write_buffer_bytes, 32u << 20);
      TextsCompression(cache, &cf);
    } else {
      // Small column families: small memtables.
      cf.write_buffer_size = std::min<size_t>(o.write_buffer_bytes, 16u << 20);
      if (i == kDocuments && o.cache_flushed_blocks) {
        rocksdb::BlockBasedTableOptions t = SmallTableOptions(cache);
        t.prepopulate_block_cache = kCacheFlushed;  // a candidate's record
        cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
      }
    }
    d.emplace_back(kCfNames[i], cf);
  }
  for (uint32_t shard = 1; shard < shards; ++shard) {
    d.emplace_back(PostingsShardName(shard), d[kPostings].options);
  }
  for (uint32_t shard = 0; shard < bucket_shards; ++shard) {
    rocksdb::ColumnFamilyOptions cf = d[kPostings].options;
    cf.merge_operator = std::make_shared<PostingBucketMerge>(o.max_postings_per_chunk);
    cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(BucketTableOptions(
        *cf.table_factory->GetOptions<rocksdb::BlockBasedTableOptions>())));
    d.emplace_back(BucketShardName(shard), cf);
  }
  if (with_verify) {
    // Point reads of one value per candidate (2 bytes per word of the document); grams
    // are keyed hashes, which no compressor shrinks.
    rocksdb::ColumnFamilyOptions cf = BaseCfOptions(o, cache);
    cf.write_buffer_size = std::min<size_t>(o.write_buffer_bytes, 32u << 20);
    cf.compression = rocksdb::kNoCompression;
    rocksdb::BlockBasedTableOptions t = SmallTableOptions(cache);
    t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    if (o.cache_flushed_blocks) t.prepopulate_block_cache = kCacheFlushed;
    cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
    d.emplace_back(kVerifyCf, cf);
  }
  if (with_stem_pairs) d.emplace_back(kStemPairsCf, StemPairsCfOptions(o.write_buffer_bytes, cache));
  return d;
}

}  // namespace

BucketReadScope::BucketReadScope(std::span<const rocksdb::Slice> keys,
                                 std::span<const uint32_t> first, std::span<const uint64_t> rests)
    : keys_(keys), first_(first), rests_(rests) {
  assert(tls_bucket_read == nullptr && first.size() == keys.size() + 1);
  tls_bucket_read = this;
}

BucketReadScope::~BucketReadScope() { tls_bucket_read = nullptr; }

std::optional<std::span<const uint64_t>> BucketReadScope::WantedRests(std::string_view key) {
  const BucketReadScope* scope = tls_bucket_read;
  if (scope == nullptr) return std::nullopt;
  const rocksdb::Slice k = AsSlice(key);
  const auto at = std::lower_bound(scope->keys_.begin(), scope->keys_.end(), k,
                                   [](const rocksdb::Slice& a, const rocksdb::Slice& b) {
                                     return a.compare(b) < 0;
                                   });
  if (at == scope->keys_.end() || *at != k) return std::nullopt;
  const auto i = static_cast<size_t>(at - scope->keys_.begin());
  return scope->rests_.subspan(scope->first_[i], scope->first_[i + 1] - scope->first_[i]);
}

absl::StatusOr<std::unique_ptr<IndexDb>> IndexDb::Open(const IndexOptions& options) {
  COPS_RETURN_IF_ERROR(ValidateOptions(options));
  std::unique_ptr<IndexDb> opened(new IndexDb());
  opened->options_ = options;
  opened->cache_ = options.block_cache == "hyper-clock"
                       ? rocksdb::HyperClockCacheOptions(options.block_cache_bytes,
                                                         size_t{options.postings_block_kb} << 10)
                             .MakeSharedCache()
                       : rocksdb::NewLRUCache(options.block_cache_bytes);

  rocksdb::DBOptions db_options;
  db_options.create_if_missing = options.create_if_missing;
  db_options.create_missing_column_families = true;
  db_options.max_background_jobs = std::max(1, options.background_jobs);
  db_options.max_subcompactions = static_cast<uint32_t>(std::max(1, options.max_subcompactions));
  db_options.bytes_per_sync = 1 << 20;
  db_options.max_open_files = -1;  // every SST stays open: its filter and index stay in memory
  // The postings' memtables take one writer at a time (storage/memtable_rep.h): a write
  // group's leader inserts its members' batches itself.
  db_options.allow_concurrent_memtable_write = false;
  // Never a row cache: a bucket read under a BucketReadScope returns a value merged for the
  // hashes it asked for only, which a row cache would keep and serve as the whole bucket.
  db_options.keep_log_file_num = 3;
  // The WAL is kept until every memtable with data in it is flushed: room for each shard's
  // full write buffer, the texts' and the small column families', beyond which RocksDB
  // flushes early (small level-0 files).
  db_options.max_total_wal_size = 8 * options.write_buffer_bytes;
  db_options.info_log_level = rocksdb::InfoLogLevel::WARN_LEVEL;
  db_options.allow_mmap_reads = options.mmap_reads;
  // An incomplete last log record (a write a crash cut short, never acknowledged) is dropped;
  // a record whose checksum fails is corruption and the open fails (DATA_LOSS). RocksDB's
  // default, point-in-time recovery, would silently stop replaying there and drop every
  // acknowledged write after it.
  db_options.wal_recovery_mode = rocksdb::WALRecoveryMode::kTolerateCorruptedTailRecords;
  db_options.paranoid_checks = true;
  if (options.env != nullptr) db_options.env = options.env;

  const bool exists = std::filesystem::exists(std::filesystem::path(options.path) / "CURRENT");
  if (!exists && (options.read_only || !options.create_if_missing)) {
    return absl::NotFoundError("index " + options.path + " does not exist");
  }
  // The shard count: the existing index's column families, or the option for a new one.
  uint32_t shards = options.postings_shards;
  uint32_t bucket_shards = 0;
  bool with_verify = true;
  // The stem pairs' family is made with an index whose parameters ask for pairs, and opened
  // whenever present (the parameters recorded in its meta data say the same).
  bool with_stem_pairs = options.params.stem_pairs != 0;
  if (!exists && options.bucketed_postings) {
    bucket_shards = shards;
    shards = 1;
  }
  if (exists) {
    std::vector<std::string> names;
    rocksdb::Status listed = rocksdb::DB::ListColumnFamilies(db_options, options.path, &names);
    if (!listed.ok()) return FromRocks(listed, "opening index " + options.path);
    shards = 1;
    while (shards < kMaxPostingsShards &&
           std::find(names.begin(), names.end(), PostingsShardName(shards)) != names.end()) {
      ++shards;
    }
    if (!ValidShardCount(shards)) {
      return absl::DataLossError("index " + options.path + " has " + std::to_string(shards) +
                                 " postings shards; expected 1, 2 or 4");
    }
    while (bucket_shards < kMaxPostingsShards &&
           std::find(names.begin(), names.end(), BucketShardName(bucket_shards)) != names.end()) {
      ++bucket_shards;
    }
    if (bucket_shards != 0 && !ValidShardCount(bucket_shards)) {
      return absl::DataLossError("index " + options.path + " has " +
                                 std::to_string(bucket_shards) +
                                 " postings bucket families; expected 1, 2 or 4");
    }
    // A writable open creates the family in an index made before it existed.
    with_verify =
        !options.read_only || std::find(names.begin(), names.end(), kVerifyCf) != names.end();
    with_stem_pairs = std::find(names.begin(), names.end(), kStemPairsCf) != names.end();
  }
  opened->descriptors_ =
      Descriptors(options, opened->cache_, shards, bucket_shards, with_verify, with_stem_pairs);
  opened->hash_shard_count_ = shards;
  opened->bucket_shard_count_ = bucket_shards;
  opened->db_options_ = db_options;
  opened->postings_options_ = opened->descriptors_[kPostings].options;
  if (!options.read_only) {
    COPS_RETURN_IF_ERROR(CreateDirDurably(*db_options.env, options.path));
  }
  rocksdb::Status s = opened->OpenDb();
  if (!s.ok()) return FromRocks(s, "opening index " + options.path);
  COPS_RETURN_IF_ERROR(opened->LoadBucketLayout());
  COPS_RETURN_IF_ERROR(opened->LoadStemPairsLayout());
  return opened;
}

absl::Status IndexDb::LoadStemPairsLayout() {
  stem_pairs_layout_ = 0;
  if (stem_pairs_ == nullptr) return absl::OkStatus();
  COPS_ASSIGN_OR_RETURN(auto recorded,
                        Get(kMeta, kStemPairsLayoutKey, "reading the stem pairs' layout"));
  if (!recorded.has_value()) {
    // A new index gets the merged layout (IndexMeta records it); one made before the layout
    // was recorded keeps its key per pair and holder, read and written as it is.
    stem_pairs_layout_ = created_ ? kStemPairsLayoutMerged : kStemPairsLayoutKeys;
    return absl::OkStatus();
  }
  std::string_view v = *recorded;
  uint64_t layout;
  if (!codec::GetVarint64(&v, &layout) || !v.empty()) {
    return absl::DataLossError("index " + options_.path + ": malformed stem pairs layout");
  }
  if (layout != kStemPairsLayoutKeys && layout != kStemPairsLayoutMerged) {
    return absl::FailedPreconditionError(
        "index " + options_.path + " keeps its content-stem pairs in layout " +
        std::to_string(layout) + ", unknown to this build (it reads 1 and 2)");
  }
  stem_pairs_layout_ = static_cast<uint32_t>(layout);
  return absl::OkStatus();
}

absl::Status IndexDb::LoadBucketLayout() {
  const IndexOptions& o = options_;
  COPS_ASSIGN_OR_RETURN(auto recorded, Get(kMeta, kBucketLayoutKey, "reading the bucket layout"));
  if (!recorded.has_value()) {
    COPS_ASSIGN_OR_RETURN(auto schema, Get(kMeta, kSchemaVersionKey, "reading schema version"));
    created_ = !schema.has_value();
    // A new index gets buckets when asked for and its families were created with it (an
    // index whose first open was cut short before its meta data was written may lack them).
    if (created_ && !o.read_only && o.bucketed_postings && !bucket_shards_.empty()) {
      bucket_layout_ = bucket_codec::BucketLayout{
          o.postings_bucket_bits != 0 ? o.postings_bucket_bits
                                      : bucket_codec::BucketBitsFor(o.expected_documents),
          o.postings_hash_bits != 0 ? o.postings_hash_bits : o.new_index_hash_bits};
    }
    return absl::OkStatus();
  }
  std::string_view v = *recorded;
  uint64_t bucket_bits, hash_bits;
  if (!codec::GetVarint64(&v, &bucket_bits) || !codec::GetVarint64(&v, &hash_bits) ||
      bucket_bits > 64 || hash_bits > 64) {
    return absl::DataLossError("index " + o.path + ": malformed postings bucket layout");
  }
  const bucket_codec::BucketLayout layout{static_cast<uint32_t>(bucket_bits),
                                          static_cast<uint32_t>(hash_bits)};
  if (!layout.Validate().ok() || bucket_shards_.empty()) {
    return absl::DataLossError("index " + o.path + ": postings bucket layout " +
                               std::to_string(bucket_bits) + "/" + std::to_string(hash_bits) +
                               " impossible or its column families missing");
  }
  // Explicit options must agree with what the index was built with, as the chunking
  // parameters must (expected_documents only picks the bits of a new index).
  if ((o.postings_bucket_bits != 0 && o.postings_bucket_bits != layout.bucket_bits) ||
      (o.postings_hash_bits != 0 && o.postings_hash_bits != layout.hash_bits)) {
    return absl::FailedPreconditionError(
        "index " + o.path + " was built with other postings buckets (index vs requested): "
        "bucket bits " + std::to_string(layout.bucket_bits) + " vs " +
        std::to_string(o.postings_bucket_bits) + ", hash bits " +
        std::to_string(layout.hash_bits) + " vs " + std::to_string(o.postings_hash_bits));
  }
  bucket_layout_ = layout;
  return absl::OkStatus();
}

absl::Status IndexDb::RecreateBucketShards(uint32_t shards) {
  const auto first = static_cast<std::ptrdiff_t>(kNumCfs + hash_shard_count_ - 1);
  for (rocksdb::ColumnFamilyHandle* h : bucket_shards_) {
    COPS_RETURN_IF_ERROR(FromRocks(db_->DropColumnFamily(h), "dropping old postings buckets"));
    db_->DestroyColumnFamilyHandle(h);
  }
  cfs_.erase(cfs_.begin() + first, cfs_.begin() + first + bucket_shard_count_);
  descriptors_.erase(descriptors_.begin() + first,
                     descriptors_.begin() + first + bucket_shard_count_);
  bucket_shards_.clear();
  bucket_shard_count_ = 0;
  std::vector<rocksdb::ColumnFamilyDescriptor> added =
      Descriptors(options_, cache_, 1, shards, /*with_verify=*/false);
  added.erase(added.begin(), added.begin() + kNumCfs);
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  COPS_RETURN_IF_ERROR(
      FromRocks(db_->CreateColumnFamilies(added, &handles), "creating postings buckets"));
  cfs_.insert(cfs_.begin() + first, handles.begin(), handles.end());
  descriptors_.insert(descriptors_.begin() + first, added.begin(), added.end());
  bucket_shards_ = handles;
  bucket_shard_count_ = shards;
  return absl::OkStatus();
}

absl::Status IndexDb::DropHashPostings() {
  for (size_t i = 1; i < shards_.size(); ++i) {
    COPS_RETURN_IF_ERROR(
        FromRocks(db_->DropColumnFamily(shards_[i]), "dropping the per-hash postings"));
    db_->DestroyColumnFamilyHandle(shards_[i]);
  }
  const auto first = static_cast<std::ptrdiff_t>(kNumCfs);
  cfs_.erase(cfs_.begin() + first, cfs_.begin() + first + hash_shard_count_ - 1);
  descriptors_.erase(descriptors_.begin() + first,
                     descriptors_.begin() + first + hash_shard_count_ - 1);
  hash_shard_count_ = 1;
  shards_.assign(1, cfs_[kPostings]);
  // The first family is one of the fixed ones: emptied, not dropped. Chunk keys are 8 bytes.
  const std::string end(9, '\xff');
  rocksdb::WriteOptions w;
  w.sync = true;
  COPS_RETURN_IF_ERROR(FromRocks(db_->DeleteRange(w, cfs_[kPostings], "", end),
                                 "deleting the per-hash postings"));
  rocksdb::CompactRangeOptions c;
  c.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  return FromRocks(db_->CompactRange(c, cfs_[kPostings], nullptr, nullptr),
                   "compacting the emptied per-hash postings");
}

rocksdb::Status IndexDb::OpenDb() {
  rocksdb::Status s;
  if (options_.read_only) {
    s = rocksdb::DB::OpenForReadOnly(db_options_, options_.path, descriptors_, &cfs_, &db_);
  } else {
    s = rocksdb::DB::Open(db_options_, options_.path, descriptors_, &cfs_, &db_);
  }
  if (!s.ok()) {
    db_ = nullptr;
    cfs_.clear();
    return s;
  }
  // The per-hash postings shards follow the fixed families in descriptors_, then the bucket
  // families; the verification grams' family and the stem pairs' (when present) come last.
  verify_ = stem_pairs_ = nullptr;
  for (size_t i = kNumCfs; i < descriptors_.size(); ++i) {
    if (descriptors_[i].name == kVerifyCf) verify_ = cfs_[i];
    if (descriptors_[i].name == kStemPairsCf) stem_pairs_ = cfs_[i];
  }
  shards_.assign(1, cfs_[kPostings]);
  for (size_t shard = 1; shard < hash_shard_count_; ++shard) {
    shards_.push_back(cfs_[kNumCfs + shard - 1]);
  }
  bucket_shards_.clear();
  for (size_t shard = 0; shard < bucket_shard_count_; ++shard) {
    bucket_shards_.push_back(cfs_[kNumCfs + hash_shard_count_ - 1 + shard]);
  }
  return s;
}

absl::Status IndexDb::Reopen() {
  return FromRocks(OpenDb(), "reopening index " + options_.path + " after a write error");
}

void IndexDb::Close() {
  if (db_ == nullptr) return;
  for (auto* h : cfs_) {
    if (h != nullptr) db_->DestroyColumnFamilyHandle(h);
  }
  cfs_.clear();
  shards_.clear();
  bucket_shards_.clear();
  verify_ = nullptr;
  stem_pairs_ = nullptr;
  db_->Close();  // status ignored: the database is reopened or the index destroyed
  delete db_;
  db_ = nullptr;
}

IndexDb::~IndexDb() { Close(); }

rocksdb::Status IndexDb::Write(rocksdb::WriteBatch* b) const {
  return Write(b, WriteOpts().sync);
}

rocksdb::Status IndexDb::Write(rocksdb::WriteBatch* b, bool sync) const {
  rocksdb::WriteOptions w = WriteOpts();
  w.sync = sync;
  rocksdb::Status s = db_->Write(w, b);
  NoteWriteError(s);
  written_since_read_.fetch_add(b->GetDataSize(), std::memory_order_relaxed);
  return s;
}

void IndexDb::NoteWriteError(const rocksdb::Status& s) const {
  if (s.IsIOError()) write_failed_.store(true);
}

absl::Status IndexDb::FlushAll() const {
  rocksdb::FlushOptions f;
  f.wait = true;
  rocksdb::Status s = db_->Flush(f, cfs_);
  NoteWriteError(s);
  return FromRocks(s, "flushing index " + options_.path);
}

absl::Status IndexDb::ProbeSpace() const {
  // Room for what a reopen writes (a new log and manifest) and the next few writes.
  constexpr size_t kProbeBytes = 1u << 20;
  rocksdb::Env* env = db_options_.env;
  const std::string probe = options_.path + "/SPACE_PROBE";
  std::unique_ptr<rocksdb::WritableFile> file;
  rocksdb::Status s = env->NewWritableFile(probe, &file, rocksdb::EnvOptions());
  if (s.ok()) s = file->Append(std::string(kProbeBytes, '\0'));
  if (s.ok()) s = file->Sync();
  if (file != nullptr) file->Close().PermitUncheckedError();
  env->DeleteFile(probe).PermitUncheckedError();
  if (s.ok()) return absl::OkStatus();
  return FromRocks(s, "index " + options_.path +
                          ": an earlier write failed and the disk has no space yet; writes "
                          "resume once space is freed");
}

rocksdb::WriteOptions IndexDb::WriteOpts() const {
  rocksdb::WriteOptions w;
  w.sync = options_.sync_writes;
  return w;
}

absl::Status IndexDb::CheckWritable() const {
  if (options_.read_only) {
    return absl::FailedPreconditionError("index " + options_.path + " is open read-only");
  }
  return CheckSpace();
}

namespace {

absl::StatusOr<uint64_t> FreeDiskBytes(const std::string& path) {
  struct statvfs fs {};
  if (statvfs(path.c_str(), &fs) != 0) {
    return absl::UnavailableError("statvfs " + path + ": " + std::strerror(errno));
  }
  // f_bavail: the blocks an unprivileged process may use (copsd need not run as root).
  return static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
}

}  // namespace

absl::Status IndexDb::CheckSpace() const {
  constexpr int64_t kRereadNs = 100'000'000;
  constexpr uint64_t kRereadBytes = 1u << 20;
  const uint64_t reserve = options_.min_free_disk_mb << 20;
  if (reserve == 0) return absl::OkStatus();
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  const int64_t read_at = free_read_ns_.load(std::memory_order_relaxed);
  const bool stale = read_at == 0 || now - read_at >= kRereadNs ||
                     written_since_read_.load(std::memory_order_relaxed) >= kRereadBytes ||
                     free_bytes_.load(std::memory_order_relaxed) < reserve;
  if (stale) {
    absl::StatusOr<uint64_t> free = options_.free_disk_bytes ? options_.free_disk_bytes(options_.path)
                                                             : FreeDiskBytes(options_.path);
    // Unknown free space does not stop writes: RocksDB's own errors remain.
    if (!free.ok()) return absl::OkStatus();
    free_bytes_.store(*free, std::memory_order_relaxed);
    written_since_read_.store(0, std::memory_order_relaxed);
    free_read_ns_.store(now, std::memory_order_relaxed);
  }
  if (free_bytes_.load(std::memory_order_relaxed) >= reserve) return absl::OkStatus();
  return absl::ResourceExhaustedError(
      "index " + options_.path + ": the data directory's file system has less than " +
      std::to_string(options_.min_free_disk_mb) +
      " MiB free (copsd --min-free-disk-mb); writes resume once space is freed");
}

absl::StatusOr<std::optional<std::string>> IndexDb::Get(rocksdb::ColumnFamilyHandle* family,
                                                        std::string_view key,
                                                        std::string_view what) const {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), family, AsSlice(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return FromRocks(s, what);
  return std::optional<std::string>(std::move(value));
}

absl::Status IndexDb::CompactSideBySide(const rocksdb::CompactRangeOptions& c,
                                        std::span<rocksdb::ColumnFamilyHandle* const> families,
                                        const std::string& what) const {
  std::vector<rocksdb::Status> compacted(families.size());
  {
    std::vector<std::thread> threads;
    for (size_t i = 1; i < families.size(); ++i) {
      threads.emplace_back(
          [&, i] { compacted[i] = db_->CompactRange(c, families[i], nullptr, nullptr); });
    }
    if (!families.empty()) compacted[0] = db_->CompactRange(c, families[0], nullptr, nullptr);
    for (auto& t : threads) t.join();
  }
  for (const auto& st : compacted) {
    if (st.IsManualCompactionPaused()) {
      return absl::AbortedError(what +
                                " was interrupted (the index is closing); automatic "
                                "compaction finishes it after the index is opened again");
    }
    COPS_RETURN_IF_ERROR(FromRocks(st, what));
  }
  return absl::OkStatus();
}

}  // namespace cops
