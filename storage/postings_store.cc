#include "storage/postings_store.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/scratch.h"
#include "core/status_macros.h"
#include "rocksdb/snapshot.h"
#include "rocksdb/write_batch.h"
#include "storage/codec.h"
#include "storage/rocks_status.h"

namespace cops {
namespace {

namespace codec = storage_codec;

// The postings options a bulk load changes and their values while it runs (RocksDB's
// SetOptions takes strings); EndBulkLoad restores the values the index was opened with.
const std::unordered_map<std::string, std::string> kBulkLoadOptions = {
    {"disable_auto_compactions", "true"},
    {"level0_slowdown_writes_trigger", "1000000"},
    {"level0_stop_writes_trigger", "1000000"},
};

}  // namespace

PostingsStore::PostingsStore(const IndexDb& db, int lookup_threads)
    : db_(db), lookup_parts_(std::make_unique<ParallelParts>(lookup_threads - 1)) {
  const auto shards = static_cast<uint32_t>(db.shards().size());
  shard_shift_ = shards == 1 ? 64 : 64 - std::countr_zero(shards);
  for (size_t i = 1; i < db.shards().size(); ++i) {
    shard_ids_ascending_ &= db.shards()[i - 1]->GetID() < db.shards()[i]->GetID();
  }
}

void PostingsStore::Add(rocksdb::WriteBatch* b, std::span<const DocumentPostings> documents) const {
  struct Run {
    ChunkHash hash;
    DocId doc;
    const Posting* begin;
    uint32_t size;
  };
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
  if (documents.size() > 1) {
    std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& c) {
      return a.hash != c.hash ? a.hash < c.hash : a.doc < c.doc;
    });
  }
  char key[8];
  std::string operand;
  for (const Run& run : runs) {
    codec::EncodeFixed64BE(key, run.hash);
    operand = codec::EncodeAddOperand(run.doc, std::span<const Posting>(run.begin, run.size));
    b->Merge(Shard(run.hash), rocksdb::Slice(key, 8), operand);
  }
}

void PostingsStore::AddRemoval(rocksdb::WriteBatch* b, std::string_view chunk_list,
                               DocId doc) const {
  const std::string remove = codec::EncodeRemoveOperand(doc);
  for (size_t off = 0; off + 8 <= chunk_list.size(); off += 8) {
    const char* key = chunk_list.data() + off;
    b->Merge(Shard(codec::DecodeFixed64BE(key)), rocksdb::Slice(key, 8), remove);
  }
}

absl::Status PostingsStore::Lookup(std::span<const ChunkHash> hashes,
                                   std::vector<PostingList>* out) const {
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
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return hashes[a] < hashes[b]; });
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
  // Parts of consecutive sorted keys, each one multi-family MultiGet, all under one
  // snapshot so that a batch never sees half of a concurrent registration.
  struct InFlight {
    std::atomic<int>& count;
    const bool alone = count.fetch_add(1, std::memory_order_relaxed) == 0;
    ~InFlight() { count.fetch_sub(1, std::memory_order_relaxed); }
  } in_flight{lookups_in_flight_};
  const size_t parts = in_flight.alone
                           ? std::min<size_t>(static_cast<size_t>(lookup_parts_->workers()) + 1,
                                              std::max<size_t>(1, n / kMinLookupPartKeys))
                           : 1;
  std::optional<rocksdb::ManagedSnapshot> snapshot;
  rocksdb::ReadOptions read;
  if (parts > 1) read.snapshot = snapshot.emplace(&db_.db()).snapshot();
  scratch.part_results.assign(parts, absl::OkStatus());
  lookup_parts_->Run(parts, [&](size_t part) {
    const size_t begin = n * part / parts, end = n * (part + 1) / parts;
    db_.db().MultiGet(read, end - begin, scratch.cfs.data() + begin, scratch.keys.data() + begin,
                      scratch.values.data() + begin, scratch.statuses.data() + begin,
                      /*sorted_input=*/shard_ids_ascending_);
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
  rocksdb::FlushOptions f;
  f.wait = true;
  const std::vector<rocksdb::ColumnFamilyHandle*> shards(db_.shards().begin(), db_.shards().end());
  rocksdb::Status flushed = db_.db().Flush(f, shards);
  db_.NoteWriteError(flushed);
  COPS_RETURN_IF_ERROR(FromRocks(flushed, "flushing a bulk load"));
  // One manual compaction of everything loaded per shard, all shards at once (one thread
  // each), while automatic compaction is still off: it would otherwise start on the
  // level-0 pile in pieces. Writes go on meanwhile.
  rocksdb::CompactRangeOptions c;
  c.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kIfHaveCompactionFilter;
  c.exclusive_manual_compaction = false;  // lets the shards' compactions run side by side
  COPS_RETURN_IF_ERROR(db_.CompactSideBySide(c, db_.shards(), "the bulk load's compaction"));
  // Back to the options the index was opened with.
  const rocksdb::ColumnFamilyOptions& opened = db_.postings_options();
  const std::unordered_map<std::string, std::string> restore = {
      {"disable_auto_compactions", opened.disable_auto_compactions ? "true" : "false"},
      {"level0_slowdown_writes_trigger", std::to_string(opened.level0_slowdown_writes_trigger)},
      {"level0_stop_writes_trigger", std::to_string(opened.level0_stop_writes_trigger)},
  };
  for (auto* shard : db_.shards()) {
    COPS_RETURN_IF_ERROR(FromRocks(db_.db().SetOptions(shard, restore), "ending a bulk load"));
  }
  bulk_loading_.store(false);
  return absl::OkStatus();
}

absl::Status PostingsStore::ReapplyBulkLoad() const {
  if (!bulk_loading_.load()) return absl::OkStatus();
  for (auto* shard : db_.shards()) {
    COPS_RETURN_IF_ERROR(FromRocks(db_.db().SetOptions(shard, kBulkLoadOptions),
                                   "restarting a bulk load after a reopen"));
  }
  return absl::OkStatus();
}

void PostingsStore::AddStats(IndexStats* s) const {
  rocksdb::DB& db = db_.db();
  uint64_t v = 0;
  for (auto* shard : db_.shards()) {
    if (db.GetIntProperty(shard, "rocksdb.estimate-num-keys", &v)) s->chunk_keys += v;
    if (db.GetIntProperty(shard, rocksdb::DB::Properties::kTotalSstFilesSize, &v)) {
      s->postings_disk_bytes += v;
    }
  }
  s->postings_shards = static_cast<uint32_t>(db_.shards().size());
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
