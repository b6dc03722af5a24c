#include "client/compare.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/server/test_corpus.h"
#include "tests/testing/documents.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing_corpus::Corpus;

class CompareTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& name, const std::string& content) {
    std::ofstream((dir_ / name), std::ios::binary) << content;
    return (dir_ / name).string();
  }

  Comparison Compare(const std::vector<std::string>& paths, CompareOptions options = {}) {
    absl::StatusOr<Comparison> c = CompareFiles(paths, options);
    EXPECT_OK(c.status());
    return c.ok() ? *std::move(c) : Comparison{};
  }

  testing::TempDir temp_{"cops_compare"};
  const fs::path& dir_ = temp_.path();
};

TEST_F(CompareTest, PairsCarryBothSharesAndPassagesThatHoldTheSameText) {
  const std::string source = Corpus()[2].body;
  const std::string mixed = testing_corpus::ParagraphInsideNewText(source);
  const std::vector<std::string> paths = {
      Write("source.txt", source), Write("unrelated.txt", testing_corpus::UnrelatedText()),
      Write("mixed.txt", mixed), Write("other.txt", Corpus()[0].body)};
  Comparison c = Compare(paths);
  ASSERT_EQ(c.documents.size(), 4u);
  for (const ComparedDocument& d : c.documents) EXPECT_OK(d.status);
  EXPECT_EQ(c.documents[0].format, "text");

  ASSERT_EQ(c.pairs.size(), 1u);  // unrelated texts pair with nothing
  const DocumentPair& p = c.pairs[0];
  EXPECT_EQ(p.a, 0u);
  EXPECT_EQ(p.b, 2u);
  // One of the source's three paragraphs is in the mixed text, and makes up about a third
  // of it: both shares are partial, and neither is near 0 or 1.
  EXPECT_GT(p.a_in_b, 0.2);
  EXPECT_LT(p.a_in_b, 0.6);
  EXPECT_GT(p.b_in_a, 0.2);
  EXPECT_LT(p.b_in_a, 0.7);
  ASSERT_EQ(p.passages.size(), 1u);
  const SharedPassage& s = p.passages[0];
  const std::string in_a = source.substr(s.a_start, s.a_end - s.a_start);
  const std::string in_b = mixed.substr(s.b_start, s.b_end - s.b_start);
  EXPECT_EQ(in_a, in_b);  // the same words, placed exactly in both documents
  EXPECT_NE(in_a.find("Salmon stopped spawning"), std::string::npos) << in_a;
  EXPECT_GE(s.words, 40u);
  ASSERT_EQ(c.clusters.size(), 1u);
  EXPECT_EQ(c.clusters[0], (std::vector<size_t>{0, 2}));
}

TEST_F(CompareTest, DuplicatesAndNearDuplicatesClusterAndSortByShare) {
  const std::string body = Corpus()[3].body;
  const std::vector<std::string> paths = {
      Write("edited.txt", testing_corpus::EditedCopy(body)), Write("orig.txt", body),
      Write("copy.txt", body), Write("lone.txt", Corpus()[1].body)};
  Comparison c = Compare(paths);
  ASSERT_EQ(c.pairs.size(), 3u);
  // The exact copy first (1.0 both ways), then the edited copy with either.
  EXPECT_EQ(c.pairs[0].a, 1u);
  EXPECT_EQ(c.pairs[0].b, 2u);
  EXPECT_DOUBLE_EQ(c.pairs[0].a_in_b, 1.0);
  EXPECT_DOUBLE_EQ(c.pairs[0].b_in_a, 1.0);
  for (size_t i = 1; i < c.pairs.size(); ++i) {
    EXPECT_LE(c.pairs[i].Shared(), c.pairs[i - 1].Shared());
    EXPECT_EQ(c.pairs[i].a, 0u);  // the edited copy came first
    EXPECT_GT(c.pairs[i].Shared(), 0.2);
    EXPECT_LT(c.pairs[i].Shared(), 1.0);
  }
  ASSERT_EQ(c.clusters.size(), 1u);
  EXPECT_EQ(c.clusters[0], (std::vector<size_t>{0, 1, 2}));
}

TEST_F(CompareTest, UnreadableEmptyAndWordlessDocumentsFailAloneAndTheRestIsCompared) {
  const std::string body = Corpus()[0].body;
  const std::vector<std::string> paths = {
      Write("a.txt", body), (dir_ / "missing.txt").string(), Write("empty.txt", ""),
      Write("punctuation.txt", "... !!! ---\n"), Write("b.txt", body)};
  Comparison c = Compare(paths);
  ASSERT_EQ(c.documents.size(), 5u);
  EXPECT_EQ(c.documents[1].status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(c.documents[2].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.documents[3].status.code(), absl::StatusCode::kInvalidArgument);
  ASSERT_EQ(c.pairs.size(), 1u);
  EXPECT_EQ(c.pairs[0].a, 0u);
  EXPECT_EQ(c.pairs[0].b, 4u);
}

TEST_F(CompareTest, MinimumPassageLengthDecidesWhichPairsAreListed) {
  // Two texts sharing one 12-word sentence.
  const std::string shared = "the quick brown fox jumps over the lazy dog near the river bank";
  const std::vector<std::string> paths = {
      Write("x.txt", testing_corpus::Prose(1, 200) + " " + shared + " " +
                         testing_corpus::Prose(2, 200)),
      Write("y.txt", testing_corpus::Prose(3, 150) + " " + shared + " " +
                         testing_corpus::Prose(4, 150))};
  CompareOptions options;
  options.min_passage_units = 10;
  Comparison listed = Compare(paths, options);
  ASSERT_EQ(listed.pairs.size(), 1u);
  EXPECT_LT(listed.pairs[0].Shared(), 0.1);
  options.min_passage_units = 20;
  EXPECT_TRUE(Compare(paths, options).pairs.empty());
}

// A person's heavy rewrite keeps some of its source's 3-word runs in the source's order, and
// here no passage as long as the pairs asked for (its longest spans 20 words): the pair is
// listed as a heavy revision, as `cops check` flags the rewrite against the registered source,
// and not without the rule. A text on the same subject by someone else pairs with neither.
TEST_F(CompareTest, AHeavyRevisionIsListedUnlessTurnedOff) {
  const std::string source = testing::kDripIrrigation.source;
  const std::string reworded = testing::kDripIrrigation.reworded;
  const std::vector<std::string> paths = {
      Write("source.txt", source), Write("same_subject.txt", testing::kDripIrrigation.same_subject),
      Write("reworded.txt", reworded)};
  CompareOptions options;
  options.min_passage_units = 30;
  Comparison c = Compare(paths, options);
  ASSERT_EQ(c.pairs.size(), 1u);
  const DocumentPair& p = c.pairs[0];
  EXPECT_EQ(p.a, 0u);
  EXPECT_EQ(p.b, 2u);
  EXPECT_TRUE(p.heavy_revision);
  EXPECT_TRUE(c.heavy_revisions);
  // The chain's runs are shown in both documents, in b's order.
  ASSERT_GE(p.passages.size(), 3u);
  for (size_t i = 0; i < p.passages.size(); ++i) {
    const SharedPassage& s = p.passages[i];
    EXPECT_LT(s.a_start, s.a_end);
    EXPECT_LE(s.a_end, source.size());
    EXPECT_LT(s.b_start, s.b_end);
    EXPECT_LE(s.b_end, reworded.size());
    EXPECT_LT(s.words, options.min_passage_units);
    if (i > 0) {
      EXPECT_GT(s.b_start, p.passages[i - 1].b_start);
    }
  }
  EXPECT_NE(CompareText(c).find("(heavy revision)"), std::string::npos);
  json j = json::parse(CompareJson(c, {}));
  EXPECT_EQ(j["pairs"][0]["heavy_revision"], true);
  EXPECT_EQ(j["params"]["heavy_revisions"], true);

  options.heavy_revisions = false;
  const Comparison without = Compare(paths, options);
  EXPECT_TRUE(without.pairs.empty());
  EXPECT_EQ(json::parse(CompareJson(without, {}))["params"]["heavy_revisions"], false);
}

// Texts over 400 words are winnowed under the run's key: with a key of its own each run,
// the same batch could list other pairs, shares and passages. The key comes from the files'
// bytes: the same files give the same report, whatever their names and order.
TEST_F(CompareTest, TheSameFilesGiveTheSameReportAndAnotherBatchAnotherKey) {
  using testing_corpus::Prose;
  const std::string shared = Prose(1, 150);
  const std::vector<std::string> texts = {
      Prose(2, 500) + "\n\n" + shared + "\n\n" + Prose(3, 300),
      Prose(4, 400) + "\n\n" + shared.substr(0, shared.size() / 2) + "\n\n" + Prose(5, 400),
      Prose(6, 700), Prose(7, 200) + "\n\n" + shared + "\n\n" + Prose(8, 500)};
  std::vector<std::string> paths;
  for (size_t i = 0; i < texts.size(); ++i) {
    paths.push_back(Write("doc" + std::to_string(i) + ".txt", texts[i]));
  }
  const std::string first = CompareJson(Compare(paths), {});
  EXPECT_EQ(CompareJson(Compare(paths), {}), first);
  const json j = json::parse(first);
  EXPECT_EQ(j["pairs"].size(), 3u) << first;  // 0-1, 0-3, 1-3 share the passage
  const std::string chunking = j["params"]["chunking"];
  EXPECT_NE(chunking.find(" key="), std::string::npos) << chunking;

  // The same bytes under other names, in another order: the same key and pairs.
  std::vector<std::string> renamed;
  for (size_t i = texts.size(); i-- > 0;) {
    renamed.push_back(Write("renamed" + std::to_string(i) + ".txt", texts[i]));
  }
  const Comparison again = Compare(renamed);
  EXPECT_EQ(again.chunking, chunking);
  ASSERT_EQ(again.pairs.size(), 3u);
  const Comparison original = Compare(paths);
  const size_t last = texts.size() - 1;
  for (const DocumentPair& p : again.pairs) {
    // renamed[i] holds texts[last - i]; a pair is listed from its later document.
    bool found = false;
    for (const DocumentPair& q : original.pairs) {
      if (std::minmax(q.a, q.b) == std::minmax(last - p.a, last - p.b)) {
        found = true;
        EXPECT_NEAR(q.a_in_b, p.b_in_a, 0.05);
        EXPECT_NEAR(q.b_in_a, p.a_in_b, 0.05);
      }
    }
    EXPECT_TRUE(found) << "pair " << p.a << "-" << p.b;
  }

  // One file more (or other bytes): another key.
  paths.push_back(Write("extra.txt", Prose(9, 300)));
  EXPECT_NE(Compare(paths).chunking, chunking);
}

TEST_F(CompareTest, JsonHasThePinnedShapeWithPathsAsGiven) {
  const std::string body = Corpus()[0].body;
  const std::vector<std::string> paths = {Write("a.txt", body), Write("b.txt", body),
                                          (dir_ / "gone.txt").string()};
  Comparison c = Compare(paths);
  const std::vector<std::string> corpus = {R"({"path": "a.txt", "violation": false})"};
  json j = json::parse(CompareJson(c, corpus));
  ASSERT_EQ(j["documents"].size(), 3u);
  EXPECT_EQ(j["documents"][2]["path"], paths[2]);
  EXPECT_TRUE(j["documents"][2]["error"].is_string());
  ASSERT_EQ(j["pairs"].size(), 1u);
  const json& pair = j["pairs"][0];
  EXPECT_EQ(pair["a"], paths[0]);
  EXPECT_EQ(pair["b"], paths[1]);
  EXPECT_EQ(pair["a_in_b"], 1.0);
  EXPECT_EQ(pair["b_in_a"], 1.0);
  EXPECT_EQ(pair["heavy_revision"], false);  // a copy is listed by its passage
  ASSERT_EQ(pair["passages"].size(), 1u);
  for (const char* key : {"a_start", "a_end", "b_start", "b_end"}) {
    EXPECT_TRUE(pair["passages"][0][key].is_number_unsigned()) << key;
  }
  EXPECT_EQ(j["clusters"], json::array({json::array({paths[0], paths[1]})}));
  EXPECT_EQ(j["corpus"][0]["path"], "a.txt");
  EXPECT_FALSE(j.contains("registered"));
}

TEST_F(CompareTest, TheGivenChunkingParametersDecideWhatIsShared) {
  const std::string source = std::string(Corpus()[2].body) + Corpus()[3].body;
  const std::vector<std::string> paths = {Write("a.txt", source),
                                          // every 6th word replaced: 5-word runs survive
                                          Write("b.txt", testing_corpus::Reword(source, 6))};
  // The defaults verify on 3-word grams, half of which survive the edits.
  const Comparison defaults = Compare(paths);
  EXPECT_EQ(defaults.chunking_from, "defaults");
  ASSERT_EQ(defaults.pairs.size(), 1u);
  EXPECT_NEAR(defaults.pairs[0].b_in_a, 0.5, 0.1);
  // A server verifying on 6-word grams shares nothing of them: neither does its compare.
  CompareOptions options;
  options.params = ChunkingParams{};
  options.params->verify_k = 6;
  options.params->key_id = "the server's, replaced by the run's";
  const Comparison server = Compare(paths, options);
  EXPECT_EQ(server.chunking_from, "server");
  EXPECT_EQ(server.verify_k, 6u);
  EXPECT_NE(server.chunking.find("verify_k=6"), std::string::npos) << server.chunking;
  EXPECT_EQ(server.chunking.find("the server's"), std::string::npos);
  EXPECT_TRUE(server.pairs.empty());
  // A server without verification: its chunking, with the grams compare needs.
  options.params->verify_k = 0;
  options.params->dense_chunks = 0;
  options.params->k = 4;
  const Comparison unverified = Compare(paths, options);
  EXPECT_NE(unverified.chunking.find(" k=4 "), std::string::npos) << unverified.chunking;
  EXPECT_EQ(unverified.verify_k, kDefaultVerifyK);
  EXPECT_EQ(unverified.pairs.size(), 1u);
}

}  // namespace
}  // namespace cops
