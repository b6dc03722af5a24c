#include "engine/copy_detector.h"

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/scratch.h"
#include "core/status_macros.h"
#include "core/stem_pairs.h"
#include "engine/pipeline.h"
#include "gtest/gtest.h"
#include "rocksdb/db.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"
#include "storage/codec.h"
#include "storage/index_layout.h"
#include "tests/server/test_corpus.h"
#include "tests/storage/raw_stem_pairs.h"
#include "tests/testing/documents.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

using testing_corpus::Corpus;

class CopyDetectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(key_, HashKey::FromHex("00112233445566778899aabbccddeeff"));
    IndexOptions options;
    options.path = dir_.Join("index");
    options.params.key_id = key_->Id();
    ASSERT_OK_AND_ASSIGN(index_, Index::Open(options));
    CopyDetectorOptions detector_options;
    detector_options.max_document_bytes = 8192;
    detector_options.now_micros = [this] { return now_.load(); };
    ASSERT_OK_AND_ASSIGN(detector_, CopyDetector::Create(index_.get(), *key_, detector_options));
    for (const auto& text : Corpus()) {
      DocumentRecord meta;
      meta.title = text.title;
      meta.owner = text.owner;
      meta.collection = text.collection;
      absl::StatusOr<RegisterResultInfo> r =
          detector_->Register(text.body, DocumentFormat::kText, meta);
      ASSERT_OK(r);
      ASSERT_TRUE(r->outcome.created);
      ids_.push_back(r->outcome.id);
    }
  }
  void TearDown() override {
    detector_.reset();
    index_.reset();
  }

  CheckResult MustCheck(const std::string& text, CheckRequestInfo request = {}) {
    request.content = text;
    absl::StatusOr<CheckResult> r = detector_->Check(request);
    EXPECT_OK(r);
    return r.ok() ? *std::move(r) : CheckResult{};
  }

  // The detector's clock, moved by hand: 2025-06-01T00:00:00Z.
  std::atomic<int64_t> now_{int64_t{1748736000} * 1000000};
  testing::TempDir dir_{"copy_detector"};
  std::optional<HashKey> key_;
  std::unique_ptr<Index> index_;
  std::unique_ptr<CopyDetector> detector_;
  std::vector<DocId> ids_;
};

TEST_F(CopyDetectorTest, ARevisedCopyIsVerifiedAsOnePassageWithBothSpans) {
  // Every sixth word changed: a few of the source's stored 5-word chunks survive to make it
  // a candidate; half of the 3-word grams survive, and every gap is one word, so
  // verification sees the whole text as one passage.
  const std::string& body = Corpus()[2].body;
  const std::string revised = testing_corpus::Reword(body, 6);
  CheckResult r = MustCheck(revised);
  EXPECT_TRUE(r.report.verified);
  ASSERT_FALSE(r.report.matches.empty());
  const DocumentMatch& top = r.report.matches.front();
  EXPECT_EQ(top.doc_id, ids_[2]);
  EXPECT_TRUE(top.violation);
  EXPECT_GT(top.ratio, 0.4);
  EXPECT_LT(top.ratio, 0.6);
  ASSERT_EQ(top.spans.size(), 1u);
  const Span& span = top.spans[0];
  EXPECT_LT(span.test_start, 20u);
  EXPECT_GT(span.test_end, revised.size() - 40);
  ASSERT_TRUE(span.has_registered);
  EXPECT_LT(span.registered_start, span.registered_end);
  EXPECT_LE(span.registered_end, body.size());
  EXPECT_GT(span.registered_end - span.registered_start, body.size() / 2);
  // No other registered text shares that much.
  for (size_t i = 1; i < r.report.matches.size(); ++i) {
    EXPECT_FALSE(r.report.matches[i].violation)
        << r.report.matches[i].doc_id << " ratio " << r.report.matches[i].ratio;
  }
}

TEST_F(CopyDetectorTest, ExactCopyIsAViolationWithSpansOverTheWholeText) {
  const std::string body = Corpus()[1].body;
  CheckResult r = MustCheck(body);
  ASSERT_FALSE(r.report.matches.empty());
  const DocumentMatch& top = r.report.matches.front();
  EXPECT_EQ(top.doc_id, ids_[1]);
  EXPECT_TRUE(top.violation);
  EXPECT_TRUE(r.report.violation);
  EXPECT_GT(top.ratio, 0.95);
  EXPECT_EQ(r.records.front().title, Corpus()[1].title);
  ASSERT_FALSE(top.spans.empty());
  // Winnowing keeps some chunk of every window of w + k - 1 = 12 words: the spans reach to
  // within that distance of both ends.
  EXPECT_LT(top.spans.front().test_start, 100u);
  EXPECT_GT(top.spans.back().test_end, body.size() - 100);
  EXPECT_LE(top.spans.back().test_end, body.size());
  // Only the copied document shares passages with it.
  EXPECT_EQ(r.report.matches.size(), 1u);
}

TEST_F(CopyDetectorTest, CopiedParagraphInsideNewTextIsReportedWhereItIs) {
  const std::string source = Corpus()[2].body;
  const std::string test = testing_corpus::ParagraphInsideNewText(source);
  const size_t p1 = source.find("\n\n");
  const std::string paragraph = source.substr(p1 + 2, source.find("\n\n", p1 + 2) - p1 - 2);
  const size_t at = test.find(paragraph);
  ASSERT_NE(at, std::string::npos);

  CheckResult r = MustCheck(test);
  ASSERT_EQ(r.report.matches.size(), 1u);
  const DocumentMatch& m = r.report.matches.front();
  EXPECT_EQ(m.doc_id, ids_[2]);
  EXPECT_GT(m.ratio, 0.2);
  EXPECT_LT(m.ratio, 0.9);
  ASSERT_FALSE(m.spans.empty());
  for (const Span& s : m.spans) {
    EXPECT_GE(s.test_start + 2, at) << "span starts before the copied paragraph";
    EXPECT_LE(s.test_end, at + paragraph.size() + 2) << "span ends after the copied paragraph";
    if (s.has_registered) {  // and points at the paragraph in the registered document
      EXPECT_GE(s.registered_start + 2, p1 + 2);
      EXPECT_LE(s.registered_end, p1 + 2 + paragraph.size() + 2);
    }
  }
}

TEST_F(CopyDetectorTest, EditedCopyStillPointsAtItsSource) {
  const std::string edited = testing_corpus::EditedCopy(Corpus()[3].body);
  ASSERT_NE(edited, Corpus()[3].body);
  CheckResult exact = MustCheck(Corpus()[3].body);
  CheckResult r = MustCheck(edited);
  ASSERT_FALSE(r.report.matches.empty());
  EXPECT_EQ(r.report.matches.front().doc_id, ids_[3]);
  EXPECT_LT(r.report.matches.front().ratio, exact.report.matches.front().ratio);
  EXPECT_GT(r.report.matches.front().ratio, 0.1);
}

// A source, a heavy rewrite sharing no run of 5 words, and a same-subject text (also used by
// core/detect_test.cc, through the pipeline alone).
const char* const kIrrigation = testing::kDripIrrigation.source;
const char* const kIrrigationRewritten = testing::kDripIrrigation.rewrite;
const char* const kSprinklers = testing::kDripIrrigation.same_subject;
const char* const kIrrigationReworded = testing::kDripIrrigation.reworded;

// An index at `path` (with content-stem pairs or not) holding kIrrigation, titled "Drip
// irrigation", owned by alice, and Corpus().
struct IrrigationIndex {
  std::unique_ptr<Index> index;
  std::unique_ptr<CopyDetector> detector;
  DocId source = 0;
};
absl::StatusOr<IrrigationIndex> OpenIrrigationIndex(const std::string& path, bool stem_pairs) {
  COPS_ASSIGN_OR_RETURN(HashKey key, HashKey::FromHex("00112233445566778899aabbccddeeff"));
  IndexOptions options;
  options.path = path;
  options.params.key_id = key.Id();
  options.params.stem_pairs = stem_pairs ? 1 : 0;
  options.params.stem_version = stem_pairs ? kStemPairsVersion : 0;
  IrrigationIndex out;
  COPS_ASSIGN_OR_RETURN(out.index, Index::Open(options));
  COPS_ASSIGN_OR_RETURN(out.detector,
                        CopyDetector::Create(out.index.get(), key, CopyDetectorOptions{}));
  DocumentRecord meta;
  meta.title = "Drip irrigation";
  meta.owner = "alice";
  COPS_ASSIGN_OR_RETURN(RegisterResultInfo source,
                        out.detector->Register(kIrrigation, DocumentFormat::kText, meta));
  out.source = source.outcome.id;
  for (const auto& text : Corpus()) {
    DocumentRecord other;
    other.title = text.title;
    COPS_RETURN_IF_ERROR(out.detector->Register(text.body, DocumentFormat::kText, other).status());
  }
  return out;
}

// An index created with content-stem pairs finds the heavy rewrite through them and names
// its source's record; the same check on an index without them finds nothing and says the
// evidence was unavailable.
TEST(CopyDetectorStemPairsTest, AHeavyRewriteIsFoundOnlyWhereTheIndexKeepsStemPairs) {
  testing::TempDir dir{"copy_detector_stem_pairs"};
  for (const bool pairs : {true, false}) {
    SCOPED_TRACE(pairs ? "with stem pairs" : "without");
    ASSERT_OK_AND_ASSIGN(IrrigationIndex x,
                         OpenIrrigationIndex(dir.Join(pairs ? "with" : "without"), pairs));
    CheckRequestInfo request;
    request.content = kIrrigationRewritten;
    ASSERT_OK_AND_ASSIGN(CheckResult r, x.detector->Check(request));
    EXPECT_EQ(r.report.stem_pairs_checked, pairs);
    EXPECT_EQ(r.report.violation, pairs);
    if (pairs) {
      ASSERT_EQ(r.report.matches.size(), 1u);
      EXPECT_EQ(r.report.matches[0].doc_id, x.source);
      EXPECT_TRUE(r.report.matches[0].stem_pair_violation);
      ASSERT_EQ(r.records.size(), 1u);
      EXPECT_EQ(r.records[0].title, "Drip irrigation");
    }
    request.content = kSprinklers;
    ASSERT_OK_AND_ASSIGN(CheckResult unrelated, x.detector->Check(request));
    EXPECT_FALSE(unrelated.report.violation);
  }
}

// A person's rewrite of a registered text keeps few of its 8-word passages but many of its
// 3-word runs in its order: a check that asks for heavy revisions finds its source (no
// passage counts: a violation by the ordered runs alone); a check that does not, and a text
// on the same subject, do not.
TEST(CopyDetectorHeavyRevisionsTest, AHeavyRewriteIsFoundOnlyWhenTheCheckAsksForIt) {
  testing::TempDir dir{"copy_detector_heavy_revisions"};
  ASSERT_OK_AND_ASSIGN(IrrigationIndex x, OpenIrrigationIndex(dir.Join("index"), false));
  CheckRequestInfo request;
  request.content = kIrrigationReworded;
  ASSERT_OK_AND_ASSIGN(CheckResult plain, x.detector->Check(request));
  EXPECT_FALSE(plain.report.violation);
  for (const DocumentMatch& m : plain.report.matches) EXPECT_EQ(m.revision_grams, 0u);

  request.options.revision_share = kHeavyRevisionShare;
  ASSERT_OK_AND_ASSIGN(CheckResult asked, x.detector->Check(request));
  EXPECT_TRUE(asked.report.violation);
  ASSERT_FALSE(asked.report.matches.empty());
  const DocumentMatch& m = asked.report.matches[0];
  EXPECT_EQ(m.doc_id, x.source);
  EXPECT_TRUE(m.revision_violation);
  EXPECT_FALSE(m.chunk_violation);
  EXPECT_GE(m.revision_grams, request.options.revision_min_grams);
  // Its runs are shown in both texts: the same words (placed in the stored text).
  const auto words = [](std::string_view text) {
    std::string out;
    for (const char c : text) {
      if (std::isalnum(static_cast<unsigned char>(c))) {
        out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      } else if (!out.empty() && out.back() != ' ') {
        out += ' ';
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  };
  const std::string_view test = kIrrigationReworded, source = kIrrigation;
  int runs = 0;
  for (const Span& run : m.spans) {
    if (!run.revision_run) continue;
    ++runs;
    ASSERT_TRUE(run.has_registered);
    EXPECT_EQ(
        words(test.substr(run.test_start, run.test_end - run.test_start)),
        words(source.substr(run.registered_start, run.registered_end - run.registered_start)));
  }
  EXPECT_GE(runs, 3);

  request.content = kSprinklers;
  ASSERT_OK_AND_ASSIGN(CheckResult unrelated, x.detector->Check(request));
  EXPECT_FALSE(unrelated.report.violation);
}

TEST_F(CopyDetectorTest, UnrelatedTextMatchesNothing) {
  CheckResult r = MustCheck(testing_corpus::UnrelatedText());
  EXPECT_TRUE(r.report.matches.empty());
  EXPECT_FALSE(r.report.violation);
  EXPECT_GT(r.report.total_chunks, 0u);
}

// One article registered in three collections (a journal, a repository, an archive: the
// same text, three documents) is one text, not the corpus's common text: a copy of a part of
// it is a violation against all three. Before, its passages were held by three documents
// (CheckOptions::common_phrase_documents) and the copy counted for nothing.
TEST_F(CopyDetectorTest, ATextRegisteredInThreeCollectionsIsStillCopiedFrom) {
  const std::string article = Corpus()[0].body;
  std::vector<DocId> copies = {ids_[0]};
  for (const char* collection : {"repository", "archive"}) {
    DocumentRecord meta;
    meta.title = "again";
    meta.collection = collection;
    absl::StatusOr<RegisterResultInfo> r =
        detector_->Register(article, DocumentFormat::kText, meta);
    ASSERT_OK(r);
    ASSERT_TRUE(r->outcome.created);  // another collection: another document
    copies.push_back(r->outcome.id);
  }
  const size_t half = article.size() / 2;
  const CheckResult r =
      MustCheck(testing_corpus::UnrelatedText() + " " + article.substr(0, article.find(' ', half)));
  EXPECT_TRUE(r.report.violation);
  std::vector<DocId> violating;
  for (const DocumentMatch& m : r.report.matches) {
    if (m.violation) violating.push_back(m.doc_id);
  }
  std::sort(violating.begin(), violating.end());
  EXPECT_EQ(violating, copies);
}

TEST_F(CopyDetectorTest, CollectionFilterHidesOtherCollections) {
  CheckRequestInfo request;
  request.collections = std::vector<std::string>{"reports"};
  CheckResult r = MustCheck(Corpus()[0].body, request);  // an "essays" document
  EXPECT_TRUE(r.report.matches.empty());
  EXPECT_FALSE(r.report.violation);
  request.collections = std::vector<std::string>{"essays"};
  r = MustCheck(Corpus()[0].body, request);
  ASSERT_FALSE(r.report.matches.empty());
  EXPECT_EQ(r.report.matches.front().doc_id, ids_[0]);
}

TEST_F(CopyDetectorTest, CollectionFilterComesBeforeMaxResults) {
  // Every document matches the mix. With a limit of one, a check filtered to the collection
  // that does not hold the best match still gets its own collection's best document.
  std::string mix;
  for (const auto& t : Corpus()) mix += std::string(t.body) + "\n\n";
  CheckRequestInfo request;
  request.options.max_results = 1;
  const CheckResult best = MustCheck(mix, request);
  ASSERT_EQ(best.records.size(), 1u);
  const std::string other = best.records[0].collection == "essays" ? "reports" : "essays";
  request.collections = std::vector<std::string>{other};
  CheckResult r = MustCheck(mix, request);
  ASSERT_EQ(r.report.matches.size(), 1u);
  ASSERT_EQ(r.records.size(), 1u);
  EXPECT_EQ(r.records[0].collection, other);
}

TEST_F(CopyDetectorTest, UnregisteredDocumentIsNoLongerReported) {
  ASSERT_OK(detector_->Unregister(ids_[0]));
  CheckResult r = MustCheck(Corpus()[0].body);
  EXPECT_TRUE(r.report.matches.empty());
  EXPECT_EQ(detector_->Get(ids_[0]).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(detector_->Unregister(ids_[0]).code(), absl::StatusCode::kNotFound);
  // The others are untouched.
  EXPECT_EQ(MustCheck(Corpus()[1].body).report.matches.front().doc_id, ids_[1]);
}

TEST_F(CopyDetectorTest, SameTextTwiceInACollectionIsADuplicate) {
  DocumentRecord same_collection;
  same_collection.collection = Corpus()[1].collection;
  absl::StatusOr<RegisterResultInfo> r =
      detector_->Register(Corpus()[1].body, DocumentFormat::kText, same_collection);
  ASSERT_OK(r);
  ASSERT_TRUE(r->outcome.duplicate_of.has_value());
  EXPECT_EQ(*r->outcome.duplicate_of, ids_[1]);
  EXPECT_EQ(detector_->Stats().documents, Corpus().size());
  // In another collection the same text is a document of its own.
  DocumentRecord other_collection;
  other_collection.collection = std::string(Corpus()[1].collection) + "-elsewhere";
  r = detector_->Register(Corpus()[1].body, DocumentFormat::kText, other_collection);
  ASSERT_OK(r);
  EXPECT_TRUE(r->outcome.created);
  EXPECT_FALSE(r->outcome.duplicate_of.has_value());
  EXPECT_EQ(detector_->Stats().documents, Corpus().size() + 1);
}

// What a receipt states: the record and bytes of the document the outcome names, which for
// a repeated text is the existing document, not what was sent.
TEST_F(CopyDetectorTest, ARegistrationDescribesTheDocumentItNames) {
  DocumentRecord meta;
  meta.owner = "someone-else";
  const std::string text = "A fresh text of its own, long enough to make a few chunks of words.";
  ASSERT_OK_AND_ASSIGN(RegisterResultInfo created,
                       detector_->Register(text, DocumentFormat::kText, meta));
  ASSERT_TRUE(created.outcome.created);
  ASSERT_OK_AND_ASSIGN(DocumentRecord stored, detector_->Get(created.outcome.id));
  EXPECT_EQ(created.record.id, created.outcome.id);
  EXPECT_EQ(created.record.owner, "someone-else");
  EXPECT_EQ(created.record.sha256, stored.sha256);
  EXPECT_EQ(created.record.registered_unix_micros, stored.registered_unix_micros);
  EXPECT_EQ(created.content_sha256, Sha256(text));

  // The same canonical text in other bytes, in the same collection (duplicates are per
  // collection): the original document, its owner and bytes.
  ASSERT_OK_AND_ASSIGN(DocumentRecord original, detector_->Get(ids_[1]));
  DocumentRecord same_collection = meta;
  same_collection.collection = original.collection;
  ASSERT_OK_AND_ASSIGN(RegisterResultInfo again,
                       detector_->Register(std::string(Corpus()[1].body) + "\n\n",
                                           DocumentFormat::kText, same_collection));
  ASSERT_FALSE(again.outcome.created);
  EXPECT_EQ(again.record.id, ids_[1]);
  EXPECT_EQ(again.record.owner, Corpus()[1].owner);
  EXPECT_EQ(again.record.registered_unix_micros, original.registered_unix_micros);
  EXPECT_EQ(again.content_sha256, Sha256(Corpus()[1].body));

  // The bulk path says the same.
  const std::vector<RegisterInput> inputs = {{text, DocumentFormat::kText, &meta}};
  std::vector<absl::StatusOr<RegisterResultInfo>> out;
  ASSERT_OK(detector_->RegisterBatch(inputs, &out));
  ASSERT_OK(out[0]);
  EXPECT_EQ(out[0]->record.id, created.outcome.id);
  EXPECT_EQ(out[0]->content_sha256, Sha256(text));
}

TEST_F(CopyDetectorTest, AnExistingDocumentWithoutStoredBytesHasNoContentDigest) {
  IndexOptions options;
  options.path = dir_.Join("no_texts");
  options.params.key_id = key_->Id();
  options.store_texts = false;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Index> index, Index::Open(options));
  ASSERT_OK_AND_ASSIGN(auto detector, CopyDetector::Create(index.get(), *key_, {}));
  const std::string text = Corpus()[0].body;
  ASSERT_OK_AND_ASSIGN(RegisterResultInfo first,
                       detector->Register(text, DocumentFormat::kText, DocumentRecord{}));
  EXPECT_EQ(first.content_sha256, Sha256(text)) << "the bytes sent are the bytes registered";
  ASSERT_OK_AND_ASSIGN(RegisterResultInfo again,
                       detector->Register(text, DocumentFormat::kText, DocumentRecord{}));
  EXPECT_FALSE(again.outcome.created);
  EXPECT_EQ(again.record.id, first.outcome.id);
  EXPECT_FALSE(again.content_sha256.has_value());
}

TEST_F(CopyDetectorTest, Windows1252IsDecodedAndSpansAreBytesOfTheFile) {
  const std::string cp1252 = testing_corpus::Windows1252Text();
  absl::StatusOr<RegisterResultInfo> reg =
      detector_->Register(cp1252, DocumentFormat::kText, DocumentRecord{});
  ASSERT_OK(reg);
  CheckResult r = MustCheck(cp1252);
  ASSERT_FALSE(r.report.matches.empty());
  EXPECT_EQ(r.report.matches.front().doc_id, reg->outcome.id);
  EXPECT_TRUE(r.report.violation);
  for (const Span& s : r.report.matches.front().spans) EXPECT_LE(s.test_end, cp1252.size());
  // The same text in UTF-8 decodes to the same words: it is found as the same document.
  std::string utf8 = cp1252;
  auto replace = [&](const std::string& from, const std::string& to) {
    utf8.replace(utf8.find(from), from.size(), to);
  };
  replace("\xE9", "\xC3\xA9");
  replace("\x93", "\xE2\x80\x9C");
  replace("\x94", "\xE2\x80\x9D");
  CheckResult u = MustCheck(utf8);
  ASSERT_FALSE(u.report.matches.empty());
  EXPECT_EQ(u.report.matches.front().doc_id, reg->outcome.id);
  EXPECT_GT(u.report.matches.front().ratio, 0.95);
}

TEST_F(CopyDetectorTest, BadInputsAreRefusedAndLeaveTheIndexIntact) {
  const uint64_t before = detector_->Stats().documents;
  EXPECT_EQ(detector_->Register("", DocumentFormat::kText, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(detector_->Register(std::string(9000, 'a'), DocumentFormat::kText, {}).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(
      detector_->Register(Corpus()[0].body, static_cast<DocumentFormat>(42), {}).status().code(),
      absl::StatusCode::kInvalidArgument);
  CheckRequestInfo request;
  request.content = Corpus()[0].body;
  request.options.threshold = 1.5;
  EXPECT_EQ(detector_->Check(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.options.threshold = 0.5;
  request.cancelled = [] { return true; };
  EXPECT_EQ(detector_->Check(request).status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(detector_->Get(999999).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(detector_->Stats().documents, before);
  EXPECT_EQ(MustCheck(Corpus()[0].body).report.matches.front().doc_id, ids_[0]);
}

TEST_F(CopyDetectorTest, MaxResultsLimitsMatchesAfterOrdering) {
  // A text made of paragraphs from every document matches all four; keep the best two.
  std::string mix;
  for (const auto& t : Corpus()) mix += std::string(t.body) + "\n\n";
  CheckRequestInfo request;
  request.options.max_results = 2;
  CheckResult r = MustCheck(mix, request);
  ASSERT_EQ(r.report.matches.size(), 2u);
  EXPECT_GE(r.report.matches[0].ratio, r.report.matches[1].ratio);
  request.options.max_results = 0;
  EXPECT_EQ(MustCheck(mix, request).report.matches.size(), Corpus().size());
}

TEST_F(CopyDetectorTest, SameContentInAnotherFormatMatchesAtNinetyPercent) {
  // Registered once as a PDF (the format with the most layout noise), checked as every other
  // format a publisher or gateway receives: the converters must agree on the words.
  std::vector<std::string> paragraphs = testing::Prose(8, 11);
  paragraphs[0] = "Copy detection for digital documents";
  CopyDetectorOptions options;  // default limits: the fixture's 8 KiB is too small for a PDF
  absl::StatusOr<std::unique_ptr<CopyDetector>> detector =
      CopyDetector::Create(index_.get(), *key_, options);
  ASSERT_OK(detector);
  absl::StatusOr<RegisterResultInfo> reg = (*detector)->Register(
      testing::MakePdfFromParagraphs(paragraphs), DocumentFormat::kAuto, DocumentRecord{});
  ASSERT_OK(reg);
  ASSERT_EQ(reg->format, DocumentFormat::kPdf);
  ASSERT_GT(reg->total_chunks, 100u);

  const std::vector<std::pair<DocumentFormat, std::string>> tests = {
      {DocumentFormat::kText, testing::MakeText(paragraphs)},
      {DocumentFormat::kDocx, testing::MakeDocx(paragraphs)},
      {DocumentFormat::kOdt, testing::MakeOdt(paragraphs)},
      {DocumentFormat::kHtml, testing::MakeHtml(paragraphs)},
      {DocumentFormat::kLatex, testing::MakeLatex(paragraphs)},
      {DocumentFormat::kMarkdown, testing::MakeMarkdown(paragraphs)},
      {DocumentFormat::kEmail, testing::MakeEmail(paragraphs)},
  };
  for (const auto& [format, bytes] : tests) {
    CheckRequestInfo request;
    request.content = bytes;
    absl::StatusOr<CheckResult> r = (*detector)->Check(request);
    ASSERT_OK(r) << DocumentFormatName(format);
    EXPECT_EQ(r->format, format);
    ASSERT_FALSE(r->report.matches.empty()) << DocumentFormatName(format);
    const DocumentMatch& top = r->report.matches.front();
    EXPECT_EQ(top.doc_id, reg->outcome.id) << DocumentFormatName(format);
    EXPECT_GE(top.ratio, 0.9) << DocumentFormatName(format);
    EXPECT_GE(top.containment, 0.9) << DocumentFormatName(format);
    EXPECT_TRUE(top.violation) << DocumentFormatName(format);
  }
}

TEST_F(CopyDetectorTest, PdfSpansIndexTheExtractedTextAndNameTheirPages) {
  // 30 paragraphs fill several pages; the registered text is the same words as plain text.
  std::vector<std::string> paragraphs = testing::Prose(30, 5);
  CopyDetectorOptions options;
  absl::StatusOr<std::unique_ptr<CopyDetector>> detector =
      CopyDetector::Create(index_.get(), *key_, options);
  ASSERT_OK(detector);
  const std::string text = testing::MakeText(paragraphs);
  ASSERT_OK((*detector)->Register(text, DocumentFormat::kText, DocumentRecord{}));

  const std::string pdf = testing::MakePdfFromParagraphs(paragraphs);
  CheckRequestInfo request;
  request.content = pdf;
  absl::StatusOr<CheckResult> r = (*detector)->Check(request);
  ASSERT_OK(r);
  ASSERT_EQ(r->format, DocumentFormat::kPdf);
  ASSERT_FALSE(r->extracted_text.empty());
  ASSERT_FALSE(r->report.matches.empty());
  uint32_t last_page_seen = 0;
  for (const Span& s : r->report.matches.front().spans) {
    ASSERT_LE(s.test_end, r->extracted_text.size());
    EXPECT_GE(s.test_first_page, 1u);
    EXPECT_GE(s.test_last_page, s.test_first_page);
    last_page_seen = std::max(last_page_seen, s.test_last_page);
    // The offsets point at words of the registered text, not at PDF syntax.
    const std::string passage = r->extracted_text.substr(s.test_start, s.test_end - s.test_start);
    const std::string first_word = passage.substr(0, passage.find(' '));
    EXPECT_NE(text.find(first_word), std::string::npos) << passage;
    EXPECT_EQ(passage.find("BT"), std::string::npos);
  }
  EXPECT_GT(last_page_seen, 1u) << "a copy of the whole document spans more than one page";
  EXPECT_TRUE(SpansIndexExtractedText(DocumentFormat::kDocx));

  // Plain text keeps byte offsets of the input and no pages.
  request.content = text;
  r = (*detector)->Check(request);
  ASSERT_OK(r);
  EXPECT_TRUE(r->extracted_text.empty());
  ASSERT_FALSE(r->report.matches.empty());
  for (const Span& s : r->report.matches.front().spans) EXPECT_EQ(s.test_first_page, 0u);
}

// The second paragraph of corpus document 2, and a text that cites it in `before` and
// `after` between new paragraphs.
std::string CitedParagraph() {
  const std::string body = Corpus()[2].body;
  const size_t p1 = body.find("\n\n");
  return body.substr(p1 + 2, body.find("\n\n", p1 + 2) - p1 - 2);
}
std::string Citing(const std::string& before, const std::string& after) {
  return testing_corpus::UnrelatedText() + "\n" + before + CitedParagraph() + after + "\n\n" +
         testing_corpus::Prose(7, 60) + "\n";
}

// Every span of the best match excluded for `reason`, inside the bytes of `text` that
// hold the cited paragraph.
void ExpectCitationExcluded(const CheckResult& r, const std::string& text, Exclusion reason) {
  EXPECT_FALSE(r.report.violation);
  ASSERT_EQ(r.report.matches.size(), 1u);
  EXPECT_DOUBLE_EQ(r.report.matches[0].ratio, 0);
  ASSERT_FALSE(r.report.matches[0].spans.empty());
  const size_t at = text.find(CitedParagraph().substr(0, 40));
  ASSERT_NE(at, std::string::npos);
  for (const Span& s : r.report.matches[0].spans) {
    EXPECT_EQ(s.excluded, reason);
    EXPECT_GE(s.test_start, at);
    EXPECT_LE(s.test_end, at + CitedParagraph().size());
  }
  ASSERT_FALSE(r.report.excluded.empty());
  EXPECT_EQ(r.report.excluded[0].reason, reason);
}

TEST_F(CopyDetectorTest, AQuotedParagraphCountsOnlyWithoutTheExclusion) {
  const std::string text = Citing("\xE2\x80\x9C", "\xE2\x80\x9D");
  const CheckResult plain = MustCheck(text);
  EXPECT_TRUE(plain.report.violation);
  EXPECT_TRUE(plain.report.excluded.empty());
  CheckRequestInfo request;
  request.exclusions.quotes = true;
  const CheckResult r = MustCheck(text, request);
  ExpectCitationExcluded(r, text, Exclusion::kQuote);
  EXPECT_LT(r.report.considered_chunks, plain.report.considered_chunks);
}

TEST_F(CopyDetectorTest, BlockQuotesOfMarkdownAndHtmlAreExcludedInTheOriginalBytes) {
  CheckRequestInfo request;
  request.exclusions.quotes = true;
  // Markdown: the converter drops the '>' markers; the original's lines are excluded.
  const std::string markdown = "# Notes\n\nThe club met on Tuesday.\n\n> " + CitedParagraph() +
                               "\n\nWe then discussed the " + testing_corpus::Prose(3, 40) + "\n";
  request.format = DocumentFormat::kMarkdown;
  const CheckResult md = MustCheck(markdown, request);
  EXPECT_EQ(md.format, DocumentFormat::kMarkdown);
  ExpectCitationExcluded(md, markdown, Exclusion::kQuote);
  // HTML: the <blockquote> element.
  const std::string html = "<html><body><p>The club met on Tuesday.</p><blockquote><p>" +
                           CitedParagraph() + "</p></blockquote><p>" +
                           testing_corpus::Prose(3, 40) + "</p></body></html>";
  request.format = DocumentFormat::kHtml;
  const CheckResult h = MustCheck(html, request);
  ExpectCitationExcluded(h, html, Exclusion::kQuote);
  EXPECT_EQ(html.substr(h.report.excluded[0].start, 12), "<blockquote>");
}

TEST_F(CopyDetectorTest, TheReferencesSectionCountsOnlyWithoutTheExclusion) {
  const std::string text =
      testing_corpus::Prose(5, 120) + "\n\n7. References\n\n" + CitedParagraph() + "\n";
  EXPECT_TRUE(MustCheck(text).report.violation);
  CheckRequestInfo request;
  request.exclusions.references = true;
  const CheckResult r = MustCheck(text, request);
  ExpectCitationExcluded(r, text, Exclusion::kReferences);
  EXPECT_EQ(r.report.excluded[0].start, text.find("7. References"));
  EXPECT_EQ(r.report.excluded[0].end, text.size());
}

TEST_F(CopyDetectorTest, DocumentsOfTemplateCollectionsNeverCount) {
  const std::string text = Citing("", "");
  EXPECT_TRUE(MustCheck(text).report.violation);
  CheckRequestInfo request;
  request.template_collections = {Corpus()[2].collection};
  const CheckResult r = MustCheck(text, request);
  ASSERT_FALSE(r.report.matches.empty());
  EXPECT_FALSE(r.report.violation);
  EXPECT_TRUE(r.report.matches.back().template_source);
  EXPECT_EQ(r.records.back().collection, Corpus()[2].collection);
  ASSERT_FALSE(r.report.excluded.empty());
  EXPECT_EQ(r.report.excluded[0].reason, Exclusion::kTemplate);
}

// Heap bytes in use (glibc, every arena): small blocks plus mmapped ones.
size_t HeapInUse() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

TEST_F(CopyDetectorTest, CheckingLargeDocumentsLeavesTheThreadSmall) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizer's allocator does not report through mallinfo2";
#endif
  CopyDetectorOptions options;
  options.max_document_bytes = 8 << 20;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CopyDetector> detector,
                       CopyDetector::Create(index_.get(), *key_, options));
  // Texts of 256 KiB to 4 MiB in which every registered document is a candidate, its
  // postings and grams read: the scratch buffers of every stage grow with them.
  std::vector<std::string> texts;
  for (size_t size : {256u << 10, 1u << 20, 4u << 20}) {
    std::string& text = texts.emplace_back();
    for (uint32_t i = 0; text.size() < size; ++i) {
      text += Corpus()[i % Corpus().size()].body;
      text += " plus" + std::to_string(i) + " words of its own " + std::to_string(i * 7) + ".\n\n";
    }
  }
  CheckRequestInfo request;
  request.content = Corpus()[0].body;
  ASSERT_OK(detector->Check(request));  // the thread's buffers at a typical size
  const size_t before = HeapInUse();
  for (const std::string& text : texts) {
    request.content = text;
    {
      ASSERT_OK_AND_ASSIGN(CheckResult result, detector->Check(request));
      EXPECT_EQ(result.report.matches.size(), Corpus().size());
    }
    // What the thread keeps does not grow with the document (core/scratch.h): a set of
    // buffers above kScratchSetKeepBytes is released whole, a buffer above kScratchKeepBytes
    // on its own.
    EXPECT_LT(HeapInUse(), before + kScratchSetKeepBytes) << text.size() << " bytes checked";
  }
}

constexpr int64_t kSecond = 1000000;

TEST_F(CopyDetectorTest, ExpiredAndEmbargoedDocumentsAreReportedOnlyInTheirLifetime) {
  const int64_t start = now_.load();
  const std::string expiring = testing_corpus::Prose(1, 300);
  const std::string embargoed = testing_corpus::Prose(2, 300);
  DocumentRecord meta;
  meta.expires_unix_micros = start + 100 * kSecond;
  ASSERT_OK_AND_ASSIGN(RegisterResultInfo a,
                       detector_->Register(expiring, DocumentFormat::kText, meta));
  meta.expires_unix_micros = 0;
  meta.not_before_unix_micros = start + 50 * kSecond;
  ASSERT_OK_AND_ASSIGN(RegisterResultInfo b,
                       detector_->Register(embargoed, DocumentFormat::kText, meta));
  auto reported = [&](const std::string& text, DocId id) {
    const CheckResult r = MustCheck(text);
    return !r.report.matches.empty() && r.report.matches.front().doc_id == id;
  };
  EXPECT_TRUE(reported(expiring, a.outcome.id));
  EXPECT_FALSE(reported(embargoed, b.outcome.id));  // registered, but not yet published
  EXPECT_EQ(detector_->Get(b.outcome.id)->registered_unix_micros, start);

  now_ = start + 50 * kSecond;
  EXPECT_TRUE(reported(embargoed, b.outcome.id));
  EXPECT_TRUE(reported(expiring, a.outcome.id));
  now_ = start + 100 * kSecond;
  EXPECT_FALSE(reported(expiring, a.outcome.id));  // expired, though not yet swept
  EXPECT_OK(detector_->Get(a.outcome.id));
  EXPECT_TRUE(reported(embargoed, b.outcome.id));
  // Documents without a lifetime are unaffected by the clock.
  EXPECT_EQ(MustCheck(Corpus()[0].body).report.matches.front().doc_id, ids_[0]);
}

// Documents of several shapes, each with what its conversion yields: plain UTF-8 texts
// (recomputed at removal, no chunk list) and others that keep their chunk lists.
struct Shape {
  const char* name;
  DocumentFormat format;
  std::string content;
  bool recomputed;  // plain UTF-8 text: registered without a chunk list
};

std::vector<Shape> RemovalShapes() {
  std::string long_text = Corpus()[0].body;  // far beyond dense_chunks: winnowed; holds the control
  for (int round = 0; round < 3; ++round) {
    for (const auto& t : Corpus()) long_text += testing_corpus::Reword(t.body, 3 + round);
  }
  return {
      {"short, every chunk stored", DocumentFormat::kText,
       "Forty words or so of a short note: the meeting moves to Thursday at nine, bring the "
       "draft budget and the signed forms, and tell the others that parking behind the "
       "library is closed until the end of the month for repairs.",
       true},
      {"long, winnowed", DocumentFormat::kText, long_text, true},
      {"look-alike letters", DocumentFormat::kText,
       // Cyrillic 'о' and 'е', Greek capital 'Τ', a fullwidth 'Ａ', a soft hyphen.
       "Τhe cоmmittее rеviewed Ａll the submissions in detail and found that several "
       "para\xc2\xadgraphs had been copied from an earlier report without any attribution "
       "to its original authors or to the agency that had paid for the research.",
       true},
      {"html", DocumentFormat::kHtml,
       std::string("<html><head><title>Notes</title></head><body><p>") + Corpus()[3].body +
           "</p><p>Seen <b>twice</b> in the <i>archive</i>.</p></body></html>",
       false},
      {"windows-1252", DocumentFormat::kText,
       "Caf\xe9 society met every Thursday in the back room, where the na\xefve poets read "
       "their verses aloud and the r\xe9gisseur of the small theatre took notes for a play "
       "that was never staged.",
       false},
      {"utf-8 with a byte-order mark", DocumentFormat::kText,
       std::string("\xEF\xBB\xBF") + Corpus()[2].body, false},
  };
}

// Every posting of every hash `fps` hold, for comparing two indexes.
std::vector<PostingList> PostingsUnder(const Index& index,
                                       const std::vector<DocumentFingerprint>& fps) {
  std::vector<ChunkHash> hashes;
  for (const DocumentFingerprint& fp : fps) {
    for (const Chunk& c : fp.chunks) hashes.push_back(c.hash);
  }
  std::vector<PostingList> out;
  EXPECT_OK(index.Lookup(hashes, &out));
  return out;
}

TEST(CopyDetectorRemovalTest, UnregisteringLeavesNoPostingWithOrWithoutAChunkList) {
  const std::vector<Shape> shapes = RemovalShapes();
  for (const bool bucketed : {false, true}) {
    for (const char* hex : {"00112233445566778899aabbccddeeff", "ffeeddccbbaa99887766554433221100",
                            "0f1e2d3c4b5a69788796a5b4c3d2e1f0"}) {
      SCOPED_TRACE(std::string(bucketed ? "bucketed" : "per hash") + ", key " + hex);
      ASSERT_OK_AND_ASSIGN(HashKey key, HashKey::FromHex(hex));
      testing::TempDir dir("removal");
      IndexOptions options;
      options.params.key_id = key.Id();
      options.bucketed_postings = bucketed;
      options.block_cache_bytes = 8 << 20;
      options.write_buffer_bytes = 4 << 20;
      ASSERT_OK_AND_ASSIGN(options.chunk_recomputer,
                           MakeChunkRecomputer(options.params, key));
      // The index that never held the shapes: the control document alone.
      IndexOptions never = options;
      never.path = dir.Join("never");
      options.path = dir.Join("index");
      DocumentRecord meta;
      meta.collection = "c";
      const std::string control = Corpus()[0].body;
      {
        ASSERT_OK_AND_ASSIGN(auto index, Index::Open(never));
        ASSERT_OK_AND_ASSIGN(auto detector, CopyDetector::Create(index.get(), key, {}));
        ASSERT_OK(detector->Register(control, DocumentFormat::kText, meta));
      }
      // The hashes each shape registers, as the registration computes them.
      std::vector<DocumentFingerprint> fps;
      std::vector<DocId> ids;
      {
        ASSERT_OK_AND_ASSIGN(auto index, Index::Open(options));
        ASSERT_OK_AND_ASSIGN(auto detector, CopyDetector::Create(index.get(), key, {}));
        ASSERT_OK(detector->Register(control, DocumentFormat::kText, meta));
        ASSERT_OK_AND_ASSIGN(auto fingerprinter, Fingerprinter::Create(options.params, key));
        for (const Shape& shape : shapes) {
          ASSERT_OK_AND_ASSIGN(RegisterResultInfo r,
                               detector->Register(shape.content, shape.format, meta));
          ASSERT_TRUE(r.outcome.created) << shape.name;
          ids.push_back(r.outcome.id);
          ASSERT_OK_AND_ASSIGN(ConvertedDocument converted,
                               Convert(shape.content, shape.format));
          DocumentFingerprint fp;
          ASSERT_OK(RegisterPrint(*fingerprinter, converted.text, &fp));
          ASSERT_EQ(fp.chunks.size(), r.stored_chunks) << shape.name;
          fps.push_back(std::move(fp));
        }
        EXPECT_LE(fps[0].chunks.size(), kDefaultDenseChunks);
        EXPECT_LT(fps[1].chunks.size(), fps[1].total_chunks);
      }
      {
        // Opened without a way to recompute: only the documents with chunk lists go.
        IndexOptions without = options;
        without.chunk_recomputer = nullptr;
        ASSERT_OK_AND_ASSIGN(auto index, Index::Open(without));
        for (size_t i = 0; i < shapes.size(); ++i) {
          absl::Status s = index->Unregister(ids[i]);
          if (shapes[i].recomputed) {
            EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << shapes[i].name << ": " << s;
          } else {
            EXPECT_OK(s) << shapes[i].name;
          }
        }
      }
      ASSERT_OK_AND_ASSIGN(auto index, Index::Open(options));
      for (size_t i = 0; i < shapes.size(); ++i) {
        if (shapes[i].recomputed) {
          EXPECT_OK(index->Unregister(ids[i])) << shapes[i].name;
        }
      }
      ASSERT_OK(index->Compact());
      ASSERT_OK_AND_ASSIGN(auto never_index, Index::Open(never));
      ASSERT_OK(never_index->Compact());
      const std::vector<PostingList> left = PostingsUnder(*index, fps);
      const std::vector<PostingList> expected = PostingsUnder(*never_index, fps);
      ASSERT_EQ(left.size(), expected.size());
      size_t postings = 0;
      for (size_t i = 0; i < left.size(); ++i) {
        postings += left[i].postings.size();
        EXPECT_EQ(left[i].postings, expected[i].postings) << "hash " << i;
        EXPECT_EQ(left[i].doc_frequency, expected[i].doc_frequency) << "hash " << i;
      }
      EXPECT_GT(postings, 0u);  // the long shape holds the control's text
    }
  }
}

// A verifying index with bucketed postings keeps no byte spans in the postings of a stored
// plain text (schema 6): the check places each passage in the text's own units, so the
// registered bytes of an exactly copied paragraph are that paragraph, byte for byte. An HTML
// document keeps its postings' spans (its conversion depends on libxml2, which no index
// records), and so does every document of per-hash postings.
TEST(CopyDetectorSpansTest, AStoredPlainTextsPassagesArePlacedInItsUnitsWithoutPostingSpans) {
  for (const bool bucketed : {false, true}) {
    SCOPED_TRACE(bucketed ? "bucketed" : "per hash");
    ASSERT_OK_AND_ASSIGN(HashKey key, HashKey::FromHex("00112233445566778899aabbccddeeff"));
    testing::TempDir dir("spans");
    IndexOptions options;
    options.path = dir.Join("index");
    options.params.key_id = key.Id();
    options.bucketed_postings = bucketed;
    options.block_cache_bytes = 8 << 20;
    options.write_buffer_bytes = 4 << 20;
    ASSERT_OK_AND_ASSIGN(options.chunk_recomputer, MakeChunkRecomputer(options.params, key));
    ASSERT_OK_AND_ASSIGN(auto index, Index::Open(options));
    ASSERT_OK_AND_ASSIGN(auto detector, CopyDetector::Create(index.get(), key, {}));
    ASSERT_OK_AND_ASSIGN(auto fingerprinter, Fingerprinter::Create(options.params, key));
    DocumentRecord meta;
    const std::string source = Corpus()[2].body;
    const std::string other = Corpus()[3].body;
    const std::string html = "<html><body><p>" + other + "</p></body></html>";
    ASSERT_OK_AND_ASSIGN(RegisterResultInfo text_doc,
                         detector->Register(source, DocumentFormat::kText, meta));
    ASSERT_OK_AND_ASSIGN(RegisterResultInfo html_doc,
                         detector->Register(html, DocumentFormat::kHtml, meta));
    for (const auto& [content, format, id, spans] :
         {std::tuple{source, DocumentFormat::kText, text_doc.outcome.id, false},
          std::tuple{html, DocumentFormat::kHtml, html_doc.outcome.id, true}}) {
      SCOPED_TRACE(DocumentFormatName(format));
      ASSERT_OK_AND_ASSIGN(ConvertedDocument converted, Convert(content, format));
      DocumentFingerprint fp;
      ASSERT_OK(RegisterPrint(*fingerprinter, converted.text, &fp));
      std::vector<ChunkHash> hashes;
      for (const Chunk& c : fp.chunks) hashes.push_back(c.hash);
      std::vector<PostingList> lists;
      ASSERT_OK(index->Lookup(hashes, &lists));
      // Per looked-up hash: the document is listed, with its positions or (one posting,
      // ordinal, start and end 0) without.
      const bool positions = spans || !bucketed;
      size_t listed = 0;
      for (const PostingList& list : lists) {
        size_t mine = 0, positioned = 0;
        for (const Posting& p : list.postings) {
          if (p.doc_id != id) continue;
          ++mine;
          positioned += p.end > p.start;
        }
        listed += mine > 0;
        EXPECT_EQ(positioned, positions ? mine : 0u);
        if (!positions) {
          EXPECT_EQ(mine, 1u);
        }
      }
      EXPECT_EQ(listed, fp.chunks.size());
    }

    for (const std::string& body : {source, other}) {
      const std::string test = testing_corpus::ParagraphInsideNewText(body);
      CheckRequestInfo request;
      request.content = test;
      ASSERT_OK_AND_ASSIGN(CheckResult r, detector->Check(request));
      ASSERT_EQ(r.report.matches.size(), 1u);
      const DocumentMatch& m = r.report.matches.front();
      ASSERT_EQ(m.spans.size(), 1u);
      const Span& s = m.spans.front();
      ASSERT_TRUE(s.has_registered);
      const std::string copied = test.substr(s.test_start, s.test_end - s.test_start);
      EXPECT_GT(copied.size(), 100u);
      const std::string& registered = m.doc_id == text_doc.outcome.id ? source : html;
      const std::string placed =
          registered.substr(s.registered_start, s.registered_end - s.registered_start);
      if (bucketed && m.doc_id == text_doc.outcome.id) {
        EXPECT_EQ(placed, copied);
      } else {  // the union of the chunks the lookup found
        EXPECT_NE(placed.find(copied.substr(40, 40)), std::string::npos);
      }
    }
    // Spans not asked for are not placed (no text is read).
    CheckRequestInfo request;
    const std::string test = testing_corpus::ParagraphInsideNewText(source);
    request.content = test;
    request.options.want_spans = false;
    ASSERT_OK_AND_ASSIGN(CheckResult r, detector->Check(request));
    ASSERT_EQ(r.report.matches.size(), 1u);
    EXPECT_TRUE(r.report.matches.front().spans.empty());
  }
}

// A stored text that is not the canonical text registered (changed underneath the index) is
// never fingerprinted into wrong registered bytes: the match stands, as the grams decide it,
// its passage is reported without registered bytes, and a warning names the document.
TEST(CopyDetectorSpansTest, AStoredTextThatIsNotTheTextRegisteredLeavesItsPassageUnplaced) {
  ASSERT_OK_AND_ASSIGN(HashKey key, HashKey::FromHex("00112233445566778899aabbccddeeff"));
  testing::TempDir dir("spans");
  IndexOptions options;
  options.path = dir.Join("index");
  options.params.key_id = key.Id();
  options.bucketed_postings = true;  // a stored plain text's postings keep no positions
  options.block_cache_bytes = 8 << 20;
  options.write_buffer_bytes = 4 << 20;
  ASSERT_OK_AND_ASSIGN(options.chunk_recomputer, MakeChunkRecomputer(options.params, key));
  const std::string source = Corpus()[2].body;
  const std::string test = testing_corpus::ParagraphInsideNewText(source);
  DocId id = 0;
  for (const bool changed : {false, true}) {
    SCOPED_TRACE(changed ? "changed" : "as registered");
    if (changed) {  // the same text with one more word: plain UTF-8, another canonical digest
      testing::RawStemPairs raw(options.path);
      for (rocksdb::ColumnFamilyHandle* h : raw.handles) {
        if (h->GetName() != index_layout::kTextsCf) continue;
        ASSERT_TRUE(
            raw.db->Put(rocksdb::WriteOptions(), h, storage_codec::DocKey(id), source + " amen").ok());
      }
    }
    ASSERT_OK_AND_ASSIGN(auto index, Index::Open(options));
    ASSERT_OK_AND_ASSIGN(auto detector, CopyDetector::Create(index.get(), key, {}));
    if (!changed) {
      ASSERT_OK_AND_ASSIGN(RegisterResultInfo registered,
                           detector->Register(source, DocumentFormat::kText, DocumentRecord{}));
      id = registered.outcome.id;
      ASSERT_OK(index->Flush());
    }
    std::ostringstream lines;
    auto previous = spdlog::default_logger();
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(lines);
    sink->set_pattern("%v");
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("spans-test", sink));
    CheckRequestInfo request;
    request.content = test;
    absl::StatusOr<CheckResult> r = detector->Check(request);
    spdlog::set_default_logger(previous);
    ASSERT_OK(r.status());
    ASSERT_EQ(r->report.matches.size(), 1u);
    const DocumentMatch& m = r->report.matches.front();
    EXPECT_TRUE(m.violation);
    ASSERT_EQ(m.spans.size(), 1u);
    EXPECT_EQ(m.spans.front().has_registered, !changed);
    const std::string warning = "document " + std::to_string(id) +
                                ": its stored text is not the canonical text registered; its "
                                "passages are reported without registered bytes";
    EXPECT_EQ(lines.str().find(warning) != std::string::npos, changed) << lines.str();
  }
}

TEST(ValidateLifetimeTest, AnExpiryMustBeInTheFutureAndAfterTheEmbargo) {
  const int64_t now = int64_t{1748736000} * kSecond;  // 2025-06-01T00:00:00Z
  DocumentRecord r;
  EXPECT_OK(ValidateLifetime(r, now));  // none
  r.not_before_unix_micros = now - kSecond;  // an embargo already over is harmless
  EXPECT_OK(ValidateLifetime(r, now));
  r.expires_unix_micros = now;
  absl::Status s = ValidateLifetime(r, now);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("expiry 2025-06-01T00:00:00Z is not in the future (server time "
                             "2025-06-01T00:00:00Z)"),
            std::string::npos)
      << s;
  r.expires_unix_micros = now + 10 * kSecond;
  EXPECT_OK(ValidateLifetime(r, now));
  r.not_before_unix_micros = now + 10 * kSecond;
  s = ValidateLifetime(r, now);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("not before the expiry"), std::string::npos) << s;
  r.not_before_unix_micros = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateLifetime(r, now)));
}

TEST_F(CopyDetectorTest, LifetimesAreStoredAsGivenOnTheBulkPathToo) {
  // A registration replayed from the log may carry an expiry that has passed meanwhile: the
  // detector stores it (checks then ignore the document); validation is the service's.
  const std::string past_text = testing_corpus::Prose(4, 200);
  const std::string fine_text = testing_corpus::Prose(5, 200);
  DocumentRecord past, fine;
  past.expires_unix_micros = now_.load() - kSecond;
  fine.expires_unix_micros = now_.load() + kSecond;
  fine.not_before_unix_micros = now_.load() - kSecond;
  const std::vector<RegisterInput> inputs = {{past_text, DocumentFormat::kText, &past},
                                             {fine_text, DocumentFormat::kText, &fine}};
  std::vector<absl::StatusOr<RegisterResultInfo>> out;
  ASSERT_OK(detector_->RegisterBatch(inputs, &out));
  ASSERT_EQ(out.size(), 2u);
  ASSERT_OK(out[0]);
  ASSERT_OK(out[1]);
  EXPECT_EQ(detector_->Get(out[0]->outcome.id)->expires_unix_micros, past.expires_unix_micros);
  const DocumentRecord stored = *detector_->Get(out[1]->outcome.id);
  EXPECT_EQ(stored.expires_unix_micros, fine.expires_unix_micros);
  EXPECT_EQ(stored.not_before_unix_micros, fine.not_before_unix_micros);
  EXPECT_TRUE(MustCheck(past_text).report.matches.empty());
  ASSERT_FALSE(MustCheck(fine_text).report.matches.empty());
}

TEST_F(CopyDetectorTest, ManipulatedCopyIsFoundAndItsManipulationReportedWhereItIs) {
  // The source with a Cyrillic 'о' in its first word that has an 'o', a zero-width space
  // inside the next word, and U+2800 (braille blank) instead of the space after it.
  std::string text = Corpus()[0].body;
  const size_t o = text.find('o');
  ASSERT_NE(o, std::string::npos);
  text.replace(o, 1, "\xD0\xBE");
  const size_t space = text.find(' ', o + 2);
  text.insert(space + 2, "\xE2\x80\x8B");
  const size_t blank = text.find(' ', space + 6);
  text.replace(blank, 1, "\xE2\xA0\x80");
  const CheckResult r = MustCheck(text);
  ASSERT_FALSE(r.report.matches.empty());
  EXPECT_EQ(r.report.matches.front().doc_id, ids_[0]);  // folded: still the copy
  EXPECT_GT(r.report.matches.front().ratio, 0.9);
  ASSERT_EQ(r.manipulations.size(), 2u);
  EXPECT_EQ(r.manipulations[0].kind, ManipulationKind::kLookAlike);
  EXPECT_EQ(r.manipulations[0].count, 1u);
  ASSERT_EQ(r.manipulations[0].ranges.size(), 1u);
  EXPECT_LE(r.manipulations[0].ranges[0].start, o);
  EXPECT_GE(r.manipulations[0].ranges[0].end, o + 2);
  EXPECT_EQ(r.manipulations[1].kind, ManipulationKind::kInvisible);
  EXPECT_EQ(r.manipulations[1].count, 2u);
  ASSERT_EQ(r.manipulations[1].ranges.size(), 2u);
  EXPECT_EQ(r.manipulations[1].ranges[0].start, space + 2);
  EXPECT_EQ(r.manipulations[1].ranges[1].start, blank);
  EXPECT_EQ(r.manipulations[1].ranges[1].end, blank + 3);
  // The source itself is clean.
  EXPECT_TRUE(MustCheck(Corpus()[0].body).manipulations.empty());
}

// The text a check's one manipulation of `kind`, with one place, covers in `space` (the
// document as sent where the format maps bytes, else the extracted text); "" and a failure
// when the check reports anything else.
std::string OneManipulation(const CheckResult& r, ManipulationKind kind, std::string_view space) {
  if (r.manipulations.size() != 1 || r.manipulations[0].kind != kind ||
      r.manipulations[0].count != 1 || r.manipulations[0].ranges.size() != 1) {
    ADD_FAILURE() << "expected one manipulation of kind " << static_cast<int>(kind) << ", got "
                  << r.manipulations.size();
    return "";
  }
  const auto& range = r.manipulations[0].ranges[0];
  return std::string(space.substr(range.start, range.end - range.start));
}

TEST_F(CopyDetectorTest, HiddenTextOfHtmlDocxOdtAndLatexIsReportedWhereItIs) {
  const std::string html =
      "<html><body><p>" + std::string(Corpus()[0].body).substr(0, 200) +
      "<span style=\"color:#ffffff\">zq xv</span></p></body></html>";
  CheckRequestInfo request;
  request.format = DocumentFormat::kHtml;
  CheckResult r = MustCheck(html, request);
  // In bytes of the markup as sent, as the spans are.
  EXPECT_EQ(OneManipulation(r, ManipulationKind::kHiddenText, html), "zq xv");

  const std::string xml =
      "<w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\">"
      "<w:body><w:p><w:r><w:t xml:space=\"preserve\">Visible words </w:t></w:r>"
      "<w:r><w:rPr><w:vanish/></w:rPr><w:t>secret</w:t></w:r></w:p></w:body></w:document>";
  request.format = DocumentFormat::kDocx;
  r = MustCheck(testing::MakeZip({{"word/document.xml", xml}}), request);
  // DOCX spans index the extracted text: so do the ranges.
  EXPECT_EQ(OneManipulation(r, ManipulationKind::kHiddenText, r.extracted_text), "secret");

  // ODT hides text by style: here one of content.xml's automatic styles, 0.5pt.
  const std::string content =
      "<office:document-content xmlns:office=\"urn:oasis:names:tc:opendocument:xmlns:office:1.0\" "
      "xmlns:style=\"urn:oasis:names:tc:opendocument:xmlns:style:1.0\" "
      "xmlns:text=\"urn:oasis:names:tc:opendocument:xmlns:text:1.0\" "
      "xmlns:fo=\"urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0\">"
      "<office:automatic-styles><style:style style:name=\"T1\" style:family=\"text\">"
      "<style:text-properties fo:font-size=\"0.5pt\"/></style:style></office:automatic-styles>"
      "<office:body><office:text><text:p>Visible words <text:span text:style-name=\"T1\">"
      "secret</text:span></text:p></office:text></office:body></office:document-content>";
  request.format = DocumentFormat::kOdt;
  r = MustCheck(testing::MakeZip({{"mimetype", "application/vnd.oasis.opendocument.text"},
                                  {"content.xml", content}}),
                request);
  EXPECT_EQ(OneManipulation(r, ManipulationKind::kHiddenText, r.extracted_text), "secret");

  // LaTeX keeps a byte map, as HTML: the ranges are in bytes of the source as sent.
  const std::string tex =
      "\\begin{document}\nVisible words of the report \\textcolor{white}{zq xv}\n"
      "\\end{document}\n";
  request.format = DocumentFormat::kLatex;
  r = MustCheck(tex, request);
  EXPECT_EQ(OneManipulation(r, ManipulationKind::kHiddenText, tex), "zq xv");
}

TEST_F(CopyDetectorTest, HiddenTextOfPdfIsReportedWhereItIs) {
  // 1 pt text, judged by its size in any sandbox (colour needs fonts, which the worker reads
  // only under Landlock: tests/convert/pdf_converter_test.cc covers white text).
  const std::string pdf = testing::MakePdf(
      {{"Visible words of the report.", testing::PdfOperators("/F1 1 Tf"), "zq xv",
        testing::PdfOperators("/F1 11 Tf"), "More visible words."}});
  CheckRequestInfo request;
  request.format = DocumentFormat::kPdf;
  CheckResult r = MustCheck(pdf, request);
  // A PDF has no byte map: the ranges index the extracted text.
  EXPECT_EQ(OneManipulation(r, ManipulationKind::kHiddenText, r.extracted_text), "zq xv");

  // Where checks skip the search (copsd --pdf-hidden-text=false), the text is the same and
  // no manipulation is reported.
  CopyDetectorOptions off;
  off.pdf_hidden_text = false;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CopyDetector> quiet,
                       CopyDetector::Create(index_.get(), *key_, off));
  request.content = pdf;
  ASSERT_OK_AND_ASSIGN(CheckResult q, quiet->Check(request));
  EXPECT_TRUE(q.manipulations.empty());
  EXPECT_EQ(q.extracted_text, r.extracted_text);
}

TEST_F(CopyDetectorTest, LettersReplacedByImagesInHtmlAndDocxAreReportedWhereTheyAre) {
  const std::string html = "<html><body><p>" + std::string(Corpus()[0].body).substr(0, 200) +
                           " Pay<img src=\"p.png\">al</p></body></html>";
  CheckRequestInfo request;
  request.format = DocumentFormat::kHtml;
  CheckResult r = MustCheck(html, request);
  // In bytes of the markup as sent: the word with the image in it.
  EXPECT_EQ(OneManipulation(r, ManipulationKind::kImageInWord, html), "Pay<img src=\"p.png\">al");

  const std::string xml =
      "<w:document xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\" "
      "xmlns:wp=\"http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing\">"
      "<w:body><w:p><w:r><w:t xml:space=\"preserve\">Visible words Pay</w:t></w:r>"
      "<w:r><w:drawing><wp:inline/></w:drawing></w:r><w:r><w:t>al</w:t></w:r></w:p></w:body>"
      "</w:document>";
  request.format = DocumentFormat::kDocx;
  r = MustCheck(testing::MakeZip({{"word/document.xml", xml}}), request);
  // DOCX spans index the extracted text: so do the ranges.
  EXPECT_EQ(OneManipulation(r, ManipulationKind::kImageInWord, r.extracted_text), "Payal");
}

}  // namespace
}  // namespace cops
