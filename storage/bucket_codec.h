#ifndef COPS_STORAGE_BUCKET_CODEC_H_
#define COPS_STORAGE_BUCKET_CODEC_H_

// Byte encoding of the bucketed postings layout (index schema 4, docs/storage-format.md):
// the postings of every chunk hash whose top `bucket_bits` are the same share one RocksDB
// value, so that the key and RocksDB's per-key overhead are paid once per bucket instead of
// once per hash. Internal to storage/.
//
// A bucket value (and an add fragment, the merge operand a registration writes: the same
// format) is the tag byte kBucketValue followed by groups in ascending order of `rest`, the
// hash's bits below the bucket's (truncated to the layout's hash_bits). A group:
//   varint(rest delta << 1 | has_header)       first group: rest itself; later ones: >= 1
//   [has_header: varint(listed documents), varint(documents counted beyond the cap)]
//                                                 (no header: one listed document, none beyond)
//   per listed document, ascending:
//     varint(document delta << 1 | several)    first: the id itself (>= 1); later ones: >= 1
//     [several: varint(postings - 2)]           (otherwise one posting)
//     per posting, by ordinal: varint(ordinal delta), varint(zigzag start delta),
//                              varint(end - start)   (deltas from the previous posting, or 0)
// A value (or fragment) holding a document without positions (its one posting in the group
// has ordinal, start and end 0: a verifying index keeps none for a stored plain text,
// docs/storage-format.md) has the tag kBucketValuePositionless instead, and there every
// listed document is varint(document delta << 2 | positionless << 1 | several), a
// positionless one nothing more. Encoders choose the tag from the postings, so a value
// without such a document is byte for byte what builds before the tag wrote.
// A remove operand: tag kBucketRemove, varint(document), varint(count), then the rests of
// the document's hashes in this bucket, ascending, delta-coded (first absolute, then >= 1).
//
// Thread-safety: stateless functions.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "core/match.h"

namespace cops::bucket_codec {

// Leading bytes. on-disk: do not change.
inline constexpr uint8_t kBucketValue = 1;
inline constexpr uint8_t kBucketRemove = 2;
inline constexpr uint8_t kBucketValuePositionless = 3;  // index schema 6

// Whether `operand` is a value or an add fragment (either tag), not a remove.
inline bool IsAddFragment(std::string_view operand) {
  return !operand.empty() && (static_cast<uint8_t>(operand[0]) == kBucketValue ||
                              static_cast<uint8_t>(operand[0]) == kBucketValuePositionless);
}

// Bucket bits an index may record: the key is 4 bytes, so at most 32.
inline constexpr uint32_t kMinBucketBits = 4;
inline constexpr uint32_t kMaxBucketBits = 32;

// How hashes map to buckets. Recorded in the index's meta data when it is created.
struct BucketLayout {
  uint32_t bucket_bits = 20;
  // Hash bits kept: bucket_bits of them in the key, the rest in the value. Below 64, two
  // chunks whose top hash_bits agree share their postings.
  uint32_t hash_bits = 64;

  uint32_t rest_bits() const { return hash_bits - bucket_bits; }
  uint32_t Bucket(ChunkHash h) const { return static_cast<uint32_t>(h >> (64 - bucket_bits)); }
  uint64_t Rest(ChunkHash h) const {
    return (h >> (64 - hash_bits)) & ((uint64_t{1} << rest_bits()) - 1);
  }
  // The hash a bucket and rest stand for, its bits below hash_bits zero.
  ChunkHash Join(uint64_t bucket, uint64_t rest) const {
    return ((bucket << rest_bits()) | rest) << (64 - hash_bits);
  }
  // INVALID_ARGUMENT unless kMinBucketBits <= bucket_bits <= kMaxBucketBits and
  // bucket_bits + 8 <= hash_bits <= 64.
  absl::Status Validate() const;
  bool operator==(const BucketLayout&) const = default;
};

// The bucket bits for an index expected to hold `documents` documents: about four buckets
// per document, ~32 stored postings each at that size (a 4 KB document stores ~140), so that
// a bucket amortises its key and a lookup decodes a few hundred bytes at most. Clamped to
// [12, 32] (docs/storage-format.md).
uint32_t BucketBitsFor(uint64_t documents);

// The 4-byte big-endian key of a bucket (keys sort by bucket).
void EncodeBucketKey(char* dst, uint32_t bucket);
std::string BucketKey(uint32_t bucket);
uint32_t DecodeBucketKey(const char* p);  // reads p[0..4)

// One posting with its hash's rest, as a registration adds it.
struct BucketPosting {
  uint64_t rest = 0;
  Posting posting;
};

// An add fragment. REQUIRES: `postings` sorted by (rest, doc_id, ordinal), every rest below
// 2^layout.rest_bits(), doc ids >= 1 and below 2^63, start <= end.
std::string EncodeAddFragment(std::span<const BucketPosting> postings);
// The same into `operand` (its earlier contents replaced): a caller encoding many reuses it.
void EncodeAddFragment(std::span<const BucketPosting> postings, std::string* operand);
// REQUIRES: `rests` sorted ascending, distinct, doc >= 1.
std::string EncodeRemoveOperand(DocId doc, std::span<const uint64_t> rests);

// The postings of one rest in a decoded bucket.
struct BucketGroup {
  uint64_t rest = 0;
  uint32_t beyond_cap = 0;          // documents counted, not listed
  std::vector<Posting> postings;    // by (doc_id, ordinal)
};

// Decodes a whole value (either tag). DATA_LOSS naming `key` on a malformed value.
absl::Status DecodeBucket(std::string_view value, std::string_view key,
                          std::vector<BucketGroup>* out);
// Encodes groups sorted by rest (empty groups are dropped).
std::string EncodeBucket(std::span<const BucketGroup> groups);

// Calls fn(rest) for each group of `value` (either tag), in ascending order, stepping over
// the postings. DATA_LOSS naming `key` on a malformed value.
absl::Status ForEachRest(std::string_view value, std::string_view key,
                         const std::function<void(uint64_t rest)>& fn);

// Finds the groups of `rests` (sorted ascending, duplicates allowed) in `value` and sets
// (*outs[i]) to rests[i]'s postings (doc_frequency: the listed documents plus those beyond
// the cap); the others are not touched. Decodes only the postings of the groups asked for
// and stops after the last: damage in the groups stepped over or beyond may pass unnoticed.
// DATA_LOSS naming `key` on a malformed value met.
absl::Status LookupInBucket(std::string_view value, std::string_view key,
                            std::span<const uint64_t> rests, std::span<PostingList* const> outs);

// Applies `operands` (add fragments and remove operands) in order to `existing` (nullopt =
// no value yet) and writes the new value. An add for a document already listed under a
// rest is ignored (a replayed write); an add that would grow a rest's postings beyond
// `max_postings` (0 = no limit) only counts the document. A remove drops the document's
// postings under each of its rests, or, for a document counted but not listed, the count.
// False on a malformed value or operand.
bool MergeBucket(const std::optional<std::string_view>& existing,
                 std::span<const std::string_view> operands, uint32_t max_postings,
                 std::string* out);

// MergeBucket restricted to `rests` (sorted ascending, duplicates allowed): exactly the
// groups of those rests that MergeBucket's value would hold, and no others (each rest's
// groups merge independently). Only their entries are decoded; the other groups of each
// operand are stepped over, so damage there may pass unnoticed. What a read of a few hashes
// of a bucket with merge operands runs (BucketReadScope, storage/index_db.h), so that it
// costs about what a read of the merged bucket would. False on a malformed value or operand.
bool MergeBucketRests(const std::optional<std::string_view>& existing,
                      std::span<const std::string_view> operands,
                      std::span<const uint64_t> rests, uint32_t max_postings, std::string* out);

// MergeBucket written the straightforward way (a map of groups), slower: what tests and
// the fuzz target compare MergeBucket with.
bool MergeBucketReference(const std::optional<std::string_view>& existing,
                          std::span<const std::string_view> operands, uint32_t max_postings,
                          std::string* out);

// Combines consecutive add fragments into one (what a RocksDB partial merge may do); false
// when an operand is not an add fragment or is malformed.
bool CombineAddFragments(std::span<const std::string_view> operands, std::string* out);

}  // namespace cops::bucket_codec

#endif  // COPS_STORAGE_BUCKET_CODEC_H_
