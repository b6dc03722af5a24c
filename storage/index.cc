#include "storage/index.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "core/scratch.h"
#include "core/status_macros.h"
#include "rocksdb/cache.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/merge_operator.h"
#include "rocksdb/options.h"
#include "rocksdb/slice_transform.h"
#include "rocksdb/snapshot.h"
#include "rocksdb/table.h"
#include "rocksdb/write_batch.h"
#include "storage/codec.h"
#include "storage/parallel_parts.h"
#include "storage/rocks_checkpoint.h"
#include "storage/rocks_dir.h"
#include "storage/rocks_status.h"

namespace cops {
namespace {

namespace codec = storage_codec;

// Column family names. on-disk: do not change.
constexpr char kMetaCf[] = "default";
constexpr char kPostingsCf[] = "postings";
constexpr char kDocumentsCf[] = "documents";
constexpr char kDocChunksCf[] = "doc_chunks";
constexpr char kExternalIdsCf[] = "external_ids";
constexpr char kSha256Cf[] = "sha256";
constexpr char kTextsCf[] = "texts";
// Verification grams (created with every index since verify_k; an older index opened
// read-only may lack it). Kept outside CfIndex: its handle is Rep::verify.
constexpr char kVerifyCf[] = "verify";

// Positions in Rep::cfs; the order of kCfNames.
enum CfIndex { kMeta = 0, kPostings, kDocuments, kDocChunks, kExternalIds, kSha256, kTexts, kNumCfs };
constexpr const char* kCfNames[kNumCfs] = {kMetaCf,        kPostingsCf, kDocumentsCf, kDocChunksCf,
                                           kExternalIdsCf, kSha256Cf,   kTextsCf};

// The postings may be split by the top bits of the chunk hash over 1, 2 or 4 column
// families ("shards"): shard 0 is kPostingsCf, shard i > 0 is kPostingsCf + "." + i. Each
// shard is its own LSM tree, so their flushes and compactions run in parallel (RocksDB
// splits one level-0 compaction into parallel parts poorly when every file spans the whole
// hash space). The shard count is fixed when the index is created and read back from the
// column families present. on-disk: do not change the naming.
constexpr uint32_t kMaxPostingsShards = 4;
bool ValidShardCount(uint32_t n) { return n == 1 || n == 2 || n == 4; }
std::string PostingsShardName(uint32_t shard) {
  return shard == 0 ? std::string(kPostingsCf) : std::string(kPostingsCf) + "." + std::to_string(shard);
}

// Meta keys. on-disk: do not change.
constexpr char kSchemaVersionKey[] = "schema_version";  // varint
constexpr char kParamsKey[] = "chunking_params";        // ChunkingParams::Encode()
constexpr char kKeyIdKey[] = "key_id";                  // params.key_id, for people and tools
constexpr char kNextDocIdKey[] = "next_doc_id";         // varint
constexpr char kCountersKey[] = "counters";  // varint documents, postings, text_bytes
// Registration-log sequence of the last applied event (replication/); absent = 0.
constexpr char kAppliedLogSequenceKey[] = "applied_log_sequence";  // varint
// The identity of the log stream those events came from (replication/); absent = none yet.
constexpr char kLogStreamKey[] = "log_stream";  // text, e.g. "COPS_REGISTRATIONS@<ns>"
// Expiry order: kExpiryPrefix + BE64 expiry (micros) + BE64 document id -> empty, one per
// document with an expiry, written and deleted in the batches that write and delete it.
constexpr char kExpiryPrefix[] = "expiry/";

// Name recorded in the OPTIONS file: a reopen must use the same operator. on-disk: do not change.
constexpr char kMergeOperatorName[] = "cops.PostingListMerge";

class PostingListMerge : public rocksdb::MergeOperator {
 public:
  explicit PostingListMerge(uint32_t max_postings) : max_postings_(max_postings) {}
  bool FullMergeV2(const MergeOperationInput& in, MergeOperationOutput* out) const override {
    std::optional<std::string_view> existing;
    if (in.existing_value != nullptr) existing = in.existing_value->ToStringView();
    std::vector<std::string_view> ops;
    ops.reserve(in.operand_list.size());
    for (const rocksdb::Slice& s : in.operand_list) ops.push_back(s.ToStringView());
    return codec::MergePostings(existing, ops, max_postings_, &out->new_value);
  }
  const char* Name() const override { return kMergeOperatorName; }

 private:
  const uint32_t max_postings_;
};

rocksdb::Slice AsSlice(std::string_view s) { return rocksdb::Slice(s.data(), s.size()); }

std::string ExternalIdKey(std::string_view collection, std::string_view external_id) {
  std::string k;
  codec::PutLengthPrefixed(&k, collection);
  k.append(external_id);
  return k;
}

// Key of the duplicate map (schema 2): the collection, then the canonical text's SHA-256.
// At least 33 bytes, so never equal to a schema-1 key (the 32-byte digest alone).
std::string DuplicateKey(std::string_view collection, const std::array<uint8_t, 32>& sha) {
  std::string k;
  codec::PutLengthPrefixed(&k, collection);
  k.append(reinterpret_cast<const char*>(sha.data()), sha.size());
  return k;
}
constexpr size_t kSchema1DuplicateKeyBytes = 32;
// Documents whose duplicate-map entries one write batch of the schema-1 upgrade rewrites.
constexpr size_t kUpgradeBatchDocuments = 4096;

std::string ExpiryKey(int64_t expires_unix_micros, DocId id) {
  std::string k(kExpiryPrefix);
  codec::PutFixed64BE(&k, static_cast<uint64_t>(expires_unix_micros));
  codec::PutFixed64BE(&k, id);
  return k;
}

bool HasLifetime(const DocumentRecord& r) {
  return r.expires_unix_micros != 0 || r.not_before_unix_micros != 0;
}

std::string VarintValue(uint64_t v) {
  std::string s;
  codec::PutVarint64(&s, v);
  return s;
}

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

rocksdb::CompressionType Pick(std::initializer_list<rocksdb::CompressionType> preferred) {
  const auto supported = rocksdb::GetSupportedCompressions();
  for (auto c : preferred) {
    if (std::find(supported.begin(), supported.end(), c) != supported.end()) return c;
  }
  return rocksdb::kNoCompression;
}

struct Counters {
  uint64_t documents = 0;
  uint64_t postings = 0;
  uint64_t text_bytes = 0;
};

std::string EncodeCounters(const Counters& c) {
  std::string s;
  codec::PutVarint64(&s, c.documents);
  codec::PutVarint64(&s, c.postings);
  codec::PutVarint64(&s, c.text_bytes);
  return s;
}

}  // namespace

struct Index::Rep {
  IndexOptions options;
  std::shared_ptr<rocksdb::Cache> cache;
  // Owned; closed in ~Rep after the handles. nullptr only after a failed reopen (Recover).
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> cfs;
  // What `db` was opened with, for reopening it.
  rocksdb::DBOptions db_options;
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;

  // Held shared by every call for as long as it uses `db`, the handles or an iterator of
  // them; exclusive while Recover closes and reopens the database. (`db` and the handles
  // are not annotated ABSL_GUARDED_BY(db_mu): every helper of Rep reads them, and the
  // entry points, which hold the lock, are the place to see it.) Taken before write_mu.
  mutable absl::Mutex db_mu;
  // Set when a write or flush failed on an I/O error (a full disk): RocksDB then refuses
  // every later write. RocksDB 7.8's DB::Resume keeps the failed log writer when every
  // memtable is empty (the next write then fails an assertion in Debian's build), so the
  // next write probes for free space and reopens the database instead (Recover).
  std::atomic<bool> write_failed{false};
  // `db` is nullptr: a reopen failed; every call tries again.
  std::atomic<bool> closed{false};
  absl::Mutex recover_mu;  // serializes Recover
  // AbortManualCompactions was called: applied again to a reopened database.
  std::atomic<bool> manual_compactions_aborted{false};

  // Serializes writers (Register, Unregister): the external-id and duplicate checks and the
  // id assignment must not interleave. Readers never take it.
  absl::Mutex write_mu;
  DocId next_doc_id ABSL_GUARDED_BY(write_mu) = 1;
  // Mirrors the meta key; written only under write_mu, read without it.
  std::atomic<uint64_t> applied_log_sequence{0};
  Counters counters ABSL_GUARDED_BY(write_mu);
  // The schema the index records (codec::kSchemaVersionBase or ...Lifetimes).
  uint64_t schema_version ABSL_GUARDED_BY(write_mu) = codec::kSchemaVersionBase;
  // Serializes BeginBulkLoad/EndBulkLoad; bulk_loading mirrors the mode for readers.
  absl::Mutex bulk_mu;
  std::atomic<bool> bulk_loading{false};
  // Mirrors of the counters for Stats() without the writer lock.
  std::atomic<uint64_t> documents{0}, postings{0}, text_bytes{0};

  // Index::WarmBlockCache.
  absl::StatusOr<uint64_t> WarmBlockCache(double fill, const std::function<bool()>& stop) const {
    const auto target = static_cast<uint64_t>(fill * static_cast<double>(cache->GetCapacity()));
    std::vector<rocksdb::ColumnFamilyHandle*> order = shards;
    if (verify != nullptr) order.push_back(verify);
    order.push_back(cf(kDocuments));
    rocksdb::ReadOptions read;
    read.fill_cache = true;
    read.readahead_size = 2u << 20;  // the files are read in order: large reads
    // Asked every this many keys: a few milliseconds of reading.
    constexpr uint32_t kKeysPerStep = 4096;
    for (rocksdb::ColumnFamilyHandle* family : order) {
      std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, family));
      uint32_t keys = 0;
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        if (++keys % kKeysPerStep == 0 && (cache->GetUsage() >= target || stop())) {
          return cache->GetUsage();
        }
      }
      COPS_RETURN_IF_ERROR(FromRocks(it->status(), "warming the block cache"));
    }
    return cache->GetUsage();
  }

  // StartWarmingBlockCache's thread; stopped and joined before the database closes.
  std::thread warm_thread;
  std::atomic<bool> stop_warming{false};
  std::atomic<bool> warming{false};

  ~Rep() {
    stop_warming.store(true, std::memory_order_release);
    if (warm_thread.joinable()) warm_thread.join();
    CloseDb();
  }

  rocksdb::ColumnFamilyHandle* cf(CfIndex i) const { return cfs[i]; }
  // The verification grams' column family (the last of cfs); nullptr when absent.
  rocksdb::ColumnFamilyHandle* verify = nullptr;

  // Postings shards: handles (shard 0 is cfs[kPostings]; the others follow kNumCfs in cfs)
  // and the shift that maps a hash to its shard (64 with one shard).
  std::vector<rocksdb::ColumnFamilyHandle*> shards;
  int shard_shift = 64;
  uint32_t ShardOf(ChunkHash h) const {
    return shard_shift >= 64 ? 0 : static_cast<uint32_t>(h >> shard_shift);
  }
  rocksdb::ColumnFamilyHandle* PostingsCf(ChunkHash h) const { return shards[ShardOf(h)]; }
  // The shards' column-family ids increase with the shard (they are created in order), so
  // keys sorted by hash are sorted by (column family, key) as a multi-family MultiGet wants.
  bool shard_ids_ascending = true;
  // Runs the parts of a large Lookup batch (IndexOptions::lookup_threads).
  std::unique_ptr<ParallelParts> lookup_parts;
  // Lookup calls in progress. A batch is split only when it is the only one: with several
  // checks running, the cores are busy already, and a part handed to a worker would wait
  // for a core while its caller waits for the part.
  mutable std::atomic<int> lookups_in_flight{0};

  rocksdb::WriteOptions WriteOpts() const {
    rocksdb::WriteOptions w;
    w.sync = options.sync_writes;
    return w;
  }

  // db->Write(WriteOpts(), b), noting an I/O error for Recover.
  rocksdb::Status Write(rocksdb::WriteBatch* b) {
    rocksdb::Status s = db->Write(WriteOpts(), b);
    if (s.IsIOError()) write_failed.store(true);
    return s;
  }

  // UNAVAILABLE while the database is closed after a failed reopen. REQUIRES: db_mu held.
  absl::Status CheckOpen() const {
    if (db != nullptr) return absl::OkStatus();
    return absl::UnavailableError("index " + options.path +
                                  " is closed after a write error; it is reopened once the "
                                  "disk has space again");
  }

  // Before a call takes db_mu: when the database is closed, or when `writing` and an
  // earlier write failed on an I/O error, checks that the disk has space again, then
  // closes and reopens the database under db_mu held exclusively (calls in flight finish
  // first, later ones wait). RESOURCE_EXHAUSTED while the disk is still full; nothing
  // acknowledged is lost either way (every acknowledged write is in the log).
  absl::Status Recover(bool writing);
  // Flushes every memtable, noting an I/O error for Recover. REQUIRES: db_mu held.
  absl::Status FlushAll() {
    rocksdb::FlushOptions f;
    f.wait = true;
    rocksdb::Status s = db->Flush(f, cfs);
    if (s.IsIOError()) write_failed.store(true);
    return FromRocks(s, "flushing index " + options.path);
  }
  // Writes and syncs a small file beside the database, then removes it.
  absl::Status ProbeSpace() const;
  // Opens `db` and the handles from db_options and descriptors. REQUIRES: db == nullptr.
  rocksdb::Status OpenDb();
  // Closes `db` (handles first). REQUIRES: no call uses it.
  void CloseDb();

  // NOT_FOUND as std::nullopt; other errors as status.
  absl::StatusOr<std::optional<std::string>> Get(CfIndex c, std::string_view key,
                                                 std::string_view what) const {
    std::string value;
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), cf(c), AsSlice(key), &value);
    if (s.IsNotFound()) return std::optional<std::string>();
    if (!s.ok()) return FromRocks(s, what);
    return std::optional<std::string>(std::move(value));
  }

  // Runs one CompactRange per column family, all at once (one thread each; RocksDB's
  // background pool bounds how many compact together). A compaction interrupted by
  // AbortManualCompactions gives ABORTED.
  absl::Status CompactSideBySide(const rocksdb::CompactRangeOptions& c,
                                 std::span<rocksdb::ColumnFamilyHandle* const> families,
                                 const std::string& what) const {
    std::vector<rocksdb::Status> compacted(families.size());
    {
      std::vector<std::thread> threads;
      for (size_t i = 1; i < families.size(); ++i) {
        threads.emplace_back(
            [&, i] { compacted[i] = db->CompactRange(c, families[i], nullptr, nullptr); });
      }
      if (!families.empty()) compacted[0] = db->CompactRange(c, families[0], nullptr, nullptr);
      for (auto& t : threads) t.join();
    }
    for (const auto& st : compacted) {
      if (st.IsManualCompactionPaused()) {
        return absl::AbortedError(what + " was interrupted (the index is closing); automatic "
                                  "compaction finishes it after the index is opened again");
      }
      COPS_RETURN_IF_ERROR(FromRocks(st, what));
    }
    return absl::OkStatus();
  }

  absl::Status CheckWritable() const {
    if (options.read_only) {
      return absl::FailedPreconditionError("index " + options.path + " is open read-only");
    }
    return absl::OkStatus();
  }

  void PublishCounters() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu) {
    documents.store(counters.documents, std::memory_order_relaxed);
    postings.store(counters.postings, std::memory_order_relaxed);
    text_bytes.store(counters.text_bytes, std::memory_order_relaxed);
  }

  absl::Status LoadOrInitMeta() ABSL_NO_THREAD_SAFETY_ANALYSIS;
  // Schema 1 -> 2 (see codec::kSchemaVersion); called by a writable open.
  absl::Status UpgradeDuplicateMap();

  // The schema the index is in: codec::kSchemaVersionBase or newer, or older in a read-only
  // open (a writable one records kSchemaVersionLifetimes in schema_version, not here).
  uint64_t schema = codec::kSchemaVersionBase;
  // FAILED_PRECONDITION unless the duplicate map is keyed by collection (schema >= 2).
  absl::Status CheckListsCollections() const;

  // Adds to `b` the removal of document `id` (whose stored record is `record`): its
  // postings, record, chunk list, text, grams, expiry entry, and the external-id and
  // duplicate entries that point at it; updates `next`.
  absl::Status AddRemoval(DocId id, const DocumentRecord& record, rocksdb::WriteBatch* b,
                          Counters* next) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu);
};

namespace {

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
  return cf;
}

std::vector<rocksdb::ColumnFamilyDescriptor> Descriptors(
    const IndexOptions& o, const std::shared_ptr<rocksdb::Cache>& cache, uint32_t shards,
    bool with_verify) {
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
      if (o.bloom_bits_per_key > 0) {
        t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(o.bloom_bits_per_key));
        t.whole_key_filtering = true;
      }
      cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
      cf.compression = ParseCompression(o.postings_compression).value_or(cf.compression);
      cf.merge_operator = std::make_shared<PostingListMerge>(o.max_postings_per_chunk);
      cf.memtable_whole_key_filtering = o.bloom_bits_per_key > 0;
      // One insert hint for the whole memtable (an empty prefix): a write's operands are in
      // key order, so each insert starts from where the previous one ended and climbs the
      // skip list only as far as the gap to its neighbour, instead of searching from the top.
      cf.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(0));
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
      cf.compression = Pick({rocksdb::kZSTD, rocksdb::kLZ4Compression, rocksdb::kSnappyCompression});
      cf.write_buffer_size = std::min<size_t>(o.write_buffer_bytes, 32u << 20);
    } else {
      // Small column families: small memtables.
      cf.write_buffer_size = std::min<size_t>(o.write_buffer_bytes, 16u << 20);
    }
    d.emplace_back(kCfNames[i], cf);
  }
  for (uint32_t shard = 1; shard < shards; ++shard) {
    d.emplace_back(PostingsShardName(shard), d[kPostings].options);
  }
  if (with_verify) {
    // Point reads of one value per candidate (2 bytes per word of the document); grams
    // are keyed hashes, which no compressor shrinks.
    rocksdb::ColumnFamilyOptions cf = BaseCfOptions(o, cache);
    cf.write_buffer_size = std::min<size_t>(o.write_buffer_bytes, 32u << 20);
    cf.compression = rocksdb::kNoCompression;
    rocksdb::BlockBasedTableOptions t = SmallTableOptions(cache);
    t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
    d.emplace_back(kVerifyCf, cf);
  }
  return d;
}

}  // namespace

namespace {

// The postings options a bulk load changes and their values while it runs (RocksDB's
// SetOptions takes strings); EndBulkLoad restores the values the index was opened with.
const std::unordered_map<std::string, std::string>& BulkLoadOptions() {
  static const auto* options = new std::unordered_map<std::string, std::string>{
      {"disable_auto_compactions", "true"},
      {"level0_slowdown_writes_trigger", "1000000"},
      {"level0_stop_writes_trigger", "1000000"},
  };
  return *options;
}

}  // namespace

absl::Status Index::Rep::LoadOrInitMeta() {
  const std::string& path = options.path;
  COPS_ASSIGN_OR_RETURN(auto version, Get(kMeta, kSchemaVersionKey, "reading schema version"));
  if (!version.has_value()) {
    if (options.read_only) {
      return absl::FailedPreconditionError("index " + path + " has no COPS meta data");
    }
    COPS_RETURN_IF_ERROR(options.params.Validate());
    rocksdb::WriteBatch b;
    b.Put(cf(kMeta), kSchemaVersionKey, VarintValue(codec::kSchemaVersionBase));
    b.Put(cf(kMeta), kParamsKey, options.params.Encode());
    b.Put(cf(kMeta), kKeyIdKey, options.params.key_id);
    b.Put(cf(kMeta), kNextDocIdKey, VarintValue(1));
    b.Put(cf(kMeta), kCountersKey, EncodeCounters(Counters{}));
    rocksdb::WriteOptions w;
    w.sync = true;
    return FromRocks(db->Write(w, &b), "initializing index " + path);
  }
  std::string_view v = *version;
  uint64_t schema;
  if (!codec::GetVarint64(&v, &schema)) {
    return absl::DataLossError("index " + path + ": malformed schema version");
  }
  if (schema > codec::kSchemaVersion) {
    return absl::FailedPreconditionError(
        "index " + path + " has schema version " + std::to_string(schema) +
        ", newer than this build's " + std::to_string(codec::kSchemaVersion));
  }
  COPS_ASSIGN_OR_RETURN(auto params, Get(kMeta, kParamsKey, "reading chunking parameters"));
  if (!params.has_value()) {
    return absl::DataLossError("index " + path + ": chunking parameters missing");
  }
  COPS_ASSIGN_OR_RETURN(ChunkingParams stored, ChunkingParams::Decode(*params));
  if (!(stored == options.params)) {
    return absl::FailedPreconditionError("index " + path +
                                         " was built with other chunking parameters (index vs "
                                         "requested): " +
                                         stored.DiffWith(options.params));
  }
  this->schema = schema;
  // A read-only open of an older schema works as is: only writes read the duplicate map.
  if (schema < codec::kSchemaVersionBase && !options.read_only) {
    COPS_RETURN_IF_ERROR(UpgradeDuplicateMap());
    this->schema = codec::kSchemaVersionBase;
  }
  schema_version = this->schema;
  COPS_ASSIGN_OR_RETURN(auto next, Get(kMeta, kNextDocIdKey, "reading next document id"));
  COPS_ASSIGN_OR_RETURN(auto counters_value, Get(kMeta, kCountersKey, "reading counters"));
  if (!next.has_value() || !counters_value.has_value()) {
    return absl::DataLossError("index " + path + ": meta data incomplete");
  }
  std::string_view n = *next, c = *counters_value;
  if (!codec::GetVarint64(&n, &next_doc_id) || !codec::GetVarint64(&c, &counters.documents) ||
      !codec::GetVarint64(&c, &counters.postings) ||
      !codec::GetVarint64(&c, &counters.text_bytes)) {
    return absl::DataLossError("index " + path + ": malformed meta data");
  }
  COPS_ASSIGN_OR_RETURN(auto applied, Get(kMeta, kAppliedLogSequenceKey, "reading log sequence"));
  if (applied.has_value()) {
    std::string_view a = *applied;
    uint64_t sequence = 0;
    if (!codec::GetVarint64(&a, &sequence)) {
      return absl::DataLossError("index " + path + ": malformed applied log sequence");
    }
    applied_log_sequence.store(sequence);
  }
  PublishCounters();
  return absl::OkStatus();
}

absl::Status Index::Rep::UpgradeDuplicateMap() {
  // The map is rebuilt from the document records, in batches: until the last batch records
  // schema 2, a crash leaves schema 1 recorded and the next open redoes the upgrade (every
  // step is idempotent). Schema-1 keys (32 bytes) never equal schema-2 keys (33+ bytes).
  const std::string what = "upgrading the duplicate map of index " + options.path;
  rocksdb::WriteOptions w;
  w.sync = true;
  rocksdb::WriteBatch b;
  auto flush_if_full = [&](size_t* in_batch) -> absl::Status {
    if (++*in_batch < kUpgradeBatchDocuments) return absl::OkStatus();
    *in_batch = 0;
    absl::Status written = FromRocks(db->Write(w, &b), what);
    b.Clear();
    return written;
  };
  size_t in_batch = 0;
  std::unique_ptr<rocksdb::Iterator> docs(db->NewIterator(rocksdb::ReadOptions(), cf(kDocuments)));
  for (docs->SeekToFirst(); docs->Valid(); docs->Next()) {
    if (docs->key().size() != 8) return absl::DataLossError("malformed document key");
    DocumentRecord record;
    COPS_RETURN_IF_ERROR(codec::DecodeDocumentRecord(codec::DecodeFixed64BE(docs->key().data()),
                                                     docs->value().ToStringView(), &record));
    b.Put(cf(kSha256), DuplicateKey(record.collection, record.sha256), docs->key());
    COPS_RETURN_IF_ERROR(flush_if_full(&in_batch));
  }
  COPS_RETURN_IF_ERROR(FromRocks(docs->status(), what));
  std::unique_ptr<rocksdb::Iterator> old(db->NewIterator(rocksdb::ReadOptions(), cf(kSha256)));
  for (old->SeekToFirst(); old->Valid(); old->Next()) {
    if (old->key().size() != kSchema1DuplicateKeyBytes) continue;
    b.Delete(cf(kSha256), old->key());
    COPS_RETURN_IF_ERROR(flush_if_full(&in_batch));
  }
  COPS_RETURN_IF_ERROR(FromRocks(old->status(), what));
  b.Put(cf(kMeta), kSchemaVersionKey, VarintValue(codec::kSchemaVersionBase));
  return FromRocks(db->Write(w, &b), what);
}

rocksdb::Status Index::Rep::OpenDb() {
  rocksdb::Status s;
  if (options.read_only) {
    s = rocksdb::DB::OpenForReadOnly(db_options, options.path, descriptors, &cfs, &db);
  } else {
    s = rocksdb::DB::Open(db_options, options.path, descriptors, &cfs, &db);
  }
  if (!s.ok()) {
    db = nullptr;
    cfs.clear();
    return s;
  }
  // The postings shards follow the fixed families in `descriptors`, the verification
  // grams' family (when present) comes last.
  const bool with_verify = descriptors.back().name == kVerifyCf;
  const size_t shard_count = descriptors.size() - kNumCfs - (with_verify ? 1 : 0) + 1;
  shards.assign(1, cfs[kPostings]);
  for (size_t shard = 1; shard < shard_count; ++shard) shards.push_back(cfs[kNumCfs + shard - 1]);
  verify = with_verify ? cfs.back() : nullptr;
  shard_shift = shard_count == 1 ? 64 : 64 - std::countr_zero(shard_count);
  shard_ids_ascending = true;
  for (size_t i = 1; i < shards.size(); ++i) {
    shard_ids_ascending &= shards[i - 1]->GetID() < shards[i]->GetID();
  }
  return s;
}

void Index::Rep::CloseDb() {
  if (db == nullptr) return;
  for (auto* h : cfs) {
    if (h != nullptr) db->DestroyColumnFamilyHandle(h);
  }
  cfs.clear();
  shards.clear();
  verify = nullptr;
  db->Close();  // status ignored: the database is reopened or the index destroyed
  delete db;
  db = nullptr;
}

absl::Status Index::Rep::ProbeSpace() const {
  // Room for what a reopen writes (a new log and manifest) and the next few writes.
  constexpr size_t kProbeBytes = 1u << 20;
  rocksdb::Env* env = db_options.env;
  const std::string probe = options.path + "/SPACE_PROBE";
  std::unique_ptr<rocksdb::WritableFile> file;
  rocksdb::Status s = env->NewWritableFile(probe, &file, rocksdb::EnvOptions());
  if (s.ok()) s = file->Append(std::string(kProbeBytes, '\0'));
  if (s.ok()) s = file->Sync();
  if (file != nullptr) file->Close().PermitUncheckedError();
  env->DeleteFile(probe).PermitUncheckedError();
  if (s.ok()) return absl::OkStatus();
  return FromRocks(s, "index " + options.path +
                          ": an earlier write failed and the disk has no space yet; writes "
                          "resume once space is freed");
}

absl::Status Index::Rep::Recover(bool writing) {
  if (!closed.load() && (!writing || !write_failed.load())) return absl::OkStatus();
  if (options.read_only) return absl::OkStatus();
  absl::MutexLock serial(&recover_mu);
  if (!closed.load() && !write_failed.load()) return absl::OkStatus();  // recovered meanwhile
  COPS_RETURN_IF_ERROR(ProbeSpace());
  stop_warming.store(true, std::memory_order_release);  // a warm-up gives way
  absl::MutexLock exclusive(&db_mu);
  absl::MutexLock writer(&write_mu);
  CloseDb();
  closed.store(true);
  rocksdb::Status s = OpenDb();
  if (!s.ok()) return FromRocks(s, "reopening index " + options.path + " after a write error");
  closed.store(false);
  stop_warming.store(false, std::memory_order_release);
  // The counters and the next id as the database has them; ids handed to writes that
  // failed stay unused.
  const DocId next_before = next_doc_id;
  COPS_RETURN_IF_ERROR(LoadOrInitMeta());
  next_doc_id = std::max(next_doc_id, next_before);
  if (bulk_loading.load()) {
    for (auto* shard : shards) {
      COPS_RETURN_IF_ERROR(FromRocks(db->SetOptions(shard, BulkLoadOptions()),
                                     "restarting a bulk load after a reopen"));
    }
  }
  if (manual_compactions_aborted.load()) db->DisableManualCompaction();
  write_failed.store(false);
  return absl::OkStatus();
}

Index::Index(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
Index::~Index() = default;

absl::StatusOr<std::unique_ptr<Index>> Index::Open(const IndexOptions& options) {
  COPS_RETURN_IF_ERROR(ValidateOptions(options));
  auto rep = std::make_unique<Rep>();
  rep->options = options;
  rep->cache = options.block_cache == "hyper-clock"
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
  bool with_verify = true;
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
    // A writable open creates the family in an index made before it existed.
    with_verify = !options.read_only ||
                  std::find(names.begin(), names.end(), kVerifyCf) != names.end();
  }
  rep->descriptors = Descriptors(options, rep->cache, shards, with_verify);
  rep->db_options = db_options;
  if (!options.read_only) {
    COPS_RETURN_IF_ERROR(CreateDirDurably(*db_options.env, options.path));
  }
  rocksdb::Status s = rep->OpenDb();
  if (!s.ok()) return FromRocks(s, "opening index " + options.path);
  rep->lookup_parts = std::make_unique<ParallelParts>(options.lookup_threads - 1);
  COPS_RETURN_IF_ERROR(rep->LoadOrInitMeta());
  return std::unique_ptr<Index>(new Index(std::move(rep)));
}

const ChunkingParams& Index::params() const { return rep_->options.params; }

// A document made ready for writing outside the writer lock: its postings grouped by hash.
struct Index::Prepared {
  const DocumentRecord* record = nullptr;
  const DocumentFingerprint* fp = nullptr;
  std::string_view text;
  DocId fixed_id = 0;   // RegisterAs; 0 assigns the next id
  std::string ext_key;  // empty: no external id
  std::string sha_key;
  std::vector<ChunkHash> hashes;  // sorted; hashes[i] is the hash of postings[i]
  std::vector<Posting> postings;  // sorted by (hash, ordinal); doc_id set when written
  absl::StatusOr<RegisterOutcome> outcome = absl::UnknownError("not written");
  bool ready = false;  // input valid; WriteGroup decides the outcome

  Prepared(const DocumentRecord& r, const DocumentFingerprint& f, std::string_view t, DocId id)
      : record(&r), fp(&f), text(t), fixed_id(id) {
    for (const Chunk& c : f.chunks) {
      if (c.end < c.start) {
        outcome =
            absl::InvalidArgumentError("chunk " + std::to_string(c.ordinal) + ": end before start");
        return;
      }
    }
    // One merge operand per distinct hash: group the postings by hash.
    std::vector<std::pair<ChunkHash, Posting>> by_hash;
    by_hash.reserve(f.chunks.size());
    for (const Chunk& c : f.chunks)
      by_hash.push_back({c.hash, Posting{0, c.ordinal, c.start, c.end}});
    std::sort(by_hash.begin(), by_hash.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second.ordinal < b.second.ordinal;
    });
    postings.reserve(by_hash.size());
    hashes.reserve(by_hash.size());
    for (const auto& [h, p] : by_hash) {
      hashes.push_back(h);
      postings.push_back(p);
    }
    if (!r.external_id.empty()) ext_key = ExternalIdKey(r.collection, r.external_id);
    sha_key = DuplicateKey(r.collection, f.sha256);
    ready = true;
  }
};

absl::StatusOr<RegisterOutcome> Index::Register(const DocumentRecord& record,
                                                const DocumentFingerprint& fp,
                                                std::string_view text,
                                                uint64_t log_sequence) {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  COPS_RETURN_IF_ERROR(rep_->CheckWritable());
  Prepared p(record, fp, text, /*id=*/0);
  if (!p.ready) return p.outcome.status();
  Prepared* group[] = {&p};
  COPS_RETURN_IF_ERROR(WriteGroup(group, log_sequence));
  return std::move(p.outcome);
}

absl::Status Index::RegisterBatch(std::span<const RegisterItem> items,
                                  std::vector<absl::StatusOr<RegisterOutcome>>* out) {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  out->clear();
  COPS_RETURN_IF_ERROR(rep_->CheckWritable());
  std::vector<Prepared> prepared;
  prepared.reserve(items.size());
  std::vector<Prepared*> group;
  group.reserve(items.size());
  for (const RegisterItem& item : items) {
    prepared.emplace_back(*item.record, *item.fp, item.text, /*id=*/0);
    if (prepared.back().ready) group.push_back(&prepared.back());
  }
  absl::Status written = WriteGroup(group);
  out->reserve(items.size());
  for (Prepared& p : prepared) out->push_back(std::move(p.outcome));
  return written;
}

absl::Status Index::RegisterAs(const DocumentRecord& record, const DocumentFingerprint& fp,
                               std::string_view text) {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  if (record.id == 0) return absl::InvalidArgumentError("RegisterAs needs a document id");
  COPS_RETURN_IF_ERROR(rep_->CheckWritable());
  Prepared p(record, fp, text, record.id);
  if (!p.ready) return p.outcome.status();
  Prepared* group[] = {&p};
  COPS_RETURN_IF_ERROR(WriteGroup(group));
  COPS_ASSIGN_OR_RETURN(RegisterOutcome outcome, std::move(p.outcome));
  if (!outcome.created) {
    return absl::AlreadyExistsError("document " + std::to_string(record.id) +
                                    ": its external id or text is already registered as document " +
                                    std::to_string(outcome.id));
  }
  return absl::OkStatus();
}

DocId Index::NextDocId() const {
  absl::MutexLock lock(&rep_->write_mu);
  return rep_->next_doc_id;
}

absl::Status Index::RaiseNextDocId(DocId next) {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  Rep& r = *rep_;
  COPS_RETURN_IF_ERROR(r.CheckWritable());
  absl::MutexLock lock(&r.write_mu);
  if (next <= r.next_doc_id) return absl::OkStatus();
  rocksdb::WriteBatch b;
  b.Put(r.cf(kMeta), kNextDocIdKey, VarintValue(next));
  COPS_RETURN_IF_ERROR(FromRocks(r.Write(&b), "raising the next document id"));
  r.next_doc_id = next;
  return absl::OkStatus();
}

namespace {

absl::Status CheckLogSequence(uint64_t log_sequence, uint64_t applied) {
  if (log_sequence != 0 && log_sequence <= applied) {
    return absl::AbortedError("log event " + std::to_string(log_sequence) +
                              " is already applied (applied up to " + std::to_string(applied) +
                              ")");
  }
  return absl::OkStatus();
}

}  // namespace

uint64_t Index::AppliedLogSequence() const { return rep_->applied_log_sequence.load(); }

absl::Status Index::SkipLogSequence(uint64_t log_sequence) {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  Rep& r = *rep_;
  COPS_RETURN_IF_ERROR(r.CheckWritable());
  if (log_sequence == 0) return absl::InvalidArgumentError("log sequence 0");
  absl::MutexLock lock(&r.write_mu);
  COPS_RETURN_IF_ERROR(CheckLogSequence(log_sequence, r.applied_log_sequence.load()));
  rocksdb::WriteBatch b;
  b.Put(r.cf(kMeta), kAppliedLogSequenceKey, VarintValue(log_sequence));
  COPS_RETURN_IF_ERROR(FromRocks(r.Write(&b),
                                 "recording log event " + std::to_string(log_sequence)));
  r.applied_log_sequence.store(log_sequence);
  return absl::OkStatus();
}

absl::StatusOr<std::string> Index::LogStreamIdentity() const {
  COPS_ASSIGN_OR_RETURN(std::optional<std::string> identity,
                        rep_->Get(kMeta, kLogStreamKey, "reading the log stream's identity"));
  return identity.value_or("");
}

absl::Status Index::RecordLogStreamIdentity(std::string_view identity) {
  Rep& r = *rep_;
  COPS_RETURN_IF_ERROR(r.CheckWritable());
  absl::MutexLock lock(&r.write_mu);
  rocksdb::WriteBatch b;
  b.Put(r.cf(kMeta), kLogStreamKey, AsSlice(identity));
  rocksdb::WriteOptions w = r.WriteOpts();
  w.sync = true;  // rare, and what every later apply is checked against
  return FromRocks(r.db->Write(w, &b), "recording the log stream's identity");
}

absl::Status Index::WriteGroup(std::span<Prepared*> group, uint64_t log_sequence) {
  Rep& r = *rep_;
  if (group.empty()) return absl::OkStatus();
  absl::MutexLock lock(&r.write_mu);
  COPS_RETURN_IF_ERROR(CheckLogSequence(log_sequence, r.applied_log_sequence.load()));
  // External ids and texts created earlier in this group, for the ones repeated in it.
  std::unordered_map<std::string_view, DocId> new_ext, new_sha;
  std::vector<Prepared*> created;
  created.reserve(group.size());
  Counters next = r.counters;
  DocId next_id = r.next_doc_id;
  bool lifetimes = false;  // a created document has an expiry or an embargo
  const int64_t now = NowMicros();
  // Whether document `id`, named by the external-id or duplicate map, had expired by
  // `when`: it is then neither the earlier registration nor a duplicate of a new document,
  // which takes over the map entry (docs/storage-format.md). Only an index that has used
  // lifetimes holds expiries, so others read nothing more.
  const bool may_hold_expiries = r.schema_version >= codec::kSchemaVersionLifetimes;
  auto expired_by = [&](DocId id, int64_t when) -> absl::StatusOr<bool> {
    if (!may_hold_expiries) return false;
    COPS_ASSIGN_OR_RETURN(auto value, r.Get(kDocuments, codec::DocKey(id), "reading document"));
    if (!value.has_value()) return false;
    DocumentRecord existing;
    COPS_RETURN_IF_ERROR(codec::DecodeDocumentRecord(id, *value, &existing));
    return existing.expires_unix_micros != 0 && existing.expires_unix_micros <= when;
  };
  rocksdb::WriteBatch b;
  // Decides each outcome in order and adds the created documents' records to `b`.
  auto decide = [&]() -> absl::Status {
    for (Prepared* p : group) {
      const DocumentRecord& record = *p->record;
      const int64_t registered =
          record.registered_unix_micros != 0 ? record.registered_unix_micros : now;
      if (!p->ext_key.empty()) {
        if (auto it = new_ext.find(p->ext_key); it != new_ext.end()) {
          p->outcome = RegisterOutcome{it->second, false, std::nullopt};
          continue;
        }
        COPS_ASSIGN_OR_RETURN(auto existing,
                              r.Get(kExternalIds, p->ext_key, "reading external id"));
        if (existing.has_value()) {
          if (existing->size() != 8) return absl::DataLossError("malformed external id entry");
          const DocId id = codec::DecodeFixed64BE(existing->data());
          COPS_ASSIGN_OR_RETURN(const bool expired, expired_by(id, registered));
          if (!expired) {
            p->outcome = RegisterOutcome{id, false, std::nullopt};
            continue;
          }
        }
      }
      if (auto it = new_sha.find(p->sha_key); it != new_sha.end()) {
        p->outcome = RegisterOutcome{it->second, false, it->second};
        continue;
      }
      COPS_ASSIGN_OR_RETURN(auto dup, r.Get(kSha256, p->sha_key, "reading duplicate map"));
      if (dup.has_value()) {
        if (dup->size() != 8) return absl::DataLossError("malformed duplicate map entry");
        const DocId id = codec::DecodeFixed64BE(dup->data());
        COPS_ASSIGN_OR_RETURN(const bool expired, expired_by(id, registered));
        if (!expired) {
          p->outcome = RegisterOutcome{id, false, id};
          continue;
        }
      }
      if (p->fixed_id != 0) {
        const std::string what = "reading document " + std::to_string(p->fixed_id);
        COPS_ASSIGN_OR_RETURN(auto taken, r.Get(kDocuments, codec::DocKey(p->fixed_id), what));
        const bool taken_here = std::any_of(created.begin(), created.end(), [&](const Prepared* c) {
          return c->outcome->id == p->fixed_id;
        });
        if (taken.has_value() || taken_here) {
          p->outcome = absl::AlreadyExistsError("document " + std::to_string(p->fixed_id) +
                                                " is already registered");
          continue;
        }
      }
      const DocId id = p->fixed_id != 0 ? p->fixed_id : next_id;
      next_id = std::max(next_id, id + 1);
      DocumentRecord stored = record;
      stored.id = id;
      stored.sha256 = p->fp->sha256;
      stored.total_chunks = p->fp->total_chunks;
      stored.stored_chunks = static_cast<uint32_t>(p->fp->chunks.size());
      if (stored.size_bytes == 0) stored.size_bytes = p->fp->input_bytes;
      stored.registered_unix_micros = registered;
      const std::string doc_key = codec::DocKey(id);
      const bool keep_text = r.options.store_texts && !p->text.empty();

      std::string chunk_list;  // the document's distinct hashes, for Unregister
      chunk_list.reserve(p->hashes.size() * 8);
      for (size_t i = 0; i < p->hashes.size(); ++i) {
        p->postings[i].doc_id = id;
        if (i == 0 || p->hashes[i] != p->hashes[i - 1])
          codec::PutFixed64BE(&chunk_list, p->hashes[i]);
      }
      b.Put(r.cf(kDocuments), doc_key, codec::EncodeDocumentRecord(stored));
      b.Put(r.cf(kDocChunks), doc_key, chunk_list);
      if (!p->ext_key.empty()) b.Put(r.cf(kExternalIds), p->ext_key, doc_key);
      b.Put(r.cf(kSha256), p->sha_key, doc_key);
      if (keep_text) b.Put(r.cf(kTexts), doc_key, AsSlice(p->text));
      if (r.verify != nullptr && !p->fp->grams.empty()) {
        b.Put(r.verify, doc_key, codec::EncodeGrams(p->fp->grams));
      }
      if (stored.expires_unix_micros != 0) {
        b.Put(r.cf(kMeta), ExpiryKey(stored.expires_unix_micros, id), "");
      }
      lifetimes |= HasLifetime(stored);
      next.documents += 1;
      next.postings += p->postings.size();
      if (keep_text) next.text_bytes += p->text.size();
      p->outcome = RegisterOutcome{id, true, std::nullopt};
      created.push_back(p);
      if (!p->ext_key.empty()) new_ext.emplace(p->ext_key, id);
      new_sha.emplace(p->sha_key, id);
    }
    return absl::OkStatus();
  };
  if (absl::Status s = decide(); !s.ok()) {
    for (Prepared* p : group) p->outcome = s;
    return s;
  }

  // The postings of all created documents in (hash, document) order: consecutive keys land
  // next to each other in the memtable's skip list, whose insert then resumes from the
  // previous position instead of descending from the top.
  struct Run {
    ChunkHash hash;
    DocId doc;
    const Posting* begin;
    uint32_t size;
  };
  std::vector<Run> runs;
  size_t total = 0;
  for (const Prepared* p : created) total += p->hashes.size();
  runs.reserve(total);
  for (const Prepared* p : created) {
    for (size_t i = 0; i < p->hashes.size();) {
      size_t j = i + 1;
      while (j < p->hashes.size() && p->hashes[j] == p->hashes[i]) ++j;
      runs.push_back(
          Run{p->hashes[i], p->outcome->id, p->postings.data() + i, static_cast<uint32_t>(j - i)});
      i = j;
    }
  }
  if (created.size() > 1) {
    std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& c) {
      return a.hash != c.hash ? a.hash < c.hash : a.doc < c.doc;
    });
  }
  char key[8];
  std::string operand;
  for (const Run& run : runs) {
    codec::EncodeFixed64BE(key, run.hash);
    operand = codec::EncodeAddOperand(run.doc, std::span<const Posting>(run.begin, run.size));
    b.Merge(r.PostingsCf(run.hash), rocksdb::Slice(key, 8), operand);
  }
  if (log_sequence != 0) b.Put(r.cf(kMeta), kAppliedLogSequenceKey, VarintValue(log_sequence));
  if (created.empty() && log_sequence == 0) return absl::OkStatus();
  b.Put(r.cf(kMeta), kNextDocIdKey, VarintValue(next_id));
  b.Put(r.cf(kMeta), kCountersKey, EncodeCounters(next));
  const bool upgrade = lifetimes && r.schema_version < codec::kSchemaVersionLifetimes;
  if (upgrade) {
    b.Put(r.cf(kMeta), kSchemaVersionKey, VarintValue(codec::kSchemaVersionLifetimes));
  }
  // Ids are never reused, even when this write fails; except a log event's: its retry is
  // the same event, which must get the same id on every node (docs/scale-out.md).
  const DocId previous_next_id = r.next_doc_id;
  r.next_doc_id = next_id;
  const std::string what =
      created.size() == 1 ? "registering document " + std::to_string(created[0]->outcome->id)
                          : "registering " + std::to_string(created.size()) + " documents";
  absl::Status written = FromRocks(r.Write(&b), what);
  if (!written.ok()) {
    if (log_sequence != 0) r.next_doc_id = previous_next_id;
    for (Prepared* p : created) p->outcome = written;
    return written;
  }
  r.counters = next;
  if (log_sequence != 0) r.applied_log_sequence.store(log_sequence);
  r.PublishCounters();
  if (upgrade) r.schema_version = codec::kSchemaVersionLifetimes;
  return absl::OkStatus();
}

absl::Status Index::Rep::AddRemoval(DocId id, const DocumentRecord& record,
                                    rocksdb::WriteBatch* b, Counters* next) const {
  const std::string doc_key = codec::DocKey(id);
  const std::string what = "unregistering document " + std::to_string(id);
  COPS_ASSIGN_OR_RETURN(auto chunk_list, Get(kDocChunks, doc_key, what));
  if (!chunk_list.has_value() || chunk_list->size() % 8 != 0) {
    return absl::DataLossError("document " + std::to_string(id) + ": chunk list missing");
  }
  COPS_ASSIGN_OR_RETURN(auto text, Get(kTexts, doc_key, what));
  const std::string remove = codec::EncodeRemoveOperand(id);
  for (size_t off = 0; off < chunk_list->size(); off += 8) {
    const char* key = chunk_list->data() + off;
    b->Merge(PostingsCf(codec::DecodeFixed64BE(key)), rocksdb::Slice(key, 8), remove);
  }
  b->Delete(cf(kDocuments), doc_key);
  b->Delete(cf(kDocChunks), doc_key);
  b->Delete(cf(kTexts), doc_key);
  if (verify != nullptr) b->Delete(verify, doc_key);
  if (record.expires_unix_micros != 0) {
    b->Delete(cf(kMeta), ExpiryKey(record.expires_unix_micros, id));
  }
  // The maps may point at another document only if they were never ours; delete only ours.
  if (!record.external_id.empty()) {
    const std::string ext_key = ExternalIdKey(record.collection, record.external_id);
    COPS_ASSIGN_OR_RETURN(auto ext, Get(kExternalIds, ext_key, what));
    if (ext.has_value() && *ext == doc_key) b->Delete(cf(kExternalIds), ext_key);
  }
  const std::string sha_key = DuplicateKey(record.collection, record.sha256);
  COPS_ASSIGN_OR_RETURN(auto sha, Get(kSha256, sha_key, what));
  if (sha.has_value() && *sha == doc_key) b->Delete(cf(kSha256), sha_key);

  next->documents -= std::min<uint64_t>(next->documents, 1);
  next->postings -= std::min<uint64_t>(next->postings, record.stored_chunks);
  if (text.has_value()) next->text_bytes -= std::min<uint64_t>(next->text_bytes, text->size());
  return absl::OkStatus();
}

absl::Status Index::Unregister(DocId id, uint64_t log_sequence) {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  Rep& r = *rep_;
  COPS_RETURN_IF_ERROR(r.CheckWritable());
  const std::string what = "unregistering document " + std::to_string(id);
  absl::MutexLock lock(&r.write_mu);
  COPS_RETURN_IF_ERROR(CheckLogSequence(log_sequence, r.applied_log_sequence.load()));
  rocksdb::WriteBatch b;
  if (log_sequence != 0) b.Put(r.cf(kMeta), kAppliedLogSequenceKey, VarintValue(log_sequence));
  COPS_ASSIGN_OR_RETURN(auto value, r.Get(kDocuments, codec::DocKey(id), what));
  if (!value.has_value()) {
    if (log_sequence != 0) {
      COPS_RETURN_IF_ERROR(FromRocks(r.Write(&b), what));
      r.applied_log_sequence.store(log_sequence);
    }
    return absl::NotFoundError("document " + std::to_string(id) + " is not registered");
  }
  DocumentRecord record;
  COPS_RETURN_IF_ERROR(codec::DecodeDocumentRecord(id, *value, &record));
  Counters next = r.counters;
  COPS_RETURN_IF_ERROR(r.AddRemoval(id, record, &b, &next));
  b.Put(r.cf(kMeta), kCountersKey, EncodeCounters(next));
  COPS_RETURN_IF_ERROR(FromRocks(r.Write(&b), what));
  r.counters = next;
  if (log_sequence != 0) r.applied_log_sequence.store(log_sequence);
  r.PublishCounters();
  return absl::OkStatus();
}

absl::StatusOr<size_t> Index::RemoveExpired(int64_t now_unix_micros, size_t max_documents) {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  Rep& r = *rep_;
  COPS_RETURN_IF_ERROR(r.CheckWritable());
  if (max_documents == 0) return absl::InvalidArgumentError("RemoveExpired needs a batch size");
  const std::string prefix = kExpiryPrefix;
  absl::MutexLock lock(&r.write_mu);
  for (;;) {
    // The expiry entries due by now, earliest first: (key, document id).
    std::vector<std::pair<std::string, DocId>> due;
    std::unique_ptr<rocksdb::Iterator> it(
        r.db->NewIterator(rocksdb::ReadOptions(), r.cf(kMeta)));
    for (it->Seek(prefix);
         it->Valid() && it->key().starts_with(prefix) && due.size() < max_documents;
         it->Next()) {
      if (it->key().size() != prefix.size() + 16) {
        return absl::DataLossError("malformed expiry entry");
      }
      const char* p = it->key().data() + prefix.size();
      if (static_cast<int64_t>(codec::DecodeFixed64BE(p)) > now_unix_micros) break;
      due.emplace_back(it->key().ToString(), codec::DecodeFixed64BE(p + 8));
    }
    if (!it->status().ok()) return FromRocks(it->status(), "reading expiries");
    it.reset();
    if (due.empty()) return 0;
    rocksdb::WriteBatch b;
    Counters next = r.counters;
    size_t removed = 0;
    for (const auto& [key, id] : due) {
      COPS_ASSIGN_OR_RETURN(auto value,
                            r.Get(kDocuments, codec::DocKey(id), "reading expired document"));
      DocumentRecord record;
      if (value.has_value()) {
        COPS_RETURN_IF_ERROR(codec::DecodeDocumentRecord(id, *value, &record));
      }
      if (!value.has_value() || ExpiryKey(record.expires_unix_micros, id) != key) {
        b.Delete(r.cf(kMeta), key);  // its document was removed by a build without expiries
        continue;
      }
      COPS_RETURN_IF_ERROR(r.AddRemoval(id, record, &b, &next));
      ++removed;
    }
    b.Put(r.cf(kMeta), kCountersKey, EncodeCounters(next));
    COPS_RETURN_IF_ERROR(FromRocks(r.Write(&b),
                                   "removing " + std::to_string(removed) + " expired documents"));
    r.counters = next;
    r.PublishCounters();
    // A batch of stale entries only removes nothing: look at the next one.
    if (removed > 0 || due.size() < max_documents) return removed;
  }
}

absl::StatusOr<std::vector<DocId>> Index::ExpiredDocuments(int64_t now_unix_micros,
                                                           size_t limit) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  const Rep& r = *rep_;
  const std::string prefix = kExpiryPrefix;
  std::vector<DocId> due;
  std::unique_ptr<rocksdb::Iterator> it(r.db->NewIterator(rocksdb::ReadOptions(), r.cf(kMeta)));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix) && due.size() < limit;
       it->Next()) {
    if (it->key().size() != prefix.size() + 16) {
      return absl::DataLossError("malformed expiry entry");
    }
    const char* p = it->key().data() + prefix.size();
    const auto expires = static_cast<int64_t>(codec::DecodeFixed64BE(p));
    if (expires > now_unix_micros) break;
    const DocId id = codec::DecodeFixed64BE(p + 8);
    COPS_ASSIGN_OR_RETURN(auto value,
                          r.Get(kDocuments, codec::DocKey(id), "reading expired document"));
    if (!value.has_value()) continue;  // a stale entry: RemoveExpired drops those
    DocumentRecord record;
    COPS_RETURN_IF_ERROR(codec::DecodeDocumentRecord(id, *value, &record));
    if (record.expires_unix_micros == expires) due.push_back(id);
  }
  if (!it->status().ok()) return FromRocks(it->status(), "reading expiries");
  return due;
}

absl::StatusOr<DocumentRecord> Index::GetDocument(DocId id) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  COPS_ASSIGN_OR_RETURN(auto value, rep_->Get(kDocuments, codec::DocKey(id),
                                              "reading document " + std::to_string(id)));
  if (!value.has_value()) {
    return absl::NotFoundError("document " + std::to_string(id) + " is not registered");
  }
  DocumentRecord record;
  COPS_RETURN_IF_ERROR(codec::DecodeDocumentRecord(id, *value, &record));
  return record;
}

namespace {
// One MultiGet of the values keyed by these document ids in `cf`.
void MultiGetByDocId(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* cf,
                     std::span<const DocId> ids, std::vector<rocksdb::PinnableSlice>* values,
                     std::vector<rocksdb::Status>* statuses) {
  std::vector<std::string> keys(ids.size());
  std::vector<rocksdb::Slice> slices(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    keys[i] = codec::DocKey(ids[i]);
    slices[i] = keys[i];
  }
  *values = std::vector<rocksdb::PinnableSlice>(ids.size());
  statuses->assign(ids.size(), rocksdb::Status());
  db.MultiGet(rocksdb::ReadOptions(), cf, ids.size(), slices.data(), values->data(),
              statuses->data());
}
}  // namespace

absl::Status Index::GetDocuments(std::span<const DocId> ids,
                                 std::vector<std::optional<DocumentRecord>>* out) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  out->assign(ids.size(), std::nullopt);
  if (ids.empty()) return absl::OkStatus();
  std::vector<rocksdb::PinnableSlice> values;
  std::vector<rocksdb::Status> statuses;
  MultiGetByDocId(*rep_->db, rep_->cf(kDocuments), ids, &values, &statuses);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (statuses[i].IsNotFound()) continue;
    if (!statuses[i].ok()) return FromRocks(statuses[i], "reading document records");
    DocumentRecord record;
    COPS_RETURN_IF_ERROR(codec::DecodeDocumentRecord(ids[i], values[i].ToStringView(), &record));
    (*out)[i] = std::move(record);
  }
  return absl::OkStatus();
}

absl::Status Index::GetGrams(std::span<const DocId> ids,
                             std::vector<std::vector<uint32_t>>* out) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  out->resize(ids.size());
  for (auto& g : *out) g.clear();
  if (ids.empty() || rep_->verify == nullptr) return absl::OkStatus();
  std::vector<rocksdb::PinnableSlice> values;
  std::vector<rocksdb::Status> statuses;
  MultiGetByDocId(*rep_->db, rep_->verify, ids, &values, &statuses);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (statuses[i].IsNotFound()) continue;
    if (!statuses[i].ok()) return FromRocks(statuses[i], "reading verification grams");
    COPS_RETURN_IF_ERROR(codec::DecodeGrams(ids[i], values[i].ToStringView(), &(*out)[i]));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Index::GetText(DocId id) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  COPS_ASSIGN_OR_RETURN(auto value, rep_->Get(kTexts, codec::DocKey(id),
                                              "reading text of document " + std::to_string(id)));
  if (!value.has_value()) {
    return absl::NotFoundError("no text stored for document " + std::to_string(id));
  }
  return std::move(*value);
}

absl::StatusOr<DocumentPage> Index::ListDocuments(std::string_view page_token, size_t page_size,
                                                  std::string_view collection) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  page_size = std::clamp<size_t>(page_size, 1, 1000);
  DocId after = 0;
  if (!page_token.empty()) {
    // Token: the decimal id of the last document of the previous page.
    if (page_token.size() > 20 ||
        !std::all_of(page_token.begin(), page_token.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return absl::InvalidArgumentError("malformed page token");
    }
    const auto [end, error] =
        std::from_chars(page_token.data(), page_token.data() + page_token.size(), after);
    if (error != std::errc() || end != page_token.data() + page_token.size()) {
      return absl::InvalidArgumentError("malformed page token (beyond any document id)");
    }
    if (after == UINT64_MAX) return DocumentPage{};
  }
  DocumentPage page;
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(rocksdb::ReadOptions(), rep_->cf(kDocuments)));
  const std::string start = codec::DocKey(after + 1);
  DocId last = 0;
  for (it->Seek(start); it->Valid(); it->Next()) {
    if (it->key().size() != 8) return absl::DataLossError("malformed document key");
    const DocId id = codec::DecodeFixed64BE(it->key().data());
    if (page.documents.size() == page_size) {
      page.next_page_token = std::to_string(last);
      break;
    }
    DocumentRecord record;
    COPS_RETURN_IF_ERROR(codec::DecodeDocumentRecord(id, it->value().ToStringView(), &record));
    last = id;
    if (!collection.empty() && record.collection != collection) continue;
    page.documents.push_back(std::move(record));
  }
  if (!it->status().ok()) return FromRocks(it->status(), "listing documents");
  return page;
}

absl::Status Index::Rep::CheckListsCollections() const {
  if (schema >= 2) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "index " + options.path + " has schema version " + std::to_string(schema) +
      ", which cannot list its collections; open it writable once to upgrade it");
}

absl::StatusOr<bool> Index::HasCollection(std::string_view collection) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  const Rep& r = *rep_;
  COPS_RETURN_IF_ERROR(r.CheckListsCollections());
  std::string prefix;
  codec::PutLengthPrefixed(&prefix, collection);
  std::unique_ptr<rocksdb::Iterator> it(r.db->NewIterator(rocksdb::ReadOptions(), r.cf(kSha256)));
  it->Seek(prefix);
  // The length prefix makes `prefix` the start of this collection's keys and no other's.
  if (it->Valid()) return it->key().ToStringView().starts_with(prefix);
  COPS_RETURN_IF_ERROR(FromRocks(it->status(), "reading the duplicate map of " + r.options.path));
  return false;
}

absl::StatusOr<std::vector<std::string>> Index::Collections() const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  const Rep& r = *rep_;
  COPS_RETURN_IF_ERROR(r.CheckListsCollections());
  std::vector<std::string> out;
  std::unique_ptr<rocksdb::Iterator> it(r.db->NewIterator(rocksdb::ReadOptions(), r.cf(kSha256)));
  it->SeekToFirst();
  while (it->Valid()) {
    std::string_view rest = it->key().ToStringView();
    std::string_view collection;
    if (!codec::GetLengthPrefixed(&rest, &collection) || rest.size() != 32) {
      return absl::DataLossError("index " + r.options.path + ": malformed duplicate map key");
    }
    out.emplace_back(collection);
    // The collection's keys are its prefix and 32 digest bytes: one seek skips them all.
    std::string past(it->key().data(), it->key().size() - rest.size());
    past.append(33, '\xff');
    it->Seek(past);
  }
  COPS_RETURN_IF_ERROR(FromRocks(it->status(), "listing the collections of index " + r.options.path));
  std::sort(out.begin(), out.end());
  return out;
}

absl::Status Index::Lookup(std::span<const ChunkHash> hashes, std::vector<PostingList>* out) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  // Reused between calls on the same thread (a check is the hot path): no allocation once
  // the buffers and the caller's lists have grown to the batch size.
  struct Scratch {
    std::vector<uint32_t> order;
    std::vector<char> key_bytes;
    std::vector<rocksdb::Slice> keys;
    std::vector<rocksdb::ColumnFamilyHandle*> cfs;
    std::vector<rocksdb::PinnableSlice> values;
    std::vector<rocksdb::Status> statuses;
    std::vector<absl::Status> part_results;
  };
  // Scratch bytes per hash; a batch needing more than kScratchKeepBytes is released after
  // the call (core/scratch.h), so that one huge check does not stay resident on the thread.
  constexpr size_t kScratchBytesPerHash = sizeof(uint32_t) + 8 + sizeof(rocksdb::Slice) +
                                          sizeof(rocksdb::ColumnFamilyHandle*) +
                                          sizeof(rocksdb::PinnableSlice) + sizeof(rocksdb::Status);
  // Below this many hashes a part costs less than handing it to another thread.
  constexpr size_t kMinLookupPartKeys = 256;
  thread_local Scratch thread_scratch;
  // A reference, so that the parts run by other threads use this thread's scratch (a lambda
  // naming a thread_local reaches the running thread's own).
  Scratch& scratch = thread_scratch;
  const Rep& r = *rep_;
  const size_t n = hashes.size();
  out->resize(n);
  for (PostingList& l : *out) {
    l.doc_frequency = 0;
    l.postings.clear();
  }
  if (n == 0) return absl::OkStatus();
  // Sorted keys let MultiGet walk each SST file once; shards hold consecutive hash ranges,
  // so sorted keys are grouped by shard too.
  auto& order = scratch.order;
  order.resize(n);
  for (uint32_t i = 0; i < n; ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return hashes[a] < hashes[b]; });
  scratch.key_bytes.resize(n * 8);
  scratch.keys.resize(n);
  scratch.cfs.resize(n);
  if (scratch.values.size() < n) scratch.values.resize(n);
  scratch.statuses.resize(n);
  for (size_t i = 0; i < n; ++i) {
    char* p = scratch.key_bytes.data() + i * 8;
    const ChunkHash h = hashes[order[i]];
    codec::EncodeFixed64BE(p, h);
    scratch.keys[i] = rocksdb::Slice(p, 8);
    scratch.cfs[i] = r.PostingsCf(h);
  }
  // Parts of consecutive sorted keys, each one multi-family MultiGet, all under one
  // snapshot so that a batch never sees half of a concurrent registration.
  struct InFlight {
    std::atomic<int>& count;
    const bool alone = count.fetch_add(1, std::memory_order_relaxed) == 0;
    ~InFlight() { count.fetch_sub(1, std::memory_order_relaxed); }
  } in_flight{r.lookups_in_flight};
  const size_t parts =
      in_flight.alone ? std::min<size_t>(static_cast<size_t>(r.lookup_parts->workers()) + 1,
                                         std::max<size_t>(1, n / kMinLookupPartKeys))
                      : 1;
  std::optional<rocksdb::ManagedSnapshot> snapshot;
  rocksdb::ReadOptions read;
  if (parts > 1) read.snapshot = snapshot.emplace(r.db).snapshot();
  scratch.part_results.assign(parts, absl::OkStatus());
  r.lookup_parts->Run(parts, [&](size_t part) {
    const size_t begin = n * part / parts, end = n * (part + 1) / parts;
    r.db->MultiGet(read, end - begin, scratch.cfs.data() + begin, scratch.keys.data() + begin,
                   scratch.values.data() + begin, scratch.statuses.data() + begin,
                   /*sorted_input=*/r.shard_ids_ascending);
    absl::Status& result = scratch.part_results[part];
    for (size_t i = begin; i < end; ++i) {
      if (result.ok() && !scratch.statuses[i].IsNotFound()) {
        result = scratch.statuses[i].ok()
                     ? codec::DecodePostingList(scratch.values[i].ToStringView(), &(*out)[order[i]])
                     : FromRocks(scratch.statuses[i], "looking up chunk postings");
      }
      scratch.values[i].Reset();  // unpin the block before the next call
    }
  });
  absl::Status result;
  for (const absl::Status& s : scratch.part_results) result.Update(s);
  if (n * kScratchBytesPerHash > kScratchKeepBytes) scratch = Scratch();
  return result;
}

IndexStats Index::Stats() const {
  const Rep& r = *rep_;
  IndexStats s;
  s.documents = r.documents.load(std::memory_order_relaxed);
  s.postings = r.postings.load(std::memory_order_relaxed);
  s.text_bytes = r.text_bytes.load(std::memory_order_relaxed);
  s.block_cache_bytes = r.cache->GetUsage();
  absl::ReaderMutexLock open(&r.db_mu);
  if (r.db == nullptr) return s;  // closed after a write error: the counters only
  uint64_t v = 0;
  for (auto* shard : r.shards) {
    if (r.db->GetIntProperty(shard, "rocksdb.estimate-num-keys", &v)) s.chunk_keys += v;
    if (r.db->GetIntProperty(shard, rocksdb::DB::Properties::kTotalSstFilesSize, &v)) {
      s.postings_disk_bytes += v;
    }
  }
  for (auto* h : r.cfs) {
    if (r.db->GetIntProperty(h, rocksdb::DB::Properties::kTotalSstFilesSize, &v)) s.disk_bytes += v;
    if (r.db->GetIntProperty(h, rocksdb::DB::Properties::kEstimatePendingCompactionBytes, &v)) {
      s.pending_compaction_bytes += v;
    }
  }
  if (r.verify != nullptr &&
      r.db->GetIntProperty(r.verify, rocksdb::DB::Properties::kTotalSstFilesSize, &v)) {
    s.verify_disk_bytes = v;
  }
  s.postings_shards = static_cast<uint32_t>(r.shards.size());
  s.block_cache_warming = r.warming.load(std::memory_order_acquire);
  s.postings_files_per_level.assign(r.db->NumberLevels(r.shards[0]), 0);
  for (auto* shard : r.shards) {
    for (size_t level = 0; level < s.postings_files_per_level.size(); ++level) {
      std::string files;  // a string property (decimal)
      r.db->GetProperty(shard, "rocksdb.num-files-at-level" + std::to_string(level), &files);
      s.postings_files_per_level[level] +=
          static_cast<uint32_t>(std::strtoul(files.c_str(), nullptr, 10));
    }
  }
  if (r.db->GetIntProperty(rocksdb::DB::Properties::kNumRunningCompactions, &v)) {
    s.running_compactions = v;
  }
  rocksdb::VectorLogPtr wals;
  if (!r.options.read_only && r.db->GetSortedWalFiles(wals).ok()) {
    for (const auto& w : wals) s.disk_bytes += w->SizeFileBytes();
  }
  return s;
}

absl::StatusOr<uint64_t> Index::WarmBlockCache(double fill,
                                                const std::function<bool()>& stop) const {
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  return rep_->WarmBlockCache(fill, stop);
}

void Index::StartWarmingBlockCache(double fill) {
  Rep& r = *rep_;
  if (r.warming.exchange(true, std::memory_order_acq_rel)) return;
  if (r.warm_thread.joinable()) r.warm_thread.join();  // an earlier warm-up, finished
  r.warm_thread = std::thread([&r, fill] {
    // Linux applies a nice value to the one thread its id names.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
    // A failed read ends the warm-up early (Stats() shows what it cached); the checks then
    // read the files, as without one.
    {
      absl::ReaderMutexLock open(&r.db_mu);
      if (r.db != nullptr) {
        (void)r.WarmBlockCache(fill,
                               [&r] { return r.stop_warming.load(std::memory_order_acquire); });
      }
    }
    r.warming.store(false, std::memory_order_release);
  });
}

absl::Status Index::Flush() {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  return rep_->FlushAll();
}

absl::Status Index::Compact() {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  COPS_RETURN_IF_ERROR(rep_->CheckWritable());
  COPS_RETURN_IF_ERROR(rep_->FlushAll());
  rocksdb::CompactRangeOptions c;
  c.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForceOptimized;
  c.exclusive_manual_compaction = false;  // the column families side by side
  return rep_->CompactSideBySide(c, rep_->cfs, "compacting index " + rep_->options.path);
}

absl::Status Index::BeginBulkLoad() {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  Rep& r = *rep_;
  COPS_RETURN_IF_ERROR(r.CheckWritable());
  absl::MutexLock lock(&r.bulk_mu);
  if (r.bulk_loading.load()) return absl::OkStatus();
  for (auto* shard : r.shards) {
    COPS_RETURN_IF_ERROR(
        FromRocks(r.db->SetOptions(shard, BulkLoadOptions()), "starting a bulk load"));
  }
  r.bulk_loading.store(true);
  return absl::OkStatus();
}

absl::Status Index::EndBulkLoad() {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/true));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  Rep& r = *rep_;
  COPS_RETURN_IF_ERROR(r.CheckWritable());
  absl::MutexLock lock(&r.bulk_mu);
  if (!r.bulk_loading.load()) return absl::OkStatus();
  rocksdb::FlushOptions f;
  f.wait = true;
  rocksdb::Status flushed = r.db->Flush(f, r.shards);
  if (flushed.IsIOError()) r.write_failed.store(true);
  COPS_RETURN_IF_ERROR(FromRocks(flushed, "flushing a bulk load"));
  // One manual compaction of everything loaded per shard, all shards at once (one thread
  // each), while automatic compaction is still off: it would otherwise start on the
  // level-0 pile in pieces. Writes go on meanwhile.
  rocksdb::CompactRangeOptions c;
  c.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kIfHaveCompactionFilter;
  c.exclusive_manual_compaction = false;  // lets the shards' compactions run side by side
  COPS_RETURN_IF_ERROR(r.CompactSideBySide(c, r.shards, "the bulk load's compaction"));
  // Back to the options the index was opened with.
  const rocksdb::ColumnFamilyOptions opened =
      Descriptors(r.options, r.cache, 1, false)[kPostings].options;
  const std::unordered_map<std::string, std::string> restore = {
      {"disable_auto_compactions", opened.disable_auto_compactions ? "true" : "false"},
      {"level0_slowdown_writes_trigger", std::to_string(opened.level0_slowdown_writes_trigger)},
      {"level0_stop_writes_trigger", std::to_string(opened.level0_stop_writes_trigger)},
  };
  for (auto* shard : r.shards) {
    COPS_RETURN_IF_ERROR(FromRocks(r.db->SetOptions(shard, restore), "ending a bulk load"));
  }
  r.bulk_loading.store(false);
  return absl::OkStatus();
}

bool Index::bulk_loading() const { return rep_->bulk_loading.load(); }

void Index::AbortManualCompactions() {
  if (rep_->options.read_only) return;
  rep_->manual_compactions_aborted.store(true);
  absl::ReaderMutexLock open(&rep_->db_mu);
  if (rep_->db != nullptr) rep_->db->DisableManualCompaction();
}

absl::Status Index::WaitForCompactions(std::chrono::milliseconds poll) {
  for (;;) {
    COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
    uint64_t pending = 0, running = 0;
    {
      // Not held while sleeping: a reopen after a write error may come in between.
      absl::ReaderMutexLock open(&rep_->db_mu);
      COPS_RETURN_IF_ERROR(rep_->CheckOpen());
      if (!rep_->db->GetIntProperty(rocksdb::DB::Properties::kNumRunningCompactions, &running)) {
        return absl::InternalError("RocksDB does not report running compactions");
      }
      for (auto* h : rep_->cfs) {
        uint64_t p = 0;
        if (rep_->db->GetIntProperty(h, rocksdb::DB::Properties::kCompactionPending, &p)) {
          pending += p;
        }
      }
    }
    // During a bulk load RocksDB reports compactions pending that it will not run until
    // EndBulkLoad: only the running ones are waited for.
    if ((pending == 0 || rep_->bulk_loading.load()) && running == 0) return absl::OkStatus();
    std::this_thread::sleep_for(poll);
  }
}

absl::Status Index::CreateSnapshot(const std::string& dir) const {
  COPS_RETURN_IF_ERROR(rep_->Recover(/*writing=*/false));
  absl::ReaderMutexLock open(&rep_->db_mu);
  COPS_RETURN_IF_ERROR(rep_->CheckOpen());
  return CreateRocksCheckpoint(*rep_->db, dir);
}

}  // namespace cops
