#include "core/detect.h"

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

HashKey Key() { return HashKey::FromHex("00112233445566778899aabbccddeeff").value(); }

// An in-memory candidate source: what the pipeline reads, and no more.
class MapSource final : public CandidateSource {
 public:
  void Add(DocId id, const DocumentFingerprint& fp) {
    for (const Chunk& c : fp.chunks) {
      PostingList& l = postings_[c.hash];
      if (l.postings.empty() || l.postings.back().doc_id != id) ++l.doc_frequency;
      l.postings.push_back({id, c.ordinal, c.start, c.end});
    }
    stored_[id] = static_cast<uint32_t>(fp.chunks.size());
    grams_[id] = fp.grams;
  }
  std::set<DocId> hidden;  // e.g. another collection

  absl::Status Lookup(std::span<const ChunkHash> hashes,
                      std::vector<PostingList>* out) const override {
    out->assign(hashes.size(), PostingList{});
    for (size_t i = 0; i < hashes.size(); ++i) {
      if (auto it = postings_.find(hashes[i]); it != postings_.end()) (*out)[i] = it->second;
    }
    return absl::OkStatus();
  }
  absl::Status ReadCandidates(std::span<const DocId> ids,
                              std::vector<CandidateRecord>* out) const override {
    out->assign(ids.size(), CandidateRecord{});
    for (size_t i = 0; i < ids.size(); ++i) {
      auto it = stored_.find(ids[i]);
      if (it != stored_.end() && !hidden.contains(ids[i])) (*out)[i] = {true, it->second};
    }
    return absl::OkStatus();
  }
  absl::Status ReadGrams(std::span<const DocId> ids,
                         std::vector<std::vector<uint32_t>>* out) const override {
    out->assign(ids.size(), {});
    for (size_t i = 0; i < ids.size(); ++i) {
      if (auto it = grams_.find(ids[i]); it != grams_.end()) (*out)[i] = it->second;
    }
    return absl::OkStatus();
  }

 private:
  std::map<ChunkHash, PostingList> postings_;
  std::map<DocId, uint32_t> stored_;
  std::map<DocId, std::vector<uint32_t>> grams_;
};

// A 200-word source of distinct words w0 .. w199 (sentences of 10 words).
std::string Source(int first = 0) {
  std::ostringstream s;
  for (int i = 0; i < 200; ++i) s << "w" << (first + i) << ((i % 10 == 9) ? ". " : " ");
  return s.str();
}

// The source with every 4th word replaced: no 5 consecutive source words survive, so no
// 5-word chunk of the source is left, while 3-word grams survive between the edits.
std::string Revised() {
  std::ostringstream s;
  for (int i = 0; i < 200; ++i) {
    if (i % 4 == 3) s << "x" << i; else s << "w" << i;
    s << ((i % 10 == 9) ? ". " : " ");
  }
  return s.str();
}

class DetectTest : public ::testing::Test {
 protected:
  void Build(uint32_t verify_k, uint32_t k) {
    params_ = ChunkingParams{};
    params_.verify_k = verify_k;
    if (verify_k == 0) params_.dense_chunks = 0;
    params_.k = k;
    params_.key_id = Key().Id();
    fingerprinter_ = Fingerprinter::Create(params_, Key()).value();
    DocumentFingerprint fp;
    ASSERT_OK(fingerprinter_->Fingerprint(Source(), &fp));
    source_.Add(1, fp);
    ASSERT_OK(fingerprinter_->Fingerprint(Source(1000), &fp));
    source_.Add(2, fp);
  }
  Report Check(const std::string& text, CheckOptions check = {}) {
    DocumentFingerprint fp;
    EXPECT_OK(fingerprinter_->Fingerprint(text, &fp, CheckFingerprintOptions(params_)));
    DetectOptions o;
    o.check = check;
    absl::StatusOr<Report> r = Detect(fp, params_, source_, o);
    EXPECT_OK(r);
    return r.ok() ? *r : Report{};
  }
  ChunkingParams params_;
  std::unique_ptr<Fingerprinter> fingerprinter_;
  MapSource source_;
};

TEST_F(DetectTest, VerificationFindsARevisedCopyThatTheSampleAloneMisses) {
  // Candidates need one surviving chunk: with 3-word chunks some survive the edits.
  Build(/*verify_k=*/3, /*k=*/3);
  Report r = Check(Revised());
  EXPECT_TRUE(r.verified);
  ASSERT_FALSE(r.matches.empty());
  const DocumentMatch& m = r.matches[0];
  EXPECT_EQ(m.doc_id, 1u);
  // Of each 4 words one changed: 1 of every 4 grams survives (grams are 3 words).
  EXPECT_NEAR(m.ratio, 0.25, 0.03);
  EXPECT_TRUE(m.violation);
  EXPECT_TRUE(r.violation);
  // Gaps of 3 grams are bridged: the whole text is one passage.
  ASSERT_EQ(m.spans.size(), 1u);
  EXPECT_EQ(m.spans[0].test_start, 0u);
  EXPECT_GE(m.spans[0].units, 190u);
  EXPECT_TRUE(m.spans[0].has_registered);
  EXPECT_LT(m.spans[0].registered_start, 40u);

  // The same index without verification decides on the sampled 3-word chunks alone.
  source_ = MapSource();
  Build(/*verify_k=*/0, /*k=*/3);
  Report sampled = Check(Revised());
  EXPECT_FALSE(sampled.verified);
  ASSERT_FALSE(sampled.matches.empty());
  EXPECT_LT(sampled.matches[0].ratio, m.ratio);
}

TEST_F(DetectTest, UnrelatedTextIsNoMatchAndAnExactCopyIsRatioOne) {
  Build(3, 5);
  Report unrelated = Check(Source(5000));
  EXPECT_TRUE(unrelated.matches.empty());
  EXPECT_FALSE(unrelated.violation);
  Report exact = Check(Source());
  ASSERT_EQ(exact.matches.size(), 1u);
  EXPECT_DOUBLE_EQ(exact.matches[0].ratio, 1.0);
  EXPECT_DOUBLE_EQ(exact.matches[0].containment, 1.0);
  EXPECT_EQ(exact.considered_chunks, 198u);  // the test's 3-word grams
  // The passage covers the whole registered text, in its units too.
  ASSERT_EQ(exact.matches[0].spans.size(), 1u);
  EXPECT_EQ(exact.matches[0].spans[0].registered_unit_begin, 0u);
  EXPECT_EQ(exact.matches[0].spans[0].registered_unit_end, 200u);
}

TEST_F(DetectTest, HiddenDocumentsAreNeverReportedAndDoNotCountAsViolations) {
  Build(3, 5);
  source_.hidden.insert(1);
  Report r = Check(Source());
  EXPECT_TRUE(r.matches.empty());
  EXPECT_FALSE(r.violation);
}

TEST_F(DetectTest, MaxResultsCutsAfterOrderingAndKeepsTheViolationFlag) {
  Build(3, 5);
  // Half of each source: both match, doc 1 with the larger share.
  std::string text = Source().substr(0, Source().size() * 2 / 3) + Source(1000).substr(0, 400);
  CheckOptions o;
  o.max_results = 1;
  Report r = Check(text, o);
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_EQ(r.matches[0].doc_id, 1u);
  EXPECT_TRUE(r.violation);
  o.want_spans = false;
  r = Check(text, o);
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_TRUE(r.matches[0].spans.empty());
}

}  // namespace
}  // namespace cops
