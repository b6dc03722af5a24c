#include "storage/codec.h"

#include <algorithm>
#include <limits>
#include <random>

#include "storage/bucket_codec.h"

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace cops::storage_codec {
namespace {

TEST(CodecTest, VarintRoundTripsAndRejectsTruncation) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{127}, uint64_t{128}, uint64_t{300},
                     uint64_t{1} << 35, std::numeric_limits<uint64_t>::max()}) {
    std::string s;
    PutVarint64(&s, v);
    std::string_view in = s;
    uint64_t got = 0;
    ASSERT_TRUE(GetVarint64(&in, &got));
    EXPECT_EQ(got, v);
    EXPECT_TRUE(in.empty());
    std::string_view truncated(s.data(), s.size() - 1);
    EXPECT_FALSE(GetVarint64(&truncated, &got)) << v;
  }
}

TEST(CodecTest, KeysSortNumerically) {
  EXPECT_LT(DocKey(255), DocKey(256));
  EXPECT_LT(ChunkKey(1), ChunkKey(uint64_t{1} << 63));
  EXPECT_EQ(DecodeFixed64BE(ChunkKey(0x0102030405060708).data()), 0x0102030405060708u);
}

TEST(CodecTest, PostingListRoundTripsCompactly) {
  PostingList list;
  list.doc_frequency = 3;
  list.postings = {{5, 2, 100, 130}, {5, 9, 90, 95}, {7, 0, 0, 10}, {1000000, 1250, 31000, 31040}};
  const std::string encoded = EncodePostingList(list);
  PostingList back;
  ASSERT_OK(DecodePostingList(encoded, &back));
  EXPECT_EQ(back.doc_frequency, 3u);
  ASSERT_EQ(back.postings.size(), list.postings.size());
  for (size_t i = 0; i < list.postings.size(); ++i) {
    EXPECT_EQ(back.postings[i].doc_id, list.postings[i].doc_id);
    EXPECT_EQ(back.postings[i].ordinal, list.postings[i].ordinal);
    EXPECT_EQ(back.postings[i].start, list.postings[i].start);
    EXPECT_EQ(back.postings[i].end, list.postings[i].end);
  }
  // A typical single posting (doc ~10^6, ordinal ~1000, offset ~30 KB) fits in 12 bytes.
  PostingList one{1, {{1000000, 1250, 31000, 31040}}};
  EXPECT_LE(EncodePostingList(one).size(), 12u);
}

TEST(CodecTest, MalformedPostingListIsDataLoss) {
  PostingList out;
  EXPECT_EQ(DecodePostingList("\x01\x05", &out).code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodePostingList("\x80", &out).code(), absl::StatusCode::kDataLoss);
}

// Deltas that wrap around (found by fuzz/storage_codec_fuzzer.cc): a document id, ordinal or
// start that overflows is damage, not a posting list out of order (and the start's signed
// sum was undefined behaviour).
TEST(CodecTest, PostingListWithWrappingDeltasIsDataLoss) {
  auto list_of = [](uint64_t doc_delta, uint64_t ordinal_delta, uint64_t zigzag_start) {
    std::string v;
    PutVarint64(&v, 1);  // doc frequency
    PutVarint64(&v, 5);  // first document: 5
    PutVarint64(&v, 1);  // one posting: ordinal 7, bytes [100, 110)
    PutVarint64(&v, 7);
    PutVarint64(&v, 200);
    PutVarint64(&v, 10);
    PutVarint64(&v, doc_delta);  // second document
    PutVarint64(&v, 2);  // two postings: ordinal 1, bytes [1, 1); then the one under test
    PutVarint64(&v, 1);
    PutVarint64(&v, 2);
    PutVarint64(&v, 0);
    PutVarint64(&v, ordinal_delta);
    PutVarint64(&v, zigzag_start);
    PutVarint64(&v, 0);
    return v;
  };
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  PostingList out;
  ASSERT_OK(DecodePostingList(list_of(1, 1, 2), &out));
  EXPECT_EQ(out.postings.back(), (Posting{6, 2, 2, 2}));
  // Document 5 + (2^64 - 2) wraps to 3: before 5.
  EXPECT_EQ(DecodePostingList(list_of(kMax - 1, 1, 2), &out).code(),
            absl::StatusCode::kDataLoss);
  // Ordinal 1 + (2^64 - 1) wraps to 0: before 1.
  EXPECT_EQ(DecodePostingList(list_of(1, kMax, 2), &out).code(), absl::StatusCode::kDataLoss);
  // Start 1 + (2^63 - 1) (zigzag 2^64 - 2) overflows.
  EXPECT_EQ(DecodePostingList(list_of(1, 1, kMax - 1), &out).code(),
            absl::StatusCode::kDataLoss);
}

PostingList Merge(const std::optional<std::string>& existing, const std::vector<std::string>& ops,
                  uint32_t cap) {
  std::vector<std::string_view> views(ops.begin(), ops.end());
  std::optional<std::string_view> e;
  if (existing) e = *existing;
  std::string out;
  EXPECT_TRUE(MergePostings(e, views, cap, &out));
  PostingList list;
  EXPECT_OK(DecodePostingList(out, &list));
  return list;
}

TEST(CodecTest, MergeAddsInDocOrderAndRemoves) {
  const Posting a{3, 1, 10, 20}, b{1, 4, 40, 50}, c{2, 0, 0, 5};
  PostingList list = Merge(std::nullopt,
                           {EncodeAddOperand(3, {&a, 1}), EncodeAddOperand(1, {&b, 1}),
                            EncodeAddOperand(2, {&c, 1}), EncodeRemoveOperand(3)},
                           0);
  EXPECT_EQ(list.doc_frequency, 2u);
  ASSERT_EQ(list.postings.size(), 2u);
  EXPECT_EQ(list.postings[0].doc_id, 1u);
  EXPECT_EQ(list.postings[1].doc_id, 2u);
  // A replayed add of a listed document changes nothing.
  PostingList again = Merge(EncodePostingList(list), {EncodeAddOperand(1, {&b, 1})}, 0);
  EXPECT_EQ(again.doc_frequency, 2u);
  EXPECT_EQ(again.postings.size(), 2u);
}

TEST(CodecTest, MergeCapCountsButDoesNotListAndRemoveOfUnlistedDecrements) {
  std::vector<std::string> ops;
  std::vector<Posting> ps;
  for (DocId d = 1; d <= 5; ++d) ps.push_back(Posting{d, 0, 0, 1});
  for (DocId d = 1; d <= 5; ++d) ops.push_back(EncodeAddOperand(d, {&ps[d - 1], 1}));
  PostingList capped = Merge(std::nullopt, ops, 2);
  EXPECT_EQ(capped.doc_frequency, 5u);
  ASSERT_EQ(capped.postings.size(), 2u);
  PostingList removed = Merge(EncodePostingList(capped), {EncodeRemoveOperand(4)}, 2);
  EXPECT_EQ(removed.doc_frequency, 4u);
  EXPECT_EQ(removed.postings.size(), 2u);
  // Removing a document that was never counted does not underflow a fully listed list.
  PostingList one = Merge(std::nullopt, {ops[0]}, 0);
  PostingList none = Merge(EncodePostingList(one), {EncodeRemoveOperand(9)}, 0);
  EXPECT_EQ(none.doc_frequency, 1u);
}

// Add operands are encoded in place into room for the longest varints: postings at the
// extremes of their 32-bit fields (each varint 5 bytes long) and many postings in one
// operand, appended after other bytes, come back exactly.
TEST(CodecTest, AddOperandsAtTheFieldsExtremesRoundTrip) {
  const uint32_t kMax = UINT32_MAX;
  std::vector<Posting> ps = {{7, 0, kMax - 1, kMax}, {7, kMax - 1, 0, kMax}, {7, kMax, kMax, kMax}};
  for (uint32_t i = 0; i < 300; ++i) ps.insert(ps.begin() + 1 + i, Posting{7, 1 + i, kMax - i, kMax});
  std::string appended = "prefix";
  AppendAddOperand(&appended, UINT64_MAX >> 1, ps);
  EXPECT_EQ(appended, "prefix" + EncodeAddOperand(UINT64_MAX >> 1, ps));
  PostingList list = Merge(std::nullopt, {EncodeAddOperand(7, ps)}, 0);
  ASSERT_EQ(list.postings.size(), ps.size());
  for (size_t i = 0; i < ps.size(); ++i) {
    EXPECT_EQ(list.postings[i].ordinal, ps[i].ordinal) << i;
    EXPECT_EQ(list.postings[i].start, ps[i].start) << i;
    EXPECT_EQ(list.postings[i].end, ps[i].end) << i;
  }
}

TEST(CodecTest, MergeRejectsUnknownOperand) {
  std::string out;
  std::vector<std::string_view> ops = {std::string_view("\x07\x01", 2)};
  EXPECT_FALSE(MergePostings(std::nullopt, ops, 0, &out));
}

// A key's first add (no list yet, most chunk keys) gives the same bytes as the same add
// applied to an empty list, under any cap; malformed adds are refused.
TEST(CodecTest, FirstAddEqualsAddToAnEmptyListAndMalformedAddsFail) {
  const std::vector<Posting> ps = {{42, 3, 100, 120}, {42, 9, 80, 95}, {42, 700, 31000, 31040}};
  const std::string op = EncodeAddOperand(42, ps);
  const std::string empty_list = EncodePostingList(PostingList{});
  for (uint32_t cap : {0u, 2u, 3u}) {
    std::string first, onto_empty;
    std::vector<std::string_view> ops = {op};
    ASSERT_TRUE(MergePostings(std::nullopt, ops, cap, &first));
    ASSERT_TRUE(MergePostings(std::string_view(empty_list), ops, cap, &onto_empty));
    EXPECT_EQ(first, onto_empty) << "cap " << cap;
  }
  PostingList capped = Merge(std::nullopt, {op}, 2);  // 3 postings > cap 2: counted only
  EXPECT_EQ(capped.doc_frequency, 1u);
  EXPECT_TRUE(capped.postings.empty());
  std::string out;
  for (std::string bad : {op.substr(0, op.size() - 1), op + "x", std::string("\x01\x00\x01", 3)}) {
    std::vector<std::string_view> ops = {bad};
    EXPECT_FALSE(MergePostings(std::nullopt, ops, 0, &out)) << ::testing::PrintToString(bad);
  }
}

TEST(CodecTest, DocumentRecordRoundTripsAndRejectsUnknownVersion) {
  DocumentRecord r;
  r.title = "On Copy Detection";
  r.author = "A. Author";
  r.owner = "alice";
  r.collection = "papers";
  r.external_id = "doi:10.1/x";
  r.format = "pdf";
  r.registered_unix_micros = 1700000000123456;
  r.sha256[0] = 0xab;
  r.sha256[31] = 0xcd;
  r.total_chunks = 5000;
  r.stored_chunks = 1250;
  r.size_bytes = 123456;
  std::string encoded = EncodeDocumentRecord(r);
  DocumentRecord back;
  ASSERT_OK(DecodeDocumentRecord(42, encoded, &back));
  EXPECT_EQ(back.id, 42u);
  EXPECT_EQ(back.title, r.title);
  EXPECT_EQ(back.author, r.author);
  EXPECT_EQ(back.owner, r.owner);
  EXPECT_EQ(back.collection, r.collection);
  EXPECT_EQ(back.external_id, r.external_id);
  EXPECT_EQ(back.format, r.format);
  EXPECT_EQ(back.registered_unix_micros, r.registered_unix_micros);
  EXPECT_EQ(back.sha256, r.sha256);
  EXPECT_EQ(back.total_chunks, r.total_chunks);
  EXPECT_EQ(back.stored_chunks, r.stored_chunks);
  EXPECT_EQ(back.size_bytes, r.size_bytes);
  encoded[0] = 9;
  absl::Status s = DecodeDocumentRecord(42, encoded, &back);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("document 42"), absl::string_view::npos);
  EXPECT_EQ(DecodeDocumentRecord(1, encoded.substr(0, 10), &back).code(), absl::StatusCode::kDataLoss);
}

TEST(CodecTest, LifetimeIsAppendedOnlyWhenSetAndOldRecordsDecodeWithout) {
  DocumentRecord r;
  r.title = "t";
  r.registered_unix_micros = 1700000000000000;
  r.size_bytes = 10;
  const std::string plain = EncodeDocumentRecord(r);
  // The first revision's layout, byte for byte: tag, six strings, time, digest, counts.
  std::string v1;
  v1.push_back(1);
  PutLengthPrefixed(&v1, "t");
  for (int i = 0; i < 5; ++i) PutLengthPrefixed(&v1, "");
  PutVarint64(&v1, uint64_t{1700000000000000} << 1);
  v1.append(32, '\0');
  PutVarint64(&v1, 0);
  PutVarint64(&v1, 0);
  PutVarint64(&v1, 10);
  EXPECT_EQ(plain, v1);
  DocumentRecord back;
  ASSERT_OK(DecodeDocumentRecord(1, v1, &back));
  EXPECT_EQ(back.expires_unix_micros, 0);
  EXPECT_EQ(back.not_before_unix_micros, 0);

  r.expires_unix_micros = 1800000000000000;
  r.not_before_unix_micros = 1750000000000000;
  const std::string with_lifetime = EncodeDocumentRecord(r);
  ASSERT_OK(DecodeDocumentRecord(1, with_lifetime, &back));
  EXPECT_EQ(back.expires_unix_micros, r.expires_unix_micros);
  EXPECT_EQ(back.not_before_unix_micros, r.not_before_unix_micros);
  EXPECT_EQ(back.size_bytes, 10u);
  // Fields a later revision appends after the lifetime are ignored.
  ASSERT_OK(DecodeDocumentRecord(1, with_lifetime + "\x05", &back));
  EXPECT_EQ(back.not_before_unix_micros, r.not_before_unix_micros);
  // A lifetime cut short is damage, not a missing field.
  absl::Status s = DecodeDocumentRecord(7, with_lifetime.substr(0, plain.size() + 2), &back);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("lifetime"), absl::string_view::npos) << s;
}

// The bucketed postings layout (index schema 4, storage/bucket_codec.h).
namespace bc = bucket_codec;

std::vector<bc::BucketPosting> SomeBucketPostings() {
  // By (rest, doc, ordinal): rest 3 in two documents (one with two postings), rest 900 in
  // one, rest 2^40 in one with a large id.
  return {{3, {5, 2, 100, 130}},        {3, {5, 9, 90, 95}},
          {3, {7, 0, 0, 10}},           {900, {6, 1, 40, 60}},
          {uint64_t{1} << 40, {1000000, 1250, 31000, 31040}}};
}

TEST(BucketCodecTest, LayoutSplitsTheHashAndValidates) {
  const bc::BucketLayout layout{.bucket_bits = 20, .hash_bits = 40};
  const ChunkHash h = 0xABCDE12345678901;
  EXPECT_EQ(layout.Bucket(h), 0xABCDEu);
  EXPECT_EQ(layout.Rest(h), 0x12345u);  // the next 20 bits; the low 24 are not stored
  EXPECT_EQ((bc::BucketLayout{.bucket_bits = 16, .hash_bits = 64}).Rest(h), 0xE12345678901u);
  EXPECT_OK(layout.Validate());
  EXPECT_FALSE((bc::BucketLayout{.bucket_bits = 33, .hash_bits = 64}).Validate().ok());
  EXPECT_FALSE((bc::BucketLayout{.bucket_bits = 20, .hash_bits = 24}).Validate().ok());
  EXPECT_EQ(bc::BucketBitsFor(100), 12u);  // small indexes: 4096 buckets
  EXPECT_EQ(bc::BucketBitsFor(1000000), 22u);
  EXPECT_EQ(bc::BucketBitsFor(10000000), 26u);
  EXPECT_LT(bc::BucketKey(255), bc::BucketKey(256));
}

TEST(BucketCodecTest, FragmentRoundTripsAndLookupDecodesOnlyTheRestsAsked) {
  const auto postings = SomeBucketPostings();
  const std::string value = bc::EncodeAddFragment(postings);
  std::vector<bc::BucketGroup> groups;
  ASSERT_OK(bc::DecodeBucket(value, "k", &groups));
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[0].rest, 3u);
  EXPECT_EQ(groups[0].postings.size(), 3u);
  EXPECT_EQ(groups[2].postings[0], (Posting{1000000, 1250, 31000, 31040}));
  EXPECT_EQ(bc::EncodeBucket(groups), value);
  // A one-posting entry costs its rest, its document, ordinal, start and length, no count.
  EXPECT_LE(bc::EncodeAddFragment(std::span(postings).subspan(3, 1)).size(), 1u + 2 + 1 + 1 + 1 + 1);

  PostingList a, b, missing, again;
  const std::vector<uint64_t> rests = {2, 3, 3, 900};
  const std::vector<PostingList*> outs = {&missing, &a, &again, &b};
  ASSERT_OK(bc::LookupInBucket(value, "k", rests, outs));
  EXPECT_EQ(a.doc_frequency, 2u);
  EXPECT_EQ(a.postings, groups[0].postings);
  EXPECT_EQ(again.postings, a.postings);
  EXPECT_EQ(b.doc_frequency, 1u);
  EXPECT_EQ(b.postings, (std::vector<Posting>{{6, 1, 40, 60}}));
  EXPECT_EQ(missing.doc_frequency, 0u);
  EXPECT_TRUE(missing.postings.empty());
  // What filling the hash filter reads: every rest in order, and the bucket key back.
  std::vector<uint64_t> walked;
  ASSERT_OK(bc::ForEachRest(value, "k", [&](uint64_t rest) { walked.push_back(rest); }));
  EXPECT_EQ(walked, (std::vector<uint64_t>{3, 900, groups[2].rest}));
  EXPECT_EQ(bc::DecodeBucketKey(bc::BucketKey(0xFEDC0102).data()), 0xFEDC0102u);
}

// A document without positions (a stored plain text's in a verifying index: schema 6) is
// listed alone under the tag kBucketValuePositionless, its one posting (ordinal, start and
// end 0) costing nothing beyond its id; a value without one keeps the old tag and bytes.
TEST(BucketCodecTest, PositionlessDocumentsCostTheirIdsOnlyAndRoundTrip) {
  const std::vector<bc::BucketPosting> with_positions = {{3, {5, 2, 100, 130}},
                                                         {3, {9, 4, 80, 95}}};
  const std::vector<bc::BucketPosting> without = {{3, {5, 2, 100, 130}}, {3, {9, 0, 0, 0}}};
  const std::string old_tag = bc::EncodeAddFragment(with_positions);
  const std::string value = bc::EncodeAddFragment(without);
  ASSERT_EQ(old_tag[0], static_cast<char>(bc::kBucketValue));
  ASSERT_EQ(value[0], static_cast<char>(bc::kBucketValuePositionless));
  // Tag, rest+header, listed, beyond; doc 5: id, ordinal, start (2), length; doc 9: its delta.
  EXPECT_EQ(value.size(), 1u + 1 + 1 + 1 + (1 + 1 + 2 + 1) + 1);
  std::vector<bc::BucketGroup> groups;
  ASSERT_OK(bc::DecodeBucket(value, "k", &groups));
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].postings, (std::vector<Posting>{{5, 2, 100, 130}, {9, 0, 0, 0}}));
  EXPECT_EQ(bc::EncodeBucket(groups), value);
  PostingList at3;
  const std::vector<uint64_t> rests = {3};
  const std::vector<PostingList*> outs = {&at3};
  ASSERT_OK(bc::LookupInBucket(value, "k", rests, outs));
  EXPECT_EQ(at3.postings, groups[0].postings);
  EXPECT_EQ(at3.doc_frequency, 2u);

  // Merged into an old-tag value the result takes the new tag; removing the positionless
  // document gives back the old tag's bytes.
  const std::string positionless_only = bc::EncodeAddFragment(std::span(without).subspan(1));
  std::string merged, after;
  const std::vector<std::string_view> add = {positionless_only};
  const std::string doc5 = bc::EncodeAddFragment(std::span(with_positions).subspan(0, 1));
  ASSERT_TRUE(bc::MergeBucket(std::string_view(doc5), add, 0, &merged));
  EXPECT_EQ(merged, value);
  const std::vector<uint64_t> rest3 = {3};
  const std::string remove9 = bc::EncodeRemoveOperand(9, rest3);
  const std::vector<std::string_view> remove = {remove9};
  ASSERT_TRUE(bc::MergeBucket(std::string_view(merged), remove, 0, &after));
  EXPECT_EQ(after, doc5);
  std::string combined;
  const std::vector<std::string_view> both = {doc5, positionless_only};
  ASSERT_TRUE(bc::CombineAddFragments(both, &combined));
  EXPECT_EQ(combined, value);

  // Every truncation of the new tag's value is DATA_LOSS or a shorter valid value; a
  // positionless document flagged as holding several postings is DATA_LOSS.
  for (size_t n = 1; n < value.size(); ++n) {
    absl::Status s = bc::DecodeBucket(value.substr(0, n), "k", &groups);
    if (!s.ok()) {
      EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    }
  }
  std::string several = value;
  several.back() = static_cast<char>(several.back() | 1);
  EXPECT_EQ(bc::DecodeBucket(several, "k", &groups).code(), absl::StatusCode::kDataLoss);
  // Zero positions that are not a lone posting, or an id beyond the new tag's range, keep
  // the old tag with explicit zeros: nothing is lost.
  for (const std::vector<bc::BucketPosting>& kept :
       {std::vector<bc::BucketPosting>{{1, {4, 0, 0, 0}}, {1, {4, 0, 0, 0}}},
        std::vector<bc::BucketPosting>{{1, {4, 3, 0, 0}}},
        std::vector<bc::BucketPosting>{{1, {uint64_t{1} << 62, 0, 0, 0}}}}) {
    const std::string v = bc::EncodeAddFragment(kept);
    EXPECT_EQ(v[0], static_cast<char>(bc::kBucketValue));
    ASSERT_OK(bc::DecodeBucket(v, "k", &groups));
    std::vector<Posting> expected;
    for (const bc::BucketPosting& p : kept) expected.push_back(p.posting);
    EXPECT_EQ(groups[0].postings, expected);
  }
}

TEST(BucketCodecTest, TruncatedOrCorruptValuesAreDataLossNamingTheKey) {
  const std::string value = bc::EncodeAddFragment(SomeBucketPostings());
  const std::string key = bc::BucketKey(0x0102ABCD);
  std::vector<bc::BucketGroup> groups;
  // Every proper prefix that does not end on a group boundary fails.
  int failed = 0;
  for (size_t n = 0; n < value.size(); ++n) {
    absl::Status s = bc::DecodeBucket(value.substr(0, n), key, &groups);
    if (s.ok()) continue;
    ++failed;
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(s.message().find("0102abcd"), std::string_view::npos) << s;
  }
  EXPECT_GE(failed, static_cast<int>(value.size()) - 3);
  PostingList out;
  const std::vector<uint64_t> rests = {uint64_t{1} << 40};
  const std::vector<PostingList*> outs = {&out};
  EXPECT_EQ(bc::LookupInBucket(value.substr(0, value.size() - 1), key, rests, outs).code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(bc::LookupInBucket("", key, rests, outs).code(), absl::StatusCode::kDataLoss);
  const absl::Status walked =
      bc::ForEachRest(value.substr(0, value.size() - 1), key, [](uint64_t) {});
  EXPECT_EQ(walked.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(walked.message().find("0102abcd"), std::string_view::npos) << walked;
  // A varint that never ends, rests out of order, an empty group.
  for (const std::string& bad : {std::string("\x01\xff\xff\xff", 4), std::string("\x01\x02\x0a\x00\x00\x01\x0a\x00\x00", 9),
                                std::string("\x01\x01\x00\x00", 4)}) {
    EXPECT_EQ(bc::DecodeBucket(bad, key, &groups).code(), absl::StatusCode::kDataLoss);
  }
  // Random bytes never crash (the fuzz target goes further).
  std::mt19937 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string junk(rng() % 40, '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    if (!junk.empty() && i % 2 == 0) junk[0] = 1;
    (void)bc::DecodeBucket(junk, key, &groups);
    (void)bc::LookupInBucket(junk, key, rests, outs);
    (void)bc::ForEachRest(junk, key, [](uint64_t) {});
    std::string merged;
    const std::vector<std::string_view> ops = {junk};
    (void)bc::MergeBucket(std::nullopt, ops, 3, &merged);
  }
}

TEST(BucketCodecTest, MergeAddsIgnoresReplaysCapsAndRemoves) {
  const std::vector<bc::BucketPosting> first = {{3, {5, 0, 0, 10}}, {8, {5, 1, 10, 20}}};
  const std::vector<bc::BucketPosting> second = {{3, {2, 4, 0, 10}}, {3, {2, 5, 3, 12}},
                                                 {3, {9, 0, 0, 10}}};
  const std::string a = bc::EncodeAddFragment(first), b = bc::EncodeAddFragment(second);
  std::string merged;
  // Cap 3: document 9 at rest 3 would make 4 postings, so it is only counted.
  const std::vector<std::string_view> adds = {a, b, a};
  ASSERT_TRUE(bc::MergeBucket(std::nullopt, adds, 3, &merged));
  PostingList at3, at8;
  const std::vector<uint64_t> rests = {3, 8};
  const std::vector<PostingList*> outs = {&at3, &at8};
  ASSERT_OK(bc::LookupInBucket(merged, "k", rests, outs));
  EXPECT_EQ(at3.doc_frequency, 3u);
  EXPECT_EQ(at3.postings, (std::vector<Posting>{{2, 4, 0, 10}, {2, 5, 3, 12}, {5, 0, 0, 10}}));
  EXPECT_EQ(at8.postings.size(), 1u);
  // Partial merges of adds give what one full merge of them gives.
  std::string combined, via_combined;
  ASSERT_TRUE(bc::CombineAddFragments(adds, &combined));
  ASSERT_TRUE(bc::MergeBucket(std::nullopt, std::vector<std::string_view>{combined}, 3,
                              &via_combined));
  EXPECT_EQ(via_combined, merged);

  // Removing document 5 (rests 3 and 8) empties rest 8; removing 9 (counted, not listed)
  // lowers the count only; a remove of an unknown rest changes nothing.
  const std::vector<uint64_t> rests5 = {3, 8}, rests9 = {3}, unknown = {77};
  const std::string r5 = bc::EncodeRemoveOperand(5, rests5);
  const std::string r9 = bc::EncodeRemoveOperand(9, rests9);
  const std::string r1 = bc::EncodeRemoveOperand(1, unknown);
  std::string after;
  const std::vector<std::string_view> removes = {r5, r9, r1};
  ASSERT_TRUE(bc::MergeBucket(std::string_view(merged), removes, 3, &after));
  at3 = at8 = PostingList();  // LookupInBucket leaves the lists of rests it lacks alone
  ASSERT_OK(bc::LookupInBucket(after, "k", rests, outs));
  EXPECT_EQ(at3.doc_frequency, 1u);
  EXPECT_EQ(at3.postings, (std::vector<Posting>{{2, 4, 0, 10}, {2, 5, 3, 12}}));
  EXPECT_EQ(at8.doc_frequency, 0u);
  EXPECT_TRUE(at8.postings.empty());
  std::vector<bc::BucketGroup> groups;
  ASSERT_OK(bc::DecodeBucket(after, "k", &groups));
  EXPECT_EQ(groups.size(), 1u);

  // A malformed operand or value fails the merge (RocksDB then reports corruption).
  const std::vector<std::string_view> junk = {std::string_view("\x07", 1)};
  EXPECT_FALSE(bc::MergeBucket(std::nullopt, junk, 0, &after));
  EXPECT_FALSE(bc::MergeBucket(std::string_view("\x01\xff", 2), adds, 0, &after));
  EXPECT_FALSE(bc::CombineAddFragments(removes, &after));
}

TEST(BucketCodecTest, WholeAndRestrictedMergesAgreeWithTheReferenceOnRandomOperands) {
  std::mt19937 rng(11);
  int combined_rounds = 0;
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> ops;
    std::optional<std::string> existing;
    for (int k = 0; k < 1 + static_cast<int>(rng() % 8); ++k) {
      if (rng() % 4 == 0) {
        std::vector<uint64_t> rests;
        for (uint64_t r = 0; r < 12; ++r) {
          if (rng() % 3 == 0) rests.push_back(r);
        }
        ops.push_back(bc::EncodeRemoveOperand(1 + rng() % 6, rests));
      } else {
        std::vector<bc::BucketPosting> ps;
        for (uint64_t r = 0; r < 12; ++r) {
          for (DocId d = 1; d <= 6; ++d) {
            if (rng() % 5 != 0) continue;
            // Documents 5 and 6 are positionless in some fragments (both tags meet).
            if (d >= 5 && rng() % 2 == 0) {
              ps.push_back({r, {d, 0, 0, 0}});
              continue;
            }
            for (uint32_t o = 0; o < 1 + rng() % 3; ++o) ps.push_back({r, {d, 3 * o, o, o + 4}});
          }
        }
        ops.push_back(bc::EncodeAddFragment(ps));
      }
    }
    if (round % 2 == 0) {
      existing = ops[0];
      ops.erase(ops.begin());
      if (!bc::IsAddFragment(*existing)) existing.reset();
    }
    const std::vector<std::string_view> views(ops.begin(), ops.end());
    const uint32_t cap = round % 3 == 0 ? 0 : 1 + rng() % 6;
    std::string fast, reference;
    const std::optional<std::string_view> base =
        existing ? std::optional<std::string_view>(*existing) : std::nullopt;
    ASSERT_TRUE(bc::MergeBucket(base, views, cap, &fast));
    ASSERT_TRUE(bc::MergeBucketReference(base, views, cap, &reference));
    ASSERT_EQ(fast, reference) << round;
    // Adds alone combine (a partial merge) into what the reference makes of them uncapped.
    if (!base.has_value() && std::all_of(views.begin(), views.end(), bc::IsAddFragment)) {
      std::string combined, uncapped;
      ASSERT_TRUE(bc::CombineAddFragments(views, &combined));
      ASSERT_TRUE(bc::MergeBucketReference(std::nullopt, views, 0, &uncapped));
      ASSERT_EQ(combined, uncapped) << round;
      ++combined_rounds;
    }
    // A merge for some rests (what a lookup runs) holds exactly their groups of the whole
    // merge; rest 12 is never written.
    std::vector<uint64_t> wanted;
    for (uint64_t r = 0; r <= 12; ++r) {
      if (rng() % 3 == 0) wanted.push_back(r);
    }
    if (!wanted.empty() && rng() % 2 == 0) wanted.push_back(wanted.back());  // asked twice
    std::vector<bc::BucketGroup> groups;
    ASSERT_OK(bc::DecodeBucket(reference, "k", &groups));
    std::erase_if(groups, [&](const bc::BucketGroup& g) {
      return !std::binary_search(wanted.begin(), wanted.end(), g.rest);
    });
    std::string restricted;
    ASSERT_TRUE(bc::MergeBucketRests(base, views, wanted, cap, &restricted));
    ASSERT_EQ(restricted, bc::EncodeBucket(groups)) << round;
  }
  EXPECT_GT(combined_rounds, 20);
}

}  // namespace
}  // namespace cops::storage_codec
