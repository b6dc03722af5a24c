#include "core/detect.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/stem_pairs.h"
#include "core/stock_phrases.h"
#include "gtest/gtest.h"
#include "tests/testing/documents.h"
#include "tests/server/test_corpus.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

HashKey Key() { return HashKey::FromHex("00112233445566778899aabbccddeeff").value(); }
// One of many keys, for rules whose outcome depends on which chunks the key samples.
HashKey SeededKey(int seed) {
  char hex[33];
  std::snprintf(hex, sizeof hex, "%016llx%016llx",
                static_cast<unsigned long long>(0x9e3779b97f4a7c15ULL * (seed + 1)),
                static_cast<unsigned long long>(0xc2b2ae3d27d4eb4fULL * (seed + 7)));
  return HashKey::FromHex(hex).value();
}

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
    digests_[id] = TextDigest(fp.sha256);
    grams_[id] = fp.grams;
    for (uint32_t pair : fp.stem_pairs) pairs_[pair].push_back(id);
    pair_order_[id] = fp.stem_pair_order;
  }
  bool keeps_stem_pairs = false;  // an index created with ChunkingParams::stem_pairs
  std::set<DocId> order_unknown;  // registered before their pairs' order was kept
  std::set<DocId> hidden;     // e.g. another collection
  std::set<DocId> templates;  // in a template collection

  mutable size_t looked_up = 0;  // hashes looked up so far
  mutable size_t lookups = 0;    // batches

  absl::Status Lookup(std::span<const ChunkHash> hashes,
                      std::vector<PostingList>* out) const override {
    looked_up += hashes.size();
    ++lookups;
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
      if (it != stored_.end() && !hidden.contains(ids[i])) {
        (*out)[i] = {true, it->second, templates.contains(ids[i]), digests_.at(ids[i])};
      }
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
  absl::StatusOr<bool> LookupStemPairs(std::span<const uint32_t> pairs, uint32_t max_documents,
                                       std::vector<std::vector<DocId>>* out) const override {
    if (!keeps_stem_pairs) return false;
    out->assign(pairs.size(), {});
    for (size_t i = 0; i < pairs.size(); ++i) {
      auto it = pairs_.find(pairs[i]);
      if (it != pairs_.end() && it->second.size() < max_documents) (*out)[i] = it->second;
    }
    return true;
  }
  absl::Status ReadStemPairOrder(std::span<const DocId> ids,
                                 std::vector<std::vector<uint32_t>>* out) const override {
    out->assign(ids.size(), {});
    for (size_t i = 0; i < ids.size(); ++i) {
      auto it = pair_order_.find(ids[i]);
      if (it != pair_order_.end() && !order_unknown.contains(ids[i])) (*out)[i] = it->second;
    }
    return absl::OkStatus();
  }

 private:
  std::map<uint32_t, std::vector<DocId>> pairs_;
  std::map<DocId, std::vector<uint32_t>> pair_order_;
  std::map<ChunkHash, PostingList> postings_;
  std::map<DocId, uint32_t> stored_;
  std::map<DocId, uint64_t> digests_;  // CandidateRecord::text_digest
  std::map<DocId, std::vector<uint32_t>> grams_;
};

// n distinct words w<first> .. w<first + n - 1>, separated by spaces.
std::string Words(int first, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? " w" : "w") + std::to_string(first + i);
  return s;
}

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
  void Build(uint32_t verify_k, uint32_t k, uint32_t stem_pairs = 0,
             const HashKey& key = Key()) {
    source_ = MapSource{};
    params_ = ChunkingParams{};
    params_.stem_pairs = stem_pairs;
    params_.stem_version = stem_pairs != 0 ? kStemPairsVersion : 0;
    source_.keeps_stem_pairs = stem_pairs != 0;
    params_.verify_k = verify_k;
    if (verify_k == 0) params_.dense_chunks = 0;
    params_.k = k;
    params_.key_id = key.Id();
    fingerprinter_ = Fingerprinter::Create(params_, key).value();
    DocumentFingerprint fp;
    ASSERT_OK(fingerprinter_->Fingerprint(Source(), &fp));
    source_.Add(1, fp);
    ASSERT_OK(fingerprinter_->Fingerprint(Source(1000), &fp));
    source_.Add(2, fp);
  }
  // Registers `text` as the server does (short documents keep every chunk).
  void Add(DocId id, const std::string& text) {
    DocumentFingerprint fp;
    ASSERT_OK(fingerprinter_->Fingerprint(text, &fp, RegisterFingerprintOptions(params_)));
    source_.Add(id, fp);
  }
  Report Check(const std::string& text, CheckOptions check = {},
               std::vector<ExcludedRange> excluded = {}) {
    DocumentFingerprint fp;
    FingerprintOptions options = CheckFingerprintOptions(params_);
    options.short_lines = check.revision_share > 0;
    EXPECT_OK(fingerprinter_->Fingerprint(text, &fp, options));
    DetectOptions o;
    o.check = check;
    o.excluded = std::move(excluded);
    absl::StatusOr<Report> r = Detect(fp, params_, source_, o);
    EXPECT_OK(r);
    return r.ok() ? *r : Report{};
  }
  // The report of `text` when its selection is looked up first (as Check() does) and when
  // every chunk is looked up at once; `lookups` receives the hashes each looked up.
  std::pair<Report, Report> CheckBothWays(const std::string& text,
                                          std::pair<size_t, size_t>* looked_up) {
    DocumentFingerprint fp;
    EXPECT_OK(fingerprinter_->Fingerprint(text, &fp, CheckFingerprintOptions(params_)));
    EXPECT_FALSE(fp.selection.empty());
    EXPECT_LT(fp.selection.size(), fp.chunks.size());
    DetectOptions o;
    std::pair<Report, Report> reports;
    size_t before = source_.looked_up;
    absl::StatusOr<Report> r = Detect(fp, params_, source_, o);
    EXPECT_OK(r);
    if (r.ok()) reports.first = *r;
    looked_up->first = source_.looked_up - before;
    fp.selection.clear();
    before = source_.looked_up;
    r = Detect(fp, params_, source_, o);
    EXPECT_OK(r);
    if (r.ok()) reports.second = *r;
    looked_up->second = source_.looked_up - before;
    return reports;
  }
  ChunkingParams params_;
  std::unique_ptr<Fingerprinter> fingerprinter_;
  MapSource source_;
};

// The same documents, figures and spans (both sides' bytes) in both reports.
void ExpectSameMatches(const Report& a, const Report& b) {
  EXPECT_EQ(a.violation, b.violation);
  EXPECT_EQ(a.considered_chunks, b.considered_chunks);
  ASSERT_EQ(a.matches.size(), b.matches.size());
  for (size_t i = 0; i < a.matches.size(); ++i) {
    const DocumentMatch& x = a.matches[i];
    const DocumentMatch& y = b.matches[i];
    EXPECT_EQ(x.doc_id, y.doc_id);
    EXPECT_DOUBLE_EQ(x.ratio, y.ratio);
    EXPECT_DOUBLE_EQ(x.containment, y.containment);
    EXPECT_EQ(x.violation, y.violation);
    ASSERT_EQ(x.spans.size(), y.spans.size()) << "document " << x.doc_id;
    for (size_t j = 0; j < x.spans.size(); ++j) {
      EXPECT_EQ(x.spans[j].test_start, y.spans[j].test_start);
      EXPECT_EQ(x.spans[j].test_end, y.spans[j].test_end);
      EXPECT_EQ(x.spans[j].has_registered, y.spans[j].has_registered);
      EXPECT_EQ(x.spans[j].registered_start, y.spans[j].registered_start);
      EXPECT_EQ(x.spans[j].registered_end, y.spans[j].registered_end);
    }
  }
}

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

// The passages of a match that count, and those excluded for `reason`.
size_t Spans(const DocumentMatch& m, Exclusion reason) {
  return std::count_if(m.spans.begin(), m.spans.end(),
                       [reason](const Span& s) { return s.excluded == reason; });
}

TEST_F(DetectTest, AQuotedCopyIsReportedAsExcludedAndDoesNotCount) {
  Build(3, 5);
  // 100 words of the test's own, 60 of doc 1 in quotation marks, 100 more of its own.
  const std::string quote = "\"" + Words(0, 60) + "\"";
  const std::string text = Words(5000, 100) + " " + quote + " " + Words(6000, 100) + ".";
  const Report plain = Check(text);
  ASSERT_EQ(plain.matches.size(), 1u);
  EXPECT_TRUE(plain.violation);
  EXPECT_NEAR(plain.matches[0].ratio, 58.0 / 258, 0.01);

  const std::vector<ExcludedRange> quotes = FindExclusions(text, {.quotes = true});
  ASSERT_EQ(quotes.size(), 1u);
  const Report r = Check(text, {}, quotes);
  EXPECT_EQ(r.excluded, quotes);
  EXPECT_FALSE(r.violation);
  // The quoted words' grams (and the 2 on each side that reach into the quote) are not in
  // the denominator.
  EXPECT_EQ(r.considered_chunks, 258u - 58 - 4);
  ASSERT_EQ(r.matches.size(), 1u);  // shown, with its passage marked
  const DocumentMatch& m = r.matches[0];
  EXPECT_EQ(m.doc_id, 1u);
  EXPECT_DOUBLE_EQ(m.ratio, 0);
  EXPECT_DOUBLE_EQ(m.containment, 0);
  EXPECT_FALSE(m.violation);
  ASSERT_EQ(m.spans.size(), 1u);
  EXPECT_EQ(m.spans[0].excluded, Exclusion::kQuote);
  EXPECT_EQ(m.spans[0].units, 60u);
  EXPECT_EQ(text.substr(m.spans[0].test_start, m.spans[0].test_end - m.spans[0].test_start),
            quote.substr(1, quote.size() - 2));
}

TEST_F(DetectTest, APassagePartlyQuotedCountsOnlyOutsideTheQuote) {
  Build(3, 5);
  // Doc 1's words 0..79 copied: 0..39 in quotation marks, 40..79 not.
  const std::string text = Words(5000, 100) + " \"" + Words(0, 40) + "\" " + Words(40, 40) + " " +
                           Words(6000, 100) + ".";
  const Report r = Check(text, {}, FindExclusions(text, {.quotes = true}));
  ASSERT_EQ(r.matches.size(), 1u);
  const DocumentMatch& m = r.matches[0];
  EXPECT_EQ(Spans(m, Exclusion::kQuote), 1u);
  ASSERT_EQ(Spans(m, Exclusion::kNone), 1u);
  // Grams wholly outside the quote: words 40..79 give 38.
  EXPECT_EQ(m.matched_chunks, 38u);
  EXPECT_NEAR(m.ratio, 38.0 / r.considered_chunks, 1e-9);
  EXPECT_TRUE(m.violation);
}

TEST_F(DetectTest, TheReferencesSectionDoesNotCount) {
  Build(3, 5);
  const std::string body = Words(5000, 150) + ".\n\nReferences\n";
  const std::string text = body + Words(0, 50) + ".\n";
  EXPECT_TRUE(Check(text).violation);
  const std::vector<ExcludedRange> refs = FindExclusions(text, {.references = true});
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0].reason, Exclusion::kReferences);
  const Report r = Check(text, {}, refs);
  EXPECT_FALSE(r.violation);
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_EQ(Spans(r.matches[0], Exclusion::kReferences), 1u);
  EXPECT_EQ(Spans(r.matches[0], Exclusion::kNone), 0u);
  // The heading and the 50 listed words are out, and with them each gram reaching into
  // them: the 150 words before give the 148 grams that count.
  EXPECT_EQ(r.considered_chunks, 148u);
}

TEST_F(DetectTest, MatchesShorterThanMinMatchUnitsAreExcluded) {
  Build(3, 5);
  // Two 6-word snippets of doc 1 far apart, and one 30-word passage, in 200 own words.
  const std::string text = Words(5000, 50) + " " + Words(100, 6) + " " + Words(6000, 50) + " " +
                           Words(150, 6) + " " + Words(7000, 50) + " " + Words(0, 30) + " " +
                           Words(8000, 50) + ".";
  CheckOptions six;
  six.min_passage_units = 6;  // the snippets show and count (the default is 8 words)
  const Report all = Check(text, six);
  ASSERT_EQ(all.matches.size(), 1u);
  EXPECT_EQ(Spans(all.matches[0], Exclusion::kNone), 3u);
  EXPECT_EQ(all.matches[0].matched_chunks, 4u + 4 + 28);

  CheckOptions o = six;
  o.min_match_units = 10;
  const Report r = Check(text, o);
  ASSERT_EQ(r.matches.size(), 1u);
  const DocumentMatch& m = r.matches[0];
  EXPECT_EQ(Spans(m, Exclusion::kShortMatch), 2u);
  EXPECT_EQ(Spans(m, Exclusion::kNone), 1u);
  EXPECT_EQ(m.matched_chunks, 28u);
  EXPECT_EQ(r.considered_chunks, all.considered_chunks);  // short matches are still text
  EXPECT_LT(m.ratio, all.matches[0].ratio);
  EXPECT_TRUE(r.excluded.empty());  // marked on the spans only
}

TEST_F(DetectTest, TextSharedWithATemplateCountsForNoDocument) {
  Build(3, 5);
  // Doc 3, a call for papers; doc 4, an earlier paper that repeats the call's first 60 words.
  const std::string call = Words(9000, 120) + ".";
  Add(3, call);
  Add(4, Words(9000, 60) + " " + Words(3000, 200) + ".");
  // The test repeats those 60 words too, and otherwise says its own things.
  const std::string text = Words(9000, 60) + " " + Words(5000, 200) + ".";
  const Report plain = Check(text);
  EXPECT_TRUE(plain.violation);
  ASSERT_EQ(plain.matches.size(), 2u);

  source_.templates.insert(3);
  const Report r = Check(text);
  EXPECT_FALSE(r.violation);
  ASSERT_EQ(r.matches.size(), 2u);
  // The earlier paper first, its passage excluded as the template's; the template last.
  EXPECT_EQ(r.matches[0].doc_id, 4u);
  EXPECT_DOUBLE_EQ(r.matches[0].ratio, 0);
  EXPECT_EQ(Spans(r.matches[0], Exclusion::kTemplate), 1u);
  EXPECT_EQ(r.matches[1].doc_id, 3u);
  EXPECT_TRUE(r.matches[1].template_source);
  EXPECT_FALSE(r.matches[1].violation);
  EXPECT_GT(r.matches[1].ratio, 0.2);  // its share is shown
  EXPECT_EQ(Spans(r.matches[1], Exclusion::kTemplate), 1u);
  ASSERT_EQ(r.excluded.size(), 1u);
  EXPECT_EQ(r.excluded[0].reason, Exclusion::kTemplate);
  EXPECT_EQ(r.excluded[0].start, 0u);
  EXPECT_EQ(text.substr(r.excluded[0].start, r.excluded[0].end - r.excluded[0].start),
            Words(9000, 60));
  EXPECT_EQ(r.considered_chunks, plain.considered_chunks - 60);
}

TEST_F(DetectTest, WithoutVerificationExcludedChunksAreNotLookedUp) {
  Build(/*verify_k=*/0, /*k=*/5);
  const std::string text = Words(5000, 100) + " \"" + Words(0, 60) + "\" " + Words(6000, 100) + ".";
  const Report plain = Check(text);
  ASSERT_EQ(plain.matches.size(), 1u);
  const Report r = Check(text, {}, FindExclusions(text, {.quotes = true}));
  EXPECT_TRUE(r.matches.empty());
  EXPECT_FALSE(r.violation);
  EXPECT_LT(r.considered_chunks, plain.considered_chunks);
  EXPECT_EQ(r.excluded.size(), 1u);
  // A template document is marked and never a violation.
  source_.templates.insert(1);
  const Report t = Check(text);
  ASSERT_EQ(t.matches.size(), 1u);
  EXPECT_TRUE(t.matches[0].template_source);
  EXPECT_FALSE(t.violation);
  for (const Span& s : t.matches[0].spans) EXPECT_EQ(s.excluded, Exclusion::kTemplate);
}

TEST_F(DetectTest, AShortExactCopyLooksUpItsSelectionAndThePassageEdgesOnly) {
  Build(3, 5);
  std::pair<size_t, size_t> looked_up;
  const auto [two_phases, at_once] = CheckBothWays(Source(), &looked_up);
  ASSERT_EQ(two_phases.matches.size(), 1u);
  EXPECT_DOUBLE_EQ(two_phases.matches[0].ratio, 1.0);
  ExpectSameMatches(two_phases, at_once);
  EXPECT_EQ(looked_up.second, 196u);  // every 5-word chunk of 200 words
  // The winnowed selection (about 2 / (w + 1) of the chunks) and the chunks within k units
  // of the passage's ends.
  EXPECT_LT(looked_up.first, 196u * 2 / 5);
  EXPECT_EQ(two_phases.selected_chunks, looked_up.first);
}

TEST_F(DetectTest, AShortTextCopyingTwoSourcesFindsBothAndTheirSpans) {
  Build(3, 5);
  // Half of document 1, then half of document 2, then unrelated words.
  const std::string text = Words(0, 100) + " " + Words(1100, 80) + " " + Words(7000, 40) + ".";
  std::pair<size_t, size_t> looked_up;
  const auto [two_phases, at_once] = CheckBothWays(text, &looked_up);
  ASSERT_EQ(two_phases.matches.size(), 2u);
  ExpectSameMatches(two_phases, at_once);
  EXPECT_LT(looked_up.first, looked_up.second);
}

// Verification grams are 16-bit hashes: a gram of the new text around a copied paragraph
// equals one of the source's by chance now and then, and one a few grams from the
// paragraph, in step with it in the source, was chained into its passage: the span reached
// into the new text (under 4 keys of these 2,000; seen in a fresh chroot, where copsd drew
// a random key). Spans stay on the paragraph, in both documents, under every key.
TEST_F(DetectTest, ACopiedParagraphsSpanStaysOnItUnderEveryKey) {
  const auto& corpus = testing_corpus::Corpus();
  const std::string source = corpus[2].body;
  const std::string test = testing_corpus::ParagraphInsideNewText(source);
  const size_t from = source.find("\n\n") + 2;
  const std::string paragraph = source.substr(from, source.find("\n\n", from) - from);
  const size_t at = test.find(paragraph);
  ASSERT_NE(at, std::string::npos);
  for (int seed = 0; seed < 2000; ++seed) {
    SCOPED_TRACE("key " + std::to_string(seed));
    Build(3, 5, 0, SeededKey(seed));
    for (DocId i = 0; i < corpus.size(); ++i) Add(10 + i, corpus[i].body);
    const Report r = Check(test);
    ASSERT_EQ(r.matches.size(), 1u);
    ASSERT_EQ(r.matches[0].doc_id, 12u);
    ASSERT_FALSE(r.matches[0].spans.empty());
    for (const Span& s : r.matches[0].spans) {
      ASSERT_GE(s.test_start + 2, at);
      ASSERT_LE(s.test_end, at + paragraph.size() + 2);
      ASSERT_TRUE(s.has_registered);
      ASSERT_GE(s.registered_start + 2, from);
      ASSERT_LE(s.registered_end, from + paragraph.size() + 2);
    }
  }
}

TEST_F(DetectTest, ARevisedShortCopyIsVerifiedAsWhenEveryChunkIsLookedUp) {
  // Revisions break the passage's chunks: the second lookup finds what the first missed.
  Build(/*verify_k=*/3, /*k=*/3);
  Add(3, Revised() + " " + Words(9000, 50));
  std::pair<size_t, size_t> looked_up;
  const auto [two_phases, at_once] = CheckBothWays(Revised(), &looked_up);
  ASSERT_GE(two_phases.matches.size(), 2u);
  ExpectSameMatches(two_phases, at_once);
}

// The text of a file Debian ships, or "" when it is missing.
std::string ReadShipped(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return in ? s.str() : std::string();
}

// Why a short test looks up every chunk outside its verified passages, however long a passage
// must be to count: the winnowing guarantee covers runs of w + k - 1 = 12 shared words, but a
// passage counts from min_passage_units (8) words of matched grams, gaps left out, so it may
// hold no shared chunk at all; the one chunk a source shares can then lie outside the test's
// selection and outside every passage that counts, and still be the only way to the source.
TEST_F(DetectTest, TheOnlyChunkLeadingToAReportedSourceMayLieOutsideItsPassages) {
  Build(3, 5);
  // Three shared 3-word runs, one own word apart: a 9-word passage without a shared chunk.
  auto gapped = [](const std::string& a, const std::string& b) {
    return Words(400, 3) + " " + a + " " + Words(403, 3) + " " + b + " " + Words(406, 3);
  };
  // 5 shared words far before it: one shared chunk, a 5-word passage that does not count;
  // chosen so that the test does not select that chunk.
  std::string link, text;
  bool link_selected = true;
  for (int seed = 0; seed < 100 && link_selected; ++seed) {
    link = Words(300 + 10 * seed, 5);
    text = Words(40000, 30) + " " + link + " " + Words(40100, 30) + " " +
           gapped("w40200", "w40201") + " " + Words(40300, 30) + ".";
    DocumentFingerprint fp;
    ASSERT_OK(fingerprinter_->Fingerprint(text, &fp, CheckFingerprintOptions(params_)));
    link_selected = std::any_of(fp.selection.begin(), fp.selection.end(),
                                [&fp](uint32_t i) { return fp.chunks[i].unit_begin == 30; });
  }
  ASSERT_FALSE(link_selected);
  Add(3, Words(30000, 30) + " " + link + " " + Words(30100, 30) + " " +
             gapped("w30200", "w30201") + " " + Words(30300, 30) + ".");
  std::pair<size_t, size_t> looked_up;
  const auto [two_phases, at_once] = CheckBothWays(text, &looked_up);
  ExpectSameMatches(two_phases, at_once);
  ASSERT_EQ(two_phases.matches.size(), 1u);
  const DocumentMatch& m = two_phases.matches[0];
  EXPECT_EQ(m.doc_id, 3u);
  ASSERT_EQ(m.spans.size(), 1u);  // the gapped passage; the linking chunk's 5 words do not count
  EXPECT_EQ(m.spans[0].units, 11u);  // 9 shared words and the 2 edited between them
  EXPECT_GT(m.spans[0].test_start, text.find(link) + link.size());
  // Without the linking chunk the source is not found at all.
  std::string unlinked = text;
  unlinked.replace(unlinked.find(link), link.size(), Words(60000, 5));
  EXPECT_TRUE(Check(unlinked).matches.empty());
}

TEST_F(DetectTest, ALicenceIsNoCopyOfAnotherLicence) {
  // Apache 2.0 and GPL 3 share only legal stock phrases ("the terms and conditions",
  // "including but not limited to", "conditions of this License"), each a few words long.
  const std::string gpl = ReadShipped("/usr/share/common-licenses/GPL-3");
  const std::string apache = ReadShipped("/usr/share/common-licenses/Apache-2.0");
  if (gpl.empty() || apache.empty()) {
    GTEST_SKIP() << "needs /usr/share/common-licenses/{GPL-3,Apache-2.0} (Debian base-files)";
  }
  Build(3, 5);
  Add(3, gpl);
  const Report r = Check(apache);
  EXPECT_FALSE(r.violation);
  for (const DocumentMatch& m : r.matches) {
    EXPECT_LT(m.ratio, 0.04) << "document " << m.doc_id;
    for (const Span& span : m.spans) EXPECT_GE(span.units, 8u);
  }
}

TEST_F(DetectTest, AShortTextSharingOneStockPhraseIsNoViolation) {
  Build(3, 5);
  Add(3, "My landlord keeps raising the rent every spring and I'm not going to pay it again "
         "without a fight.");
  // 17 words, of which "and I'm not going to" (6 units: "i" "m") is shared.
  const Report r = Check("The committee asked twice for a new logo and I'm not going to draw "
                         "one for free.");
  EXPECT_FALSE(r.violation);
  EXPECT_TRUE(r.matches.empty());
}

// 15 words that phrases common in the language cover (core/stock_phrases.txt: "on the other
// hand", "it is important to", "important to note that", "at the end of", "the end of the").
constexpr char kStockPassage[] = "on the other hand it is important to note that at the end of the";

TEST_F(DetectTest, CheckFingerprintsMarkTheUnitsOfShortLines) {
  Build(3, 5);
  DocumentFingerprint fp;
  // A heading (1 word), a paragraph (8), two labels (2 and 5 words) and a 6-word line; the
  // labels' runs join.
  FingerprintOptions options = CheckFingerprintOptions(params_);
  options.short_lines = true;
  const std::string text =
      "## Usage\n\n" + Words(0, 8) + "\n**Via CLI**\n" + Words(20, 5) + "\n" + Words(40, 6) + "\n";
  ASSERT_OK(fingerprinter_->Fingerprint(text, &fp, options));
  ASSERT_EQ(fp.units.size(), 22u);
  EXPECT_EQ(fp.short_lines, (std::vector<UnitRun>{{0, 1}, {9, 16}}));
  // One line of prose: none. A check that does not ask (the server's) and a registration do
  // not make them.
  ASSERT_OK(fingerprinter_->Fingerprint(Words(0, 30), &fp, options));
  EXPECT_TRUE(fp.short_lines.empty());
  ASSERT_OK(fingerprinter_->Fingerprint(text, &fp, CheckFingerprintOptions(params_)));
  EXPECT_TRUE(fp.short_lines.empty());
  ASSERT_OK(fingerprinter_->Fingerprint(text, &fp, RegisterFingerprintOptions(params_)));
  EXPECT_TRUE(fp.short_lines.empty());
}

TEST_F(DetectTest, CheckFingerprintsMarkTheRunsThatStockPhrasesCover) {
  Build(3, 5);
  DocumentFingerprint fp;
  ASSERT_OK(fingerprinter_->Fingerprint(Words(0, 20) + " " + kStockPassage + " " + Words(50, 20),
                                        &fp, CheckFingerprintOptions(params_)));
  EXPECT_EQ(fp.stock_runs, (std::vector<UnitRun>{{20, 35}}));
  // Phrases are the list's words in order: the same words shuffled are no phrase.
  ASSERT_OK(fingerprinter_->Fingerprint("hand other the on that note to important is it",
                                        &fp, CheckFingerprintOptions(params_)));
  EXPECT_TRUE(fp.stock_runs.empty());
  // A registration does not need them.
  ASSERT_OK(fingerprinter_->Fingerprint(kStockPassage, &fp, RegisterFingerprintOptions(params_)));
  EXPECT_TRUE(fp.stock_runs.empty());
  // Every line of the list is a phrase of kStockPhraseWords words.
  size_t lines = 0;
  std::istringstream text{std::string(StockPhrasesText())};
  for (std::string line; std::getline(text, line);) lines += !line.empty() && line[0] != '#';
  EXPECT_GT(lines, 1000u);
  EXPECT_EQ(CanonicalStockPhrases(params_.normalization_version).size(), lines);
}

TEST_F(DetectTest, APassageMadeOnlyOfPhrasesCommonInTheLanguageDoesNotCount) {
  Build(3, 5);
  // One registered document holds the passage amid its own words; no other holds it, so it is
  // not the corpus's common text, but it is the language's.
  Add(10, Words(10000, 60) + " " + kStockPassage + " " + Words(10100, 60) + ".");
  const Report r = Check(Words(20000, 60) + " " + kStockPassage + " " + Words(20100, 60) + ".");
  EXPECT_FALSE(r.violation);
  ASSERT_EQ(r.matches.size(), 1u);
  EXPECT_EQ(r.matches[0].doc_id, 10u);
  EXPECT_EQ(r.matches[0].matched_chunks, 0u);
  ASSERT_EQ(r.matches[0].spans.size(), 1u);
  EXPECT_EQ(r.matches[0].spans[0].excluded, Exclusion::kCommonPhrase);
  EXPECT_EQ(r.matches[0].spans[0].units, 15u);
  // The same passage with two words of the document's own around it is its text, not the
  // language's: it counts (and 19 of 136 words make a violation).
  const Report own = Check(Words(20000, 60) + " w10058 w10059 " + kStockPassage + " w10100 w10101 " +
                           Words(20100, 60) + ".");
  EXPECT_TRUE(own.violation);
  ASSERT_EQ(own.matches.size(), 1u);
  ASSERT_EQ(own.matches[0].spans.size(), 1u);
  EXPECT_EQ(own.matches[0].spans[0].excluded, Exclusion::kNone);
  EXPECT_EQ(own.matches[0].spans[0].units, 19u);
}

TEST_F(DetectTest, APassageCountsAndShowsFromMinPassageUnitsWords) {
  Build(3, 5);
  // One 6-word and one 7-word run of document 1, and one 8-word run, in 200 own words.
  const std::string text = Words(5000, 50) + " " + Words(100, 6) + " " + Words(6000, 50) + " " +
                           Words(150, 7) + " " + Words(7000, 50) + " " + Words(0, 8) + " " +
                           Words(8000, 50) + ".";
  const Report r = Check(text);
  ASSERT_EQ(r.matches.size(), 1u);
  const DocumentMatch& m = r.matches[0];
  ASSERT_EQ(m.spans.size(), 1u);  // the 8-word run only
  EXPECT_EQ(m.spans[0].units, 8u);
  EXPECT_EQ(m.matched_chunks, 6u);  // its 3-word grams; the shorter runs count for nothing
  EXPECT_FALSE(m.violation);        // 6 of 219 grams

  // The threshold is the caller's: with min_passage_units 6 all three runs show and count.
  CheckOptions o;
  o.min_passage_units = 6;
  const Report six = Check(text, o);
  ASSERT_EQ(six.matches.size(), 1u);
  EXPECT_EQ(six.matches[0].spans.size(), 3u);
  EXPECT_EQ(six.matches[0].matched_chunks, 4u + 5 + 6);
}

TEST_F(DetectTest, AShortTextNeedsMinViolationUnitsMatchedWordsWhateverItsRatio) {
  Build(3, 5);
  // 50 words sharing one 10-word run of document 1: a ratio far above the threshold, from
  // one short passage (a template's headings, a genre's stock sentence).
  const std::string ten = Words(5000, 30) + " " + Words(0, 10) + " " + Words(6000, 10) + ".";
  const Report r = Check(ten);
  ASSERT_EQ(r.matches.size(), 1u);  // still reported: it shares an 8-word passage
  EXPECT_EQ(r.matches[0].spans.size(), 1u);
  EXPECT_GT(r.matches[0].ratio, CheckOptions{}.threshold);
  EXPECT_FALSE(r.matches[0].violation);
  EXPECT_FALSE(r.violation);

  // 12 matched words make it one, as does a caller's 0 with the 10.
  const Report twelve = Check(Words(5000, 30) + " " + Words(0, 12) + " " + Words(6000, 10) + ".");
  ASSERT_EQ(twelve.matches.size(), 1u);
  EXPECT_TRUE(twelve.matches[0].violation);
  CheckOptions any;
  any.min_violation_units = 0;
  EXPECT_TRUE(Check(ten, any).violation);
}

// A heavy rewrite of Source(2000): its words 0-4, then 19 of its 3-word runs (words 10j to
// 10j + 2), each followed by 13 new words (from `filler` on), so that no two matched grams
// chain into a passage (their gap is wider than VerifyOptions::max_gap_grams) and no
// passage of 8 words is left; `reversed` puts the 19 runs in the opposite order.
// With `headings`, each run is a line of its own (a template's headings and labels).
std::string Rewrite(bool reversed, int filler = 30000, bool headings = false) {
  std::vector<std::string> runs;
  for (int j = 1; j < 20; ++j) runs.push_back(Words(2000 + 10 * j, 3));
  if (reversed) std::reverse(runs.begin(), runs.end());
  const std::string around = headings ? "\n" : " ";
  std::string s = Words(2000, 5) + " " + Words(filler, 13);
  for (size_t j = 0; j < runs.size(); ++j) {
    s += around + runs[j] + around + Words(filler + 20 * static_cast<int>(j + 1), 13);
  }
  return s + ".";
}

TEST_F(DetectTest, RevisionShareFindsAHeavyRewriteByItsGramsInTheSourcesOrder) {
  Build(3, 5);
  Add(5, Source(2000));
  CheckOptions on;
  on.revision_share = 0.06;
  // 22 of the rewrite's 320 grams, in order: 6.9% of its grams, 11% of the source's.
  const Report r = Check(Rewrite(false), on);
  ASSERT_FALSE(r.matches.empty());
  const DocumentMatch& m = r.matches[0];
  EXPECT_EQ(m.doc_id, 5u);
  EXPECT_TRUE(r.violation);
  EXPECT_TRUE(m.revision_violation);
  EXPECT_FALSE(m.chunk_violation);  // the report says which evidence decided
  EXPECT_GE(m.revision_grams, 22u);
  EXPECT_LT(m.ratio, on.threshold);  // no passage counts
  // The report shows the chain: its runs, in test order, each the same words in both texts
  // (registered unit u is word w(2000 + u)).
  const std::string test = Rewrite(false);
  std::vector<const Span*> runs;
  for (const Span& span : m.spans) {
    if (span.revision_run) runs.push_back(&span);
  }
  ASSERT_GE(runs.size(), 19u);
  for (size_t j = 0; j < runs.size(); ++j) {
    const Span& run = *runs[j];
    if (j > 0) {
      EXPECT_GT(run.test_start, runs[j - 1]->test_start);
    }
    EXPECT_EQ(run.chunks, 0u);
    EXPECT_EQ(run.excluded, Exclusion::kNone);
    ASSERT_EQ(run.registered_unit_end - run.registered_unit_begin, run.units);
    EXPECT_EQ(
        test.substr(run.test_start, run.test_end - run.test_start),
        Words(2000 + static_cast<int>(run.registered_unit_begin), static_cast<int>(run.units)));
  }
  CheckOptions no_spans = on;
  no_spans.want_spans = false;
  const Report bare = Check(Rewrite(false), no_spans);
  ASSERT_FALSE(bare.matches.empty());
  EXPECT_TRUE(bare.matches[0].revision_violation);
  EXPECT_TRUE(bare.matches[0].spans.empty());
  // Off in core's own defaults (copsd's checks ask for it unless told not to).
  EXPECT_FALSE(Check(Rewrite(false)).violation);
  // The same runs out of the source's order: a text on the same subject.
  const Report reversed = Check(Rewrite(true), on);
  EXPECT_FALSE(reversed.violation);
  for (const DocumentMatch& x : reversed.matches) EXPECT_LT(x.revision_grams, 22u);
  // The same runs as headings: a document kind's skeleton, no evidence of a revision.
  EXPECT_FALSE(Check(Rewrite(false, 30000, true), on).violation);
  // A report cut at max_results keeps the violation: a document sharing 10 words of the
  // rewrite's own (a passage, no violation) has the higher ratio.
  Add(7, Words(70000, 20) + " " + Words(30000, 10) + " " + Words(71000, 20) + ".");
  on.max_results = 1;
  const Report cut = Check(Rewrite(false), on);
  ASSERT_EQ(cut.matches.size(), 1u);
  EXPECT_EQ(cut.matches[0].doc_id, 5u);
  EXPECT_TRUE(cut.matches[0].violation);
  on.max_results = 0;
  const Report all = Check(Rewrite(false), on);
  ASSERT_EQ(all.matches.size(), 2u);
  EXPECT_EQ(all.matches[0].doc_id, 7u);  // by ratio, uncut
  EXPECT_FALSE(all.matches[0].violation);
}

// A heavy revision's runs are matches too: where a check says that matches shorter than 4
// words do not count (min_match_units), or that a violation needs more matched words than the
// chain's runs hold (min_violation_units), the rewrite is no violation.
TEST_F(DetectTest, RevisionShareKeepsTheChecksMatchLimits) {
  Build(3, 5);
  Add(5, Source(2000));
  CheckOptions on;
  on.revision_share = 0.06;
  ASSERT_TRUE(Check(Rewrite(false), on).violation);
  CheckOptions longer_matches = on;
  longer_matches.min_match_units = 4;
  EXPECT_FALSE(Check(Rewrite(false), longer_matches).violation);
  longer_matches.min_match_units = 3;  // a run's 3 words are long enough
  EXPECT_TRUE(Check(Rewrite(false), longer_matches).violation);
  // 19 runs of 3 words and the first 5 words: 62 words matched in the chain.
  CheckOptions more_words = on;
  more_words.min_violation_units = 63;
  const Report r = Check(Rewrite(false), more_words);
  EXPECT_FALSE(r.violation);
  for (const DocumentMatch& m : r.matches) EXPECT_FALSE(m.revision_violation);
  more_words.min_violation_units = 62;
  EXPECT_TRUE(Check(Rewrite(false), more_words).violation);
}

// A rewrite revises a whole text: the chain must reach across 35% of each text's grams
// (CheckOptions::revision_spread). Here the rewrite is the first part of a test that goes on
// with twice as many words of its own (a shared section, as a template's installation steps
// are), so its chain reaches under a third of the test's grams.
TEST_F(DetectTest, RevisionShareWantsTheChainToReachAcrossBothTexts) {
  Build(3, 5);
  Add(5, Source(2000));
  const std::string test = Rewrite(false) + " " + Words(85000, 700) + ".";
  CheckOptions on;
  on.revision_share = 0.02;  // 22 chained grams: 2.2% of the test's 1,020, 11% of the source's
  EXPECT_FALSE(Check(test, on).violation);
  // The chain is there, in one part of the test.
  on.revision_spread = 0;
  const Report anywhere = Check(test, on);
  ASSERT_EQ(anywhere.matches.size(), 1u);
  EXPECT_TRUE(anywhere.matches[0].revision_violation);
  EXPECT_GE(anywhere.matches[0].revision_grams, 22u);
  // The rewrite alone reaches across itself: a revision.
  on.revision_spread = CheckOptions{}.revision_spread;
  EXPECT_TRUE(Check(Rewrite(false), on).violation);
}

// Two texts that share a passage in one place of each, too little of them to count
// (CheckOptions::threshold), and one 3-gram near each of their ends: the chain of shared grams
// runs from the first stray gram to the last, across both texts, while the passage alone
// reaches a twentieth of each. The reach leaves out the chain's first and last tenth
// (CheckOptions::revision_trim), so a quoted paragraph and two stray grams are no revision.
TEST_F(DetectTest, RevisionShareIsNotSpreadByAStrayGramNearEachEnd) {
  Build(3, 5);
  const std::string head = Words(60000, 3), tail = Words(60100, 3);
  Add(5, head + ". " + Words(61000, 400) + ". " + Source(2000) + " " + Words(62000, 400) + ". " +
             tail + ".");
  const std::string test = head + ". " + Words(63000, 400) + ". " + Words(2050, 40) + ". " +
                           Words(64000, 400) + ". " + tail + ".";
  CheckOptions on;
  on.revision_share = 0.02;  // 40 chained grams: 3.6% of the test's, 4% of the source's
  const Report trimmed = Check(test, on);
  ASSERT_EQ(trimmed.matches.size(), 1u);
  EXPECT_FALSE(trimmed.violation);
  EXPECT_FALSE(trimmed.matches[0].revision_violation);
  EXPECT_GE(trimmed.matches[0].revision_grams, 40u);
  EXPECT_LT(trimmed.matches[0].ratio, on.threshold);
  // Measured from the first gram to the last, the strays make it reach across both texts.
  on.revision_trim = 0;
  on.revision_spread = 0.5;
  const Report untrimmed = Check(test, on);
  ASSERT_EQ(untrimmed.matches.size(), 1u);
  EXPECT_TRUE(untrimmed.matches[0].revision_violation);
}

// A line two texts repeat (a changelog maintainer's sign-off under every entry) chains with
// itself from entry to entry, in order, through both texts: a test gram that occurs more than
// once in the test is no evidence of a revision.
TEST_F(DetectTest, RevisionShareDoesNotChainALineTheTestRepeats) {
  // Ten entries, each its own 20 words, then the sign-off: the maintainer's 5 words and a date
  // of 4 words that differs from entry to entry and between the texts.
  const auto changelog = [](int own, int dates) {
    std::string s;
    for (int e = 0; e < 10; ++e) {
      s += "* " + Words(own + 30 * e, 20) + ".\n -- " + Words(7000, 5) + " " +
           Words(dates + 10 * e, 4) + "\n\n";
    }
    return s;
  };
  Build(3, 5);
  Add(5, changelog(40000, 50000));
  CheckOptions on;
  on.revision_share = kHeavyRevisionShare;
  const Report r = Check(changelog(60000, 70000), on);
  EXPECT_FALSE(r.violation);
  for (const DocumentMatch& m : r.matches) {
    EXPECT_FALSE(m.revision_violation);
    EXPECT_EQ(m.revision_grams, 0u);
  }
}

// A heavy rewrite of a text registered twice (two collections) is found against both: the
// grams that two candidates hold are one text's, not a genre's shared text.
TEST_F(DetectTest, RevisionShareFindsAHeavyRewriteOfATextRegisteredTwice) {
  Build(3, 5);
  Add(5, Source(2000));
  Add(6, Source(2000));
  CheckOptions on;
  on.revision_share = 0.06;
  const Report r = Check(Rewrite(false), on);
  EXPECT_TRUE(r.violation);
  std::vector<DocId> revised;
  for (const DocumentMatch& m : r.matches) {
    if (m.revision_violation) revised.push_back(m.doc_id);
  }
  std::sort(revised.begin(), revised.end());
  EXPECT_EQ(revised, (std::vector<DocId>{5, 6}));
}

TEST_F(DetectTest, RevisionShareCountsOnlyGramsNoOtherCandidateHolds) {
  Build(3, 5);
  Add(5, Source(2000));
  CheckOptions on;
  on.revision_share = 0.06;
  // A registered rewrite of the same source words (its own filler): each run of the test is
  // held by two candidates, a genre's shared text, and counts for neither.
  Add(6, Rewrite(false, 60000));
  DocumentFingerprint fp;
  FingerprintOptions options = CheckFingerprintOptions(params_);
  options.short_lines = true;
  ASSERT_OK(fingerprinter_->Fingerprint(Rewrite(false), &fp, options));
  DetectOptions o;
  o.check = on;
  std::vector<DocId> candidates;
  o.candidates_out = &candidates;
  const absl::StatusOr<Report> r = Detect(fp, params_, source_, o);
  ASSERT_OK(r);
  // Both were verified, and neither is a revision.
  EXPECT_NE(std::find(candidates.begin(), candidates.end(), 5u), candidates.end());
  EXPECT_NE(std::find(candidates.begin(), candidates.end(), 6u), candidates.end());
  EXPECT_FALSE(r->violation);
  for (const DocumentMatch& m : r->matches) {
    EXPECT_FALSE(m.revision_violation);
    EXPECT_LT(m.revision_grams, 6u);
  }
}

TEST_F(DetectTest, BoilerplateThatManyDocumentsHoldIsReportedAsCommonAndDoesNotCount) {
  Build(3, 5);
  // Twelve registered notices, each its own 60 words around the same 30-word disclaimer.
  const std::string disclaimer = Words(9000, 30);
  for (DocId id = 10; id < 22; ++id) {
    Add(id, Words(10000 + 100 * static_cast<int>(id), 60) + " " + disclaimer + ".");
  }
  // A new notice: its own 60 words and the disclaimer (30 of its 88 grams).
  const std::string notice = Words(20000, 60) + " " + disclaimer + ".";
  const Report r = Check(notice);
  EXPECT_FALSE(r.violation);
  ASSERT_FALSE(r.matches.empty());
  for (const DocumentMatch& m : r.matches) {
    EXPECT_EQ(m.matched_chunks, 0u);
    ASSERT_EQ(m.spans.size(), 1u);
    EXPECT_EQ(m.spans[0].excluded, Exclusion::kCommonPhrase);
  }
  // Off, the disclaimer counts against every notice.
  CheckOptions off;
  off.common_phrase_documents = 0;
  EXPECT_TRUE(Check(notice, off).violation);
  // A notice that also copies 20 words of notice 10 next to the disclaimer is a copy of it:
  // the passage holds chunks that only notice 10 holds.
  const std::string copy = Words(20000, 60) + " " + Words(11000 + 40, 20) + " " + disclaimer + ".";
  const Report c = Check(copy);
  EXPECT_TRUE(c.violation);
  ASSERT_FALSE(c.matches.empty());
  EXPECT_EQ(c.matches[0].doc_id, 10u);
  EXPECT_EQ(c.matches[0].spans[0].excluded, Exclusion::kNone);
}

// A notice registered twice (the same text in two collections) is one holder of its own
// words: 11 of them next to a disclaimer that many notices hold are its own text (a quarter
// of the passage) for both copies, as for a notice registered once. Before, their chunks were
// held by 2 documents, nobody's own, and the copy counted for neither.
TEST_F(DetectTest, OwnTextOfATextRegisteredTwiceCountsNextToCommonText) {
  const std::string disclaimer = Words(9000, 30);
  const std::string copy = Words(20000, 60) + " " + Words(11049, 11) + " " + disclaimer + ".";
  for (int seed = 0; seed < 16; ++seed) {
    SCOPED_TRACE("key " + std::to_string(seed));
    Build(3, 5, 0, SeededKey(seed));
    for (DocId id = 10; id < 22; ++id) {
      Add(id, Words(10000 + 100 * static_cast<int>(id), 60) + " " + disclaimer + ".");
    }
    const auto violating = [&] {
      std::vector<DocId> ids;
      for (const DocumentMatch& m : Check(copy).matches) {
        if (m.violation) ids.push_back(m.doc_id);
      }
      std::sort(ids.begin(), ids.end());
      return ids;
    };
    EXPECT_EQ(violating(), (std::vector<DocId>{10}));
    Add(40, Words(11000, 60) + " " + disclaimer + ".");  // notice 10 again
    EXPECT_EQ(violating(), (std::vector<DocId>{10, 40}));
  }
}

// A variant of the boilerplate that a few registered documents hold (one word changed: a
// licence's year or holder) is still the boilerplate: the chunks around the changed word are
// rare, but they span fewer words than winnowing needs to guarantee that every holder of a
// text stores one of its chunks (w + k - 1 = 12), so they cannot show that the passage is
// not common text. Before, any one rare chunk made the passage count.
TEST_F(DetectTest, ABoilerplateVariantThatFewDocumentsHoldIsStillCommonText) {
  Build(3, 5);
  const std::string head = Words(9000, 15), tail = Words(9016, 14);
  for (DocId id = 10; id < 22; ++id) {
    Add(id, Words(10000 + 100 * static_cast<int>(id), 60) + " " + head + " w9015 " + tail + ".");
  }
  for (DocId id = 30; id < 33; ++id) {  // the variant: w9500 for w9015
    Add(id, Words(10000 + 100 * static_cast<int>(id), 60) + " " + head + " w9500 " + tail + ".");
  }
  const Report r = Check(Words(20000, 60) + " " + head + " w9500 " + tail + ".");
  EXPECT_FALSE(r.violation);
  ASSERT_FALSE(r.matches.empty());
  for (const DocumentMatch& m : r.matches) {
    EXPECT_EQ(m.matched_chunks, 0u) << "document " << m.doc_id;
    ASSERT_EQ(m.spans.size(), 1u);
    EXPECT_EQ(m.spans[0].excluded, Exclusion::kCommonPhrase);
  }
  // A rare run as long as that is the document's own text: 12 words of variant 30, next to
  // the boilerplate, count against it.
  const Report c = Check(Words(20000, 60) + " " + Words(13000 + 48, 12) + " " + head + " w9500 " +
                         tail + ".");
  ASSERT_FALSE(c.matches.empty());
  EXPECT_TRUE(c.violation);
  EXPECT_EQ(c.matches[0].doc_id, 30u);
  EXPECT_EQ(c.matches[0].spans[0].excluded, Exclusion::kNone);
}

// Documents made from one template: a copy of one of them is a copy of it, although its
// other holders share every sentence's fixed words. With common text from 3 documents (the
// default) and the rare-run rule alone, the passage was common text under some keys (8 of 64)
// and the copy no violation: its own words (the document number) recur every 9 words, so
// where winnowing picks the shared chunks no 12 words of them are free of a common one (found
// by deploy.backup in a fresh chroot). Its own text shows in what only the copied document
// holds. The chunks looked up are winnowing's selection, in which the template's two chunks
// that repeat in every sentence with one hash are the windows' minima nearly everywhere under
// about 1% of keys: then the copy's own chunks are hardly looked up (and, at 60 sentences,
// hardly stored), and the copy was common text, no violation (the chunks alone: 6 of these
// 400 keys at 40 sentences, 6 at 60; deploy.backup once more in a fresh chroot). Its grams,
// every 3-gram, show its own words whatever the selection. At 40 sentences the documents
// keep every chunk; at 60, they are winnowed.
TEST_F(DetectTest, ACopyOfOneOfThreeDocumentsOfATemplateIsACopyOfItUnderEveryKey) {
  const auto document = [](int i, int sentences) {
    std::string text;
    for (int j = 0; j < sentences; ++j) {
      text += "document " + std::to_string(i) + " sentence " + std::to_string(j) +
              " says something of its own. ";
    }
    return text;
  };
  for (const int sentences : {40, 60}) {
    for (int seed = 0; seed < 400; ++seed) {
      SCOPED_TRACE(std::to_string(sentences) + " sentences, key " + std::to_string(seed));
      Build(3, 5, 0, SeededKey(seed));
      for (DocId id = 1; id < 4; ++id) Add(id, document(static_cast<int>(id) - 1, sentences));
      const Report r = Check(document(0, sentences));
      EXPECT_TRUE(r.violation);
      ASSERT_FALSE(r.matches.empty());
      EXPECT_EQ(r.matches[0].doc_id, 1u);
      ASSERT_FALSE(r.matches[0].spans.empty());
      EXPECT_EQ(r.matches[0].spans[0].excluded, Exclusion::kNone);
    }
  }
}

// One text registered three times (in two collections with the same words, and once more
// under a header line of its own: the same article in a journal and in a repository) is not
// the corpus's common text: a copy of it is a violation against each. Before, its passages
// were held by 3 documents (CheckOptions::common_phrase_documents) and none had text of its
// own, so the copy counted for nothing under every key. Three documents of three texts still
// make the passage common (the licence and template tests here).
TEST_F(DetectTest, ATextRegisteredThreeTimesIsStillCopiedFromUnderEveryKey) {
  const std::string article = Words(7000, 300);
  const std::string copy = Words(90000, 40) + " " + Words(7100, 120) + " " + Words(91000, 40);
  for (int seed = 0; seed < 16; ++seed) {
    SCOPED_TRACE("key " + std::to_string(seed));
    Build(3, 5, 0, SeededKey(seed));
    Add(1, article);
    Add(2, article);  // the same text: another document
    Add(3, "Accepted manuscript, repository copy. " + article);
    Add(4, Words(20000, 300));  // unrelated
    const Report r = Check(copy);
    EXPECT_TRUE(r.violation);
    std::vector<DocId> violating;
    for (const DocumentMatch& m : r.matches) {
      if (!m.violation) continue;
      violating.push_back(m.doc_id);
      ASSERT_FALSE(m.spans.empty());
      EXPECT_EQ(m.spans[0].excluded, Exclusion::kNone) << "document " << m.doc_id;
    }
    std::sort(violating.begin(), violating.end());
    EXPECT_EQ(violating, (std::vector<DocId>{1, 2, 3}));
    // A fourth document holding the passage, another text, makes it common.
    Add(5, "A review quotes it. " + Words(7100, 120) + " " + Words(30000, 100));
    EXPECT_FALSE(Check(copy).violation);
  }
}

// The Expat licence as a copyright file carries it: `head`, the holder's line, the licence.
std::string ExpatFile(const std::string& head, const std::string& holder) {
  return head + " Copyright (c) " + holder +
         ". Permission is hereby granted, free of charge, to any person obtaining a copy of this "
         "software and associated documentation files (the \"Software\"), to deal in the "
         "Software without restriction, including without limitation the rights to use, copy, "
         "modify, merge, publish, distribute, sublicense, and/or sell copies of the Software, "
         "and to permit persons to whom the Software is furnished to do so, subject to the "
         "following conditions: The above copyright notice and this permission notice shall be "
         "included in all copies or substantial portions of the Software. THE SOFTWARE IS "
         "PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT "
         "NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND "
         "NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY "
         "CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR "
         "OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR "
         "OTHER DEALINGS IN THE SOFTWARE.";
}

// A licence that a few registered copyright files hold, each under its own holder's line, is
// common text to a further one under the defaults, whichever chunks the key samples: the
// chunks that only one holder holds (its name, and, where winnowing stores a file's chunks,
// the licence's ends) stay far below the share that makes a passage a document's own text.
// Under the former default (10 documents) each file was a violation against all of them.
TEST_F(DetectTest, ALicenceThatThreeToFiveDocumentsHoldIsCommonTextUnderEveryKey) {
  const std::string heads[] = {
      "Files: * Upstream-Name: tinyxml. The parser reads small XML documents into a tree.",
      "Files: src/* Upstream-Name: jsmn. A minimal JSON tokenizer written for embedded code.",
      "Files: * Upstream-Name: inih. Reads INI files with a callback for every key found.",
      "Files: lib/* Upstream-Name: utf8proc. Normalizes and case-folds Unicode strings.",
      "Files: * Upstream-Name: cJSON. An ultralightweight JSON parser in ANSI C.",
  };
  const std::string holders[] = {"2006 Lee Thomason", "2010 Serge Zaitsev", "2009 Ben Hoyt",
                                 "2014 Steven G. Johnson", "2009 Dave Gamble"};
  const std::string test = ExpatFile(
      "Files: * Upstream-Name: zstd-lite. Compresses logs for the Debian archive tools.",
      "2021 Ada Example");
  for (const int own_words : {0, 300}) {  // 300: the registered files are winnowed
    for (int holding = 3; holding <= 5; ++holding) {
      for (int seed = 0; seed < 64; ++seed) {
        SCOPED_TRACE(std::to_string(holding) + " holders with " + std::to_string(own_words) +
                     " more words, key " + std::to_string(seed));
        Build(3, 5, 0, SeededKey(seed));
        for (int i = 0; i < holding; ++i) {
          const std::string more = own_words > 0 ? " " + Words(1000 * (i + 1), own_words) : "";
          Add(10 + i, ExpatFile(heads[i] + more, holders[i]));
        }
        const Report r = Check(test);
        EXPECT_FALSE(r.violation);
        for (const DocumentMatch& m : r.matches) {
          EXPECT_EQ(m.matched_chunks, 0u) << "document " << m.doc_id;
        }
      }
    }
  }
}

// help2man closes a manual page with a paragraph naming the program three times. In a few
// registered pages, each with its own name, the fixed words between the names are common
// text, but winnowing stores their chunks in some holders only (where they are a window's
// minimum), so a chunk inside is seldom held by 3 documents by its postings, rare chunks ran
// 12 words across the test's own name, and chunks that the postings gave to one page alone
// made a fifth of the paragraph that page's own text: a further page was a violation against
// them under 14 to 24 of 64 keys with 4 to 6 holders (cob-config(1) against heaptrack(1) in
// the held-out part of eval/make_same_genre_set.py). The candidates' grams show who holds the paragraph. With 3
// holders, under 1 key in 64 none of one page's stored chunks is looked up: only two are
// known, and two do not make a text common.
std::string Help2manPage(int first_word, int words, const std::string& program) {
  return Words(first_word, words) + ". SEE ALSO The full documentation for " + program +
         " is maintained as a Texinfo manual. If the info and " + program +
         " programs are properly installed at your site, the command info " + program +
         " should give you access to the complete manual.";
}

TEST_F(DetectTest, AHelp2manParagraphWithEachPagesOwnNameIsCommonTextUnderEveryKey) {
  const std::string programs[] = {"heaptrack", "sqlformat", "gawkextlib", "cdparanoia",
                                  "gnutls-cli", "libtool"};
  for (int holding = 4; holding <= 6; ++holding) {
    for (int seed = 0; seed < 64; ++seed) {
      SCOPED_TRACE(std::to_string(holding) + " pages, key " + std::to_string(seed));
      Build(3, 5, 0, SeededKey(seed));
      // 500 words: the registered pages are winnowed.
      for (int i = 0; i < holding; ++i) {
        Add(10 + i, Help2manPage(1000 * (i + 1), 500, programs[i]));
      }
      const Report r = Check(Help2manPage(9000, 120, "cob-config"));
      EXPECT_FALSE(r.violation);
      for (const DocumentMatch& m : r.matches) {
        EXPECT_EQ(m.matched_chunks, 0u) << "document " << m.doc_id;
      }
    }
  }
}

// The GNU all-permissive notice closes many manual pages and copyright files. Held by a few
// registered documents (fewer than the 10 that made text common before), it was counted
// against every one of them: a short manual page of a GNU library was a violation against
// the copyright files of four unrelated packages (eval/make_same_genre_set.py's dev part had
// dozens of such false alarms).
TEST_F(DetectTest, ANoticeThatThreeDocumentsHoldIsCommonText) {
  Build(3, 5);
  CheckOptions three;
  three.common_phrase_documents = 3;
  const std::string notice =
      "Copying and distribution of this file, with or without modification, are permitted in "
      "any medium without royalty provided the copyright notice and this notice are preserved.";
  const std::string own[] = {
      "Files: * Copyright: 1998-2021 Lasse Collin. License: public domain. The xz utilities "
      "compress and decompress files in the xz and lzma formats; the Debian packaging was "
      "written by Jonathan Nieder and later kept up to date by Sebastian Andrzej Siewior.",
      "Files: * Copyright: 2006-2019 The Yaml authors. License: Expat. This package provides a "
      "fast parser and emitter for the YAML serialization format, written in portable C with "
      "no dependency beyond the standard library, and kept small on purpose.",
      "Files: * Copyright: 2010-2022 Thorsten Kukuk. License: LGPL-2.1+. The network services "
      "library offers the public client interface for NIS and NIS+ that used to ship with "
      "the GNU C library before it was split out into a package of its own.",
      "Files: * Copyright: 2003-2020 The SVG renderer developers. License: LGPL-2+. The "
      "library renders scalable vector graphics to Cairo surfaces and is used by desktop "
      "toolkits to draw icons, themes and thumbnails of drawings at any size.",
  };
  for (DocId id = 10; id < 14; ++id) Add(id, own[id - 10] + " " + notice);
  const std::string page =
      "asn1_perror - API function. SYNOPSIS #include <libtasn1.h> void asn1_perror(int error); "
      "ARGUMENTS int error is an error returned by a libtasn1 function. DESCRIPTION Prints a "
      "string to stderr describing an error code. REPORTING BUGS Report bugs to the mailing "
      "list. COPYRIGHT Copyright 2006-2022 Free Software Foundation, Inc. " + notice;
  const Report r = Check(page, three);
  EXPECT_FALSE(r.violation);
  ASSERT_EQ(r.matches.size(), 4u);
  for (const DocumentMatch& m : r.matches) {
    EXPECT_EQ(m.matched_chunks, 0u) << "document " << m.doc_id;
    ASSERT_EQ(m.spans.size(), 1u);
    EXPECT_EQ(m.spans[0].units, 26u);
    EXPECT_EQ(m.spans[0].excluded, Exclusion::kCommonPhrase);
  }
  // Text that only one of them holds still counts: a copy of one file's own words next to the
  // notice is a copy of that file.
  const Report c = Check("asn1_perror - API function. SYNOPSIS. " + own[1] + " " + notice, three);
  EXPECT_TRUE(c.violation);
  ASSERT_FALSE(c.matches.empty());
  EXPECT_EQ(c.matches[0].doc_id, 11u);
  // Two holders do not make a text common: a notice that only two documents hold counts.
  const std::string verbatim =
      "Permission is granted to make and distribute verbatim copies of this manual provided the "
      "copyright notice and this permission notice are preserved on all copies.";
  for (DocId id = 20; id < 22; ++id) Add(id, own[id - 18] + " " + verbatim);
  const size_t cut = page.find("COPYRIGHT");
  const Report two = Check(page.substr(0, cut) + verbatim, three);
  EXPECT_TRUE(two.violation);
  for (const DocumentMatch& m : two.matches) {
    // The four holders of the other notice share "provided the copyright notice and this
    // ... notice are preserved" with it: common text, no violation.
    EXPECT_EQ(m.violation, m.doc_id >= 20) << "document " << m.doc_id;
  }
}

}  // namespace
}  // namespace cops

namespace cops {
namespace {

namespace stem {

// A source, a heavy rewrite sharing no run of 5 words, and a same-subject text.
const char* const kSource = testing::kDripIrrigation.source;
const char* const kRewrite = testing::kDripIrrigation.rewrite;
const char* const kSameSubject = testing::kDripIrrigation.same_subject;

}  // namespace stem

TEST(StemPairsTest, LightStemFoldsInflections) {
  EXPECT_EQ(LightStem("reached"), LightStem("reaching"));
  EXPECT_EQ(LightStem("reaches"), "reach");
  EXPECT_EQ(LightStem("studies"), LightStem("study"));
  EXPECT_EQ(LightStem("stopped"), "stop");
  EXPECT_EQ(LightStem("tubes"), LightStem("tubing"));
  EXPECT_NE(LightStem("fall"), LightStem("fail"));
  EXPECT_EQ(LightStem("is"), "is");
}

TEST_F(DetectTest, AHeavyRewriteSharingNoFiveWordRunIsFoundByItsStemPairs) {
  Build(3, 5, /*stem_pairs=*/1);
  Add(3, stem::kSource);
  // Without the pairs the two-stage detector misses it: no 5-word chunk and no 8-word
  // passage of 3-grams survive.
  CheckOptions chunks_only;
  chunks_only.stem_pair_threshold = 0;
  const Report before = Check(stem::kRewrite, chunks_only);
  EXPECT_FALSE(before.violation);
  EXPECT_FALSE(before.stem_pairs_checked);

  const Report r = Check(stem::kRewrite);
  EXPECT_TRUE(r.stem_pairs_checked);
  EXPECT_GT(r.stem_pairs, 30u);
  EXPECT_TRUE(r.violation);
  ASSERT_FALSE(r.matches.empty());
  EXPECT_EQ(r.matches[0].doc_id, 3u);
  EXPECT_TRUE(r.matches[0].stem_pair_violation);
  EXPECT_FALSE(r.matches[0].chunk_violation);  // the report says the pairs decided
  EXPECT_GE(r.matches[0].stem_pair_share, 0.2);
  EXPECT_LT(r.matches[0].ratio, 0.08);
  // A verbatim copy is a violation by its chunks (and its pairs too).
  const Report copy = Check(stem::kSource);
  ASSERT_FALSE(copy.matches.empty());
  EXPECT_TRUE(copy.matches[0].chunk_violation);
  EXPECT_TRUE(copy.matches[0].stem_pair_violation);

  const Report unrelated = Check(stem::kSameSubject);
  EXPECT_TRUE(unrelated.stem_pairs_checked);
  EXPECT_FALSE(unrelated.violation);
  for (const DocumentMatch& m : unrelated.matches) EXPECT_FALSE(m.stem_pair_violation);
}

// A 120-word source's pairs (w5000 w5001), (w5002 w5003), ... in a test: all 20 of them in
// the reverse order, each after a word of its own (a third of the test's pairs, in no
// order); or 8 of them in the source's order, among 100 words of the test's own (7% of its
// pairs, in order).
std::string PairsReversed() {
  std::string s;
  for (int k = 19; k >= 0; --k) s += "x" + std::to_string(k) + " " + Words(5000 + 2 * k, 2) + " ";
  return s;
}
std::string FewPairsInOrder() {
  std::string s;
  for (int i = 0; i < 8; ++i) s += Words(7000 + 12 * i, 12) + " " + Words(5000 + 10 * i, 2) + " ";
  return s + Words(7096, 4);
}

TEST_F(DetectTest, StemPairsCountInTheOrderOfBothTexts) {
  Build(3, 5, /*stem_pairs=*/1);
  Add(3, Words(5000, 120));
  // The same subject's pairs in another order are not a rewrite: one pair of a chain.
  const Report reversed = Check(PairsReversed());
  EXPECT_TRUE(reversed.stem_pairs_checked);
  EXPECT_EQ(reversed.stem_pairs, 59u);
  EXPECT_FALSE(reversed.violation);
  for (const DocumentMatch& m : reversed.matches) {
    EXPECT_FALSE(m.stem_pair_violation);
    if (m.doc_id == 3) {
      EXPECT_EQ(m.stem_pairs_shared, 1u);
    }
  }
  // A few pairs in the source's order are: 8 of 115 = 7%.
  const Report few = Check(FewPairsInOrder());
  EXPECT_EQ(few.stem_pairs, 115u);
  EXPECT_TRUE(few.violation);
  ASSERT_FALSE(few.matches.empty());
  EXPECT_EQ(few.matches[0].doc_id, 3u);
  EXPECT_TRUE(few.matches[0].stem_pair_violation);
  EXPECT_FALSE(few.matches[0].chunk_violation);
  EXPECT_EQ(few.matches[0].stem_pairs_shared, 8u);

  // A document whose order is unknown counts all its rare pairs, against the threshold
  // measured without the order.
  source_.order_unknown.insert(3);
  const Report unordered = Check(PairsReversed());
  EXPECT_TRUE(unordered.violation);
  ASSERT_FALSE(unordered.matches.empty());
  EXPECT_EQ(unordered.matches[0].stem_pairs_shared, 20u);
  EXPECT_FALSE(Check(FewPairsInOrder()).violation);
}

TEST_F(DetectTest, StemPairLookupsAreCappedAndTheShareIsOfThoseLookedUp) {
  Build(3, 5, /*stem_pairs=*/1);
  Add(3, stem::kSource);
  const Report all = Check(stem::kRewrite);
  ASSERT_GT(all.stem_pairs, 16u);
  CheckOptions capped;
  capped.stem_pair_max_lookups = 16;
  const Report r = Check(stem::kRewrite, capped);
  EXPECT_EQ(r.stem_pairs, 16u);
  ASSERT_FALSE(r.matches.empty());
  EXPECT_LE(r.matches[0].stem_pairs_shared, all.matches[0].stem_pairs_shared);
  EXPECT_DOUBLE_EQ(r.matches[0].stem_pair_share, r.matches[0].stem_pairs_shared / 16.0);
  // A cap above the test's pairs changes nothing.
  capped.stem_pair_max_lookups = all.stem_pairs;
  const Report same = Check(stem::kRewrite, capped);
  EXPECT_EQ(same.stem_pairs, all.stem_pairs);
  EXPECT_EQ(same.matches[0].stem_pairs_shared, all.matches[0].stem_pairs_shared);
}

TEST_F(DetectTest, StemPairsThatSeveralDocumentsHoldCountForNothing) {
  Build(3, 5, /*stem_pairs=*/1);
  Add(3, stem::kSource);
  Add(4, std::string(stem::kSource) + " Mulch keeps it cool.");  // a second holder of each pair
  EXPECT_FALSE(Check(stem::kRewrite).violation);
  CheckOptions three;
  three.stem_pair_max_documents = 3;  // pairs held by two documents count again
  const Report r = Check(stem::kRewrite, three);
  EXPECT_TRUE(r.violation);
  ASSERT_GE(r.matches.size(), 2u);
  EXPECT_TRUE(r.matches[0].stem_pair_violation);
  EXPECT_TRUE(r.matches[1].stem_pair_violation);
}

TEST_F(DetectTest, HiddenTemplateAndExcludedTextGetNoStemPairViolation) {
  Build(3, 5, /*stem_pairs=*/1);
  Add(3, stem::kSource);
  source_.hidden.insert(3);
  EXPECT_FALSE(Check(stem::kRewrite).violation);
  source_.hidden.clear();
  source_.templates.insert(3);
  EXPECT_FALSE(Check(stem::kRewrite).violation);
  source_.templates.clear();
  // Pairs carry no positions: a check excluding part of its text does without them.
  const std::string rewrite = stem::kRewrite;
  const Report r = Check(rewrite, {}, {{0, 10, Exclusion::kQuote}});
  EXPECT_FALSE(r.stem_pairs_checked);
  EXPECT_FALSE(r.violation);
}

}  // namespace
}  // namespace cops
