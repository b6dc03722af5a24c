#include "client/batch_check.h"

#include <sstream>
#include <string>
#include <vector>

#include "client/check_report.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/client/copy_detection_server.h"
#include "tests/server/test_corpus.h"

namespace cops {
namespace {

using nlohmann::json;
using testing_corpus::Corpus;
using testing_corpus::UnrelatedText;
using testing::CopyDetectionServer;

// Runs CheckBatch and keeps every result (without contents) in delivery order.
std::vector<BatchCheckResult> RunBatch(Client* client, const std::vector<std::string>& paths,
                                       BatchCheckOptions options, BatchCheckSummary* summary) {
  std::vector<BatchCheckResult> results;
  *summary = CheckBatch(client, paths, options, [&](BatchCheckResult& r) {
    r.content.clear();
    results.push_back(std::move(r));
  });
  return results;
}

TEST(ExpandPathsTest, DirectoriesRecursiveAndSortedFilesAndMissingNamesKept) {
  CopyDetectionServer server;  // for its temp dir
  ASSERT_TRUE(server.ok());
  const std::string b = server.Write("papers/b.txt", "b");
  const std::string a = server.Write("papers/sub/a.txt", "a");
  const std::string c = server.Write("papers/a.txt", "c");
  const std::string lone = server.Write("lone.txt", "x");
  const std::string missing = (server.dir() / "missing.txt").string();
  EXPECT_EQ(ExpandPaths({lone, (server.dir() / "papers").string(), missing}),
            (std::vector<std::string>{lone, c, b, a, missing}));
}

TEST(CheckBatchTest, OneResultPerDocumentInOrderWithViolationsAndErrors) {
  CopyDetectionServer server;
  ASSERT_TRUE(server.ok());
  const uint64_t id = server.Register("lighthouse", Corpus()[0].body);
  std::vector<std::string> paths;
  for (int i = 0; i < 12; ++i) {
    // Every third document copies the registered one; the others are new text.
    paths.push_back(server.Write("batch/" + std::to_string(100 + i) + ".txt",
                                 i % 3 == 0 ? Corpus()[0].body : UnrelatedText()));
  }
  paths.insert(paths.begin() + 5, (server.dir() / "batch/missing.txt").string());
  paths.push_back(server.Write("batch/empty.txt", ""));

  BatchCheckOptions options;
  options.streams = 3;
  options.window = 4;  // smaller than the batch: results must still all come, in order
  BatchCheckSummary summary;
  std::vector<BatchCheckResult> results = RunBatch(server.client(), paths, options, &summary);

  ASSERT_EQ(results.size(), paths.size());
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i].index, i);
    EXPECT_EQ(results[i].path, paths[i]);
  }
  EXPECT_EQ(results[5].reply.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(results.back().reply.status().code(), absl::StatusCode::kInvalidArgument)
      << results.back().reply.status();
  size_t violations = 0;
  for (size_t i = 0; i + 1 < results.size(); ++i) {
    if (i == 5) continue;
    const size_t doc = i < 5 ? i : i - 1;
    ASSERT_TRUE(results[i].reply.ok()) << results[i].reply.status();
    EXPECT_EQ(results[i].reply->violation(), doc % 3 == 0) << paths[i];
    if (doc % 3 == 0) {
      ++violations;
      ASSERT_GE(results[i].reply->matches_size(), 1);
      EXPECT_EQ(results[i].reply->matches(0).doc_id(), id);
    }
  }
  EXPECT_EQ(summary.documents, paths.size());
  EXPECT_EQ(summary.violations, violations);
  EXPECT_EQ(summary.failed, 2u);
  EXPECT_EQ(summary.ExitCode(), 2);
}

TEST(CheckBatchTest, ExitCodeIsOneForViolationsWithoutFailures) {
  BatchCheckSummary s;
  s.documents = 3;
  EXPECT_EQ(s.ExitCode(), 0);
  s.violations = 1;
  EXPECT_EQ(s.ExitCode(), 1);
  s.failed = 1;
  EXPECT_EQ(s.ExitCode(), 2);
}

TEST(CheckBatchTest, OptionsOfTheBaseRequestApplyToEveryDocument) {
  CopyDetectionServer server;
  ASSERT_TRUE(server.ok());
  server.Register("lighthouse", Corpus()[0].body, "essays");
  server.Register("unrelated", testing_corpus::UnrelatedText(), "elsewhere");
  const std::string copy = server.Write("copy.txt", Corpus()[0].body);
  BatchCheckOptions options;
  options.request.add_collections("elsewhere");  // not where the copied text is
  BatchCheckSummary summary;
  std::vector<BatchCheckResult> results = RunBatch(server.client(), {copy, copy}, options,
                                                   &summary);
  ASSERT_EQ(results.size(), 2u);
  for (const BatchCheckResult& r : results) {
    ASSERT_TRUE(r.reply.ok()) << r.reply.status();
    EXPECT_FALSE(r.reply->violation());
    EXPECT_EQ(r.reply->matches_size(), 0);
  }
  options.request.clear_collections();
  options.request.mutable_options()->set_want_spans(false);
  results = RunBatch(server.client(), {copy}, options, &summary);
  ASSERT_TRUE(results[0].reply.ok());
  ASSERT_EQ(results[0].reply->matches_size(), 1);
  EXPECT_EQ(results[0].reply->matches(0).spans_size(), 0);
}

TEST(CheckReportTest, BatchJsonLinesCarryThePathAndTheErrors) {
  v1::CheckDocumentReply reply;
  reply.set_violation(true);
  reply.add_matches()->set_doc_id(7);
  const json line = json::parse(CheckJsonLine(reply, "papers/a.txt"));
  EXPECT_EQ(line["path"], "papers/a.txt");
  EXPECT_EQ(line["violation"], true);
  EXPECT_EQ(line["matches"][0]["doc_id"], 7);
  EXPECT_FALSE(json::parse(CheckJsonLine(reply)).contains("path"));
  const json error = json::parse(ErrorJsonLine("x.pdf", absl::InvalidArgumentError("bad PDF")));
  EXPECT_EQ(error, json({{"path", "x.pdf"}, {"error", "INVALID_ARGUMENT: bad PDF"}}));
}

TEST(CheckReportTest, TextManipulationIsInTheJsonAndTheTerminalReport) {
  v1::CheckDocumentReply reply;
  v1::Manipulation* m = reply.add_manipulations();
  m->set_kind(v1::MANIPULATION_INVISIBLE);
  m->set_count(3);
  v1::ExcludedPassage* r = m->add_ranges();
  r->set_test_start(10);
  r->set_test_end(16);
  const json line = json::parse(CheckJsonLine(reply));
  ASSERT_TRUE(line.contains("manipulation"));
  EXPECT_EQ(line["manipulation"][0]["kind"], "invisible");
  EXPECT_EQ(line["manipulation"][0]["count"], 3);
  EXPECT_EQ(line["manipulation"][0]["ranges"][0]["test_start"], 10);
  EXPECT_EQ(line["manipulation"][0]["ranges"][0]["test_end"], 16);
  std::ostringstream human;
  PrintCheckHuman(reply, "", false, human);
  EXPECT_NE(human.str().find("text manipulation suspected: invisible characters removed (3, at "
                             "10-16);"),
            std::string::npos)
      << human.str();
  // Letters replaced by images, named like the other kinds.
  v1::Manipulation* images = reply.add_manipulations();
  images->set_kind(v1::MANIPULATION_IMAGE_IN_WORD);
  images->set_count(2);
  r = images->add_ranges();
  r->set_test_start(30);
  r->set_test_end(35);
  EXPECT_EQ(json::parse(CheckJsonLine(reply))["manipulation"][1]["kind"], "image_in_word");
  std::ostringstream with_images;
  PrintCheckHuman(reply, "", false, with_images);
  EXPECT_NE(with_images.str().find("; letters replaced by images (2, at 30-35);"),
            std::string::npos)
      << with_images.str();
  // A clean reply says nothing of it.
  EXPECT_FALSE(json::parse(CheckJsonLine(v1::CheckDocumentReply())).contains("manipulation"));
}

TEST(CheckReportTest, StemPairEvidenceAndTheDecisionAreInTheJsonAndTheTerminalReport) {
  v1::CheckDocumentReply reply;
  reply.set_violation(true);
  reply.set_stem_pairs(40);
  reply.set_stem_pairs_checked(true);
  v1::Match* revision = reply.add_matches();  // no passage: flagged by its pairs only
  revision->set_doc_id(3);
  revision->set_violation(true);
  revision->set_stem_pair_violation(true);
  revision->set_stem_pairs_shared(12);
  revision->set_stem_pair_share(0.3);
  v1::Match* copy = reply.add_matches();  // a copied passage
  copy->set_doc_id(5);
  copy->set_ratio(0.5);
  copy->set_violation(true);
  copy->set_chunk_violation(true);
  const json line = json::parse(CheckJsonLine(reply));
  EXPECT_EQ(line["stem_pairs"], 40);
  EXPECT_EQ(line["stem_pairs_checked"], true);
  EXPECT_EQ(line["matches"][0]["stem_pairs_shared"], 12);
  EXPECT_EQ(line["matches"][0]["stem_pair_share"], 0.3);
  EXPECT_EQ(line["matches"][0]["decided_by"], json({"stem_pairs"}));
  EXPECT_EQ(line["matches"][1]["decided_by"], json({"chunks"}));
  std::ostringstream human;
  PrintCheckHuman(reply, "", false, human);
  EXPECT_NE(human.str().find("40 content-stem pairs compared"), std::string::npos) << human.str();
  EXPECT_NE(human.str().find("VIOLATION by stem pairs\n  stem pairs 12/40 (0.300)"),
            std::string::npos)
      << human.str();
  EXPECT_NE(human.str().find("VIOLATION by chunks\n"), std::string::npos) << human.str();
  // Without pairs in the index, the pinned form is unchanged.
  reply.set_stem_pairs_checked(false);
  reply.set_stem_pairs(0);
  const json plain = json::parse(CheckJsonLine(reply));
  EXPECT_FALSE(plain.contains("stem_pairs"));
  EXPECT_FALSE(plain["matches"][0].contains("decided_by"));
}

TEST(CheckReportTest, AHeavyRevisionIsSaidInTheJsonAndTheTerminalReportWhenAskedFor) {
  v1::CheckDocumentReply reply;
  reply.set_violation(true);
  reply.mutable_params()->set_heavy_revisions(true);
  v1::Match* revision = reply.add_matches();  // a passage too short to count, runs in order
  revision->set_doc_id(3);
  revision->set_ratio(0.04);
  revision->set_violation(true);
  revision->set_revision_violation(true);
  revision->set_revision_grams(13);
  v1::Span* run = revision->add_spans();
  run->set_test_start(0);
  run->set_test_end(13);
  run->set_units(3);
  run->set_revision_run(true);
  v1::Match* below = reply.add_matches();
  below->set_doc_id(5);
  below->set_ratio(0.02);
  below->set_revision_grams(2);
  const json line = json::parse(CheckJsonLine(reply));
  EXPECT_EQ(line["params"]["heavy_revisions"], true);
  EXPECT_EQ(line["matches"][0]["decided_by"], json({"heavy_revision"}));
  EXPECT_EQ(line["matches"][0]["revision_grams"], 13);
  EXPECT_EQ(line["matches"][0]["spans"][0]["revision_run"], true);
  EXPECT_EQ(line["matches"][1]["decided_by"], json::array());
  EXPECT_EQ(line["matches"][1]["revision_grams"], 2);
  std::ostringstream human;
  PrintCheckHuman(reply, "narrow tubes with small emitters", false, human);
  EXPECT_NE(human.str().find("VIOLATION by heavy revision\n  heavy revision: 13 of its 3-word "
                             "runs in the order of both texts"),
            std::string::npos)
      << human.str();
  EXPECT_NE(human.str().find("bytes 0-13: [[narrow tubes ]]"), std::string::npos) << human.str();
  EXPECT_NE(human.str().find("[run kept in the same order]"), std::string::npos) << human.str();
  EXPECT_NE(human.str().find("; heavy revisions looked for;"), std::string::npos) << human.str();
  // A check that did not ask keeps the pinned form.
  reply.mutable_params()->set_heavy_revisions(false);
  revision->set_revision_violation(false);
  revision->set_chunk_violation(true);
  const json plain = json::parse(CheckJsonLine(reply));
  EXPECT_EQ(plain["params"]["heavy_revisions"], false);
  EXPECT_FALSE(plain["matches"][0].contains("decided_by"));
  EXPECT_FALSE(plain["matches"][0].contains("revision_grams"));
}

}  // namespace
}  // namespace cops
