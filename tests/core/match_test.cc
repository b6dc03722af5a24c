#include "core/match.h"

#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

// A test document of n selected chunks, chunk i covering units [i, i + 3) and bytes
// [10 i, 10 i + 30).
DocumentFingerprint TestDoc(uint32_t n) {
  DocumentFingerprint fp;
  for (uint32_t i = 0; i < n; ++i) {
    fp.chunks.push_back(Chunk{1000 + i, i, 10 * i, 10 * i + 30, i, i + 3});
  }
  fp.total_chunks = n;
  fp.total_units = n + 2;
  return fp;
}

Posting At(DocId doc, uint32_t ordinal) { return Posting{doc, ordinal, 100 * ordinal, 100 * ordinal + 50}; }

TEST(CheckOptionsTest, Validate) {
  CheckOptions o;
  EXPECT_OK(o.Validate());
  o.threshold = 0;
  EXPECT_NE(o.Validate().message().find("threshold"), absl::string_view::npos);
  o.threshold = 1.5;
  EXPECT_FALSE(o.Validate().ok());
  o = CheckOptions();
  o.min_count = 0;
  EXPECT_NE(o.Validate().message().find("min_count"), absl::string_view::npos);
  // A heavy revision's reach trims under half of its chain from each end: at 0.5 no gram
  // would be left between them.
  o = CheckOptions();
  o.revision_trim = 0.5;
  EXPECT_NE(o.Validate().message().find("revision_trim"), absl::string_view::npos);
  o.revision_trim = -0.1;
  EXPECT_FALSE(o.Validate().ok());
  o.revision_trim = 0.49;
  EXPECT_OK(o.Validate());
}

TEST(MatchSetTest, RatioContainmentAndSpans) {
  DocumentFingerprint test = TestDoc(10);
  std::vector<PostingList> pl(10);
  // Doc 7 matches chunks 0..5 in order; doc 9 matches chunk 8 only.
  for (uint32_t i = 0; i < 6; ++i) pl[i] = PostingList{1, {At(7, 20 + i)}};
  pl[8] = PostingList{1, {At(9, 3)}};
  CheckOptions o;
  o.threshold = 0.5;
  o.min_passage_units = 5;
  MatchSet set = MatchSet::Tally(test, pl, o);
  ASSERT_EQ(set.CandidateIds(), std::vector<DocId>{7});  // doc 9's passage is 3 units
  std::vector<uint32_t> stored = {12};
  Report r = set.Decide(stored);
  ASSERT_EQ(r.matches.size(), 1u);
  const DocumentMatch& m = r.matches[0];
  EXPECT_EQ(m.matched_chunks, 6u);
  EXPECT_DOUBLE_EQ(m.ratio, 0.6);
  EXPECT_DOUBLE_EQ(m.containment, 0.5);
  EXPECT_EQ(m.ordered_matches, 6u);
  EXPECT_TRUE(m.violation);
  EXPECT_TRUE(r.violation);
  ASSERT_EQ(m.spans.size(), 1u);
  EXPECT_EQ(m.spans[0].test_start, 0u);
  EXPECT_EQ(m.spans[0].test_end, 80u);
  EXPECT_EQ(m.spans[0].units, 8u);
  EXPECT_EQ(m.spans[0].chunks, 6u);
  EXPECT_TRUE(m.spans[0].has_registered);
  EXPECT_EQ(m.spans[0].registered_start, 2000u);
  EXPECT_EQ(m.spans[0].registered_end, 2550u);
}

TEST(MatchSetTest, SeparatePassagesAndOrderedChain) {
  DocumentFingerprint test = TestDoc(12);
  std::vector<PostingList> pl(12);
  // Passage 1: chunks 0..3 -> registered ordinals 50..53; passage 2: chunks 8..11 ->
  // registered ordinals 0..3 (moved earlier in the registered document).
  for (uint32_t i = 0; i < 4; ++i) pl[i] = PostingList{1, {At(1, 50 + i)}};
  for (uint32_t i = 8; i < 12; ++i) pl[i] = PostingList{1, {At(1, i - 8)}};
  CheckOptions o;
  o.function = DecisionFunction::kOrderedMatches;
  o.min_count = 5;
  o.min_passage_units = 1;
  Report r = MatchSet::Tally(test, pl, o).Decide(std::vector<uint32_t>{60});
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_EQ(r.matches[0].matched_chunks, 8u);
  EXPECT_EQ(r.matches[0].ordered_matches, 4u);
  EXPECT_FALSE(r.matches[0].violation);
  ASSERT_EQ(r.matches[0].spans.size(), 2u);
  EXPECT_EQ(r.matches[0].spans[1].test_start, 80u);

  o.function = DecisionFunction::kMatchCount;
  o.min_count = 8;
  r = MatchSet::Tally(test, pl, o).Decide(std::vector<uint32_t>{60});
  EXPECT_TRUE(r.violation);
}

TEST(MatchSetTest, CommonChunksAreIgnored) {
  DocumentFingerprint test = TestDoc(4);
  std::vector<PostingList> pl(4);
  pl[0] = PostingList{500, {At(1, 0), At(2, 0)}};  // boilerplate found everywhere
  pl[1] = PostingList{1, {At(1, 1)}};
  pl[2] = PostingList{1, {At(1, 2)}};
  CheckOptions o;
  o.max_doc_frequency = 100;
  o.min_passage_units = 0;
  Report r = MatchSet::Tally(test, pl, o).Decide(std::vector<uint32_t>{3});
  EXPECT_EQ(r.common_chunks_ignored, 1u);
  EXPECT_EQ(r.considered_chunks, 3u);
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_EQ(r.matches[0].doc_id, 1u);
  EXPECT_DOUBLE_EQ(r.matches[0].ratio, 2.0 / 3.0);
}

TEST(MatchSetTest, ContainmentAndSortingAndMaxResults) {
  DocumentFingerprint test = TestDoc(10);
  std::vector<PostingList> pl(10);
  for (uint32_t i = 0; i < 10; ++i) {
    pl[i].doc_frequency = 1;
    if (i < 3) pl[i].postings.push_back(At(5, i));  // doc 5: small doc fully inside
    if (i < 8) pl[i].postings.push_back(At(6, i));
    std::sort(pl[i].postings.begin(), pl[i].postings.end(),
              [](const Posting& a, const Posting& b) { return a.doc_id < b.doc_id; });
  }
  CheckOptions o;
  o.function = DecisionFunction::kContainment;
  o.threshold = 0.9;
  o.min_passage_units = 3;
  MatchSet set = MatchSet::Tally(test, pl, o);
  ASSERT_EQ(set.CandidateIds(), (std::vector<DocId>{5, 6}));
  Report r = set.Decide(std::vector<uint32_t>{3, 100});
  ASSERT_EQ(r.matches.size(), 2u);
  EXPECT_EQ(r.matches[0].doc_id, 6u);  // higher ratio first
  EXPECT_DOUBLE_EQ(r.matches[1].containment, 1.0);
  EXPECT_TRUE(r.matches[1].violation);
  EXPECT_FALSE(r.matches[0].violation);
  o.max_results = 1;
  r = MatchSet::Tally(test, pl, o).Decide(std::vector<uint32_t>{3, 100});
  EXPECT_EQ(r.matches.size(), 1u);
  EXPECT_TRUE(r.violation);  // the cut-off match still counts
}

TEST(SamplingTest, SampleChunksIsReproducibleAndOrdered) {
  DocumentFingerprint a = TestDoc(100), b = TestDoc(100), c = TestDoc(100);
  SampleChunks(10, 42, &a);
  SampleChunks(10, 42, &b);
  SampleChunks(10, 43, &c);
  ASSERT_EQ(a.chunks.size(), 10u);
  EXPECT_TRUE(a.sampled);
  EXPECT_EQ(a.unsampled_chunks, 100u);
  bool same = true, differ = false;
  for (size_t i = 0; i < 10; ++i) {
    same = same && a.chunks[i].hash == b.chunks[i].hash;
    differ = differ || a.chunks[i].hash != c.chunks[i].hash;
    if (i) {
      EXPECT_LT(a.chunks[i - 1].ordinal, a.chunks[i].ordinal);
    }
  }
  EXPECT_TRUE(same);
  EXPECT_TRUE(differ);
  DocumentFingerprint d = TestDoc(5);
  SampleChunks(10, 1, &d);
  EXPECT_EQ(d.chunks.size(), 5u);
  EXPECT_FALSE(d.sampled);
}

TEST(SamplingTest, SamplingErrorBehaves) {
  // Far from the threshold, more samples mean less error.
  double prev = 1.0;
  for (uint32_t n : {5u, 20u, 80u, 320u}) {
    const double e = SamplingError(n, 0.5, 0.8);
    EXPECT_LT(e, prev) << n;
    prev = e;
  }
  EXPECT_LT(SamplingError(320, 0.5, 0.8), 1e-6);
  EXPECT_LT(SamplingError(100, 0.5, 0.1), 1e-6);
  // At the threshold the decision is a coin flip.
  EXPECT_NEAR(SamplingError(1000, 0.5, 0.5), 0.5, 0.05);
  // Exact reference: n = 2, threshold 0.5 (need 1 match), r = 0.3 -> P(X >= 1) = 0.51.
  EXPECT_NEAR(SamplingError(2, 0.5, 0.3), 0.51, 1e-12);
  EXPECT_EQ(SamplingError(0, 0.5, 0.3), 1.0);
}

TEST(SamplingTest, ReportCarriesSamplingError) {
  DocumentFingerprint test = TestDoc(40);
  SampleChunks(20, 7, &test);
  std::vector<PostingList> pl(test.chunks.size());
  for (size_t i = 0; i < pl.size(); ++i) pl[i] = PostingList{1, {At(3, test.chunks[i].ordinal)}};
  CheckOptions o;
  Report r = MatchSet::Tally(test, pl, o).Decide(std::vector<uint32_t>{40});
  EXPECT_TRUE(r.sampled);
  EXPECT_EQ(r.selected_chunks, 20u);
  EXPECT_TRUE(r.violation);
  EXPECT_GE(r.sampling_error, 0.0);
  EXPECT_LT(r.sampling_error, 0.01);
}

// The table is the one place a decision function is named: every row parses back from its
// name and alias, and values outside it are refused at every boundary.
TEST(DecisionFunctionTableTest, NamesParseBackAndTheRangeIsTheTable) {
  for (const DecisionFunctionInfo& f : kDecisionFunctions) {
    EXPECT_EQ(DecisionFunctionName(f.function), f.name);
    ASSERT_OK_AND_ASSIGN(DecisionFunction parsed, ParseDecisionFunction(f.name));
    EXPECT_EQ(parsed, f.function);
    if (!f.alias.empty()) {
      ASSERT_OK_AND_ASSIGN(DecisionFunction by_alias, ParseDecisionFunction(f.alias));
      EXPECT_EQ(by_alias, f.function);
    }
    EXPECT_TRUE(IsDecisionFunction(static_cast<int>(f.function)));
    EXPECT_FALSE(f.help.empty());
  }
  ASSERT_OK_AND_ASSIGN(DecisionFunction upper, ParseDecisionFunction("CONTAINMENT"));
  EXPECT_EQ(upper, DecisionFunction::kContainment);
  absl::StatusOr<DecisionFunction> unknown = ParseDecisionFunction("cosine");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("ordered_matches"), std::string_view::npos);
  EXPECT_FALSE(IsDecisionFunction(0));
  EXPECT_FALSE(IsDecisionFunction(5));
  CheckOptions options;
  options.function = static_cast<DecisionFunction>(5);
  EXPECT_EQ(options.Validate().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cops
