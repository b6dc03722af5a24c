#include "core/verify.h"

#include <cstdint>
#include <numeric>
#include <span>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "gtest/gtest.h"

namespace cops {
namespace {

// Grams 1000, 1001, ... : a text whose k-grams are all distinct.
std::vector<uint32_t> Seq(uint32_t first, uint32_t n) {
  std::vector<uint32_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

Verification Check(const std::vector<uint32_t>& test, const std::vector<uint32_t>& reg,
                 VerifyOptions o = {}) {
  TestGrams t;
  t.Build(test);
  Verification v;
  Verify(t, reg, o, &v);
  return v;
}

TEST(VerifyTest, AnExactCopyIsOnePassageWithRatioOne) {
  const auto text = Seq(1000, 50);
  Verification v = Check(text, text);
  EXPECT_EQ(v.test_grams, 50u);
  EXPECT_EQ(v.matched_test_grams, 50u);
  EXPECT_DOUBLE_EQ(v.Ratio(), 1.0);
  EXPECT_DOUBLE_EQ(v.Containment(), 1.0);
  ASSERT_EQ(v.passages.size(), 1u);
  EXPECT_EQ(v.passages[0].test_begin, 0u);
  EXPECT_EQ(v.passages[0].test_end, 50u);
  EXPECT_EQ(v.passages[0].registered_begin, 0u);
  EXPECT_EQ(v.passages[0].registered_end, 50u);
  EXPECT_EQ(v.longest_passage, 50u);
}

TEST(VerifyTest, ChangedWordsInsideAPassageDoNotSplitIt) {
  // The test is a 40-gram excerpt (registered grams 10..49) in which two words were
  // replaced: each breaks 3 grams (new hashes 9000+).
  const auto reg = Seq(1000, 60);
  std::vector<uint32_t> test(reg.begin() + 10, reg.begin() + 50);
  for (int j : {12, 13, 14, 25, 26, 27}) test[j] = 9000 + j;
  Verification v = Check(test, reg);
  EXPECT_EQ(v.matched_test_grams, 34u);
  EXPECT_NEAR(v.Ratio(), 34.0 / 40, 1e-12);
  EXPECT_NEAR(v.Containment(), 34.0 / 60, 1e-12);
  ASSERT_EQ(v.passages.size(), 1u) << "gaps of 3 grams are bridged";
  EXPECT_EQ(v.passages[0].test_begin, 0u);
  EXPECT_EQ(v.passages[0].test_end, 40u);
  EXPECT_EQ(v.passages[0].registered_begin, 10u);
  EXPECT_EQ(v.passages[0].registered_end, 50u);
}

TEST(VerifyTest, APassagesBoundsStopAtItsVerbatimRunShortOfALoneGramBeyondIt) {
  // Registered grams 1000..1059; the test copies 20..39 verbatim, with new text (grams
  // 9000+) around it in which one gram on each side equals, by chance, a registered gram in
  // step with the copy: 5 before its start, 4 after its end.
  const auto reg = Seq(1000, 60);
  std::vector<uint32_t> test = Seq(9000, 50);
  for (uint32_t j = 0; j < 20; ++j) test[15 + j] = reg[20 + j];
  test[10] = reg[15];
  test[39] = reg[44];
  Verification v = Check(test, reg);
  ASSERT_EQ(v.passages.size(), 1u);
  EXPECT_EQ(v.passages[0].test_begin, 15u);
  EXPECT_EQ(v.passages[0].test_end, 35u);
  EXPECT_EQ(v.passages[0].registered_begin, 20u);
  EXPECT_EQ(v.passages[0].registered_end, 40u);
  // Its lone grams still count: a bound moves, not a decision.
  EXPECT_EQ(v.matched_test_grams, 22u);
  EXPECT_EQ(v.matched_registered_grams, 22u);

  // A heavy revision: one word in four changed leaves lone grams, 4 apart. Its ends stay.
  std::vector<uint32_t> revised = Seq(9000, 41);
  for (uint32_t j = 0; j <= 40; j += 4) revised[j] = reg[j];
  v = Check(revised, reg);
  ASSERT_EQ(v.passages.size(), 1u);
  EXPECT_EQ(v.passages[0].test_begin, 0u);
  EXPECT_EQ(v.passages[0].test_end, 41u);
  EXPECT_EQ(v.matched_test_grams, 11u);
}

TEST(VerifyTest, AGapWiderThanTheLimitSplitsThePassage) {
  const auto reg = Seq(1000, 40);
  std::vector<uint32_t> test = reg;
  for (int j = 15; j < 27; ++j) test[j] = 9000 + j;  // 12 unmatched grams
  VerifyOptions o;
  o.max_gap_grams = 8;
  Verification v = Check(test, reg, o);
  ASSERT_EQ(v.passages.size(), 2u);
  EXPECT_EQ(v.passages[0].test_end, 15u);
  EXPECT_EQ(v.passages[1].test_begin, 27u);
}

TEST(VerifyTest, ReorderedHalvesAreTwoPassagesInTestOrder) {
  const auto reg = Seq(1000, 40);
  std::vector<uint32_t> test(reg.begin() + 20, reg.end());
  test.insert(test.end(), reg.begin(), reg.begin() + 20);
  Verification v = Check(test, reg);
  EXPECT_DOUBLE_EQ(v.Ratio(), 1.0);
  ASSERT_EQ(v.passages.size(), 2u);
  EXPECT_EQ(v.passages[0].registered_begin, 20u);
  EXPECT_EQ(v.passages[1].registered_begin, 0u);
}

TEST(VerifyTest, IsolatedCommonGramsAreSharedButNotMatched) {
  const auto reg = Seq(1000, 30);
  std::vector<uint32_t> test = Seq(5000, 30);
  test[3] = reg[17];  // stock phrases, scattered without order
  test[20] = reg[2];
  Verification v = Check(test, reg);
  EXPECT_EQ(v.shared_test_grams, 2u);
  EXPECT_EQ(v.shared_registered_grams, 2u);
  EXPECT_EQ(v.matched_test_grams, 0u);
  EXPECT_EQ(v.matched_registered_grams, 0u);
  EXPECT_DOUBLE_EQ(v.Ratio(), 0.0);
  EXPECT_TRUE(v.passages.empty());
  EXPECT_EQ(v.longest_passage, 0u);  // a passage that counts
}

TEST(VerifyTest, PassagesCoveringFewerWordsThanTheMinimumNeitherShowNorCount) {
  // Runs of 3, 5 and 6 grams (5, 7 and 8 words of 3-word grams), far apart; and a revised
  // passage: 4 runs of 2 grams, 2 grams apart (4 words each, 16 words in one chain).
  const auto reg = Seq(1000, 200);
  std::vector<uint32_t> test = Seq(5000, 200);
  for (int j = 0; j < 3; ++j) test[10 + j] = reg[20 + j];
  for (int j = 0; j < 5; ++j) test[40 + j] = reg[50 + j];
  for (int j = 0; j < 6; ++j) test[70 + j] = reg[80 + j];
  for (int r = 0; r < 4; ++r) {
    for (int j = 0; j < 2; ++j) test[120 + 4 * r + j] = reg[150 + 4 * r + j];
  }
  VerifyOptions o;
  o.gram_units = 3;
  o.min_passage_units = 8;
  Verification v = Check(test, reg, o);
  ASSERT_EQ(v.passages.size(), 2u);
  EXPECT_EQ(v.passages[0].test_begin, 70u);
  EXPECT_EQ(v.passages[0].units, 8u);
  EXPECT_EQ(v.passages[1].test_begin, 120u);
  EXPECT_EQ(v.passages[1].units, 16u);
  EXPECT_EQ(v.matched_test_grams, 6u + 8);
  EXPECT_EQ(v.longest_passage, 8u);
  // Without the minimum every run of 2 grams or more counts.
  o.min_passage_units = 0;
  v = Check(test, reg, o);
  EXPECT_EQ(v.passages.size(), 4u);
  EXPECT_EQ(v.matched_test_grams, 3u + 5 + 6 + 8);
}

TEST(VerifyTest, UnrelatedAndEmptyTextsMatchNothing) {
  Verification v = Check(Seq(1000, 20), Seq(5000, 20));
  EXPECT_EQ(v.matched_test_grams, 0u);
  EXPECT_DOUBLE_EQ(v.Ratio(), 0.0);
  v = Check({}, Seq(5000, 20));
  EXPECT_EQ(v.test_grams, 0u);
  EXPECT_DOUBLE_EQ(v.Ratio(), 0.0);
  v = Check(Seq(1000, 20), {});
  EXPECT_DOUBLE_EQ(v.Containment(), 0.0);
}

TEST(VerifyTest, RepeatedGramsAreCountedOncePerPosition) {
  // The test repeats the registered text twice: every test gram matches.
  const auto reg = Seq(1000, 25);
  std::vector<uint32_t> test = reg;
  test.insert(test.end(), reg.begin(), reg.end());
  Verification v = Check(test, reg);
  EXPECT_EQ(v.matched_test_grams, 50u);
  EXPECT_EQ(v.matched_registered_grams, 25u);
  EXPECT_EQ(v.passages.size(), 2u);
}

TEST(VerifyTest, DegenerateRepetitionStaysLinear) {
  // 20,000 copies of one gram against 20,000 of the same: without the repeat cap that is
  // 4 * 10^8 pairs. With it, at most 8 per registered gram.
  std::vector<uint32_t> same(20000, 7);
  Verification v = Check(same, same);
  EXPECT_EQ(v.shared_registered_grams, 20000u);
  EXPECT_LE(v.shared_test_grams, TestGrams::kMaxRepeats);
  EXPECT_LE(v.matched_test_grams, TestGrams::kMaxRepeats);
}

TEST(VerifyTest, ExcludedGramsMatchIntoTheirOwnPassagesThatDoNotCount) {
  const auto text = Seq(1000, 50);
  std::vector<Exclusion> excluded(50, Exclusion::kNone);
  for (int g = 10; g < 30; ++g) excluded[g] = Exclusion::kQuote;
  TestGrams t;
  t.Build(text, excluded);
  EXPECT_EQ(t.size(), 50u);
  EXPECT_EQ(t.counted(), 30u);
  Verification v;
  Verify(t, text, {}, &v);
  EXPECT_EQ(v.test_grams, 30u);
  // The copy breaks where the quote starts and ends.
  ASSERT_EQ(v.passages.size(), 3u);
  EXPECT_EQ(v.passages[0].excluded, Exclusion::kNone);
  EXPECT_EQ(v.passages[1].excluded, Exclusion::kQuote);
  EXPECT_EQ(v.passages[1].test_begin, 10u);
  EXPECT_EQ(v.passages[1].test_end, 30u);
  EXPECT_EQ(v.passages[2].excluded, Exclusion::kNone);
  EXPECT_EQ(v.matched_test_grams, 30u);
  EXPECT_DOUBLE_EQ(v.Ratio(), 1.0);
  EXPECT_DOUBLE_EQ(v.Containment(), 30.0 / 50);
  EXPECT_EQ(v.longest_passage, 20u);  // of those that count
}

TEST(VerifyTest, PassagesShorterThanTheCountedMinimumAreExcluded) {
  // Two copied runs of the registered text: 5 grams and 20 grams, far apart in the test.
  const auto reg = Seq(1000, 100);
  std::vector<uint32_t> test = Seq(5000, 80);
  for (int j = 0; j < 5; ++j) test[10 + j] = reg[20 + j];
  for (int j = 0; j < 20; ++j) test[50 + j] = reg[70 + j];
  VerifyOptions o;
  o.min_counted_passage_grams = 8;
  Verification v = Check(test, reg, o);
  ASSERT_EQ(v.passages.size(), 2u);
  EXPECT_EQ(v.passages[0].excluded, Exclusion::kShortMatch);
  EXPECT_EQ(v.passages[1].excluded, Exclusion::kNone);
  EXPECT_EQ(v.matched_test_grams, 20u);
  EXPECT_EQ(v.test_grams, 80u);  // a short match is still text of the test
  EXPECT_DOUBLE_EQ(v.Containment(), 20.0 / 100);
}

// The length of LongestSharedChain's chain.
uint32_t ChainLength(const TestGrams& t, std::span<const uint32_t> registered,
                     absl::FunctionRef<bool(uint32_t)> eligible) {
  std::vector<std::pair<uint32_t, uint32_t>> members;
  LongestSharedChain(t, registered, eligible, &members);
  return static_cast<uint32_t>(members.size());
}

TEST(LongestSharedChainTest, TheChainAdvancesInBothTextsWhateverTheGaps) {
  // Registered 0..99; the test holds 10, 30, 20, 40, 50, 90 among new grams: 10, 20 (or 30),
  // 40, 50, 90 rise in both texts, 30 after 20 does not.
  std::vector<uint32_t> test = Seq(5000, 60);
  for (const auto& [at, gram] : std::vector<std::pair<int, uint32_t>>{
           {2, 10}, {9, 30}, {15, 20}, {30, 40}, {41, 50}, {55, 90}}) {
    test[at] = 1000 + gram;
  }
  const auto all = [](uint32_t) { return true; };
  TestGrams t;
  t.Build(test);
  EXPECT_EQ(ChainLength(t, Seq(1000, 100), all), 5u);
  // Its members: (test, registered) positions of one longest chain, both rising.
  std::vector<std::pair<uint32_t, uint32_t>> members;
  LongestSharedChain(t, Seq(1000, 100), all, &members);
  using P = std::pair<uint32_t, uint32_t>;
  EXPECT_TRUE(members == (std::vector<P>{{2, 10}, {9, 30}, {30, 40}, {41, 50}, {55, 90}}) ||
              members == (std::vector<P>{{2, 10}, {15, 20}, {30, 40}, {41, 50}, {55, 90}}))
      << ::testing::PrintToString(members);
  // Only the grams `eligible` accepts (test positions), and none that does not count.
  EXPECT_EQ(ChainLength(t, Seq(1000, 100), [](uint32_t i) { return i != 30; }), 4u);
  std::vector<Exclusion> excluded(test.size(), Exclusion::kNone);
  excluded[41] = Exclusion::kQuote;
  t.Build(test, excluded);
  EXPECT_EQ(ChainLength(t, Seq(1000, 100), all), 4u);
}

TEST(LongestSharedChainTest, EachGramOfEitherTextJoinsOnce) {
  // A test gram repeated in the registered text, and a registered gram repeated in the test:
  // each position is used once, so the chain is no longer than either side's distinct run.
  const auto all = [](uint32_t) { return true; };
  TestGrams t;
  t.Build(std::vector<uint32_t>{7, 7, 7, 8});
  EXPECT_EQ(ChainLength(t, std::vector<uint32_t>{7}, all), 1u);
  t.Build(std::vector<uint32_t>{7});
  EXPECT_EQ(ChainLength(t, std::vector<uint32_t>{7, 7, 7}, all), 1u);
  t.Build(std::vector<uint32_t>{7, 8, 9});
  EXPECT_EQ(ChainLength(t, std::vector<uint32_t>{1, 2, 3}, all), 0u);
  std::vector<std::pair<uint32_t, uint32_t>> members = {{1, 1}};
  LongestSharedChain(t, std::vector<uint32_t>{1, 2, 3}, all, &members);
  EXPECT_TRUE(members.empty());
  t.Build(std::vector<uint32_t>{7, 7, 8});
  LongestSharedChain(t, std::vector<uint32_t>{7, 8}, all, &members);
  EXPECT_EQ(members, (std::vector<std::pair<uint32_t, uint32_t>>{{1, 0}, {2, 1}}));
}

}  // namespace
}  // namespace cops
