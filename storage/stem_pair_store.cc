#include "storage/stem_pair_store.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>

#include "rocksdb/merge_operator.h"
#include "storage/codec.h"

#include "core/status_macros.h"
#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/slice_transform.h"
#include "rocksdb/table.h"
#include "rocksdb/write_batch.h"
#include "storage/index_db.h"
#include "storage/rocks_status.h"

namespace cops {
namespace {

namespace codec = storage_codec;

constexpr char kPairTag = 'p';    // layout 1
constexpr char kMergedTag = 'P';  // layout 2
constexpr char kDocTag = 'd';
// First byte of a document's list in its text's order (lists without it are ascending).
constexpr char kOrderedList = '\x01';
constexpr char kAddOp = '+';
constexpr char kRemoveOp = '-';
// What a merge of malformed input writes: a lone 0xFF is a truncated varint, never a value.
constexpr char kPoison[] = "\xff";
constexpr size_t kPrefixBytes = 5;  // tag + BE32 pair

void PutBE32(std::string* out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutBE64(std::string* out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t GetBE(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

std::string PairPrefix(uint32_t pair) {
  std::string k(1, kPairTag);
  PutBE32(&k, pair);
  return k;
}
std::string PairKey(uint32_t pair, DocId id) {
  std::string k = PairPrefix(pair);
  PutBE64(&k, id);
  return k;
}
std::string MergedKey(uint32_t pair) {
  std::string k(1, kMergedTag);
  PutBE32(&k, pair);
  return k;
}
std::string DocListKey(DocId id) {
  std::string k(1, kDocTag);
  PutBE64(&k, id);
  return k;
}

// One MultiGet of `keys` in the stem pairs family. `sorted`: the keys ascend (a check's pairs
// and candidates do), which spares MultiGet its sort of them (a tenth of a lookup's cost).
void MultiGetPairs(const IndexDb& db, const std::vector<std::string>& keys, bool sorted,
                   std::vector<rocksdb::PinnableSlice>* values,
                   std::vector<rocksdb::Status>* statuses) {
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  values->clear();
  values->resize(keys.size());
  statuses->assign(keys.size(), rocksdb::Status());
  db.db().MultiGet(rocksdb::ReadOptions(), db.stem_pairs(), keys.size(), slices.data(),
                   values->data(), statuses->data(), sorted);
}

absl::Status NotWholePairs(DocId id, size_t bytes) {
  return absl::DataLossError("stem pairs of document " + std::to_string(id) + ": " +
                             std::to_string(bytes) + " bytes, not whole pairs");
}

// A 'd' value: its pairs (in either form) into `pairs`, whether in text order into
// `ordered`. False when it is not whole pairs.
bool ParseDocList(std::string_view v, std::vector<uint32_t>* pairs, bool* ordered) {
  *ordered = v.size() % 4 == 1 && v[0] == kOrderedList;
  if (*ordered) v.remove_prefix(1);
  if (v.size() % 4 != 0) return false;
  pairs->clear();
  for (size_t i = 0; i < v.size(); i += 4) {
    pairs->push_back(static_cast<uint32_t>(GetBE(v.data() + i, 4)));
  }
  return true;
}

// An add operand: '+' + varint n (>= 1 registrations) + the first distinct ids of theirs in
// arrival order, at most min(n, cap) (fewer only when an id repeats). False when malformed.
bool ParseAdds(std::string_view op, uint64_t* n, std::vector<DocId>* ids) {
  ids->clear();
  if (op.empty() || op[0] != kAddOp) return false;
  op.remove_prefix(1);
  if (!codec::GetVarint64(&op, n) || *n == 0) return false;
  while (!op.empty()) {
    uint64_t id;
    if (ids->size() == std::min<uint64_t>(*n, kStemPairHolderCap) ||
        !codec::GetVarint64(&op, &id)) {
      return false;
    }
    ids->push_back(id);
  }
  return true;
}

class HoldersMerge : public rocksdb::MergeOperator {
 public:
  bool FullMergeV2(const MergeOperationInput& in, MergeOperationOutput* out) const override {
    std::vector<std::string_view> ops;
    ops.reserve(in.operand_list.size());
    for (const rocksdb::Slice& s : in.operand_list) ops.push_back(s.ToStringView());
    std::optional<std::string_view> existing;
    if (in.existing_value != nullptr) existing = in.existing_value->ToStringView();
    // A malformed input still merges (into the poison value) so that compactions go on; the
    // lookup that reads it reports DATA_LOSS.
    stem_pair_codec::Merge(existing, ops, &out->new_value);
    return true;
  }
  // Consecutive adds (a flush, an upper-level compaction) combine into one operand, so that
  // a lookup merges one per file rather than one per registration; a removal must meet the
  // adds before it: left for the full merge.
  bool PartialMergeMulti(const rocksdb::Slice& /*key*/,
                         const std::deque<rocksdb::Slice>& operand_list, std::string* new_value,
                         rocksdb::Logger* /*logger*/) const override {
    std::vector<std::string_view> ops;
    ops.reserve(operand_list.size());
    for (const rocksdb::Slice& s : operand_list) ops.push_back(s.ToStringView());
    return stem_pair_codec::CombineAdds(ops, new_value);
  }
  const char* Name() const override { return "cops.StemPairHolders"; }  // on-disk
};

}  // namespace

namespace stem_pair_codec {

std::string Encode(const StemPairHolders& h) {
  std::string s;
  codec::PutVarint64(&s, h.count);
  for (DocId id : h.ids) codec::PutVarint64(&s, id);
  return s;
}

bool Decode(std::string_view value, StemPairHolders* h) {
  h->ids.clear();
  if (!codec::GetVarint64(&value, &h->count)) return false;
  while (!value.empty()) {
    uint64_t id;
    if (!codec::GetVarint64(&value, &id)) return false;
    if (h->ids.size() == kStemPairHolderCap || h->ids.size() == h->count ||
        (!h->ids.empty() && id <= h->ids.back())) {
      return false;
    }
    h->ids.push_back(id);
  }
  return true;
}

std::string AddOperand(uint64_t holders, std::span<const DocId> first) {
  std::string s(1, kAddOp);
  codec::PutVarint64(&s, holders);
  for (DocId id : first) codec::PutVarint64(&s, id);
  return s;
}
std::string RemoveOperand(DocId id) {
  std::string s(1, kRemoveOp);
  codec::PutVarint64(&s, id);
  return s;
}


bool Merge(std::optional<std::string_view> existing, std::span<const std::string_view> operands,
           std::string* out) {
  StemPairHolders h;
  std::vector<DocId> added;
  // Applies one operand; false when it is malformed.
  auto apply = [&](std::string_view op) {
    uint64_t n = 0;
    if (ParseAdds(op, &n, &added)) {
      // A count that would wrap is damage: no index holds 2^64 documents.
      if (h.count > UINT64_MAX - n) return false;
      h.count += n;
      // The first holders to arrive are listed; one listed already (a replayed write) is
      // counted again, as the key-per-holder layout would not: ids are never reused.
      for (DocId id : added) {
        auto at = std::lower_bound(h.ids.begin(), h.ids.end(), id);
        if (h.ids.size() < kStemPairHolderCap && (at == h.ids.end() || *at != id)) {
          h.ids.insert(at, id);
        }
      }
      return true;
    }
    uint64_t id;
    std::string_view rest = op.substr(std::min<size_t>(1, op.size()));
    if (op.empty() || op[0] != kRemoveOp || !codec::GetVarint64(&rest, &id) || !rest.empty()) {
      return false;
    }
    if (h.count > 0) --h.count;
    auto at = std::lower_bound(h.ids.begin(), h.ids.end(), id);
    if (at != h.ids.end() && *at == id) h.ids.erase(at);
    // Never more listed than counted (a removal of an id never added).
    if (h.ids.size() > h.count) h.ids.resize(h.count);
    return true;
  };
  bool ok = !existing.has_value() || Decode(*existing, &h);
  for (size_t i = 0; ok && i < operands.size(); ++i) ok = apply(operands[i]);
  if (!ok) {
    out->assign(kPoison);
    return false;
  }
  *out = Encode(h);
  return true;
}

bool CombineAdds(std::span<const std::string_view> operands, std::string* out) {
  if (operands.empty()) return false;  // an add of 0 holders is no operand
  uint64_t total = 0;
  std::vector<DocId> ids, one;
  for (std::string_view op : operands) {
    uint64_t n;
    if (!ParseAdds(op, &n, &one) || total > UINT64_MAX - n) return false;
    total += n;
    // The first distinct ids: the ones a full merge would list, whatever it starts from
    // (it skips those listed already, which at most as many as the cap can be).
    for (DocId id : one) {
      if (ids.size() < kStemPairHolderCap && std::find(ids.begin(), ids.end(), id) == ids.end()) {
        ids.push_back(id);
      }
    }
  }
  *out = AddOperand(total, ids);
  return true;
}

}  // namespace stem_pair_codec

std::atomic<uint32_t>* CommonPairCache::Slots() const {
  std::call_once(allocated_, [this] {
    slots_ = std::make_unique<std::atomic<uint32_t>[]>(size_t{1} << kSlotBits);  // zeroed
  });
  return slots_.get();
}

bool CommonPairCache::Contains(uint32_t pair) const {
  if (pair == 0 || size_.load(std::memory_order_relaxed) == 0) return false;
  const std::atomic<uint32_t>* slots = Slots();
  constexpr uint32_t kMask = (uint32_t{1} << kSlotBits) - 1;
  // Keyed hashes: their low bits spread evenly. At most half full: probes end early.
  for (uint32_t i = pair & kMask;; i = (i + 1) & kMask) {
    const uint32_t v = slots[i].load(std::memory_order_relaxed);
    if (v == pair) return true;
    if (v == 0) return false;
  }
}

void CommonPairCache::InsertAll(std::span<const uint32_t> pairs, uint64_t generation) {
  if (pairs.empty()) return;
  std::atomic<uint32_t>* slots = Slots();
  constexpr uint32_t kMask = (uint32_t{1} << kSlotBits) - 1;
  for (uint32_t pair : pairs) {
    if (pair == 0 || size_.load(std::memory_order_relaxed) >= (size_t{1} << (kSlotBits - 1))) {
      continue;
    }
    for (uint32_t i = pair & kMask;; i = (i + 1) & kMask) {
      uint32_t v = slots[i].load(std::memory_order_relaxed);
      if (v == pair) break;
      if (v == 0) {
        if (slots[i].compare_exchange_strong(v, pair)) {
          size_.fetch_add(1, std::memory_order_relaxed);
          break;
        }
        if (v == pair) break;  // another lookup added it; else the slot went to another pair
      }
    }
  }
  // A removal written while the pairs were read may have made some of them rare: forget
  // everything (ForgetAll bumps the generation before it clears, so if it did not run
  // after these adds, it ran after this check saw it move).
  if (generation_.load() != generation) ForgetAll();
}

void CommonPairCache::ForgetAll() {
  generation_.fetch_add(1);
  // The clearing stores below come after every add that preceded the bump (an add is a
  // sequentially consistent exchange, then its lookup reads the generation).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (size_.load() == 0) return;
  std::atomic<uint32_t>* slots = Slots();
  for (size_t i = 0; i < (size_t{1} << kSlotBits); ++i) {
    slots[i].store(0, std::memory_order_relaxed);
  }
  size_.store(0);
}

rocksdb::ColumnFamilyOptions StemPairsCfOptions(size_t write_buffer_bytes,
                                                const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::ColumnFamilyOptions cf;
  cf.write_buffer_size = std::min<size_t>(write_buffer_bytes, 32u << 20);
  cf.level_compaction_dynamic_level_bytes = true;
  cf.compression = rocksdb::kNoCompression;  // keyed hashes and ids: nothing to shrink
  cf.merge_operator = std::make_shared<HoldersMerge>();
  cf.prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(kPrefixBytes));
  cf.memtable_prefix_bloom_size_ratio = 0.02;
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = cache;
  t.format_version = 5;
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  t.whole_key_filtering = false;  // ranges by pair: the prefix is what a lookup knows
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  return cf;
}

bool StemPairStore::available() const { return db_.stem_pairs() != nullptr; }

absl::Status StemPairStore::Lookup(std::span<const uint32_t> pairs, uint32_t max_documents,
                                   std::vector<std::vector<DocId>>* out) const {
  out->resize(pairs.size());
  for (std::vector<DocId>& holders : *out) holders.clear();
  if (pairs.empty()) return absl::OkStatus();
  if (db_.stem_pairs_layout() == kStemPairsLayoutKeys) return LookupKeys(pairs, max_documents, out);
  // The cache knows which pairs kHolders or more documents hold: common under the default.
  const bool cached = max_documents == CommonPairCache::kHolders;
  const uint64_t generation = common_.generation();
  std::vector<size_t> read;  // positions in `pairs` read from the index
  read.reserve(pairs.size());
  std::vector<std::string> keys;
  keys.reserve(pairs.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (cached && common_.Contains(pairs[i])) continue;
    read.push_back(i);
    keys.push_back(MergedKey(pairs[i]));
  }
  skipped_.fetch_add(pairs.size() - read.size(), std::memory_order_relaxed);
  std::vector<rocksdb::PinnableSlice> values;
  std::vector<rocksdb::Status> statuses;
  // Big-endian pairs after one tag byte: the keys sort as the pairs do.
  MultiGetPairs(db_, keys, std::is_sorted(pairs.begin(), pairs.end()), &values, &statuses);
  // The key as errors name it (formatted only for one).
  const auto key_name = [&](size_t i) {
    char pair_hex[9];
    std::snprintf(pair_hex, sizeof pair_hex, "%08x", pairs[i]);
    return std::string("P") + pair_hex;
  };
  StemPairHolders h;
  std::vector<uint32_t> common;
  for (size_t k = 0; k < read.size(); ++k) {
    const size_t i = read[k];
    if (statuses[k].IsNotFound()) continue;
    if (!statuses[k].ok()) {
      return FromRocks(statuses[k], "reading stem pairs key " + key_name(i));
    }
    if (!stem_pair_codec::Decode(values[k].ToStringView(), &h)) {
      return absl::DataLossError("stem pairs: malformed holders at key " + key_name(i) + " (" +
                                 std::to_string(values[k].size()) + " bytes)");
    }
    if (h.count >= CommonPairCache::kHolders) common.push_back(pairs[i]);
    // A pair held by max_documents or more is common. One with listed ids short of its count
    // lost its holders outside the capped list to removals: no evidence rather than a guess.
    if (h.count >= max_documents || h.ids.size() != h.count) continue;
    (*out)[i] = h.ids;
  }
  common_.InsertAll(common, generation);
  return absl::OkStatus();
}

absl::Status StemPairStore::LookupKeys(std::span<const uint32_t> pairs, uint32_t max_documents,
                                       std::vector<std::vector<DocId>>* out) const {
  rocksdb::ReadOptions r;
  r.prefix_same_as_start = true;  // each Seek stays in its pair's range (prefix bloom)
  std::unique_ptr<rocksdb::Iterator> it(db_.db().NewIterator(r, db_.stem_pairs()));
  for (size_t i = 0; i < pairs.size(); ++i) {
    std::vector<DocId>& holders = (*out)[i];
    const std::string prefix = PairPrefix(pairs[i]);
    for (it->Seek(AsSlice(prefix)); it->Valid() && it->key().starts_with(AsSlice(prefix));
         it->Next()) {
      const rocksdb::Slice key = it->key();
      if (key.size() != kPrefixBytes + 8) {
        return absl::DataLossError("stem pairs: malformed key of " + std::to_string(key.size()) +
                                   " bytes");
      }
      if (holders.size() + 1 >= max_documents) {  // this one makes max_documents: common
        holders.clear();
        break;
      }
      holders.push_back(GetBE(key.data() + kPrefixBytes, 8));
    }
  }
  return FromRocks(it->status(), "reading stem pairs");
}

absl::Status StemPairStore::ReadOrder(std::span<const DocId> ids,
                                      std::vector<std::vector<uint32_t>>* out) const {
  out->resize(ids.size());
  if (ids.empty()) return absl::OkStatus();
  std::vector<std::string> keys;
  keys.reserve(ids.size());
  for (DocId id : ids) keys.push_back(DocListKey(id));
  std::vector<rocksdb::PinnableSlice> values;
  std::vector<rocksdb::Status> statuses;
  MultiGetPairs(db_, keys, std::is_sorted(ids.begin(), ids.end()), &values, &statuses);
  for (size_t i = 0; i < ids.size(); ++i) {
    std::vector<uint32_t>& order = (*out)[i];
    order.clear();
    if (statuses[i].IsNotFound()) continue;
    if (!statuses[i].ok()) {
      return FromRocks(statuses[i], "reading the stem pairs of document " + std::to_string(ids[i]));
    }
    bool ordered = false;
    if (!ParseDocList(values[i].ToStringView(), &order, &ordered)) {
      return NotWholePairs(ids[i], values[i].size());
    }
    if (!ordered) order.clear();  // ascending: the text's order is unknown
  }
  return absl::OkStatus();
}

void StemPairStore::Add(rocksdb::WriteBatch* b, std::span<const DocumentPairs> documents) const {
  if (!available()) return;
  size_t total = 0;
  std::string list;
  for (const DocumentPairs& d : documents) {
    if (d.pairs.empty()) continue;
    total += d.pairs.size();
    list.assign(1, kOrderedList);
    list.reserve(1 + 4 * d.pairs.size());
    for (uint32_t pair : d.pairs) PutBE32(&list, pair);
    b->Put(db_.stem_pairs(), DocListKey(d.id), list);
  }
  // (pair, document) in that order, a document by its rank among the window's ids: one
  // 64-bit key each, sorted for ~45 k instructions a document less than (pair, id) pairs
  // (bench/register-instructions.sh BUILD 8192 --stem-pairs 1).
  std::vector<DocId> ids;
  ids.reserve(documents.size());
  for (const DocumentPairs& d : documents) ids.push_back(d.id);
  std::sort(ids.begin(), ids.end());
  std::vector<uint64_t> all;
  all.reserve(total);
  for (const DocumentPairs& d : documents) {
    const auto rank =
        static_cast<uint64_t>(std::lower_bound(ids.begin(), ids.end(), d.id) - ids.begin());
    for (uint32_t pair : d.pairs) all.push_back(uint64_t{pair} << 32 | rank);
  }
  std::sort(all.begin(), all.end());
  const bool merged = db_.stem_pairs_layout() != kStemPairsLayoutKeys;
  std::vector<DocId> first;
  for (size_t i = 0; i < all.size();) {
    const auto pair = static_cast<uint32_t>(all[i] >> 32);
    size_t end = i;
    first.clear();
    for (; end < all.size() && (all[end] >> 32) == pair; ++end) {
      const DocId id = ids[all[end] & 0xffffffffu];
      if (!merged) {
        b->Put(db_.stem_pairs(), PairKey(pair, id), rocksdb::Slice());
      } else if (first.size() < kStemPairHolderCap) {
        first.push_back(id);
      }
    }
    // One add of the window's holders merges as their adds one by one (CombineAdds).
    if (merged) {
      b->Merge(db_.stem_pairs(), MergedKey(pair), stem_pair_codec::AddOperand(end - i, first));
    }
    i = end;
  }
}

absl::Status StemPairStore::AddRemoval(rocksdb::WriteBatch* b, DocId id) const {
  if (!available()) return absl::OkStatus();
  const std::string key = DocListKey(id);
  COPS_ASSIGN_OR_RETURN(auto list, db_.Get(db_.stem_pairs(), key, "reading a document's stem pairs"));
  if (!list.has_value()) return absl::OkStatus();
  std::vector<uint32_t> pairs;
  bool ordered = false;
  if (!ParseDocList(*list, &pairs, &ordered)) return NotWholePairs(id, list->size());
  const bool merged = db_.stem_pairs_layout() != kStemPairsLayoutKeys;
  const std::string remove = stem_pair_codec::RemoveOperand(id);
  for (uint32_t pair : pairs) {
    if (merged) {
      b->Merge(db_.stem_pairs(), MergedKey(pair), remove);
    } else {
      b->Delete(db_.stem_pairs(), PairKey(pair, id));
    }
  }
  b->Delete(db_.stem_pairs(), key);
  return absl::OkStatus();
}

}  // namespace cops
