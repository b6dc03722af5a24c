#include "server/check_verdicts.h"

#include "gtest/gtest.h"

namespace cops {
namespace {

v1::Match MatchOf(bool violation, bool chunks, bool stem_pairs, bool heavy_revision) {
  v1::Match m;
  m.set_violation(violation);
  m.set_chunk_violation(chunks);
  m.set_stem_pair_violation(stem_pairs);
  m.set_revision_violation(heavy_revision);
  return m;
}

// A check counts once by its verdict and, when a violation, once under each kind of evidence
// that made one of its matches a violation; matches that are no violation do not count.
TEST(CheckVerdictCounterTest, CountsEachCheckByVerdictAndEachViolationByItsEvidence) {
  CheckVerdictCounter counter;
  v1::CheckDocumentReply clean;
  *clean.add_matches() = MatchOf(false, true, false, false);  // reported, below the threshold
  counter.Count(clean);

  v1::CheckDocumentReply copied;
  copied.set_violation(true);
  *copied.add_matches() = MatchOf(true, true, false, false);
  *copied.add_matches() = MatchOf(true, true, false, false);
  counter.Count(copied);

  v1::CheckDocumentReply rewritten;
  rewritten.set_violation(true);
  *rewritten.add_matches() = MatchOf(true, false, false, true);
  *rewritten.add_matches() = MatchOf(true, false, true, true);
  *rewritten.add_matches() = MatchOf(false, true, false, false);
  counter.Count(rewritten);

  const CheckVerdicts v = counter.Read();
  EXPECT_EQ(v.clean, 1u);
  EXPECT_EQ(v.violation, 2u);
  EXPECT_EQ(v.by_chunks, 1u);
  EXPECT_EQ(v.by_stem_pairs, 1u);
  EXPECT_EQ(v.by_heavy_revision, 1u);
}

}  // namespace
}  // namespace cops
