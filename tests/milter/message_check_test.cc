#include "milter/message_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "convert/worker_pool.h"
#include "engine/index_generations.h"
#include "gtest/gtest.h"
#include "milter/local_checker.h"
#include "storage/data_dir.h"
#include "tests/testing/documents.h"
#include "tests/testing/files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

constexpr char kPlain[] =
    "From: alice@example.org\r\n"
    "To: bob@example.com\r\n"
    "Subject: Quarterly figures\r\n"
    "\r\n"
    "The harbour authority expects the new pier to open before the autumn storms.\r\n";

// A body and two attachments: a text file (quoted-printable) and an image that is no document.
constexpr char kWithAttachments[] =
    "From: alice@example.org\r\n"
    "To: bob@example.com\r\n"
    "Subject: Draft attached\r\n"
    "MIME-Version: 1.0\r\n"
    "Content-Type: multipart/mixed; boundary=\"b1\"\r\n"
    "\r\n"
    "--b1\r\n"
    "Content-Type: text/plain; charset=utf-8\r\n"
    "\r\n"
    "Please see the draft attached.\r\n"
    "--b1\r\n"
    "Content-Type: text/plain; charset=utf-8; name=\"draft.txt\"\r\n"
    "Content-Disposition: attachment; filename=\"draft.txt\"\r\n"
    "Content-Transfer-Encoding: quoted-printable\r\n"
    "\r\n"
    "The lighthouse keeper climbed the spiral stair four times every night =\r\n"
    "to trim the wick.\r\n"
    "--b1\r\n"
    "Content-Type: image/png; name=\"logo.png\"\r\n"
    "Content-Disposition: attachment; filename=\"logo.png\"\r\n"
    "Content-Transfer-Encoding: base64\r\n"
    "\r\n"
    "iVBORw0KGgo=\r\n"
    "--b1--\r\n";

MilterPolicy Policy() { return MilterPolicy(); }

// The sandbox cops-milter uses by default: a pool of converter workers.
ConvertWorkerPool& Pool() {
  static ConvertWorkerPool* pool = new ConvertWorkerPool({.max_workers = 1, .max_uses = 100});
  return *pool;
}
const SandboxConverter kSandbox = [](std::string_view input, DocumentFormat format,
                                     const ConvertLimits& limits, const ConvertOptions& options) {
  return Pool().Convert(input, format, limits, options);
};

TEST(ExtractMessageTextsTest, PlainMessageIsOneTextWithSubjectAndBody) {
  auto texts = ExtractMessageTexts(kPlain, Policy(), std::chrono::seconds(10), kSandbox);
  ASSERT_OK(texts);
  ASSERT_EQ(texts->size(), 1u);
  EXPECT_EQ((*texts)[0].name, "message");
  EXPECT_NE((*texts)[0].text.find("Quarterly figures"), std::string::npos);
  EXPECT_NE((*texts)[0].text.find("before the autumn storms"), std::string::npos);
  EXPECT_EQ((*texts)[0].text.find("alice@example.org"), std::string::npos);  // headers are not text
}

TEST(ExtractMessageTextsTest, EachDocumentAttachmentIsItsOwnDecodedText) {
  auto texts = ExtractMessageTexts(kWithAttachments, Policy(), std::chrono::seconds(10), kSandbox);
  ASSERT_OK(texts);
  ASSERT_EQ(texts->size(), 2u);  // the image is not a document
  EXPECT_EQ((*texts)[0].name, "message");
  EXPECT_NE((*texts)[0].text.find("Please see the draft"), std::string::npos);
  EXPECT_EQ((*texts)[0].text.find("lighthouse"), std::string::npos);
  EXPECT_EQ((*texts)[1].name, "draft.txt");
  // Quoted-printable undone: the soft line break joins the sentence.
  EXPECT_NE((*texts)[1].text.find("four times every night to trim the wick"), std::string::npos)
      << (*texts)[1].text;
}

// Only PDF, DOCX and ODT attachments go to the sandbox: the rest of the message, text and
// HTML parts and text attachments included, is parsed here.
TEST(ExtractMessageTextsTest, OnlyBinaryDocumentAttachmentsGoToTheSandbox) {
  std::vector<DocumentFormat> sandboxed;
  const SandboxConverter recording = [&](std::string_view input, DocumentFormat format,
                                         const ConvertLimits& limits,
                                         const ConvertOptions& options) {
    sandboxed.push_back(format);
    return kSandbox(input, format, limits, options);
  };
  auto attached = ExtractMessageTexts(kWithAttachments, Policy(), std::chrono::seconds(10),
                                      recording);
  ASSERT_OK(attached);
  EXPECT_EQ(attached->size(), 2u);
  EXPECT_TRUE(sandboxed.empty());

  const std::string pdf_mail =
      "From: alice@example.org\r\nSubject: Report\r\nMIME-Version: 1.0\r\n"
      "Content-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n"
      "--b1\r\nContent-Type: text/plain\r\n\r\nThe report is attached.\r\n"
      "--b1\r\nContent-Type: application/pdf; name=\"report.pdf\"\r\n"
      "Content-Disposition: attachment; filename=\"report.pdf\"\r\n"
      "Content-Transfer-Encoding: base64\r\n\r\n" +
      testing::Base64(testing::MakePdfFromParagraphs({"The keeper trimmed the wick."})) +
      "--b1--\r\n";
  auto with_pdf = ExtractMessageTexts(pdf_mail, Policy(), std::chrono::seconds(10), recording);
  ASSERT_OK(with_pdf);
  ASSERT_EQ(with_pdf->size(), 2u);
  EXPECT_EQ((*with_pdf)[1].name, "report.pdf");
  EXPECT_EQ((*with_pdf)[1].text, "The keeper trimmed the wick.");
  EXPECT_EQ(sandboxed, std::vector<DocumentFormat>{DocumentFormat::kPdf});

  // A sandbox that cannot run fails the message (on_failure applies), not the attachment.
  const SandboxConverter broken = [](std::string_view, DocumentFormat format,
                                     const ConvertLimits&, const ConvertOptions&)
      -> absl::StatusOr<ConvertedDocument> {
    return absl::InternalError(std::string(DocumentFormatName(format)) + ": no worker");
  };
  EXPECT_EQ(
      ExtractMessageTexts(pdf_mail, Policy(), std::chrono::seconds(10), broken).status().code(),
      absl::StatusCode::kInternal);
}

TEST(ExtractMessageTextsTest, MaxPartsCapsTheAttachmentsChecked) {
  MilterPolicy p = Policy();
  p.max_parts = 1;
  auto texts = ExtractMessageTexts(kWithAttachments, p, std::chrono::seconds(10), kSandbox);
  ASSERT_OK(texts);
  ASSERT_EQ(texts->size(), 1u);
  EXPECT_EQ((*texts)[0].name, "message");
}

TEST(ExtractMessageTextsTest, UnreadableMessageIsCheckedRaw) {
  const std::string junk = "no header block here, only words of a pasted paragraph";
  auto texts = ExtractMessageTexts(junk, Policy(), std::chrono::seconds(10), kSandbox);
  ASSERT_OK(texts);
  ASSERT_EQ(texts->size(), 1u);
  EXPECT_EQ((*texts)[0].name, "raw");
  EXPECT_EQ((*texts)[0].text, junk);
}

TEST(ExtractMessageTextsTest, OversizeMessageIsResourceExhausted) {
  MilterPolicy p = Policy();
  p.max_message_bytes = 64;
  auto texts = ExtractMessageTexts(kPlain, p, std::chrono::seconds(10), kSandbox);
  EXPECT_EQ(texts.status().code(), absl::StatusCode::kResourceExhausted);
}

v1::Match MakeMatch(uint64_t id, double ratio, const std::string& collection, bool violation) {
  v1::Match m;
  m.set_doc_id(id);
  m.set_ratio(ratio);
  m.set_collection(collection);
  m.set_violation(violation);
  return m;
}

TEST(DecideVerdictTest, CleanWhenNoMatchPassesTheDecision) {
  std::vector<MessageText> texts = {{"message", "x"}};
  std::vector<v1::CheckDocumentReply> replies(1);
  *replies[0].add_matches() = MakeMatch(7, 0.03, "hr", false);
  MessageVerdict v = DecideVerdict(texts, replies, Policy(), {Policy().Defaults()});
  EXPECT_EQ(v.outcome, MessageVerdict::Outcome::kClean);
  EXPECT_EQ(v.ResultHeader(), "clean");
  EXPECT_EQ(v.MatchesHeader(10), "");
}

TEST(DecideVerdictTest, ViolationsOfAllTextsAreMergedPerDocumentBestRatioFirst) {
  std::vector<MessageText> texts = {{"message", "x"}, {"plan.pdf", "y"}};
  std::vector<v1::CheckDocumentReply> replies(2);
  *replies[0].add_matches() = MakeMatch(7, 0.20, "hr", true);
  *replies[1].add_matches() = MakeMatch(7, 0.90, "hr", true);
  *replies[1].add_matches() = MakeMatch(9, 0.40, "legal team", true);
  MessageVerdict v = DecideVerdict(texts, replies, Policy(), {Policy().Defaults()});
  ASSERT_EQ(v.outcome, MessageVerdict::Outcome::kViolation);
  ASSERT_EQ(v.violations.size(), 2u);
  EXPECT_EQ(v.violations[0].doc_id, 7u);
  EXPECT_EQ(v.violations[0].part, "plan.pdf");
  EXPECT_EQ(v.ResultHeader(), "violation (2 documents, best ratio 0.900)");
  EXPECT_EQ(v.MatchesHeader(10),
            "doc=7 ratio=0.900 collection=hr part=plan.pdf;\n\t"
            "doc=9 ratio=0.400 collection=legal_team part=plan.pdf");
  EXPECT_EQ(v.MatchesHeader(1), "doc=7 ratio=0.900 collection=hr part=plan.pdf");
}

TEST(DecideVerdictTest, StrongestCollectionActionWins) {
  MilterPolicy p = Policy();
  p.action = MilterAction::kHeaders;
  p.collection_actions["legal"] = MilterAction::kReject;
  p.collection_actions["hr"] = MilterAction::kQuarantine;
  std::vector<MessageText> texts = {{"message", "x"}};
  std::vector<v1::CheckDocumentReply> replies(1);
  *replies[0].add_matches() = MakeMatch(1, 0.5, "hr", true);
  EXPECT_EQ(DecideVerdict(texts, replies, p, {p.Defaults()}).action, MilterAction::kQuarantine);
  *replies[0].add_matches() = MakeMatch(2, 0.3, "legal", true);
  EXPECT_EQ(DecideVerdict(texts, replies, p, {p.Defaults()}).action, MilterAction::kReject);
  replies[0].clear_matches();
  *replies[0].add_matches() = MakeMatch(3, 0.3, "public", true);
  EXPECT_EQ(DecideVerdict(texts, replies, p, {p.Defaults()}).action, MilterAction::kHeaders);
}

TEST(DecideVerdictTest, EachRecipientDomainsRulesActOnTheirOwnReplies) {
  MilterPolicy p = Policy();
  p.collection_actions["secret"] = MilterAction::kReject;
  CheckRules partner = p.Defaults();
  partner.domain = "partner.example";
  partner.action = MilterAction::kQuarantine;
  std::vector<MessageText> texts = {{"message", "x"}, {"plan.pdf", "y"}};
  // Replies to the texts under the defaults, then under partner's rules.
  std::vector<v1::CheckDocumentReply> replies(4);
  *replies[2].add_matches() = MakeMatch(5, 0.4, "public", true);  // found under partner's only
  MessageVerdict v = DecideVerdict(texts, replies, p, {p.Defaults(), partner});
  ASSERT_EQ(v.outcome, MessageVerdict::Outcome::kViolation);
  EXPECT_EQ(v.action, MilterAction::kQuarantine);
  EXPECT_EQ(v.domains, std::vector<std::string>{"partner.example"});
  ASSERT_EQ(v.violations.size(), 1u);
  EXPECT_EQ(v.violations[0].part, "message");
  // The same document under the defaults too: one entry; its action stays the strongest.
  *replies[1].add_matches() = MakeMatch(5, 0.7, "public", true);
  v = DecideVerdict(texts, replies, p, {p.Defaults(), partner});
  ASSERT_EQ(v.violations.size(), 1u);
  EXPECT_EQ(v.violations[0].part, "plan.pdf");
  EXPECT_EQ(v.action, MilterAction::kQuarantine);
  // collection_actions hold under every rule set.
  *replies[3].add_matches() = MakeMatch(6, 0.2, "secret", true);
  EXPECT_EQ(DecideVerdict(texts, replies, p, {p.Defaults(), partner}).action,
            MilterAction::kReject);
}

TEST(DecideVerdictTest, AnErrorLeavesTheMessageUncheckedUnlessAViolationWasFound) {
  std::vector<MessageText> texts = {{"message", "x"}, {"big.pdf", "y"}};
  std::vector<v1::CheckDocumentReply> replies(2);
  replies[1].set_error_code(static_cast<int>(absl::StatusCode::kResourceExhausted));
  replies[1].set_error_message("document too large");
  MessageVerdict v = DecideVerdict(texts, replies, Policy(), {Policy().Defaults()});
  EXPECT_EQ(v.outcome, MessageVerdict::Outcome::kUnchecked);
  EXPECT_EQ(v.error.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(v.error.message().find("big.pdf"), std::string::npos);
  *replies[0].add_matches() = MakeMatch(4, 0.5, "hr", true);
  EXPECT_EQ(DecideVerdict(texts, replies, Policy(), {Policy().Defaults()}).outcome, MessageVerdict::Outcome::kViolation);
}

// Records the requests and answers with canned replies or an error.
class FakeChecker : public PartChecker {
 public:
  absl::StatusOr<std::vector<v1::CheckDocumentReply>> Check(
      std::vector<v1::CheckDocumentRequest> requests, std::chrono::milliseconds timeout) override {
    requests_ = std::move(requests);
    timeout_ = timeout;
    if (!error_.ok()) return error_;
    std::vector<v1::CheckDocumentReply> replies(requests_.size());
    for (size_t i = 0; i < requests_.size(); ++i) {
      if (requests_[i].content().find("lighthouse") != std::string::npos) {
        *replies[i].add_matches() = MakeMatch(12, 0.6, "essays", true);
      }
    }
    return replies;
  }
  absl::Status error_;
  std::vector<v1::CheckDocumentRequest> requests_;
  std::chrono::milliseconds timeout_{0};
};

TEST(CheckMessageTest, SendsEachTextWithThePolicysOptionsAndFindsTheAttachment) {
  MilterPolicy p = Policy();
  p.threshold = 0.25;
  p.collections = {"essays"};
  p.timeout_ms = 5000;
  FakeChecker checker;
  MessageVerdict v = CheckMessage(kWithAttachments, p, {}, kSandbox, &checker);
  ASSERT_EQ(checker.requests_.size(), 2u);
  for (const v1::CheckDocumentRequest& r : checker.requests_) {
    EXPECT_EQ(r.format(), v1::DOCUMENT_FORMAT_TEXT);
    EXPECT_DOUBLE_EQ(r.options().threshold(), 0.25);
    EXPECT_FALSE(r.options().want_spans());
    ASSERT_EQ(r.collections_size(), 1);
    EXPECT_EQ(r.collections(0), "essays");
  }
  EXPECT_GT(checker.timeout_.count(), 0);
  EXPECT_LE(checker.timeout_.count(), 5000);
  ASSERT_EQ(v.outcome, MessageVerdict::Outcome::kViolation);
  EXPECT_EQ(v.parts, 2u);
  EXPECT_EQ(v.violations[0].part, "draft.txt");
  EXPECT_TRUE(v.ResultHeader().starts_with("violation"));
}

TEST(CheckMessageTest, RecipientsUnderSeveralRulesAreCheckedUnderEachInOneBatch) {
  MilterPolicy p = Policy();
  p.threshold = 0.25;
  p.domains["partner.example"].threshold = 0.05;
  p.domains["partner.example"].collections = std::vector<std::string>{"legal"};
  FakeChecker checker;
  MessageVerdict v = CheckMessage(kPlain, p, {"<a@example.org>", "<b@Partner.example>"},
                                  kSandbox, &checker);
  ASSERT_EQ(checker.requests_.size(), 2u);  // one text, under two rule sets
  EXPECT_DOUBLE_EQ(checker.requests_[0].options().threshold(), 0.25);
  EXPECT_EQ(checker.requests_[0].collections_size(), 0);
  EXPECT_DOUBLE_EQ(checker.requests_[1].options().threshold(), 0.05);
  ASSERT_EQ(checker.requests_[1].collections_size(), 1);
  EXPECT_EQ(checker.requests_[1].collections(0), "legal");
  EXPECT_EQ(v.outcome, MessageVerdict::Outcome::kClean);
  // Recipients all under one rule set: one request per text.
  CheckMessage(kPlain, p, {"<b@partner.example>"}, kSandbox, &checker);
  ASSERT_EQ(checker.requests_.size(), 1u);
  EXPECT_DOUBLE_EQ(checker.requests_[0].options().threshold(), 0.05);
}

TEST(CheckMessageTest, CopsdFailureLeavesTheMessageUnchecked) {
  FakeChecker checker;
  checker.error_ = absl::UnavailableError("failed to connect");
  MessageVerdict v = CheckMessage(kPlain, Policy(), {}, kSandbox, &checker);
  EXPECT_EQ(v.outcome, MessageVerdict::Outcome::kUnchecked);
  EXPECT_EQ(v.error.code(), absl::StatusCode::kUnavailable);
}

// A body, `fillers` harmless text attachments, then one carrying the copied text.
std::string MessageWithCopyAfter(int fillers) {
  std::string m =
      "From: alice@example.org\r\nTo: bob@example.com\r\nSubject: Files\r\n"
      "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n"
      "--b1\r\nContent-Type: text/plain\r\n\r\nThe files you asked for.\r\n";
  auto attach = [&](const std::string& name, const std::string& text) {
    m += "--b1\r\nContent-Type: text/plain; name=\"" + name +
         "\"\r\nContent-Disposition: attachment; filename=\"" + name + "\"\r\n\r\n" + text +
         "\r\n";
  };
  for (int i = 0; i < fillers; ++i) {
    attach("note" + std::to_string(i) + ".txt", "Shopping list number " + std::to_string(i));
  }
  attach("copy.txt", "The lighthouse keeper climbed the spiral stair four times every night.");
  return m + "--b1--\r\n";
}

TEST(CheckMessageTest, AMessageWithMoreTextsThanMaxPartsIsUncheckedNotClean) {
  // The body, 31 fillers, and the copied text as the 33rd text: past max_parts (32).
  const std::string message = MessageWithCopyAfter(31);
  FakeChecker checker;
  MessageVerdict v = CheckMessage(message, Policy(), {}, kSandbox, &checker);
  EXPECT_EQ(checker.requests_.size(), 32u);  // the first 32 are still checked
  ASSERT_EQ(v.outcome, MessageVerdict::Outcome::kUnchecked) << v.ResultHeader();
  EXPECT_EQ(v.ResultHeader(), "unchecked (33 texts, only the first 32 checked: max_parts)");
  // At max_parts exactly, the copy is found.
  v = CheckMessage(MessageWithCopyAfter(30), Policy(), {}, kSandbox, &checker);
  EXPECT_EQ(v.outcome, MessageVerdict::Outcome::kViolation);
  // The copy left out at max_parts 1, the body checked: unchecked, not clean.
  MilterPolicy one = Policy();
  one.max_parts = 1;
  v = CheckMessage(kWithAttachments, one, {}, kSandbox, &checker);
  EXPECT_EQ(v.ResultHeader(), "unchecked (2 texts, only the first 1 checked: max_parts)");
}

TEST(CheckMessageTest, APartialReplyFromARouterIsUncheckedNotClean) {
  // A router whose partition 3 had no live replica: no match among the others.
  class PartialChecker : public PartChecker {
   public:
    absl::StatusOr<std::vector<v1::CheckDocumentReply>> Check(
        std::vector<v1::CheckDocumentRequest> requests, std::chrono::milliseconds) override {
      std::vector<v1::CheckDocumentReply> replies(requests.size());
      for (v1::CheckDocumentReply& r : replies) {
        r.set_partial(true);
        r.add_missing_partitions(3);
      }
      return replies;
    }
  } checker;
  MessageVerdict v = CheckMessage(kPlain, Policy(), {}, kSandbox, &checker);
  ASSERT_EQ(v.outcome, MessageVerdict::Outcome::kUnchecked) << v.ResultHeader();
  EXPECT_EQ(v.error.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(v.ResultHeader(), "unchecked (message: partition 3 did not answer)");
}

TEST(DecideVerdictTest, AViolationInAPartialReplyStillCounts) {
  std::vector<MessageText> texts = {{"message", "x"}};
  std::vector<v1::CheckDocumentReply> replies(1);
  replies[0].set_partial(true);
  replies[0].add_missing_partitions(1);
  replies[0].add_missing_partitions(4);
  MessageVerdict v = DecideVerdict(texts, replies, Policy(), {Policy().Defaults()});
  EXPECT_EQ(v.ResultHeader(), "unchecked (message: partitions 1, 4 did not answer)");
  *replies[0].add_matches() = MakeMatch(4, 0.5, "hr", true);
  EXPECT_EQ(DecideVerdict(texts, replies, Policy(), {Policy().Defaults()}).outcome,
            MessageVerdict::Outcome::kViolation);
}

TEST(CheckMessageTest, EmptyMessageIsCleanWithoutAsking) {
  FakeChecker checker;
  checker.error_ = absl::UnavailableError("must not be called with texts");
  MessageVerdict v = CheckMessage("Subject:\r\n\r\n \r\n", Policy(), {}, kSandbox, &checker);
  EXPECT_TRUE(checker.requests_.empty());
  EXPECT_EQ(v.outcome, MessageVerdict::Outcome::kClean);
  EXPECT_EQ(v.parts, 0u);
}

// --- In-process checks against a copy of copsd's data directory (milter/local_checker.h).

std::string Mail(const std::string& body) {
  return "From: alice@example.org\r\nTo: bob@example.com\r\nSubject: Notes\r\n\r\n" + body +
         "\r\n";
}

class LocalIndexTest : public ::testing::Test {
 protected:
  // A data directory as copsd makes it (key file, params, index), with `texts` registered
  // in collection "mail" (beside what it holds already), closed again.
  void MakeDataDir(const std::vector<std::string>& texts) {
    IndexGenerationsOptions o;
    o.data_dir = data_dir_;
    o.index.min_free_disk_mb = 0;
    o.index.block_cache_bytes = 8 << 20;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<IndexGenerations> gens, IndexGenerations::Open(o));
    for (const std::string& t : texts) Register(*gens, t);
  }
  // Writes the live index's memtables to SST files.
  void FlushIndex() {
    DataDir dir(data_dir_);
    ASSERT_OK_AND_ASSIGN(std::optional<ChunkingParams> params, dir.ReadParams());
    ASSERT_TRUE(params.has_value());
    IndexOptions o;
    o.path = dir.IndexPath(0);
    o.params = *params;
    o.min_free_disk_mb = 0;
    o.block_cache_bytes = 8 << 20;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Index> index, Index::Open(o));
    ASSERT_OK(index->Flush());
  }
  static void Register(IndexGenerations& gens, const std::string& text) {
    DocumentRecord record;
    record.collection = "mail";
    ASSERT_OK(gens.WithWriter([&](CopyDetector& d) {
      return d.Register(text, DocumentFormat::kText, record).status();
    }));
  }
  LocalIndexOptions Options() const {
    LocalIndexOptions o;
    o.data_dir = data_dir_;
    o.block_cache_bytes = 8 << 20;
    return o;
  }
  MessageVerdict CheckLocally(const LocalIndex& index, const std::string& message,
                              const MilterPolicy& policy = MilterPolicy()) {
    LocalPartChecker checker(&index);
    return CheckMessage(message, policy, {}, kSandbox, &checker);
  }

  testing::TempDir dir_{"local_index"};
  const std::string data_dir_ = dir_.Join("data");
  const std::string registered_ = absl::StrJoin(testing::Prose(4, 11), "\n\n");
  const std::string unrelated_ = absl::StrJoin(testing::Prose(4, 12), "\n\n");
};

TEST_F(LocalIndexTest, FindsACopiedMessageAndPassesACleanOne) {
  MakeDataDir({registered_, absl::StrJoin(testing::Prose(4, 13), "\n\n")});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LocalIndex> index, LocalIndex::Open(Options()));
  EXPECT_EQ(index->documents(), 2u);

  const MessageVerdict copied = CheckLocally(*index, Mail(registered_));
  ASSERT_EQ(copied.outcome, MessageVerdict::Outcome::kViolation) << copied.error;
  ASSERT_EQ(copied.violations.size(), 1u);
  EXPECT_EQ(copied.violations[0].doc_id, 1u);
  EXPECT_EQ(copied.violations[0].collection, "mail");
  EXPECT_GT(copied.violations[0].ratio, 0.9);

  const MessageVerdict clean = CheckLocally(*index, Mail(unrelated_));
  EXPECT_EQ(clean.outcome, MessageVerdict::Outcome::kClean) << clean.error;

  // A collection the index does not hold is an error, as copsd answers it: not "clean".
  MilterPolicy p;
  p.collections = {"nosuch"};
  const MessageVerdict unknown = CheckLocally(*index, Mail(registered_), p);
  EXPECT_EQ(unknown.outcome, MessageVerdict::Outcome::kUnchecked);
  EXPECT_EQ(unknown.error.code(), absl::StatusCode::kNotFound) << unknown.error;
  EXPECT_NE(unknown.error.message().find("nosuch"), std::string::npos) << unknown.error;
}

// A local copy decides as copsd does by default: a person's heavy rewrite of a registered
// text (no 8-word passage left, its 3-word runs in order) is a violation.
TEST_F(LocalIndexTest, FindsAHeavyRevisionAsCopsdDoesByDefault) {
  MakeDataDir({testing::kDripIrrigation.source, unrelated_});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LocalIndex> index, LocalIndex::Open(Options()));
  const MessageVerdict reworded = CheckLocally(*index, Mail(testing::kDripIrrigation.reworded));
  ASSERT_EQ(reworded.outcome, MessageVerdict::Outcome::kViolation) << reworded.error;
  ASSERT_EQ(reworded.violations.size(), 1u);
  EXPECT_EQ(reworded.violations[0].doc_id, 1u);
  const MessageVerdict same_subject =
      CheckLocally(*index, Mail(testing::kDripIrrigation.same_subject));
  EXPECT_EQ(same_subject.outcome, MessageVerdict::Outcome::kClean) << same_subject.error;
}

TEST_F(LocalIndexTest, SeesLaterRegistrationsOnlyOnceReopened) {
  MakeDataDir({unrelated_});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LocalIndex> index, LocalIndex::Open(Options()));
  MakeDataDir({registered_});  // copsd registers while the milter holds its copy open
  EXPECT_EQ(CheckLocally(*index, Mail(registered_)).outcome, MessageVerdict::Outcome::kClean);
  ASSERT_OK(index->Reopen());
  EXPECT_EQ(index->documents(), 2u);
  EXPECT_EQ(CheckLocally(*index, Mail(registered_)).outcome,
            MessageVerdict::Outcome::kViolation);
}

// The first messages after an open or a reopen find the index's blocks in the cache.
TEST_F(LocalIndexTest, WarmsItsBlockCacheOnOpenAndBeforeAReopenSwitches) {
  std::vector<std::string> texts;
  for (uint32_t i = 0; i < 40; ++i) {
    texts.push_back(absl::StrJoin(testing::Prose(6, 100 + i), "\n\n"));
  }
  MakeDataDir(texts);
  FlushIndex();  // in SST files, as a snapshot holds them (not only in the WAL)
  LocalIndexOptions cold_options = Options();
  cold_options.warm_cache_fill = 0;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LocalIndex> cold, LocalIndex::Open(cold_options));
  const uint64_t cold_bytes = cold->Stats().block_cache_bytes;
  EXPECT_FALSE(cold->Stats().block_cache_warming);

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LocalIndex> index, LocalIndex::Open(Options()));
  // Open returns while a low-priority thread reads; it ends on its own.
  for (int i = 0; i < 3000 && index->Stats().block_cache_warming; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_FALSE(index->Stats().block_cache_warming);
  const uint64_t warm_bytes = index->Stats().block_cache_bytes;
  EXPECT_GT(warm_bytes, 2 * cold_bytes + (64u << 10)) << "cold " << cold_bytes;

  MakeDataDir({registered_});
  FlushIndex();
  // Reopen reads the new copy in before checks see it.
  ASSERT_OK(index->Reopen());
  EXPECT_FALSE(index->Stats().block_cache_warming);
  EXPECT_GE(index->Stats().block_cache_bytes, warm_bytes);
  EXPECT_EQ(CheckLocally(*index, Mail(registered_)).outcome, MessageVerdict::Outcome::kViolation);
  ASSERT_OK(cold->Reopen());
  EXPECT_LT(cold->Stats().block_cache_bytes, warm_bytes / 2);
  // A stop asked for ends the reading early: the copy serves, its cache still cold.
  ASSERT_OK(index->Reopen([] { return true; }));
  EXPECT_LT(index->Stats().block_cache_bytes, warm_bytes);
  EXPECT_EQ(CheckLocally(*index, Mail(registered_)).outcome, MessageVerdict::Outcome::kViolation);
}

TEST_F(LocalIndexTest, RefusesAKeyOrParametersOtherThanTheIndexs) {
  MakeDataDir({registered_});
  const std::string wrong_key = dir_.Join("wrong.key");
  std::ofstream(wrong_key) << "00112233445566778899aabbccddeeff\n";
  LocalIndexOptions o = Options();
  o.key_file = wrong_key;
  absl::StatusOr<std::unique_ptr<LocalIndex>> opened = LocalIndex::Open(o);
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(opened.status().message().find("not the one the index"), std::string::npos)
      << opened.status();

  // The key kept outside the data directory, as copsd's --key-file: given, it opens.
  DataDir dir(data_dir_);
  const std::string moved_key = dir_.Join("hash.key");
  std::filesystem::rename(dir.KeyPath(0), moved_key);
  opened = LocalIndex::Open(Options());
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(opened.status().message().find("--key-file"), std::string::npos) << opened.status();
  o.key_file = moved_key;
  EXPECT_OK(LocalIndex::Open(o).status());

  // Parameters recorded beside the index that are not the index's own.
  ASSERT_OK_AND_ASSIGN(std::optional<ChunkingParams> params, dir.ReadParams());
  ASSERT_TRUE(params.has_value());
  params->k += 1;
  ASSERT_OK(dir.WriteParams(*params));
  opened = LocalIndex::Open(o);
  EXPECT_EQ(opened.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string differs =
      "k: " + std::to_string(params->k - 1) + " vs " + std::to_string(params->k);
  EXPECT_NE(opened.status().message().find(differs), std::string::npos) << opened.status();

  // The executable says why and exits 2 before it listens.
  const std::string command = testing::BuildDir() +
                              "/milter/cops-milter --listen inet:0@127.0.0.1 --data-dir '" +
                              data_dir_ + "' --key-file '" + wrong_key + "' 2>&1";
  FILE* out = popen(command.c_str(), "r");
  ASSERT_NE(out, nullptr);
  std::string printed;
  char buf[512];
  while (fgets(buf, sizeof(buf), out) != nullptr) printed += buf;
  const int status = pclose(out);
  ASSERT_TRUE(WIFEXITED(status)) << printed;
  EXPECT_EQ(WEXITSTATUS(status), 2) << printed;
  EXPECT_NE(printed.find("not the one the index"), std::string::npos) << printed;
}

}  // namespace
}  // namespace cops
