#include "core/params.h"

#include "core/stem_pairs.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

ChunkingParams Sample() {
  ChunkingParams p;
  p.unit = UnitKind::kSentence;
  p.strategy = ChunkStrategy::kHashedBreakpoints;
  p.k = 7;
  p.selection = SelectionKind::kModP;
  p.p = 3;
  p.w = 11;
  p.enhancements.drop_numbers = true;
  p.enhancements.min_word_chars = 2;
  p.enhancements.min_sentence_words = 4;
  p.enhancements.drop_stop_words = true;
  p.key_id = "0123456789abcdef";
  p.verify_k = 0;  // sentence units: no verification grams
  p.dense_chunks = 0;
  return p;
}

TEST(ChunkingParamsTest, DefaultsAreValid) { EXPECT_OK(ChunkingParams().Validate()); }

TEST(ChunkingParamsTest, ValidateNamesBadField) {
  ChunkingParams p;
  p.k = 0;
  EXPECT_NE(p.Validate().message().find("k"), absl::string_view::npos);
  p.k = 65;
  EXPECT_EQ(p.Validate().code(), absl::StatusCode::kInvalidArgument);
  p = ChunkingParams();
  p.p = 0;
  EXPECT_NE(p.Validate().message().find("p:"), absl::string_view::npos);
  p = ChunkingParams();
  p.w = 0;
  EXPECT_NE(p.Validate().message().find("w:"), absl::string_view::npos);
  p = ChunkingParams();
  p.normalization_version = kNormalizationVersion + 1;
  EXPECT_NE(p.Validate().message().find("normalization_version"), absl::string_view::npos);
  p = ChunkingParams();
  p.unit = static_cast<UnitKind>(9);
  EXPECT_EQ(p.Validate().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ChunkingParamsTest, EncodeDecodeRoundTrip) {
  ChunkingParams p = Sample();
  auto decoded = ChunkingParams::Decode(p.Encode());
  ASSERT_OK(decoded);
  EXPECT_EQ(*decoded, p);
  EXPECT_EQ(decoded->Fingerprint(), p.Fingerprint());
}

TEST(ChunkingParamsTest, WithoutVerificationTheEncodingIsTheOneOlderIndexesRecorded) {
  // Indexes created before verification recorded encoding version 1: the same parameters
  // with verify_k = 0 must encode byte for byte the same, or those indexes would no
  // longer open.
  ChunkingParams old = Sample();
  old.verify_k = 0;
  const std::string enc = old.Encode();
  EXPECT_EQ(enc[0], 1);
  auto decoded = ChunkingParams::Decode(enc);
  ASSERT_OK(decoded);
  EXPECT_EQ(decoded->verify_k, 0u);
  EXPECT_EQ(*decoded, old);

  ChunkingParams verified = old;
  verified.verify_k = 3;
  verified.dense_chunks = 400;
  EXPECT_EQ(verified.Encode(), "\x02" + enc.substr(1) + std::string("\x03\0\0\0\x90\x01\0\0", 8));
  decoded = ChunkingParams::Decode(verified.Encode());
  ASSERT_OK(decoded);
  EXPECT_EQ(decoded->verify_k, 3u);
  EXPECT_NE(verified.Describe().find("verify_k=3"), std::string::npos);
  EXPECT_EQ(old.Describe().find("verify_k"), std::string::npos);
}

TEST(ChunkingParamsTest, StemPairsAreRecordedWithTheirVersionAndOffLeavesTheEncoding) {
  ChunkingParams off;  // today's defaults: no stem pairs, encoding version 2 as before
  const std::string enc = off.Encode();
  EXPECT_EQ(enc[0], 2);
  ChunkingParams on = off;
  on.stem_pairs = 4;
  on.stem_version = kStemPairsVersion;
  EXPECT_OK(on.Validate());
  EXPECT_EQ(on.Encode(), "\x03" + enc.substr(1) + std::string("\x04\0\0\0\x01\0\0\0", 8));
  auto decoded = ChunkingParams::Decode(on.Encode());
  ASSERT_OK(decoded);
  EXPECT_EQ(*decoded, on);
  EXPECT_NE(on.Fingerprint(), off.Fingerprint());
  EXPECT_NE(on.DiffWith(off).find("stem_pairs: 4 vs 0"), std::string::npos);
  EXPECT_NE(on.Describe().find("stem_pairs=4 stem_version=1"), std::string::npos);
  auto parsed = ChunkingParams::ParseDescription(on.Describe());
  ASSERT_OK(parsed);
  EXPECT_EQ(*parsed, on);

  ChunkingParams newer = on;  // made by a build with another stemmer
  newer.stem_version = kStemPairsVersion + 1;
  EXPECT_NE(newer.Validate().message().find("stem_version"), absl::string_view::npos);
  EXPECT_NE(newer.DiffWith(on).find("stem_version"), std::string::npos);
  ChunkingParams unverified = on;
  unverified.verify_k = 0;
  unverified.dense_chunks = 0;
  EXPECT_NE(unverified.Validate().message().find("stem_pairs"), absl::string_view::npos);
  ChunkingParams stray = off;
  stray.stem_version = 1;
  EXPECT_FALSE(stray.Validate().ok());
  on.stem_pairs = 65;
  EXPECT_FALSE(on.Validate().ok());
}

TEST(ChunkingParamsTest, VerificationNeedsWordUnitsAndASmallK) {
  ChunkingParams p;
  p.verify_k = 1;
  EXPECT_NE(p.Validate().message().find("verify_k"), absl::string_view::npos);
  p.verify_k = 9;
  EXPECT_FALSE(p.Validate().ok());
  p.verify_k = 3;
  p.unit = UnitKind::kSentence;
  EXPECT_NE(p.Validate().message().find("word units"), absl::string_view::npos);
  p.verify_k = 0;
  EXPECT_NE(p.Validate().message().find("dense_chunks"), absl::string_view::npos);
  p.dense_chunks = 0;
  EXPECT_OK(p.Validate());
}

TEST(ChunkingParamsTest, DecodeRejectsMalformed) {
  std::string enc = Sample().Encode();
  EXPECT_FALSE(ChunkingParams::Decode("").ok());
  EXPECT_FALSE(ChunkingParams::Decode(enc.substr(0, enc.size() - 1)).ok());
  EXPECT_FALSE(ChunkingParams::Decode(enc + "x").ok());
  std::string bad_version = enc;
  bad_version[0] = 99;
  auto st = ChunkingParams::Decode(bad_version).status();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("version"), absl::string_view::npos);
  std::string bad_enum = enc;
  bad_enum[1] = 42;  // unit
  EXPECT_FALSE(ChunkingParams::Decode(bad_enum).ok());
}

TEST(ChunkingParamsTest, FingerprintChangesWithEveryField) {
  const ChunkingParams base = Sample();
  std::vector<ChunkingParams> variants(13, base);
  variants[0].unit = UnitKind::kWord;
  variants[1].strategy = ChunkStrategy::kOverlapping;
  variants[2].k = 8;
  variants[3].selection = SelectionKind::kAll;
  variants[4].p = 4;
  variants[5].w = 12;
  variants[6].enhancements.drop_numbers = false;
  variants[7].enhancements.min_word_chars = 3;
  variants[8].enhancements.min_sentence_words = 5;
  variants[9].enhancements.drop_stop_words = false;
  variants[10].key_id = "fedcba9876543210";
  variants[11].normalization_version = kNormalizationVersion + 1;
  variants[12].verify_k = 3;
  variants[12].unit = UnitKind::kWord;
  for (const ChunkingParams& v : variants) {
    EXPECT_NE(v.Fingerprint(), base.Fingerprint()) << v.DiffWith(base);
    EXPECT_FALSE(v.DiffWith(base).empty());
  }
  EXPECT_EQ(Sample().Fingerprint(), base.Fingerprint());
}

TEST(ChunkingParamsTest, DiffWithNamesFields) {
  ChunkingParams a = Sample(), b = Sample();
  EXPECT_EQ(a.DiffWith(b), "");
  b.k = 3;
  b.key_id = "other";
  EXPECT_EQ(a.DiffWith(b), "k: 7 vs 3; key_id: 0123456789abcdef vs other");
}

TEST(ChunkingParamsTest, DescribeMentionsSettings) {
  std::string d = ChunkingParams().Describe();
  EXPECT_NE(d.find("unit=word"), std::string::npos);
  EXPECT_NE(d.find("strategy=overlapping"), std::string::npos);
  EXPECT_NE(d.find("selection=winnowing"), std::string::npos);
  EXPECT_NE(d.find("w=8"), std::string::npos);
}

TEST(ChunkingParamsTest, NamesParseBack) {
  for (UnitKind u : {UnitKind::kWord, UnitKind::kSentence, UnitKind::kParagraph}) {
    EXPECT_EQ(ParseUnitKind(UnitKindName(u)).value(), u);
  }
  for (ChunkStrategy s : {ChunkStrategy::kOneUnit, ChunkStrategy::kNonOverlapping,
                          ChunkStrategy::kOverlapping, ChunkStrategy::kHashedBreakpoints}) {
    EXPECT_EQ(ParseChunkStrategy(ChunkStrategyName(s)).value(), s);
  }
  for (SelectionKind s : {SelectionKind::kAll, SelectionKind::kModP, SelectionKind::kWinnowing}) {
    EXPECT_EQ(ParseSelectionKind(SelectionKindName(s)).value(), s);
  }
  EXPECT_FALSE(ParseUnitKind("letter").ok());
  EXPECT_FALSE(ParseChunkStrategy("").ok());
  EXPECT_FALSE(ParseSelectionKind("random").ok());
}

TEST(ChunkingParamsTest, ParseDescriptionInvertsDescribe) {
  ChunkingParams defaults;
  defaults.key_id = "ab12cd34";
  ChunkingParams modp;
  modp.unit = UnitKind::kWord;
  modp.strategy = ChunkStrategy::kNonOverlapping;
  modp.k = 7;
  modp.selection = SelectionKind::kModP;
  modp.p = 3;
  modp.enhancements = {true, 3, 0, true};
  modp.normalization_version = 2;
  modp.key_id = "k1";
  ChunkingParams old;  // an index without verification
  old.verify_k = 0;
  old.dense_chunks = 0;
  old.strategy = ChunkStrategy::kHashedBreakpoints;
  old.selection = SelectionKind::kAll;
  ChunkingParams sentences;
  sentences.unit = UnitKind::kSentence;
  sentences.verify_k = 0;
  sentences.dense_chunks = 0;
  sentences.enhancements.min_sentence_words = 4;
  for (const ChunkingParams& p : {defaults, modp, old, sentences}) {
    ASSERT_OK_AND_ASSIGN(ChunkingParams parsed, ChunkingParams::ParseDescription(p.Describe()));
    EXPECT_EQ(parsed, p) << p.Describe() << " | " << parsed.DiffWith(p);
  }
  EXPECT_FALSE(ChunkingParams::ParseDescription("unit=word colour=blue").ok());
  EXPECT_FALSE(ChunkingParams::ParseDescription("k=five").ok());
  EXPECT_FALSE(ChunkingParams::ParseDescription("k").ok());
  EXPECT_FALSE(ChunkingParams::ParseDescription("unit=letter").ok());
  EXPECT_FALSE(ChunkingParams::ParseDescription("stop_words=2").ok());
  EXPECT_FALSE(ChunkingParams::ParseDescription("k=0").ok());  // fails Validate()
}

}  // namespace
}  // namespace cops
