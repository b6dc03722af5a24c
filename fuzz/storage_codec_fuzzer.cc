// libFuzzer entry for the index's on-disk encodings (storage/codec.h) over arbitrary bytes, as
// a damaged or hostile data directory would hand them to the decoders. The first byte picks
// the decoder; the rest is the value. A decode error is a status (DATA_LOSS); anything that
// decodes must hold the format's invariants and encode back to what decodes the same, so a
// value the index could not write again (ids or ordinals out of order, wrapped counters) is a
// bug too. Selectors 5 and 6 fuzz the bucketed postings of index schema 4
// (storage/bucket_codec.h): a bucket value decoded, looked up and encoded back, and merges of
// add fragments and remove operands, whole and for some rests (a lookup's). Selector 7 fuzzes
// the content-stem pairs' holder values and their merge (storage/stem_pair_store.h). Seeds:
// fuzz/fuzz_seeds.cc ("storage_codec"), values the encoders wrote.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/fingerprint.h"
#include "storage/bucket_codec.h"
#include "storage/codec.h"
#include "storage/stem_pair_store.h"

namespace {

namespace codec = cops::storage_codec;

void Require(bool invariant) {
  if (!invariant) std::abort();
}

// Postings ordered by (doc_id, ordinal), each span well-formed (codec.h's REQUIRES).
void RequireOrdered(const cops::PostingList& list) {
  for (size_t i = 0; i < list.postings.size(); ++i) {
    const cops::Posting& p = list.postings[i];
    Require(p.doc_id != 0 && p.start <= p.end);
    if (i == 0) continue;
    const cops::Posting& q = list.postings[i - 1];
    Require(q.doc_id < p.doc_id || (q.doc_id == p.doc_id && q.ordinal <= p.ordinal));
  }
}

void PostingList(std::string_view value) {
  cops::PostingList list;
  if (!codec::DecodePostingList(value, &list).ok()) return;
  RequireOrdered(list);
  cops::PostingList again;
  Require(codec::DecodePostingList(codec::EncodePostingList(list), &again).ok());
  Require(again.doc_frequency == list.doc_frequency && again.postings == list.postings);
}

// A merge case read from the fuzzer's input (see Merge); views into the input.
struct MergeInput {
  uint32_t max_postings = 0;
  std::vector<std::string_view> pieces;
  std::optional<std::string_view> existing;  // pieces[0] when the input says so
  std::span<const std::string_view> operands() const {
    return std::span<const std::string_view>(pieces).subspan(existing ? 1 : 0);
  }
};

// `in` is not empty.
MergeInput ParseMergeInput(std::string_view in) {
  MergeInput m;
  const bool has_existing = (in[0] & 1) != 0;
  m.max_postings = static_cast<uint8_t>(in[0]) >> 1;
  in.remove_prefix(1);
  while (!in.empty() && m.pieces.size() < 16) {
    const size_t n = static_cast<uint8_t>(in[0]);
    in.remove_prefix(1);
    const size_t take = n < in.size() ? n : in.size();
    m.pieces.push_back(in.substr(0, take));
    in.remove_prefix(take);
  }
  if (has_existing && !m.pieces.empty()) m.existing = m.pieces[0];
  return m;
}

// Input: an optional existing value and merge operands, each a one-byte length and its bytes
// (the last one takes the rest); the first byte's low bit says whether a value exists.
void Merge(std::string_view in) {
  if (in.empty()) return;
  const MergeInput m = ParseMergeInput(in);
  const uint32_t max_postings = m.max_postings;
  const std::optional<std::string_view> existing = m.existing;
  const std::span<const std::string_view> operands = m.operands();
  std::string out;
  if (!codec::MergePostings(existing, operands, max_postings, &out)) return;
  // RocksDB stores what the merge returned: it must read back.
  cops::PostingList list;
  Require(codec::DecodePostingList(out, &list).ok());
  RequireOrdered(list);
}

namespace bc = cops::bucket_codec;

// Groups by ascending rest, each non-empty, its postings ordered as a posting list's.
void RequireBucket(const std::vector<bc::BucketGroup>& groups) {
  for (size_t i = 0; i < groups.size(); ++i) {
    Require(i == 0 || groups[i - 1].rest < groups[i].rest);
    Require(!groups[i].postings.empty() || groups[i].beyond_cap != 0);
    cops::PostingList list;
    list.postings = groups[i].postings;
    RequireOrdered(list);
  }
}

void Bucket(std::string_view value) {
  std::vector<bc::BucketGroup> groups;
  const absl::Status s = bc::DecodeBucket(value, "key", &groups);
  // A lookup of every rest decoded (and of one more) agrees with the decode, or fails with it.
  std::vector<uint64_t> rests;
  for (const auto& g : groups) rests.push_back(g.rest);
  rests.push_back(rests.empty() ? 0 : rests.back() + 1);
  std::vector<cops::PostingList> lists(rests.size());
  std::vector<cops::PostingList*> outs;
  for (auto& l : lists) outs.push_back(&l);
  const absl::Status looked = bc::LookupInBucket(value, "key", rests, outs);
  // The rests a filling of the hash filter reads: those decoded, in order.
  std::vector<uint64_t> stepped;
  const absl::Status walked =
      bc::ForEachRest(value, "key", [&](uint64_t rest) { stepped.push_back(rest); });
  if (!s.ok()) {
    Require(s.code() == absl::StatusCode::kDataLoss);
    Require(looked.ok() || looked.code() == absl::StatusCode::kDataLoss);
    Require(walked.ok() || walked.code() == absl::StatusCode::kDataLoss);
    return;
  }
  Require(looked.ok());
  Require(walked.ok());
  rests.pop_back();
  Require(stepped == rests);
  RequireBucket(groups);
  for (size_t i = 0; i < groups.size(); ++i) Require(lists[i].postings == groups[i].postings);
  Require(lists.back().postings.empty());
  // What decodes encodes back to what decodes the same, and that encoding is canonical.
  const std::string encoded = bc::EncodeBucket(groups);
  std::vector<bc::BucketGroup> again;
  Require(bc::DecodeBucket(encoded, "key", &again).ok());
  Require(bc::EncodeBucket(again) == encoded);
}

// As Merge, over the bucket codec; partial merges of add fragments agree with full merges.
void BucketMerge(std::string_view in) {
  if (in.empty()) return;
  const MergeInput m = ParseMergeInput(in);
  const uint32_t max_postings = m.max_postings;
  const std::optional<std::string_view> existing = m.existing;
  const std::span<const std::string_view> operands = m.operands();
  std::string out, reference;
  const bool merged = bc::MergeBucket(existing, operands, max_postings, &out);
  Require(merged == bc::MergeBucketReference(existing, operands, max_postings, &reference));
  if (!merged) return;
  Require(out == reference);
  std::vector<bc::BucketGroup> groups;
  Require(bc::DecodeBucket(out, "key", &groups).ok());
  RequireBucket(groups);
  // A merge for some rests (a lookup's) holds exactly their groups of the whole merge: every
  // other rest merged, and one past the last.
  std::vector<uint64_t> wanted;
  std::vector<bc::BucketGroup> kept;
  for (size_t i = 0; i < groups.size(); i += 2) {
    wanted.push_back(groups[i].rest);
    kept.push_back(groups[i]);
  }
  if (!groups.empty() && groups.back().rest < UINT64_MAX) wanted.push_back(groups.back().rest + 1);
  std::string restricted;
  Require(bc::MergeBucketRests(existing, operands, wanted, max_postings, &restricted));
  Require(restricted == bc::EncodeBucket(kept));
  std::string combined;
  if (existing.has_value() || !bc::CombineAddFragments(operands, &combined)) return;
  std::string via_combined;
  const std::vector<std::string_view> one = {combined};
  Require(bc::MergeBucket(std::nullopt, one, max_postings, &via_combined));
  if (max_postings == 0) Require(via_combined == out);
}

// A stem pair's holders: what decodes holds the value's invariants and reads back the same;
// a merge (as MergeInput) yields a value that decodes exactly when it says it succeeded,
// the same with its adds combined.
void RequireHolders(const cops::StemPairHolders& h) {
  Require(h.ids.size() <= cops::kStemPairHolderCap && h.ids.size() <= h.count);
  for (size_t i = 1; i < h.ids.size(); ++i) Require(h.ids[i - 1] < h.ids[i]);
  cops::StemPairHolders again;
  Require(cops::stem_pair_codec::Decode(cops::stem_pair_codec::Encode(h), &again) && again == h);
}

void StemPairHolders(std::string_view in) {
  if (in.empty()) return;
  cops::StemPairHolders h;
  if (cops::stem_pair_codec::Decode(in, &h)) RequireHolders(h);
  const MergeInput m = ParseMergeInput(in);
  std::string out;
  const bool merged = cops::stem_pair_codec::Merge(m.existing, m.operands(), &out);
  Require(cops::stem_pair_codec::Decode(out, &h) == merged);
  if (!merged) return;
  RequireHolders(h);
  // Adds combined (a partial merge) merge into the same value as one by one.
  std::string combined, via_combined;
  if (!cops::stem_pair_codec::CombineAdds(m.operands(), &combined)) return;
  const std::vector<std::string_view> one = {combined};
  Require(cops::stem_pair_codec::Merge(m.existing, one, &via_combined) && via_combined == out);
}

void DocumentRecord(std::string_view value) {
  cops::DocumentRecord r;
  if (!codec::DecodeDocumentRecord(42, value, &r).ok()) return;
  Require(r.id == 42);
  cops::DocumentRecord again;
  const std::string encoded = codec::EncodeDocumentRecord(r);
  Require(codec::DecodeDocumentRecord(42, encoded, &again).ok());
  Require(codec::EncodeDocumentRecord(again) == encoded);
}

void Grams(std::string_view value) {
  std::vector<uint32_t> grams;
  if (!codec::DecodeGrams(7, value, &grams).ok()) return;
  for (uint32_t g : grams) Require(g < (1u << cops::kVerifyGramBits));
  Require(codec::EncodeGrams(grams) == value);
}

void Varints(std::string_view in) {
  while (!in.empty()) {
    const size_t before = in.size();
    uint64_t v;
    std::string_view s;
    if ((before & 1) != 0 ? !codec::GetVarint64(&in, &v) : !codec::GetLengthPrefixed(&in, &s)) {
      return;
    }
    Require(in.size() < before);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view value(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 8) {
    case 0: PostingList(value); break;
    case 1: Merge(value); break;
    case 2: DocumentRecord(value); break;
    case 3: Grams(value); break;
    case 5: Bucket(value); break;
    case 6: BucketMerge(value); break;
    case 7: StemPairHolders(value); break;
    default: Varints(value); break;
  }
  return 0;
}
