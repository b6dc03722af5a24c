#include "storage/postings_store.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <optional>
#include <string>
#include <unordered_map>

#include "absl/strings/escaping.h"
#include "core/scratch.h"
#include "core/status_macros.h"
#include "rocksdb/snapshot.h"
#include "rocksdb/write_batch.h"
#include "storage/bucket_codec.h"
#include "storage/codec.h"
#include "storage/rocks_status.h"

namespace cops {
namespace {

namespace codec = storage_codec;

// The postings options a bulk load changes and their values while it runs (RocksDB's
// SetOptions takes strings); EndBulkLoad restores the values the index was opened with.
// Flushed blocks stay out of the block cache (IndexOptions::cache_flushed_blocks): an import
// is not checked as it runs, and copying its blocks there costs its flushes CPU.
const std::unordered_map<std::string, std::string> kBulkLoadOptions = {
    {"disable_auto_compactions", "true"},
    {"level0_slowdown_writes_trigger", "1000000"},
    {"level0_stop_writes_trigger", "1000000"},
    {"block_based_table_factory", "{prepopulate_block_cache=kDisable;}"},
};

// Below this many keys a part of a lookup costs less than handing it to another thread.
constexpr size_t kMinLookupPartKeys = 256;

// Reads scratch.keys[0, n) (families scratch.cfs, sorted) into scratch.values: in one MultiGet,
// or, when this is the only lookup in flight and the batch is large, in parts run by `parts`
// under one snapshot, so that a batch never sees half of a concurrent registration. Calls
// decode(i, status) for each key not found missing, until one fails; unpins every value.
// Each MultiGet runs while an object read_scope() returns lives, on the thread that runs it.
template <typename LookupScratch, typename Decode, typename ReadScope>
absl::Status MultiGetInParts(rocksdb::DB& db, ParallelParts& runner,
                             std::atomic<int>& lookups_in_flight, bool sorted_input, size_t n,
                             LookupScratch& scratch, Decode decode, ReadScope read_scope) {
  struct InFlight {
    std::atomic<int>& count;
    const bool alone = count.fetch_add(1, std::memory_order_relaxed) == 0;
    ~InFlight() { count.fetch_sub(1, std::memory_order_relaxed); }
  } in_flight{lookups_in_flight};
  const size_t parts = in_flight.alone
                           ? std::min<size_t>(static_cast<size_t>(runner.workers()) + 1,
                                              std::max<size_t>(1, n / kMinLookupPartKeys))
                           : 1;
  std::optional<rocksdb::ManagedSnapshot> snapshot;
  rocksdb::ReadOptions read;
  if (parts > 1) read.snapshot = snapshot.emplace(&db).snapshot();
  scratch.part_results.assign(parts, absl::OkStatus());
  runner.Run(parts, [&](size_t part) {
    const size_t begin = n * part / parts, end = n * (part + 1) / parts;
    {
      [[maybe_unused]] const auto scope = read_scope();
      db.MultiGet(read, end - begin, scratch.cfs.data() + begin, scratch.keys.data() + begin,
                  scratch.values.data() + begin, scratch.statuses.data() + begin, sorted_input);
    }
    absl::Status& result = scratch.part_results[part];
    for (size_t i = begin; i < end; ++i) {
      if (result.ok() && !scratch.statuses[i].IsNotFound()) {
        result = decode(i, scratch.statuses[i]);
      }
      scratch.values[i].Reset();  // unpin the block before the next call
    }
  });
  absl::Status result;
  for (const absl::Status& s : scratch.part_results) result.Update(s);
  return result;
}

// Empties out's lists (one per hash) and sets order to the hashes' positions in ascending
// hash order: sorted keys let MultiGet walk each SST file once.
void StartLookup(std::span<const ChunkHash> hashes, std::vector<PostingList>* out,
                 std::vector<uint32_t>* order) {
  out->resize(hashes.size());
  for (PostingList& l : *out) {
    l.doc_frequency = 0;
    l.postings.clear();
  }
  order->resize(hashes.size());
  for (uint32_t i = 0; i < hashes.size(); ++i) (*order)[i] = i;
  std::sort(order->begin(), order->end(),
            [&](uint32_t a, uint32_t b) { return hashes[a] < hashes[b]; });
}

}  // namespace

PostingsStore::PostingsStore(const IndexDb& db, int lookup_threads)
    : db_(db), lookup_parts_(std::make_unique<ParallelParts>(lookup_threads - 1)) {
  const auto shards = static_cast<uint32_t>(db.shards().size());
  shard_shift_ = shards == 1 ? 64 : 64 - std::countr_zero(shards);
  for (size_t i = 1; i < db.shards().size(); ++i) {
    shard_ids_ascending_ &= db.shards()[i - 1]->GetID() < db.shards()[i]->GetID();
  }
  layout_ = db.bucket_layout();
  if (layout_.has_value()) bucket_bits_ = layout_->bucket_bits;
}

namespace {

// One document's postings of one hash: one merge operand.
struct Run {
  ChunkHash hash;
  DocId doc;
  const Posting* begin;
  uint32_t size;
};

bool RunBefore(const Run& a, const Run& c) {
  return a.hash != c.hash ? a.hash < c.hash : a.doc < c.doc;
}

// Sorts `v` by `before`, whose first key is top64(element), an unsigned 64-bit number. A
// window's runs or postings are many (~4x10^5 for 4,096 documents of 4 KB) and their hashes
// keyed, so spread evenly: one counting pass over top64's top bits scatters them into
// buckets of ~4-8, each then sorted on its own, instead of std::sort's ~19 levels of
// comparisons over the whole array (its sort was 3% of copsd's CPU in a registration,
// docs/performance.md). `spare` is scattered into, then swapped with `v`.
template <typename T, typename Top64, typename Before>
void ScatterSort(std::vector<T>* v, std::vector<T>* spare, Top64 top64, Before before) {
  const size_t n = v->size();
  if (n < 4096) {
    std::sort(v->begin(), v->end(), before);
    return;
  }
  const int bits = std::min(20, static_cast<int>(std::bit_width(n)) - 3);
  const int shift = 64 - bits;
  std::vector<uint32_t> start((size_t{1} << bits) + 1, 0);
  for (const T& e : *v) ++start[(top64(e) >> shift) + 1];
  for (size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
  std::vector<uint32_t> next(start.begin(), start.end() - 1);
  spare->resize(n);
  std::vector<T>& sorted = *spare;
  for (const T& e : *v) sorted[next[top64(e) >> shift]++] = e;
  for (size_t b = 0; b + 1 < start.size(); ++b) {
    if (start[b + 1] - start[b] > 1) {
      std::sort(sorted.begin() + start[b], sorted.begin() + start[b + 1], before);
    }
  }
  v->swap(sorted);
}

void SortRuns(std::vector<Run>* runs) {
  std::vector<Run> spare;
  ScatterSort(
      runs, &spare, [](const Run& r) { return r.hash; }, RunBefore);
}

}  // namespace

void PostingsStore::Add(rocksdb::WriteBatch* b, std::span<const DocumentPostings> documents) const {
  if (layout_.has_value()) return AddToBuckets(b, documents);
  std::vector<Run> runs;
  size_t total = 0;
  for (const DocumentPostings& d : documents) total += d.hashes.size();
  runs.reserve(total);
  for (const DocumentPostings& d : documents) {
    for (size_t i = 0; i < d.hashes.size();) {
      size_t j = i + 1;
      while (j < d.hashes.size() && d.hashes[j] == d.hashes[i]) ++j;
      runs.push_back(Run{d.hashes[i], d.doc, d.postings.data() + i, static_cast<uint32_t>(j - i)});
      i = j;
    }
  }
  if (documents.size() > 1) SortRuns(&runs);
  char key[8];
  std::string operand;  // one buffer for every operand: WriteBatch::Merge copies it
  for (const Run& run : runs) {
    codec::EncodeFixed64BE(key, run.hash);
    operand.clear();
    codec::AppendAddOperand(&operand, run.doc, std::span<const Posting>(run.begin, run.size));
    b->Merge(Shard(run.hash), rocksdb::Slice(key, 8), operand);
  }
}

void PostingsStore::AddRemoval(rocksdb::WriteBatch* b, std::string_view chunk_list,
                               DocId doc) const {
  if (layout_.has_value()) return AddBucketRemoval(b, chunk_list, doc);
  const std::string remove = codec::EncodeRemoveOperand(doc);
  for (size_t off = 0; off + 8 <= chunk_list.size(); off += 8) {
    const char* key = chunk_list.data() + off;
    b->Merge(Shard(codec::DecodeFixed64BE(key)), rocksdb::Slice(key, 8), remove);
  }
}

absl::Status PostingsStore::Lookup(std::span<const ChunkHash> hashes,
                                   std::vector<PostingList>* out) const {
  if (layout_.has_value()) return LookupBuckets(hashes, out);
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
  thread_local Scratch thread_scratch;
  // A reference, so that the parts run by other threads use this thread's scratch (a lambda
  // naming a thread_local reaches the running thread's own).
  Scratch& scratch = thread_scratch;
  const size_t n = hashes.size();
  // Shards hold consecutive hash ranges, so sorted keys are grouped by shard too.
  auto& order = scratch.order;
  StartLookup(hashes, out, &order);
  if (n == 0) return absl::OkStatus();
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
    scratch.cfs[i] = Shard(h);
  }
  absl::Status result = MultiGetInParts(
      db_.db(), *lookup_parts_, lookups_in_flight_, shard_ids_ascending_, n, scratch,
      [&](size_t i, const rocksdb::Status& st) {
        return st.ok() ? codec::DecodePostingList(scratch.values[i].ToStringView(),
                                                  &(*out)[order[i]])
                       : FromRocks(st, "looking up chunk postings");
      },
      [] { return 0; });
  if (n * kScratchBytesPerHash > kScratchKeepBytes) scratch = Scratch();
  return result;
}

PostingsStore::AddBuffers PostingsStore::TakeAddBuffers() const {
  absl::MutexLock lock(&add_buffers_mu_);
  return std::move(add_buffers_);
}

// Freed once TakeAddBuffers' lock is released.
void PostingsStore::ReleaseAddBuffers() const { TakeAddBuffers(); }

void PostingsStore::KeepAddBuffers(AddBuffers buffers) const {
  absl::MutexLock lock(&add_buffers_mu_);
  // A concurrent call's, given back first, are kept when larger.
  if (buffers.entries.capacity() >= add_buffers_.entries.capacity()) {
    add_buffers_ = std::move(buffers);
  }
}

// One merge operand per bucket a batch touches (all its documents' postings there), in
// bucket order: a batch of documents costs a memtable insert per bucket, not per posting.
void PostingsStore::AddToBuckets(rocksdb::WriteBatch* b,
                                 std::span<const DocumentPostings> documents) const {
  using Entry = BucketEntry;
  AddBuffers buffers = TakeAddBuffers();
  std::vector<Entry>& entries = buffers.entries;
  entries.clear();
  size_t total = 0;
  for (const DocumentPostings& d : documents) total += d.hashes.size();
  entries.reserve(total);
  const ChunkHash kept_mask = layout_->Join((uint64_t{1} << layout_->bucket_bits) - 1,
                                            (uint64_t{1} << layout_->rest_bits()) - 1);
  for (const DocumentPostings& d : documents) {
    for (size_t i = 0; i < d.hashes.size(); ++i) {
      entries.push_back(Entry{d.hashes[i] & kept_mask, d.postings[i]});
    }
  }
  ScatterSort(
      &entries, &buffers.spare, [](const Entry& e) { return e.kept; },
      [](const Entry& a, const Entry& c) {
        if (a.kept != c.kept) return a.kept < c.kept;
        if (a.posting.doc_id != c.posting.doc_id) return a.posting.doc_id < c.posting.doc_id;
        return a.posting.ordinal < c.posting.ordinal;
      });
  if (filter_ != nullptr) {
    // Before the batch is written: a lookup that can see the postings finds their hash in
    // the filter. (A batch that then fails leaves its hashes there: a wasted read.) Sorted,
    // so that the adds sweep the filter in order.
    std::vector<ChunkHash>& stored = buffers.stored;
    stored.clear();
    stored.reserve(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i == 0 || entries[i].kept != entries[i - 1].kept) stored.push_back(entries[i].kept);
    }
    filter_->Add(stored);
  }
  std::vector<bucket_codec::BucketPosting> run;
  std::string operand;  // one buffer for every operand: WriteBatch::Merge copies it
  char key[4];
  for (size_t i = 0; i < entries.size();) {
    const uint32_t bucket = layout_->Bucket(entries[i].kept);
    size_t j = i;
    run.clear();
    for (; j < entries.size() && layout_->Bucket(entries[j].kept) == bucket; ++j) {
      run.push_back({layout_->Rest(entries[j].kept), entries[j].posting});
    }
    bucket_codec::EncodeBucketKey(key, bucket);
    bucket_codec::EncodeAddFragment(run, &operand);
    b->Merge(BucketShard(bucket), rocksdb::Slice(key, 4), operand);
    i = j;
  }
  KeepAddBuffers(std::move(buffers));
}

void PostingsStore::AddBucketRemoval(rocksdb::WriteBatch* b, std::string_view chunk_list,
                                     DocId doc) const {
  std::vector<std::pair<uint32_t, uint64_t>> keys;  // (bucket, rest)
  keys.reserve(chunk_list.size() / 8);
  for (size_t off = 0; off + 8 <= chunk_list.size(); off += 8) {
    const ChunkHash h = codec::DecodeFixed64BE(chunk_list.data() + off);
    keys.emplace_back(layout_->Bucket(h), layout_->Rest(h));
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<uint64_t> rests;
  char key[4];
  for (size_t i = 0; i < keys.size();) {
    size_t j = i;
    rests.clear();
    for (; j < keys.size() && keys[j].first == keys[i].first; ++j) rests.push_back(keys[j].second);
    bucket_codec::EncodeBucketKey(key, keys[i].first);
    b->Merge(BucketShard(keys[i].first), rocksdb::Slice(key, 4),
             bucket_codec::EncodeRemoveOperand(doc, rests));
    i = j;
  }
}

// As the per-hash Lookup, over the distinct buckets of the hashes: one MultiGet key per
// bucket, each bucket's value scanned once for the rests of all its hashes.
absl::Status PostingsStore::LookupBuckets(std::span<const ChunkHash> hashes,
                                          std::vector<PostingList>* out) const {
  struct Scratch {
    std::vector<uint32_t> order;
    std::vector<uint64_t> rests;         // by sorted hash
    std::vector<PostingList*> outs;      // by sorted hash
    std::vector<uint32_t> first;         // per bucket: its first kept hash; then the count
    std::vector<uint32_t> bucket;        // per bucket: its number
    std::vector<char> key_bytes;
    std::vector<rocksdb::Slice> keys;
    std::vector<rocksdb::ColumnFamilyHandle*> cfs;
    std::vector<rocksdb::PinnableSlice> values;
    std::vector<rocksdb::Status> statuses;
    std::vector<absl::Status> part_results;
  };
  constexpr size_t kScratchBytesPerHash =
      3 * sizeof(uint32_t) + sizeof(uint64_t) + sizeof(void*) + 4 +
      sizeof(rocksdb::Slice) + sizeof(rocksdb::ColumnFamilyHandle*) +
      sizeof(rocksdb::PinnableSlice) + sizeof(rocksdb::Status);
  thread_local Scratch thread_scratch;
  Scratch& scratch = thread_scratch;
  const size_t n = hashes.size();
  auto& order = scratch.order;
  StartLookup(hashes, out, &order);
  if (n == 0) return absl::OkStatus();
  // Sorted hashes are sorted by (bucket, rest): each bucket's hashes are consecutive. The
  // hashes the filter rules out are stored nowhere: their lists stay empty, and a bucket
  // none of whose hashes is left is not read.
  const StoredHashFilter* filter = filter_ready() ? filter_.get() : nullptr;
  scratch.rests.resize(n);
  scratch.outs.resize(n);
  scratch.first.clear();
  scratch.bucket.clear();
  uint32_t prev_bucket = 0;
  size_t kept = 0;
  constexpr size_t kPrefetchAhead = 8;  // filter questions whose cache misses overlap
  for (size_t i = 0; i < n; ++i) {
    const ChunkHash h = hashes[order[i]];
    if (filter != nullptr && i + kPrefetchAhead < n) {
      filter->Prefetch(hashes[order[i + kPrefetchAhead]]);
    }
    if (filter != nullptr && !filter->MayContain(h)) continue;
    const uint32_t bucket = layout_->Bucket(h);
    if (kept == 0 || bucket != prev_bucket) {
      scratch.first.push_back(static_cast<uint32_t>(kept));
      scratch.bucket.push_back(bucket);
    }
    prev_bucket = bucket;
    scratch.rests[kept] = layout_->Rest(h);
    scratch.outs[kept] = &(*out)[order[i]];
    ++kept;
  }
  const size_t buckets = scratch.first.size();
  if (buckets == 0) {
    if (n * kScratchBytesPerHash > kScratchKeepBytes) scratch = Scratch();
    return absl::OkStatus();
  }
  scratch.first.push_back(static_cast<uint32_t>(kept));
  scratch.key_bytes.resize(buckets * 4);
  scratch.keys.resize(buckets);
  scratch.cfs.resize(buckets);
  if (scratch.values.size() < buckets) scratch.values.resize(buckets);
  scratch.statuses.resize(buckets);
  for (size_t k = 0; k < buckets; ++k) {
    char* p = scratch.key_bytes.data() + k * 4;
    const uint32_t bucket = scratch.bucket[k];
    bucket_codec::EncodeBucketKey(p, bucket);
    scratch.keys[k] = rocksdb::Slice(p, 4);
    scratch.cfs[k] = BucketShard(bucket);
  }
  absl::Status result = MultiGetInParts(
      db_.db(), *lookup_parts_, lookups_in_flight_, shard_ids_ascending_, buckets, scratch,
      [&](size_t k, const rocksdb::Status& st) {
        const std::string_view key = scratch.keys[k].ToStringView();
        const size_t lo = scratch.first[k], count = scratch.first[k + 1] - lo;
        return st.ok() ? bucket_codec::LookupInBucket(
                             scratch.values[k].ToStringView(), key,
                             std::span<const uint64_t>(scratch.rests.data() + lo, count),
                             std::span<PostingList* const>(scratch.outs.data() + lo, count))
                       : FromRocks(st, "looking up postings bucket " +
                                           absl::BytesToHexString(
                                               absl::string_view(key.data(), key.size())));
      },
      // Buckets with merge operands are merged for the rests asked only.
      [&] {
        return BucketReadScope(scratch.keys, std::span<const uint32_t>(scratch.first),
                               scratch.rests);
      });
  if (n * kScratchBytesPerHash > kScratchKeepBytes) scratch = Scratch();
  return result;
}

absl::Status PostingsStore::BeginBulkLoad() {
  absl::MutexLock lock(&bulk_mu_);
  if (bulk_loading_.load()) return absl::OkStatus();
  for (auto* shard : db_.shards()) {
    COPS_RETURN_IF_ERROR(
        FromRocks(db_.db().SetOptions(shard, kBulkLoadOptions), "starting a bulk load"));
  }
  bulk_loading_.store(true);
  return absl::OkStatus();
}

absl::Status PostingsStore::EndBulkLoad() {
  absl::MutexLock lock(&bulk_mu_);
  if (!bulk_loading_.load()) return absl::OkStatus();
  // One manual compaction of everything loaded per shard, all shards at once (one thread
  // each), while automatic compaction is still off: it would otherwise start on the
  // level-0 pile in pieces. Writes go on meanwhile.
  COPS_RETURN_IF_ERROR(CompactLayers("the bulk load's compaction"));
  // Back to the options the index was opened with.
  const rocksdb::ColumnFamilyOptions& opened = db_.postings_options();
  const std::unordered_map<std::string, std::string> restore = {
      {"disable_auto_compactions", opened.disable_auto_compactions ? "true" : "false"},
      {"level0_slowdown_writes_trigger", std::to_string(opened.level0_slowdown_writes_trigger)},
      {"level0_stop_writes_trigger", std::to_string(opened.level0_stop_writes_trigger)},
      {"block_based_table_factory", db_.options().cache_flushed_blocks
                                        ? "{prepopulate_block_cache=kFlushOnly;}"
                                        : "{prepopulate_block_cache=kDisable;}"},
  };
  for (auto* shard : db_.shards()) {
    COPS_RETURN_IF_ERROR(FromRocks(db_.db().SetOptions(shard, restore), "ending a bulk load"));
  }
  bulk_loading_.store(false);
  return absl::OkStatus();
}

bool PostingsStore::Layered() const {
  rocksdb::DB& db = db_.db();
  for (auto* shard : db_.shards()) {
    rocksdb::ColumnFamilyMetaData meta;
    db.GetColumnFamilyMetaData(shard, &meta);
    // Bytes outside the deepest sorted run below level 0 (level-0 files, each other
    // non-empty level), and what the memtables hold.
    uint64_t upper = 0, last = 0;
    for (const rocksdb::LevelMetaData& level : meta.levels) {
      if (level.level == 0) {
        upper += level.size;
      } else if (level.size > 0) {
        upper += last;
        last = level.size;
      }
    }
    uint64_t entries = 0, v = 0;
    for (const char* p :
         {"rocksdb.num-entries-active-mem-table", "rocksdb.num-entries-imm-mem-tables"}) {
      if (db.GetIntProperty(shard, p, &v)) entries += v;
    }
    if (entries > 0 && db.GetIntProperty(shard, "rocksdb.cur-size-all-mem-tables", &v)) {
      upper += v;
    }
    if (upper > 0 && upper * 100 >= (upper + last) * kIdleCompactionPercent) return true;
  }
  return false;
}

absl::Status PostingsStore::CompactLayers(std::string_view what) {
  rocksdb::FlushOptions f;
  f.wait = true;
  const std::vector<rocksdb::ColumnFamilyHandle*> shards(db_.shards().begin(), db_.shards().end());
  rocksdb::Status flushed = db_.db().Flush(f, shards);
  db_.NoteWriteError(flushed);
  COPS_RETURN_IF_ERROR(FromRocks(flushed, "flushing the postings before " + std::string(what)));
  // Into the last level (level_compaction_dynamic_level_bytes), each run's operands merged
  // with the values under them once instead of at every read. The last level is rewritten
  // too (not its files this compaction wrote): a level-0 file with nothing under it would
  // otherwise be moved there as it is, its merge operands kept, and every read of a bucket
  // would merge them again (a copied 2.7 KB message against 10^4 freshly registered: 1.79 M
  // instructions in copsd, 1.41 M once merged; docs/performance.md, "Mail gateway"). With
  // anything under it, a level-0 file of hashes overlaps the whole last level, so this
  // rewrites no more than before.
  rocksdb::CompactRangeOptions c;
  c.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForceOptimized;
  c.exclusive_manual_compaction = false;  // lets the shards' compactions run side by side
  // The content-stem pairs (when the index keeps them) are merge operands written by the same
  // registrations, read at every check the same way: merged with them (a clean 20 KB check
  // at 10^4 documents with --stem-pairs 1: 9.78 M instructions, 6.62 M merged).
  std::vector<rocksdb::ColumnFamilyHandle*> families(shards);
  if (db_.stem_pairs() != nullptr) families.push_back(db_.stem_pairs());
  return db_.CompactSideBySide(c, families, std::string(what));
}

absl::Status PostingsStore::ReapplyBulkLoad() const {
  if (!bulk_loading_.load()) return absl::OkStatus();
  for (auto* shard : db_.shards()) {
    COPS_RETURN_IF_ERROR(FromRocks(db_.db().SetOptions(shard, kBulkLoadOptions),
                                   "restarting a bulk load after a reopen"));
  }
  return absl::OkStatus();
}

void PostingsStore::CreateFilter(uint64_t stored_postings) {
  const IndexOptions& o = db_.options();
  if (!layout_.has_value() || o.hash_filter_bits == 0) return;
  // Room for what is stored and a quarter more, or for the documents the index is meant
  // for (a 4 KB document stores ~100 postings), whichever is larger: pages no hash reaches
  // cost no memory (storage/stored_hash_filter.h).
  constexpr uint64_t kPostingsPerExpectedDocument = 128;
  const uint64_t capacity = std::max(stored_postings + stored_postings / 4,
                                     o.expected_documents * kPostingsPerExpectedDocument);
  filter_ = std::make_unique<StoredHashFilter>(layout_->hash_bits, o.hash_filter_bits, capacity);
}

absl::Status PostingsStore::FillFilter(const std::function<bool()>& stop) {
  if (filter_ == nullptr || filter_ready()) return absl::OkStatus();
  rocksdb::ReadOptions read;
  read.fill_cache = false;  // every bucket once: the block cache keeps what checks read
  read.readahead_size = 2u << 20;
  // Asked every this many buckets: a few milliseconds of reading.
  constexpr uint32_t kBucketsPerStep = 4096;
  // Hashes handed to the filter at once, in bucket order (it prefetches ahead).
  constexpr size_t kAddsPerCall = 4096;
  std::vector<ChunkHash> pending;
  for (rocksdb::ColumnFamilyHandle* shard : db_.shards()) {
    std::unique_ptr<rocksdb::Iterator> it(db_.db().NewIterator(read, shard));
    uint32_t seen = 0;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (++seen % kBucketsPerStep == 0 && stop()) {
        return absl::CancelledError("filling the postings filter: stopped");
      }
      const rocksdb::Slice k = it->key();
      if (k.size() != 4) {
        return absl::DataLossError("index " + db_.options().path + ": postings bucket key " +
                                   absl::BytesToHexString(absl::string_view(k.data(), k.size())) +
                                   " is not 4 bytes");
      }
      const uint64_t bucket = bucket_codec::DecodeBucketKey(k.data());
      COPS_RETURN_IF_ERROR(bucket_codec::ForEachRest(
          it->value().ToStringView(), k.ToStringView(), [&](uint64_t rest) {
            pending.push_back(layout_->Join(bucket, rest));
          }));
      if (pending.size() >= kAddsPerCall) {
        filter_->Add(pending);
        pending.clear();
      }
    }
    filter_->Add(pending);
    pending.clear();
    COPS_RETURN_IF_ERROR(FromRocks(it->status(), "filling the postings filter"));
  }
  filter_ready_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

void PostingsStore::AddStats(IndexStats* s) const {
  if (filter_ != nullptr) {
    s->hash_filter_bytes = filter_->bytes();
    s->hash_filter_ready = filter_ready();
  }
  rocksdb::DB& db = db_.db();
  uint64_t v = 0;
  for (auto* shard : db_.shards()) {
    if (db.GetIntProperty(shard, "rocksdb.estimate-num-keys", &v)) s->chunk_keys += v;
    if (db.GetIntProperty(shard, rocksdb::DB::Properties::kTotalSstFilesSize, &v)) {
      s->postings_disk_bytes += v;
    }
  }
  s->postings_shards = static_cast<uint32_t>(db_.shards().size());
  if (layout_.has_value()) {
    s->bucket_bits = layout_->bucket_bits;
    s->hash_bits = layout_->hash_bits;
  }
  s->postings_files_per_level.assign(db.NumberLevels(db_.shards()[0]), 0);
  for (auto* shard : db_.shards()) {
    for (size_t level = 0; level < s->postings_files_per_level.size(); ++level) {
      std::string files;  // a string property (decimal)
      db.GetProperty(shard, "rocksdb.num-files-at-level" + std::to_string(level), &files);
      s->postings_files_per_level[level] +=
          static_cast<uint32_t>(std::strtoul(files.c_str(), nullptr, 10));
    }
  }
}

}  // namespace cops
