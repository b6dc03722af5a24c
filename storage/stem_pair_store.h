#ifndef COPS_STORAGE_STEM_PAIR_STORE_H_
#define COPS_STORAGE_STEM_PAIR_STORE_H_

// The content-stem pairs of an index created with ChunkingParams::stem_pairs
// (core/stem_pairs.h), in a column family of their own ("stem_pairs", created with the index
// when its parameters ask for pairs; absent otherwise). Its layout is recorded in the meta
// data (kStemPairsLayoutKey; IndexDb::stem_pairs_layout):
// layout 2 (every index created since it):
//   'P' + BE32 pair -> varint holder count, then up to kStemPairHolderCap holder ids
//       (varint each, ascending): one point key per pair, kept by a merge operator whose
//       operands are '+' + varint n + the first min(n, cap) ids of n registrations (one when
//       written; consecutive ones combine at flushes and compactions) and '-' + varint
//       document id (a removal, applied in order by the full merge). The count
//       is exact under removal; the list keeps the first holders that arrive and drops the
//       ones removed, so after removals a pair may have fewer listed holders than its count
//       (the rest were never listed). A lookup then reports no holder for that pair: its
//       evidence is lost, never a wrong document. A lookup of n pairs is one MultiGet.
// layout 1 (indexes made before; absent key), still read and written:
//   'p' + BE32 pair + BE64 document id -> empty: one key per pair and holder, a lookup one
//       iterator seek per pair.
// Both keep 'd' + BE64 document id -> the document's pairs, BE32 each: what a removal undoes,
//   and what a check reads of a document holding enough of its pairs (ReadOrder). Since
//   the pairs' order counts, the value is 0x01 + the pairs in the order of their first
//   occurrence in the text (its length is 1 mod 4); values written before (a multiple of 4
//   bytes) list them ascending, their order unknown.
// Internal to storage/; docs/storage-format.md.
//
// Thread-safety: const methods, safe from any thread; what a write batch adds is the
// Index's writer's to keep consistent.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/match.h"
#include "rocksdb/options.h"

namespace rocksdb {
class Cache;
class ColumnFamilyHandle;
class DB;
class WriteBatch;
}  // namespace rocksdb

namespace cops {

class IndexDb;

// The family's name. on-disk: do not change.
inline constexpr char kStemPairsCf[] = "stem_pairs";
// Meta key (default family) of the family's layout: varint 2; absent = 1. on-disk.
inline constexpr char kStemPairsLayoutKey[] = "stem_pairs_layout";
inline constexpr uint32_t kStemPairsLayoutKeys = 1;   // one key per pair and holder
inline constexpr uint32_t kStemPairsLayoutMerged = 2;  // one merged value per pair
// How many holders a layout-2 value lists (at least stem_pair_max_documents, 2 by default:
// a pair held by more is common and its holders are not needed). on-disk: do not lower.
inline constexpr uint32_t kStemPairHolderCap = 4;

// A layout-2 value.
struct StemPairHolders {
  uint64_t count = 0;
  std::vector<DocId> ids;  // ascending, at most kStemPairHolderCap and count
  bool operator==(const StemPairHolders&) const = default;
};
namespace stem_pair_codec {
std::string Encode(const StemPairHolders& h);
// False on a malformed value (truncated, trailing bytes, too many ids, out of order).
bool Decode(std::string_view value, StemPairHolders* h);
// An add of `holders` documents, `first` (ascending, at most kStemPairHolderCap and
// `holders`) the first of them: a registration window's holders of one pair.
std::string AddOperand(uint64_t holders, std::span<const DocId> first);
std::string RemoveOperand(DocId id);
// The merge operator's work: `existing` (if any) with `operands` applied in order. A
// malformed input gives a value that Decode refuses (so a lookup reports DATA_LOSS and a
// compaction does not fail); returns false only when that happened.
bool Merge(std::optional<std::string_view> existing, std::span<const std::string_view> operands,
           std::string* out);
// Consecutive add operands as one (their count, the first kStemPairHolderCap ids): what a
// full merge of them and of it gives is the same. False when there are none or one is not a
// well-formed add.
bool CombineAdds(std::span<const std::string_view> operands, std::string* out);
}  // namespace stem_pair_codec

// The family's options: point keys and ranges by pair (prefix bloom filter on 'P'/'p' +
// pair), the layout-2 merge operator, keyed hashes (no compression helps).
rocksdb::ColumnFamilyOptions StemPairsCfOptions(size_t write_buffer_bytes,
                                                const std::shared_ptr<rocksdb::Cache>& cache);

// The pairs a lookup found held by 2 or more registered documents (common: the default
// CheckOptions::stem_pair_max_documents drops them), so that later lookups need not read
// them again. Of the pairs a check looks up, `cops bench`'s 20 KB checks at 10^4 documents
// found 55% common, 36% absent, 9% rare; the same-genre dev texts (eval/) against 1,172 of
// them 25% common, 65% absent (which the bloom filter answers cheaply). A registration only
// adds holders, so a common pair stays common; a removal may make it rare again, so the
// index forgets them all after writing one (ForgetAll). Exact: a pair it holds was seen
// common, and no removal was written since. Bounded: 2^18 slots of 4 bytes (allocated by
// the first InsertAll), at most half filled, then it adds no more until the next ForgetAll.
//
// Thread-safety: every method, from any thread. ForgetAll bumps the generation before it
// clears, and a lookup's adds are dropped if the generation moved while it read, so nothing
// read before a removal was written stays.
class CommonPairCache {
 public:
  // Holders that make a pair common for the cache: the least stem_pair_max_documents allowed.
  static constexpr uint64_t kHolders = 2;
  bool Contains(uint32_t pair) const;
  // Adds pairs found common by a lookup that began at `generation`, unless a removal was
  // written since (the generation moved).
  void InsertAll(std::span<const uint32_t> pairs, uint64_t generation);
  uint64_t generation() const { return generation_.load(); }
  void ForgetAll();

 private:
  static constexpr uint32_t kSlotBits = 18;
  std::atomic<uint32_t>* Slots() const;
  mutable std::once_flag allocated_;
  mutable std::unique_ptr<std::atomic<uint32_t>[]> slots_;  // 0 = empty; pair 0 never held
  std::atomic<size_t> size_{0};
  std::atomic<uint64_t> generation_{0};
};

class StemPairStore {
 public:
  explicit StemPairStore(const IndexDb& db) : db_(db) {}

  // Whether the index keeps pairs (its family is open).
  bool available() const;
  // Index::LookupStemPairs. REQUIRES: available(). With max_documents ==
  // CommonPairCache::kHolders (the default), the pairs the common pairs' cache holds are not
  // read (their lists stay empty, as a read would leave them), and those read and found
  // common are added to it.
  absl::Status Lookup(std::span<const uint32_t> pairs, uint32_t max_documents,
                      std::vector<std::vector<DocId>>* out) const;
  // After a write that removed documents (whatever its outcome): their pairs may be rare now.
  void ForgetCommonPairs() const { common_.ForgetAll(); }
  // How many looked-up pairs the cache answered (Index stats; tests).
  uint64_t common_pairs_skipped() const { return skipped_.load(std::memory_order_relaxed); }
  // out->at(i) holds the pairs of ids[i] in their text's order; empty when the document
  // keeps none or was registered before the order was kept. One MultiGet; a malformed list
  // is DATA_LOSS naming its document.
  absl::Status ReadOrder(std::span<const DocId> ids,
                         std::vector<std::vector<uint32_t>>* out) const;
  struct DocumentPairs {
    DocId id = 0;
    std::span<const uint32_t> pairs;  // distinct, in the text's order (stem_pair_order)
  };
  // Adds the documents' pairs to `b`, in pair order, a pair's documents in one operand (its
  // holders among them, the first ones listed): a registration window's pairs land side by
  // side in the memtable's skip list, whose insert then resumes from the previous position
  // instead of descending from the top (one operand per pair and document, in document
  // order, made the skip list 77% of copsd's CPU when registering). Nothing when not
  // available().
  void Add(rocksdb::WriteBatch* b, std::span<const DocumentPairs> documents) const;
  // Adds the deletion of everything kept for `id` (nothing when it holds no pairs).
  absl::Status AddRemoval(rocksdb::WriteBatch* b, DocId id) const;

 private:
  // Layout 1's lookup: one seek per pair.
  absl::Status LookupKeys(std::span<const uint32_t> pairs, uint32_t max_documents,
                          std::vector<std::vector<DocId>>* out) const;

  const IndexDb& db_;
  mutable CommonPairCache common_;
  mutable std::atomic<uint64_t> skipped_{0};
};

}  // namespace cops

#endif  // COPS_STORAGE_STEM_PAIR_STORE_H_
