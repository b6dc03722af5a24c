// End to end: the real copsd on an ephemeral loopback port with a fresh data dir, driven by the
// real `cops` command line and by the client library.

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "client/client.h"
#include "core/hash_key.h"
#include "engine/retention_sweeper.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/client/copy_detection_server.h"
#include "tests/server/test_certificates.h"
#include "tests/server/test_corpus.h"
#include "tests/testing/documents.h"
#include "tests/testing/files.h"
#include "tests/testing/net.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_server.h"

namespace cops {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::BuildDir;
using testing::Spawn;
using testing::WaitExit;
using testing_corpus::Corpus;

void WriteFile(const fs::path& path, const std::string& content) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

struct CliRun {
  int exit_code;
  std::string out;
  std::string err;
};

class CopsCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (size_t i = 0; i < Corpus().size(); ++i) {
      WriteFile(dir_ / "corpus" / (std::to_string(i) + ".txt"), Corpus()[i].body);
    }
  }
  void TearDown() override { StopServer(); }

  void StartServer(std::vector<std::string> extra = {}) {
    fs::remove(dir_ / "port");
    std::vector<std::string> argv = {BuildDir() + "/server/copsd",
                                     "--data-dir", data_dir_.string(),
                                     "--listen", "127.0.0.1:0",
                                     "--port-file", (dir_ / "port").string(),
                                     "--log-level", "warn"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    server_ = Spawn(argv, {}, dir_ / "copsd.out", dir_ / "copsd.log");
    for (int i = 0; i < 300 && !fs::exists(dir_ / "port"); ++i) {
      int status;
      ASSERT_EQ(waitpid(server_, &status, WNOHANG), 0) << testing::ReadFileOrEmpty(dir_ / "copsd.log");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(fs::exists(dir_ / "port")) << testing::ReadFileOrEmpty(dir_ / "copsd.log");
    address_ = "127.0.0.1:" + std::to_string(std::stoi(testing::ReadFileOrEmpty(dir_ / "port")));
  }

  // SIGTERM, then the graceful shutdown's exit code.
  int StopServer() {
    if (server_ <= 0) return -1;
    kill(server_, SIGTERM);
    const int code = WaitExit(server_);
    server_ = -1;
    return code;
  }

  CliRun Cops(std::vector<std::string> args, const fs::path& stdin_file = {}) {
    std::vector<std::string> argv = {BuildDir() + "/client/cops", "--server", address_};
    if (!api_key_.empty()) argv.insert(argv.end(), {"--api-key", api_key_});
    argv.insert(argv.end(), args.begin(), args.end());
    fs::remove(dir_ / "cli.err");
    const pid_t pid = Spawn(argv, stdin_file, dir_ / "cli.out", dir_ / "cli.err");
    const int code = WaitExit(pid);
    return {code, testing::ReadFileOrEmpty(dir_ / "cli.out"), testing::ReadFileOrEmpty(dir_ / "cli.err")};
  }

  std::unique_ptr<Client> ApiClient() {
    ClientOptions options;
    options.target = address_;
    options.timeout = std::chrono::seconds(20);
    options.security.api_key = api_key_;
    absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(options);
    EXPECT_OK(client);
    return client.ok() ? *std::move(client) : nullptr;
  }

  json CheckJson(const fs::path& file, int expected_exit, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--json", "check", file.string()};
    args.insert(args.end(), extra.begin(), extra.end());
    CliRun r = Cops(args);
    EXPECT_EQ(r.exit_code, expected_exit) << r.out << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r.out;
    return j;
  }

  // Registers testing::kDripIrrigation's source; *reworded: a file of its heavy rewrite.
  void RegisterHeavyRewriteSource(fs::path* reworded) {
    const fs::path source = dir_ / "irrigation.txt";
    *reworded = dir_ / "reworded.txt";
    WriteFile(source, testing::kDripIrrigation.source);
    WriteFile(*reworded, testing::kDripIrrigation.reworded);
    ASSERT_EQ(Cops({"register", source.string()}).exit_code, 0);
  }

  uint64_t Documents() {
    CliRun r = Cops({"--json", "stats"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json j = json::parse(r.out, nullptr, false);
    if (!j.is_object()) {
      ADD_FAILURE() << r.out;
      return 0;
    }
    // The postings tree's shape: RocksDB's seven levels, and the compaction still to do.
    EXPECT_TRUE(j["postings_files_per_level"].is_array()) << r.out;
    EXPECT_EQ(j["postings_files_per_level"].size(), 7u) << r.out;
    EXPECT_TRUE(j["pending_compaction_bytes"].is_number_unsigned()) << r.out;
    EXPECT_TRUE(j["running_compactions"].is_number_unsigned()) << r.out;
    // copsd reads its index into the block cache after starting (--warm-cache).
    EXPECT_TRUE(j["block_cache_bytes"].is_number_unsigned()) << r.out;
    EXPECT_TRUE(j["block_cache_warming"].is_boolean()) << r.out;
    EXPECT_TRUE(j["hash_filter_filling"].is_boolean()) << r.out;
    return j["documents"].get<uint64_t>();
  }

  testing::TempDir tmp_{"cops_cli"};
  const fs::path dir_ = tmp_.path();
  fs::path data_dir_ = dir_ / "data";  // copsd's --data-dir
  pid_t server_ = -1;
  std::string address_;
  std::string api_key_;  // sent by Cops() and ApiClient() when set
};

TEST_F(CopsCliTest, RegisterThenCheckCopiesAndUnrelatedText) {
  StartServer();
  CliRun reg = Cops({"--json", "register", "--collection", "essays", (dir_ / "corpus").string()});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  std::vector<json> lines;
  std::istringstream in(reg.out);
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  ASSERT_EQ(lines.size(), Corpus().size());
  for (const json& l : lines) {
    EXPECT_TRUE(l["doc_id"].is_number_unsigned());
    EXPECT_TRUE(l["path"].is_string());
    EXPECT_GT(l["chunks"].get<int>(), 0);
    EXPECT_GT(l["stored_chunks"].get<int>(), 0);
    EXPECT_TRUE(l["duplicate_of"].is_null());
  }
  const uint64_t id1 = lines[1]["doc_id"];
  EXPECT_EQ(lines[1]["path"], (dir_ / "corpus" / "1.txt").string());

  // Exact copy: a violation, exit code 1, the contract's fields.
  WriteFile(dir_ / "exact.txt", Corpus()[1].body);
  json exact = CheckJson(dir_ / "exact.txt", 1);
  EXPECT_EQ(exact["violation"], true);
  EXPECT_GT(exact["chunks"].get<int>(), 0);
  EXPECT_GT(exact["selected_chunks"].get<int>(), 0);
  EXPECT_TRUE(exact["params"].is_object());
  ASSERT_EQ(exact["matches"].size(), 1u);
  const json& m = exact["matches"][0];
  EXPECT_EQ(m["doc_id"].get<uint64_t>(), id1);
  EXPECT_EQ(m["title"], "1.txt");
  EXPECT_TRUE(m["owner"].is_string());
  EXPECT_GT(m["ratio"].get<double>(), 0.95);
  EXPECT_LE(m["ratio"].get<double>(), 1.0);
  EXPECT_GT(m["containment"].get<double>(), 0.95);
  EXPECT_GT(m["matched_chunks"].get<int>(), 0);
  EXPECT_EQ(m["violation"], true);
  ASSERT_FALSE(m["spans"].empty());
  EXPECT_LE(m["spans"].back()["test_end"].get<size_t>(), std::string(Corpus()[1].body).size());

  // One copied paragraph inside new text: reported, with its span inside the paragraph.
  const std::string mixed = testing_corpus::ParagraphInsideNewText(Corpus()[2].body);
  WriteFile(dir_ / "mixed.txt", mixed);
  CliRun mixed_run = Cops({"--json", "check", (dir_ / "mixed.txt").string()});
  ASSERT_NE(mixed_run.exit_code, 2) << mixed_run.err;
  json mj = json::parse(mixed_run.out);
  ASSERT_EQ(mj["matches"].size(), 1u);
  EXPECT_EQ(mj["matches"][0]["doc_id"], lines[2]["doc_id"]);
  EXPECT_EQ(mixed_run.exit_code, mj["violation"].get<bool>() ? 1 : 0);
  const size_t para_at = mixed.find("The result was faster floods");
  EXPECT_GE(mj["matches"][0]["spans"][0]["test_start"].get<size_t>() + 2, para_at);

  // Edited copy: still found, from stdin.
  WriteFile(dir_ / "edited.txt", testing_corpus::EditedCopy(Corpus()[3].body));
  CliRun edited = Cops({"--json", "check", "-", "--threshold", "0.1"}, dir_ / "edited.txt");
  ASSERT_EQ(edited.exit_code, 1) << edited.err;
  EXPECT_EQ(json::parse(edited.out)["matches"][0]["doc_id"], lines[3]["doc_id"]);

  // Unrelated text: exit 0, no matches.
  WriteFile(dir_ / "unrelated.txt", testing_corpus::UnrelatedText());
  json unrelated = CheckJson(dir_ / "unrelated.txt", 0);
  EXPECT_EQ(unrelated["violation"], false);
  EXPECT_TRUE(unrelated["matches"].empty());

  // The human report marks the copied passage ([[...]] when stdout is not a terminal).
  CliRun human = Cops({"check", (dir_ / "mixed.txt").string()});
  const size_t open = human.out.find("[["), close = human.out.find("]]");
  ASSERT_NE(open, std::string::npos) << human.out;
  ASSERT_NE(close, std::string::npos) << human.out;
  EXPECT_NE(human.out.substr(open, close - open).find("Salmon stopped spawning"), std::string::npos)
      << human.out;
  EXPECT_NE(human.out.find("2.txt"), std::string::npos);
}

// `cops check PATH...`: files and a folder, one JSON line per document in input order, the
// failures with their error; exit 2 when a document failed, else 1 on a violation.
TEST_F(CopsCliTest, BatchCheckPrintsOneLinePerDocumentAndTheBatchExitCode) {
  StartServer();
  ASSERT_EQ(Cops({"register", (dir_ / "corpus").string()}).exit_code, 0);
  WriteFile(dir_ / "batch" / "a_copy.txt", Corpus()[1].body);
  WriteFile(dir_ / "batch" / "sub" / "b_new.txt", testing_corpus::UnrelatedText());
  WriteFile(dir_ / "batch" / "c_empty.txt", "");
  // A PDF that does not parse, and bytes that are no text in any format.
  WriteFile(dir_ / "batch" / "b_broken.pdf", "%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage");
  std::string noise;
  for (int i = 0; i < 4096; ++i) noise += static_cast<char>((i * 7919 + 13) % 256);
  WriteFile(dir_ / "batch" / "d_noise.bin", noise);
  const std::string lone = (dir_ / "unrelated.txt").string();
  WriteFile(lone, testing_corpus::UnrelatedText());

  CliRun run = Cops({"--json", "check", lone, (dir_ / "batch").string(),
                     (dir_ / "missing.txt").string()});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  std::vector<json> lines;
  std::istringstream in(run.out);
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line));
  ASSERT_EQ(lines.size(), 7u) << run.out;
  EXPECT_EQ(lines[0]["path"], lone);
  EXPECT_EQ(lines[0]["violation"], false);
  EXPECT_EQ(lines[1]["path"], (dir_ / "batch" / "a_copy.txt").string());
  EXPECT_EQ(lines[1]["violation"], true);
  EXPECT_EQ(lines[1]["matches"][0]["title"], "1.txt");
  // Each document that cannot be read or converted has its own error line; the batch goes on.
  for (const auto& [line, name] : {std::pair{2, "b_broken.pdf"}, std::pair{3, "c_empty.txt"},
                                   std::pair{4, "d_noise.bin"}}) {
    EXPECT_EQ(lines[line]["path"], (dir_ / "batch" / name).string());
    EXPECT_NE(lines[line]["error"].get<std::string>().find("INVALID_ARGUMENT"),
              std::string::npos)
        << lines[line];
    EXPECT_EQ(lines[line].size(), 2u);  // {"path", "error"} only
  }
  EXPECT_EQ(lines[5]["path"], (dir_ / "batch" / "sub" / "b_new.txt").string());
  EXPECT_EQ(lines[5]["violation"], false);
  EXPECT_EQ(lines[6]["path"], (dir_ / "missing.txt").string());
  EXPECT_NE(lines[6]["error"].get<std::string>().find("NOT_FOUND"), std::string::npos);

  // Without failures a violation gives 1; the terminal form has a line per document.
  CliRun human = Cops({"check", lone, (dir_ / "batch" / "a_copy.txt").string()});
  EXPECT_EQ(human.exit_code, 1) << human.err;
  EXPECT_NE(human.out.find("VIOLATION  " + (dir_ / "batch" / "a_copy.txt").string()),
            std::string::npos) << human.out;
  EXPECT_NE(human.out.find("2 document(s): 1 violation(s), 0 failed"), std::string::npos)
      << human.out;
  EXPECT_EQ(Cops({"check", lone, lone}).exit_code, 0);

  // --html: one page for the batch, the copy highlighted, the registered source beside it.
  const std::string page = (dir_ / "report.html").string();
  EXPECT_EQ(Cops({"check", "--html", page, lone, (dir_ / "batch" / "a_copy.txt").string()})
                .exit_code, 1);
  const std::string html = testing::ReadFileOrEmpty(page);
  EXPECT_NE(html.find("<mark style=\"background:"), std::string::npos);
  EXPECT_NE(html.find("#" + lines[1]["matches"][0]["doc_id"].dump() + " &quot;1.txt&quot;"),
            std::string::npos);
  EXPECT_NE(html.find("<td class=passage>" + std::string(Corpus()[1].body).substr(0, 40)),
            std::string::npos);
}

// `cops compare`: pairs within the batch and each document against the corpus, nothing
// registered; with --register-into the batch is registered afterwards, so the next batch's
// corpus check finds it.
TEST_F(CopsCliTest, CompareFindsPairsAndTheCorpusAndRegistersOnlyWhenAsked) {
  StartServer();
  ASSERT_EQ(Cops({"register", (dir_ / "corpus" / "0.txt").string()}).exit_code, 0);
  WriteFile(dir_ / "y1" / "copy_of_registered.txt", Corpus()[0].body);
  WriteFile(dir_ / "y1" / "one.txt", Corpus()[2].body);
  WriteFile(dir_ / "y1" / "two.txt", testing_corpus::ParagraphInsideNewText(Corpus()[2].body));
  CliRun run = Cops({"--json", "compare", (dir_ / "y1").string()});
  ASSERT_EQ(run.exit_code, 1) << run.err;
  json j = json::parse(run.out);
  ASSERT_EQ(j["pairs"].size(), 1u) << run.out;
  EXPECT_EQ(j["pairs"][0]["a"], (dir_ / "y1" / "one.txt").string());
  EXPECT_EQ(j["pairs"][0]["b"], (dir_ / "y1" / "two.txt").string());
  ASSERT_EQ(j["corpus"].size(), 3u);
  EXPECT_EQ(j["corpus"][0]["path"], (dir_ / "y1" / "copy_of_registered.txt").string());
  EXPECT_EQ(j["corpus"][0]["violation"], true);
  EXPECT_EQ(j["corpus"][1]["violation"], false);
  EXPECT_EQ(Documents(), 1u);  // compare registers nothing

  CliRun reg = Cops({"--json", "compare", "--register-into", "y1", (dir_ / "y1").string()});
  ASSERT_EQ(reg.exit_code, 1) << reg.err;
  json registered = json::parse(reg.out)["registered"];
  ASSERT_EQ(registered.size(), 3u);
  EXPECT_TRUE(registered[1]["doc_id"].is_number_unsigned());
  // All three: the copy of the document registered in the default collection is y1's own.
  EXPECT_EQ(Documents(), 4u);

  // Next year's batch: compared with this one through the corpus, offline without it.
  WriteFile(dir_ / "y2" / "reuse.txt", Corpus()[2].body);
  WriteFile(dir_ / "y2" / "new.txt", testing_corpus::UnrelatedText());
  json next = json::parse(Cops({"--json", "compare", (dir_ / "y2").string()}).out);
  ASSERT_EQ(next["corpus"].size(), 2u);
  EXPECT_EQ(next["corpus"][0]["violation"], false);
  EXPECT_EQ(next["corpus"][1]["violation"], true);
  EXPECT_EQ(next["corpus"][1]["matches"][0]["collection"], "y1");
  const std::string page = (dir_ / "compare.html").string();
  EXPECT_EQ(Cops({"compare", "--html", page, (dir_ / "y1").string()}).exit_code, 1);
  EXPECT_NE(testing::ReadFileOrEmpty(page).find("<h2>Pairs</h2>"), std::string::npos);
  CliRun offline = Cops({"compare", "--no-corpus", (dir_ / "y2").string()});
  EXPECT_EQ(offline.exit_code, 0) << offline.err;
  EXPECT_NE(offline.out.find("0 pair(s)"), std::string::npos) << offline.out;
}

// Exclusions (docs/reports.md): quoted passages, the references section, short matches
// and template collections do not count, and each excluded passage is reported as such.
TEST_F(CopsCliTest, ExclusionsAndTemplateCollectionsChangeTheVerdict) {
  StartServer();
  ASSERT_EQ(Cops({"register", (dir_ / "corpus" / "2.txt").string()}).exit_code, 0);
  const std::string body = Corpus()[2].body;
  const size_t p1 = body.find("\n\n");
  const std::string paragraph = body.substr(p1 + 2, body.find("\n\n", p1 + 2) - p1 - 2);
  const fs::path quoted = dir_ / "quoted.txt";
  WriteFile(quoted, testing_corpus::UnrelatedText() + "\nAs the essay puts it, \"" + paragraph +
                        "\"\n\n" + testing_corpus::Prose(8, 80) + "\n");
  EXPECT_EQ(CheckJson(quoted, 1)["violation"], true);
  json j = CheckJson(quoted, 0, {"--exclude-quotes"});
  EXPECT_EQ(j["params"]["exclude_quotes"], true);
  ASSERT_EQ(j["excluded"].size(), 1u) << j;
  EXPECT_EQ(j["excluded"][0]["reason"], "quote");
  ASSERT_EQ(j["matches"].size(), 1u) << j;
  EXPECT_EQ(j["matches"][0]["ratio"], 0.0);
  EXPECT_EQ(j["matches"][0]["spans"][0]["excluded"], "quote");
  CliRun human = Cops({"check", "--exclude-quotes", quoted.string()});
  EXPECT_EQ(human.exit_code, 0) << human.err;
  EXPECT_NE(human.out.find("[excluded: quoted]"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("exclusions: quotes;"), std::string::npos) << human.out;
  const std::string page = (dir_ / "excluded.html").string();
  EXPECT_EQ(Cops({"check", "--exclude-quotes", "--html", page, quoted.string()}).exit_code, 0);
  EXPECT_NE(testing::ReadFileOrEmpty(page).find("data-excluded=\"quote\""), std::string::npos);
  // Too short to count: every passage is shorter than 1000 words.
  j = CheckJson(quoted, 0, {"--min-match-words", "1000"});
  EXPECT_EQ(j["params"]["min_match_units"], 1000);
  EXPECT_EQ(j["matches"][0]["spans"][0]["excluded"], "short_match");
  // A violation needs min_violation_units matched words (12 by default) whatever the ratio:
  // the quoted paragraph, reported, is no violation when it needs 1000.
  EXPECT_EQ(CheckJson(quoted, 1)["params"]["min_violation_units"], 12);
  j = CheckJson(quoted, 0, {"--min-violation-words", "1000"});
  EXPECT_EQ(j["params"]["min_violation_units"], 1000);
  ASSERT_EQ(j["matches"].size(), 1u) << j;
  EXPECT_EQ(j["matches"][0]["violation"], false) << j;

  const fs::path cited = dir_ / "cited.txt";
  WriteFile(cited, testing_corpus::Prose(9, 150) + "\n\nReferences\n\n" + paragraph + "\n");
  EXPECT_EQ(CheckJson(cited, 1)["violation"], true);
  j = CheckJson(cited, 0, {"--exclude-references"});
  EXPECT_EQ(j["excluded"][0]["reason"], "references");

  // A template collection, set up with the admin command (open mode: the local admin).
  CliRun created = Cops({"--json", "admin", "collection", "create", "cfp", "--template"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  EXPECT_EQ(json::parse(created.out)["template"], true);
  const std::string call = testing_corpus::Prose(20, 160);
  WriteFile(dir_ / "call.txt", call);
  ASSERT_EQ(Cops({"register", "--collection", "cfp", (dir_ / "call.txt").string()}).exit_code, 0);
  const fs::path answer = dir_ / "answer.txt";
  WriteFile(answer, call.substr(0, call.size() / 2) + "\n\n" + testing_corpus::Prose(21, 200));
  j = CheckJson(answer, 0);
  EXPECT_EQ(j["violation"], false);
  ASSERT_EQ(j["matches"].size(), 1u) << j;
  EXPECT_EQ(j["matches"][0]["template"], true);
  EXPECT_EQ(j["matches"][0]["collection"], "cfp");
  EXPECT_EQ(j["params"]["template_collections"], json::array({"cfp"}));
  EXPECT_EQ(j["excluded"][0]["reason"], "template");
}

// `cops compare` fingerprints under the server's chunking parameters (asked through GetStats,
// or a check for a caller not allowed statistics), so its pairs are those the server finds;
// without a server it falls back to the defaults and says so.
// `cops check --heavy-revisions` on a copsd --heavy-revisions=false: a person's rewrite of a
// registered text, no violation by its passages, is one as a heavy revision when asked for;
// the terminal report says why.
TEST_F(CopsCliTest, HeavyRevisionsAreFoundWhenTheCheckAsksForThem) {
  StartServer({"--heavy-revisions=false"});
  fs::path reworded;
  ASSERT_NO_FATAL_FAILURE(RegisterHeavyRewriteSource(&reworded));
  json j = CheckJson(reworded, 0);
  EXPECT_EQ(j["params"]["heavy_revisions"], false);
  j = CheckJson(reworded, 1, {"--heavy-revisions"});
  EXPECT_EQ(j["params"]["heavy_revisions"], true);
  ASSERT_FALSE(j["matches"].empty()) << j;
  EXPECT_EQ(j["matches"][0]["decided_by"], json({"heavy_revision"})) << j;
  CliRun human = Cops({"check", "--heavy-revisions", reworded.string()});
  EXPECT_EQ(human.exit_code, 1) << human.err;
  EXPECT_NE(human.out.find("VIOLATION by heavy revision\n  heavy revision: "), std::string::npos)
      << human.out;
  EXPECT_NE(human.out.find("[run kept in the same order]"), std::string::npos) << human.out;
}

// copsd's default: a check that does not say looks for heavy revisions; one that says
// --no-heavy-revisions does not.
TEST_F(CopsCliTest, HeavyRevisionsAreTheServersDefault) {
  const int metrics_port = testing::FreePort();
  StartServer({"--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port)});
  fs::path reworded;
  ASSERT_NO_FATAL_FAILURE(RegisterHeavyRewriteSource(&reworded));
  json j = CheckJson(reworded, 1);
  EXPECT_EQ(j["params"]["heavy_revisions"], true);
  ASSERT_FALSE(j["matches"].empty()) << j;
  EXPECT_EQ(j["matches"][0]["decided_by"], json({"heavy_revision"})) << j;
  j = CheckJson(reworded, 0, {"--no-heavy-revisions"});
  EXPECT_EQ(j["params"]["heavy_revisions"], false);
  EXPECT_EQ(j["violation"], false) << j;
  // The metrics count both checks, and the evidence of the violation.
  const std::string metrics = testing::HttpGet(metrics_port, "/metrics");
  for (const auto& [series, count] : std::map<std::string, double>{
           {R"(cops_checks_total{verdict="violation"})", 1},
           {R"(cops_checks_total{verdict="clean"})", 1},
           {R"(cops_check_violations_total{decided_by="heavy_revision"})", 1}}) {
    EXPECT_EQ(testing::ExposedValue(metrics, series), count) << series << "\n" << metrics;
  }
}

TEST_F(CopsCliTest, CompareUsesTheServersChunkingParameters) {
  StartServer({"--verify-k", "6", "--auth", "on"});
  std::string admin_key = testing::ReadFileOrEmpty(dir_ / "data" / "admin.key");
  while (!admin_key.empty() && std::isspace(static_cast<unsigned char>(admin_key.back()))) {
    admin_key.pop_back();
  }
  ASSERT_FALSE(admin_key.empty());
  CliRun made = Cops({"--api-key", admin_key, "--json", "admin", "principal", "create", "pc",
                      "--role", "checker", "--collection", "acm"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string checker_key = json::parse(made.out)["api_key"];
  // Every 6th word changed: 3-word runs survive (the default grams), no 6-word one does.
  const std::string source = std::string(Corpus()[2].body) + Corpus()[3].body;
  const std::string edited = testing_corpus::Reword(source, 6);
  WriteFile(dir_ / "pair" / "a.txt", source);
  WriteFile(dir_ / "pair" / "b.txt", edited);
  for (const std::string& key : {admin_key, checker_key}) {
    CliRun run = Cops({"--api-key", key, "--json", "compare", (dir_ / "pair").string()});
    ASSERT_EQ(run.exit_code, 0) << run.err;
    json j = json::parse(run.out);
    EXPECT_EQ(j["params"]["chunking_from"], "server");
    EXPECT_EQ(j["params"]["verify_k"], 6);
    EXPECT_EQ(j["pairs"].size(), 0u) << run.out;
  }
  StopServer();
  CliRun offline = Cops({"--json", "compare", "--no-corpus", (dir_ / "pair").string()});
  ASSERT_EQ(offline.exit_code, 1) << offline.err;
  json j = json::parse(offline.out);
  EXPECT_EQ(j["params"]["chunking_from"], "defaults");
  EXPECT_EQ(j["pairs"].size(), 1u);
  EXPECT_NE(offline.err.find("comparing under the defaults"), std::string::npos) << offline.err;
}

TEST_F(CopsCliTest, OneListenIsOnePortAndATakenPortIsRefused) {
  StartServer();
  const std::string port = address_.substr(address_.rfind(':') + 1);
  // Exactly one listening socket: a client reaches the port written to --port-file, and a
  // second copsd asked for that port cannot start (gRPC's SO_REUSEPORT would let it share).
  EXPECT_EQ(Cops({"stats"}).exit_code, 0);
  std::vector<std::string> argv = {BuildDir() + "/server/copsd",
                                   "--data-dir", (dir_ / "data2").string(),
                                   "--listen", address_, "--log-level", "warn"};
  const pid_t second = Spawn(argv, {}, dir_ / "copsd2.out", dir_ / "copsd2.log");
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 200 && done == 0; ++i) {  // a refused start exits within seconds
    done = waitpid(second, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (done == 0) {
    kill(second, SIGKILL);
    WaitExit(second);
  }
  ASSERT_EQ(done, second) << "a second copsd started on a taken port";
  EXPECT_NE(WEXITSTATUS(status), 0);
  EXPECT_NE(testing::ReadFileOrEmpty(dir_ / "copsd2.log").find("cannot listen on 127.0.0.1:" + port),
            std::string::npos)
      << testing::ReadFileOrEmpty(dir_ / "copsd2.log");
}

TEST_F(CopsCliTest, UnregisterAndRestartKeepTheIndexRight) {
  StartServer();
  std::unique_ptr<Client> api = ApiClient();
  ASSERT_NE(api, nullptr);
  std::vector<uint64_t> ids;
  for (const auto& t : Corpus()) {
    v1::Document doc;
    doc.set_content(t.body);
    doc.set_format(v1::DOCUMENT_FORMAT_TEXT);
    doc.mutable_metadata()->set_title(t.title);
    doc.mutable_metadata()->set_owner(t.owner);
    absl::StatusOr<v1::RegisterDocumentReply> r = api->Register(doc);
    ASSERT_OK(r);
    ids.push_back(r->doc_id());
  }
  WriteFile(dir_ / "copy0.txt", Corpus()[0].body);
  WriteFile(dir_ / "copy1.txt", Corpus()[1].body);
  EXPECT_EQ(CheckJson(dir_ / "copy0.txt", 1)["matches"][0]["title"], Corpus()[0].title);

  CliRun un = Cops({"unregister", std::to_string(ids[0])});
  ASSERT_EQ(un.exit_code, 0) << un.err;
  EXPECT_TRUE(CheckJson(dir_ / "copy0.txt", 0)["matches"].empty());
  EXPECT_EQ(Cops({"get", std::to_string(ids[0])}).exit_code, 2);

  // A graceful restart keeps everything acknowledged.
  ASSERT_EQ(StopServer(), 0) << testing::ReadFileOrEmpty(dir_ / "copsd.log");
  StartServer();
  EXPECT_EQ(Documents(), Corpus().size() - 1);
  EXPECT_TRUE(CheckJson(dir_ / "copy0.txt", 0)["matches"].empty());
  json again = CheckJson(dir_ / "copy1.txt", 1);
  EXPECT_EQ(again["matches"][0]["doc_id"].get<uint64_t>(), ids[1]);
  CliRun get = Cops({"--json", "get", std::to_string(ids[1])});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_EQ(json::parse(get.out)["owner"], Corpus()[1].owner);
  CliRun list = Cops({"--json", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(json::parse(list.out)["documents"].size(), Corpus().size() - 1);
}

// Backup and restore as docs/operations.md has it: `cops admin snapshot` while another client
// keeps registering, `cp -a` of the snapshot, the original gone, a copsd started on the copy.
TEST_F(CopsCliTest, ASnapshotCopiedAnywhereServesEveryDocumentAcknowledgedBeforeIt) {
  using Clock = std::chrono::steady_clock;
  StartServer({"--auth", "on"});
  std::ifstream(data_dir_ / "admin.key") >> api_key_;
  ASSERT_FALSE(api_key_.empty()) << "the bootstrap admin's key";
  ASSERT_EQ(Cops({"admin", "principal", "create", "acm-press", "--role", "owner",
                  "--collection", "acm"}).exit_code, 0);
  CliRun reg = Cops({"--json", "register", (dir_ / "corpus").string()});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  std::map<std::string, uint64_t> id_of;  // path -> id of every document acknowledged
  std::istringstream reg_lines(reg.out);
  for (std::string line; std::getline(reg_lines, line);) {
    const json j = json::parse(line);
    id_of[j["path"].get<std::string>()] = j["doc_id"].get<uint64_t>();
  }
  ASSERT_EQ(id_of.size(), Corpus().size());

  // Registrations on their own connection all along the snapshot call.
  struct Registration {
    fs::path path;
    uint64_t id;
    Clock::time_point sent, acknowledged;
  };
  absl::Mutex mu;
  std::vector<Registration> registered;
  std::atomic<bool> stop{false};
  std::unique_ptr<Client> api = ApiClient();
  ASSERT_NE(api, nullptr);
  std::thread registrar([&] {
    for (uint32_t seed = 1; seed <= 5000 && !stop.load(); ++seed) {
      v1::Document doc;
      doc.set_content(testing_corpus::Prose(seed, 150));
      doc.set_format(v1::DOCUMENT_FORMAT_TEXT);
      const Clock::time_point sent = Clock::now();
      absl::StatusOr<v1::RegisterDocumentReply> reply = api->Register(doc);
      if (!reply.ok()) {
        ADD_FAILURE() << reply.status();
        return;
      }
      const fs::path path = dir_ / "concurrent" / (std::to_string(seed) + ".txt");
      WriteFile(path, doc.content());
      absl::MutexLock lock(&mu);
      registered.push_back({path, reply->doc_id(), sent, Clock::now()});
    }
  });
  // Waits (at most 15 s) until `done` holds of the registrations so far.
  auto wait_for = [&](const std::function<bool(const std::vector<Registration>&)>& done) {
    const Clock::time_point until = Clock::now() + std::chrono::seconds(15);
    for (;;) {
      {
        absl::MutexLock lock(&mu);
        if (done(registered) || Clock::now() > until) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  };
  wait_for([](const auto& r) { return r.size() >= 5; });
  const Clock::time_point call_sent = Clock::now();
  CliRun snapshot = Cops({"--json", "admin", "snapshot", "nightly"});
  const Clock::time_point call_returned = Clock::now();
  wait_for([&](const auto& r) { return !r.empty() && r.back().sent > call_returned; });
  stop.store(true);
  registrar.join();
  ASSERT_EQ(snapshot.exit_code, 0) << snapshot.err;
  const fs::path snapshot_path = json::parse(snapshot.out)["path"].get<std::string>();
  EXPECT_EQ(snapshot_path, data_dir_ / "snapshots" / "nightly");
  ASSERT_EQ(StopServer(), 0) << testing::ReadFileOrEmpty(dir_ / "copsd.log");

  // Copied elsewhere as it is (modes included); the original data directory goes.
  const fs::path copy = dir_ / "restored";
  const pid_t cp = Spawn({"cp", "-a", snapshot_path.string(), copy.string()}, {},
                         dir_ / "cp.out", dir_ / "cp.out");
  ASSERT_EQ(WaitExit(cp), 0) << testing::ReadFileOrEmpty(dir_ / "cp.out");
  fs::remove_all(data_dir_);
  EXPECT_EQ(testing::NotOwnerOnly(copy), std::vector<std::string>{}) << "it holds secrets";
  data_dir_ = copy;
  // The same admin key works: the access store and admin.key came along.
  StartServer({"--auth", "on"});
  CliRun principals = Cops({"--json", "admin", "principal", "list"});
  ASSERT_EQ(principals.exit_code, 0) << principals.err;
  EXPECT_NE(principals.out.find("\"acm-press\""), std::string::npos) << principals.out;

  // Every document acknowledged before the call is found under its id, none registered
  // after it returned is, and one acknowledged during it is wholly there or absent.
  std::map<std::string, uint64_t> found;  // path -> the id it matched, 0 for none
  CliRun check = Cops({"--json", "check", (dir_ / "corpus").string(),
                       (dir_ / "concurrent").string()});
  ASSERT_EQ(check.exit_code, 1) << check.err;
  std::istringstream check_lines(check.out);
  for (std::string line; std::getline(check_lines, line);) {
    const json j = json::parse(line);
    found[j["path"].get<std::string>()] =
        j["matches"].empty() ? 0 : j["matches"][0]["doc_id"].get<uint64_t>();
  }
  size_t before = 0, during = 0, after = 0;
  for (const Registration& r : registered) {
    if (r.acknowledged < call_sent) {
      ++before;
      id_of[r.path.string()] = r.id;
    } else if (r.sent > call_returned) {
      ++after;
      EXPECT_EQ(found[r.path.string()], 0u) << r.path << " was registered after the snapshot";
    } else if (found[r.path.string()] != 0) {
      ++during;
      id_of[r.path.string()] = r.id;
    }
  }
  for (const auto& [path, id] : id_of) EXPECT_EQ(found[path], id) << path;
  EXPECT_GE(before, 5u);
  EXPECT_GE(after, 1u);
  EXPECT_EQ(Documents(), id_of.size()) << "no document is there in part";
  std::cout << "snapshot call of "
            << std::chrono::duration_cast<std::chrono::milliseconds>(call_returned - call_sent)
                   .count()
            << " ms: " << before << " registrations before it, " << during
            << " of those during it in the snapshot, " << after << " after it\n";
}

TEST_F(CopsCliTest, RotateKeyKeepsEveryDocumentFindableUnderTheNewKey) {
  StartServer();
  CliRun reg = Cops({"--json", "register", (dir_ / "corpus").string()});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  WriteFile(dir_ / "copy.txt", Corpus()[2].body);
  const json before = CheckJson(dir_ / "copy.txt", 1);
  const uint64_t id = before["matches"][0]["doc_id"].get<uint64_t>();
  CliRun stats = Cops({"--json", "stats"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  const std::string old_key = json::parse(stats.out)["key_id"].get<std::string>();

  CliRun rotate = Cops({"--json", "admin", "rotate-key", "--wait"});
  ASSERT_EQ(rotate.exit_code, 0) << rotate.err;
  const json done = json::parse(rotate.out.substr(rotate.out.rfind('{')));
  EXPECT_EQ(done["state"], "done") << rotate.out;
  EXPECT_EQ(done["documents_total"].get<uint64_t>(), Corpus().size());

  stats = Cops({"--json", "stats"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  const std::string new_key = json::parse(stats.out)["key_id"].get<std::string>();
  EXPECT_NE(new_key, old_key);
  EXPECT_EQ(done["key_id"], new_key) << rotate.out;
  // The same copy is found as the same document, under the new key, also after a restart.
  const json after = CheckJson(dir_ / "copy.txt", 1);
  EXPECT_EQ(after["matches"][0]["doc_id"].get<uint64_t>(), id);
  EXPECT_NE(after["params"]["chunking"].get<std::string>().find(new_key), std::string::npos);
  ASSERT_EQ(StopServer(), 0) << testing::ReadFileOrEmpty(dir_ / "copsd.log");
  StartServer();
  EXPECT_EQ(CheckJson(dir_ / "copy.txt", 1)["matches"][0]["doc_id"].get<uint64_t>(), id);
  EXPECT_EQ(Documents(), Corpus().size());
}

// The shell lines of docs/receipts.md between its receipt-check markers.
std::string DocumentedReceiptCheck() {
  const std::string doc =
      testing::ReadFileOrEmpty(fs::path(COPS_SOURCE_DIR) / "docs" / "receipts.md");
  const size_t begin = doc.find("<!-- receipt-check: begin -->\n```sh\n");
  const size_t end = doc.find("```\n<!-- receipt-check: end -->");
  if (begin == std::string::npos || end == std::string::npos || end < begin) return "";
  const size_t from = doc.find("```sh\n", begin) + 6;
  return doc.substr(from, end - from);
}

// `cops register --receipt-dir`, then `cops verify-receipt` (exit 0, 1 and 2) and the
// openssl command line of docs/receipts.md on the same receipt.
TEST_F(CopsCliTest, ReceiptsVerifyOfflineWithCopsAndWithOpenssl) {
  StartServer();
  const fs::path document = dir_ / "corpus" / "0.txt";
  CliRun reg = Cops({"register", "--receipt-dir", (dir_ / "receipts").string(), document.string()});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  const fs::path receipt = dir_ / "receipts" / "1.receipt.json";
  ASSERT_TRUE(fs::exists(receipt)) << reg.out;
  const std::string key_id = json::parse(testing::ReadFileOrEmpty(receipt))["key_id"];
  CliRun keys = Cops({"admin", "public-key"});
  ASSERT_EQ(keys.exit_code, 0) << keys.err;
  EXPECT_EQ(keys.out.rfind("# key_id " + key_id + " live\n-----BEGIN PUBLIC KEY-----", 0), 0u)
      << keys.out;
  WriteFile(dir_ / "keys.pem", keys.out);
  const std::string pem = (dir_ / "keys.pem").string();

  CliRun ok = Cops({"verify-receipt", receipt.string(), "--public-key", pem, "--document",
                    document.string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("VALID: signed by key " + key_id), std::string::npos) << ok.out;
  CliRun other = Cops({"verify-receipt", receipt.string(), "--public-key", pem, "--document",
                       (dir_ / "corpus" / "1.txt").string()});
  EXPECT_EQ(other.exit_code, 1) << other.out << other.err;
  EXPECT_NE(other.out.find("is not the registered document"), std::string::npos) << other.out;
  std::string forged = testing::ReadFileOrEmpty(receipt);
  const size_t at = forged.find(R"(\"doc_id\":1,)");
  ASSERT_NE(at, std::string::npos) << forged;
  forged.replace(at, 12, R"(\"doc_id\":2,)");
  WriteFile(dir_ / "forged.json", forged);
  CliRun bad = Cops({"verify-receipt", (dir_ / "forged.json").string(), "--public-key", pem});
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("INVALID: the signature does not verify"), std::string::npos) << bad.out;
  EXPECT_EQ(Cops({"verify-receipt", (dir_ / "missing.json").string(), "--public-key", pem})
                .exit_code,
            2);
  EXPECT_EQ(Cops({"verify-receipt", receipt.string()}).exit_code, 2) << "--public-key is required";

  // The documented openssl lines, verbatim, on the receipt and on the forged one.
  const std::string check = DocumentedReceiptCheck();
  ASSERT_NE(check.find("openssl pkeyutl -verify"), std::string::npos) << check;
  CliRun pub = Cops({"admin", "public-key", "--key-id", key_id});
  ASSERT_EQ(pub.exit_code, 0) << pub.err;
  const fs::path work = dir_ / "third-party";
  WriteFile(work / "pub.pem", pub.out);
  auto run_check = [&](const fs::path& file) {
    fs::copy_file(file, work / "1.receipt.json", fs::copy_options::overwrite_existing);
    const pid_t pid = Spawn({"sh", "-c", "cd '" + work.string() + "' && " + check}, {},
                            work / "out", work / "out");
    return CliRun{WaitExit(pid), testing::ReadFileOrEmpty(work / "out"), ""};
  };
  CliRun verified = run_check(receipt);
  EXPECT_EQ(verified.exit_code, 0) << verified.out;
  EXPECT_EQ(verified.out, key_id + "\nSignature Verified Successfully\n");
  CliRun refused = run_check(dir_ / "forged.json");
  EXPECT_NE(refused.exit_code, 0) << refused.out;
  EXPECT_NE(refused.out.find("Signature Verification Failure"), std::string::npos) << refused.out;
}

// The signing key is created once and kept across restarts; after a rotation, receipts of
// both keys verify against `cops admin public-key`.
TEST_F(CopsCliTest, SigningKeySurvivesRestartAndRotationKeepsOldReceiptsValid) {
  StartServer();
  const std::string receipts = (dir_ / "receipts").string();
  ASSERT_EQ(Cops({"register", "--receipt-dir", receipts, (dir_ / "corpus" / "0.txt").string()})
                .exit_code,
            0);
  ASSERT_EQ(StopServer(), 0) << testing::ReadFileOrEmpty(dir_ / "copsd.log");
  StartServer();
  ASSERT_EQ(Cops({"register", "--receipt-dir", receipts, (dir_ / "corpus" / "1.txt").string()})
                .exit_code,
            0);
  auto key_of = [&](int id) {
    return json::parse(testing::ReadFileOrEmpty(dir_ / "receipts" /
                                                (std::to_string(id) + ".receipt.json")))["key_id"]
        .get<std::string>();
  };
  EXPECT_EQ(key_of(2), key_of(1)) << "the same key after the restart";

  CliRun rotated = Cops({"--json", "admin", "rotate-signing-key"});
  ASSERT_EQ(rotated.exit_code, 0) << rotated.err;
  const std::string new_key = json::parse(rotated.out)["key_id"];
  EXPECT_NE(new_key, key_of(1));
  ASSERT_EQ(Cops({"register", "--receipt-dir", receipts, (dir_ / "corpus" / "2.txt").string()})
                .exit_code,
            0);
  EXPECT_EQ(key_of(3), new_key);
  CliRun keys = Cops({"admin", "public-key"});
  ASSERT_EQ(keys.exit_code, 0) << keys.err;
  EXPECT_NE(keys.out.find("# key_id " + key_of(1) + " retired"), std::string::npos) << keys.out;
  WriteFile(dir_ / "keys.pem", keys.out);
  for (int id : {1, 2, 3}) {
    CliRun v = Cops({"verify-receipt", (dir_ / "receipts" / (std::to_string(id) + ".receipt.json")).string(),
                     "--public-key", (dir_ / "keys.pem").string(), "--document",
                     (dir_ / "corpus" / (std::to_string(id - 1) + ".txt")).string()});
    EXPECT_EQ(v.exit_code, 0) << id << ": " << v.out << v.err;
  }
}

// `cops admin bulk-load begin` defers compaction (stats say so, level-0 files pile up),
// registrations and checks work meanwhile, and `... end` compacts them all away.
TEST_F(CopsCliTest, BulkLoadBeginAndEndKeepEveryDocumentFindable) {
  StartServer();
  CliRun begin = Cops({"--json", "admin", "bulk-load", "begin"});
  ASSERT_EQ(begin.exit_code, 0) << begin.err;
  EXPECT_TRUE(json::parse(begin.out)["bulk_loading"].get<bool>()) << begin.out;
  EXPECT_EQ(Cops({"admin", "bulk-load", "sideways"}).exit_code, 2);
  CliRun reg = Cops({"--json", "register", (dir_ / "corpus").string()});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  WriteFile(dir_ / "copy.txt", Corpus()[1].body);
  const uint64_t id = CheckJson(dir_ / "copy.txt", 1)["matches"][0]["doc_id"].get<uint64_t>();
  CliRun stats = Cops({"--json", "stats"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_TRUE(json::parse(stats.out)["bulk_loading"].get<bool>()) << stats.out;

  CliRun end = Cops({"--json", "admin", "bulk-load", "end"});
  ASSERT_EQ(end.exit_code, 0) << end.err;
  EXPECT_FALSE(json::parse(end.out)["bulk_loading"].get<bool>()) << end.out;
  stats = Cops({"--json", "stats"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  const json s = json::parse(stats.out);
  EXPECT_FALSE(s["bulk_loading"].get<bool>()) << stats.out;
  EXPECT_EQ(s["postings_files_per_level"][0].get<uint32_t>(), 0u) << stats.out;  // compacted
  EXPECT_EQ(CheckJson(dir_ / "copy.txt", 1)["matches"][0]["doc_id"].get<uint64_t>(), id);
  EXPECT_EQ(Documents(), Corpus().size());
}

TEST_F(CopsCliTest, BadInputsGetTheirStatusAndLeaveTheIndexIntact) {
  StartServer({"--max-document-bytes", "4096"});
  CliRun reg = Cops({"register", (dir_ / "corpus").string()});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  const uint64_t before = Documents();
  ASSERT_EQ(before, Corpus().size());

  WriteFile(dir_ / "empty.txt", "");
  CliRun empty = Cops({"register", (dir_ / "empty.txt").string()});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("INVALID_ARGUMENT"), std::string::npos) << empty.err;
  EXPECT_EQ(Cops({"check", (dir_ / "empty.txt").string()}).exit_code, 2);

  std::string big;
  while (big.size() < 5000) big += Corpus()[0].body;
  WriteFile(dir_ / "big.txt", big);

  // Several files go in one bulk stream: the bad ones fail alone, each named on stderr,
  // the good ones are registered and reported in path order.
  WriteFile(dir_ / "mixed" / "a.txt", testing_corpus::Prose(71, 80));
  WriteFile(dir_ / "mixed" / "b.txt", "");
  WriteFile(dir_ / "mixed" / "c.txt", big);
  WriteFile(dir_ / "mixed" / "d.txt", testing_corpus::Prose(72, 80));
  CliRun mixed = Cops({"--json", "register", (dir_ / "mixed").string()});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.err.find("b.txt: INVALID_ARGUMENT"), std::string::npos) << mixed.err;
  EXPECT_NE(mixed.err.find("c.txt: RESOURCE_EXHAUSTED"), std::string::npos) << mixed.err;
  std::istringstream lines(mixed.out);
  std::vector<std::string> paths;
  for (std::string line; std::getline(lines, line);) {
    paths.push_back(fs::path(json::parse(line)["path"].get<std::string>()).filename().string());
  }
  EXPECT_EQ(paths, (std::vector<std::string>{"a.txt", "d.txt"}));
  EXPECT_EQ(Documents(), before + 2);
  EXPECT_EQ(Cops({"unregister", std::to_string(before + 1)}).exit_code, 0);
  EXPECT_EQ(Cops({"unregister", std::to_string(before + 2)}).exit_code, 0);
  CliRun oversized = Cops({"register", (dir_ / "big.txt").string()});
  EXPECT_EQ(oversized.exit_code, 2);
  EXPECT_NE(oversized.err.find("RESOURCE_EXHAUSTED"), std::string::npos) << oversized.err;

  CliRun unknown = Cops({"unregister", "987654"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("NOT_FOUND"), std::string::npos) << unknown.err;
  EXPECT_NE(Cops({"get", "987654"}).err.find("NOT_FOUND"), std::string::npos);

  WriteFile(dir_ / "copy.txt", Corpus()[0].body);
  CliRun threshold = Cops({"check", (dir_ / "copy.txt").string(), "--threshold", "1.5"});
  EXPECT_EQ(threshold.exit_code, 2);
  EXPECT_NE(threshold.err.find("INVALID_ARGUMENT"), std::string::npos) << threshold.err;
  EXPECT_EQ(Cops({"check", (dir_ / "copy.txt").string(), "--format", "bogus"}).exit_code, 2);

  // A format number the server does not know, through the API.
  std::unique_ptr<Client> api = ApiClient();
  ASSERT_NE(api, nullptr);
  v1::Document doc;
  doc.set_content(Corpus()[0].body);
  doc.set_format(static_cast<v1::DocumentFormat>(42));
  EXPECT_EQ(api->Register(doc).status().code(), absl::StatusCode::kInvalidArgument);
  v1::CheckDocumentRequest check;
  check.set_content(Corpus()[0].body);
  check.mutable_options()->set_threshold(-0.5);
  EXPECT_EQ(api->Check(check).status().code(), absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(Documents(), before);
  EXPECT_EQ(CheckJson(dir_ / "copy.txt", 1)["violation"], true);
}

TEST_F(CopsCliTest, Windows1252FileIsAcceptedWithSpansInItsBytes) {
  StartServer();
  const std::string cp1252 = testing_corpus::Windows1252Text();
  WriteFile(dir_ / "old.txt", cp1252);
  CliRun reg = Cops({"--json", "register", (dir_ / "old.txt").string()});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  json r = json::parse(reg.out);
  EXPECT_GT(r["chunks"].get<int>(), 0);
  json c = CheckJson(dir_ / "old.txt", 1);
  ASSERT_EQ(c["matches"].size(), 1u);
  EXPECT_EQ(c["matches"][0]["doc_id"], r["doc_id"]);
  for (const json& s : c["matches"][0]["spans"]) {
    EXPECT_LE(s["test_end"].get<size_t>(), cp1252.size());
  }
  // The registered bytes come back exactly as sent.
  CliRun content = Cops({"get", "--content", std::to_string(r["doc_id"].get<uint64_t>())});
  EXPECT_EQ(content.out, cp1252);
}

TEST_F(CopsCliTest, AFileWithoutEndIsReadUpToWhatARequestCarries) {
  // /dev/zero named by mistake (or a pipe that never ends) was read until memory ran out.
  StartServer();
  for (const char* command : {"check", "register"}) {
    CliRun run = Cops({command, "/dev/zero"});
    EXPECT_EQ(run.exit_code, 2) << command;
    EXPECT_NE(run.err.find("/dev/zero is larger than 67108864 bytes"), std::string::npos)
        << run.err;
  }
  // A pipe of a real text is read whole, as a file is.
  WriteFile(dir_ / "copy.txt", Corpus()[0].body);
  ASSERT_EQ(Cops({"register", (dir_ / "corpus").string()}).exit_code, 0);
  EXPECT_EQ(Cops({"check", "-"}, dir_ / "copy.txt").exit_code, 1);
  EXPECT_EQ(Documents(), Corpus().size());
}

TEST_F(CopsCliTest, AFileNameThatIsNotUtf8RegistersAndMetadataThatIsNotIsRefused) {
  StartServer();
  // A Latin-1 file name (an old archive's): registered, its title shows the byte it cannot
  // read as U+FFFD.
  const fs::path latin1 = dir_ / "old" / "caf\xE9.txt";
  WriteFile(latin1, testing_corpus::Prose(73, 80));
  CliRun reg = Cops({"--json", "register", (dir_ / "old").string()});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  const uint64_t id = json::parse(reg.out)["doc_id"].get<uint64_t>();
  CliRun got = Cops({"--json", "get", std::to_string(id)});
  ASSERT_EQ(got.exit_code, 0) << got.err;
  EXPECT_EQ(json::parse(got.out)["title"], "caf\xEF\xBF\xBD.txt") << got.out;
  // Metadata given on the command line is the caller's own text: refused, nothing sent.
  WriteFile(dir_ / "new.txt", testing_corpus::Prose(74, 80));
  for (const char* flag : {"--title", "--author", "--collection", "--external-id"}) {
    CliRun bad = Cops({"register", (dir_ / "new.txt").string(), flag, "Caf\xE9"});
    EXPECT_EQ(bad.exit_code, 2) << flag;
    EXPECT_NE(bad.err.find(std::string(flag) + ": not valid UTF-8"), std::string::npos) << bad.err;
  }
  CliRun check = Cops({"check", (dir_ / "new.txt").string(), "--collection", "\xFF"});
  EXPECT_EQ(check.exit_code, 2);
  EXPECT_NE(check.err.find("--collection: not valid UTF-8"), std::string::npos) << check.err;
  EXPECT_EQ(Documents(), 1u);
}

}  // namespace
}  // namespace cops

namespace cops {
namespace {

TEST_F(CopsCliTest, BenchRegistersInBulkAndFindsTheCopiedMessages) {
  StartServer();
  CliRun run = Cops({"bench", "--documents", "40", "--bulk", "16", "--checks", "20",
                     "--concurrency", "2", "--bench-json"});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  std::istringstream lines(run.out);
  std::string line;
  std::vector<json> phases;
  while (std::getline(lines, line)) phases.push_back(json::parse(line));
  ASSERT_EQ(phases.size(), 2u) << run.out;
  EXPECT_EQ(phases[0]["phase"], "register-bulk");
  EXPECT_EQ(phases[0]["calls"], 3);  // streams of 16, 16 and 8 documents
  EXPECT_EQ(phases[0]["documents"], 40);
  EXPECT_EQ(phases[0]["errors"], 0);
  EXPECT_EQ(phases[1]["phase"], "check");
  EXPECT_EQ(phases[1]["errors"], 0);
  // Half of the messages (by default) embed a registered document.
  EXPECT_GT(phases[1]["violations"].get<int>(), 0);
  EXPECT_LT(phases[1]["violations"].get<int>(), 20);
  EXPECT_EQ(Documents(), 40u);
}

// The server writes a bulk stream in windows (here of 256 documents: 600 make three);
// results must stay in request order across windows, with duplicates resolved against
// earlier windows and within a window.
TEST_F(CopsCliTest, BulkRegisterAcrossWindowsKeepsOrderAndResolvesDuplicates) {
  StartServer({"--bulk-window-documents", "256"});
  std::unique_ptr<Client> api = ApiClient();
  ASSERT_NE(api, nullptr);
  constexpr int kDocs = 600;
  std::vector<v1::Document> docs;
  for (int i = 0; i < kDocs; ++i) {
    v1::Document doc;
    doc.set_content(testing_corpus::Prose(1000 + i, 60));
    doc.mutable_metadata()->set_external_id("bulk-" + std::to_string(i));
    docs.push_back(doc);
  }
  docs[10].set_content(docs[3].content());  // same window as its original
  docs[400].set_content(docs[5].content());  // a later window
  docs[256].mutable_metadata()->set_external_id("bulk-255");  // a retry across the boundary
  docs[500].clear_content();                                   // fails alone
  absl::StatusOr<v1::RegisterDocumentsReply> bulk = api->RegisterMany(docs);
  ASSERT_OK(bulk);
  ASSERT_EQ(bulk->results_size(), kDocs);
  EXPECT_EQ(bulk->failed(), 1u);
  EXPECT_EQ(bulk->registered(), kDocs - 1u);
  uint64_t last_new_id = 0;
  for (int i = 0; i < kDocs; ++i) {
    const v1::RegisterResult& r = bulk->results(i);
    EXPECT_EQ(r.index(), static_cast<uint32_t>(i));
    if (i == 500) {
      EXPECT_EQ(r.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
      continue;
    }
    ASSERT_TRUE(r.has_reply()) << i << ": " << r.error_message();
    if (i == 10 || i == 400 || i == 256) {
      EXPECT_FALSE(r.reply().created()) << i;
      continue;
    }
    EXPECT_TRUE(r.reply().created()) << i;
    EXPECT_GT(r.reply().doc_id(), last_new_id) << i;  // ids in request order
    last_new_id = r.reply().doc_id();
  }
  EXPECT_EQ(bulk->results(10).reply().duplicate_of(), bulk->results(3).reply().doc_id());
  EXPECT_EQ(bulk->results(400).reply().duplicate_of(), bulk->results(5).reply().doc_id());
  EXPECT_EQ(bulk->results(256).reply().doc_id(), bulk->results(255).reply().doc_id());

  // A document of the last window is found by a check and by id.
  v1::CheckDocumentRequest check;
  check.set_content(docs[590].content());
  absl::StatusOr<v1::CheckDocumentReply> reply = api->Check(check);
  ASSERT_OK(reply);
  ASSERT_GT(reply->matches_size(), 0);
  EXPECT_EQ(reply->matches(0).doc_id(), bulk->results(590).reply().doc_id());
  EXPECT_OK(api->Get(bulk->results(599).reply().doc_id(), false));
}

TEST_F(CopsCliTest, BulkRegisterAndCheckStreamPairRepliesWithRequests) {
  StartServer();
  std::unique_ptr<Client> api = ApiClient();
  ASSERT_NE(api, nullptr);
  std::vector<v1::Document> docs;
  for (const auto& t : Corpus()) {
    v1::Document doc;
    doc.set_content(t.body);
    docs.push_back(doc);
  }
  docs.emplace_back();  // empty: fails alone, the others are registered
  absl::StatusOr<v1::RegisterDocumentsReply> bulk = api->RegisterMany(docs);
  ASSERT_OK(bulk);
  EXPECT_EQ(bulk->registered(), Corpus().size());
  EXPECT_EQ(bulk->failed(), 1u);
  ASSERT_EQ(bulk->results_size(), static_cast<int>(docs.size()));
  EXPECT_EQ(bulk->results(static_cast<int>(Corpus().size())).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  grpc::ClientContext context;
  api->Prepare(&context);
  auto stream = api->stub()->CheckStream(&context);
  const std::vector<std::string> texts = {Corpus()[2].body, "", testing_corpus::UnrelatedText()};
  for (size_t i = 0; i < texts.size(); ++i) {
    v1::CheckDocumentRequest request;
    request.set_content(texts[i]);
    request.set_request_id("msg-" + std::to_string(i));
    ASSERT_TRUE(stream->Write(request));
  }
  stream->WritesDone();
  std::vector<v1::CheckDocumentReply> replies;
  for (v1::CheckDocumentReply reply; stream->Read(&reply);) replies.push_back(reply);
  ASSERT_OK(stream->Finish());
  ASSERT_EQ(replies.size(), texts.size());
  EXPECT_EQ(replies[0].request_id(), "msg-0");
  EXPECT_TRUE(replies[0].violation());
  EXPECT_EQ(replies[0].matches(0).doc_id(), bulk->results(2).reply().doc_id());
  EXPECT_EQ(replies[1].request_id(), "msg-1");
  EXPECT_EQ(replies[1].error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(replies[2].request_id(), "msg-2");
  EXPECT_EQ(replies[2].error_code(), 0);
  EXPECT_EQ(replies[2].matches_size(), 0);
}

// With --auth=off (loopback): a check or listing naming a collection nobody created is
// NOT_FOUND with exit 2; registering into a new collection creates it visibly, and a data
// directory whose collections were never recorded (older builds, --auth=off) gets them
// recorded at start.
TEST_F(CopsCliTest, UnknownCollectionsAreNotFoundAndARegistrationCreatesOneVisibly) {
  StartServer();
  WriteFile(dir_ / "copy.txt", Corpus()[0].body);
  CliRun check = Cops({"check", "--collection", "nosuch", (dir_ / "copy.txt").string()});
  EXPECT_EQ(check.exit_code, 2) << check.out;
  EXPECT_NE(check.err.find("NOT_FOUND: collection 'nosuch' does not exist"), std::string::npos)
      << check.err;
  CliRun list = Cops({"list", "--collection", "nosuch"});
  EXPECT_EQ(list.exit_code, 2) << list.out;
  EXPECT_NE(list.err.find("NOT_FOUND"), std::string::npos) << list.err;

  ASSERT_EQ(Cops({"register", "--collection", "papers", (dir_ / "corpus" / "0.txt").string()})
                .exit_code,
            0);
  auto listed = [&] { return Cops({"--json", "admin", "collection", "list"}).out; };
  EXPECT_NE(listed().find("\"name\":\"papers\""), std::string::npos) << listed();
  EXPECT_EQ(Cops({"check", "--collection", "papers", (dir_ / "copy.txt").string()}).exit_code, 1);

  // The access store lost (as a data directory of an older build that never recorded
  // collections registered into with --auth=off): the collection is recorded again at start.
  ASSERT_EQ(StopServer(), 0);
  fs::remove_all(dir_ / "data" / "access");
  StartServer();
  EXPECT_NE(listed().find("\"name\":\"papers\""), std::string::npos) << listed();
  EXPECT_EQ(Cops({"check", "--collection", "papers", (dir_ / "copy.txt").string()}).exit_code, 1);
}

// Mutual TLS on a loopback listener with the default --auth=auto: a client certificate is
// checked against the principals (authentication is on), so one that names no principal is
// refused; --auth=off with a client CA does not start.
TEST_F(CopsCliTest, ClientCertificatesNamingNoPrincipalAreRefusedOnLoopback) {
  testing::TestPki pki;
  fs::create_directories(dir_ / "pki");
  ASSERT_TRUE(pki.Create(dir_ / "pki"));
  ASSERT_TRUE(pki.MakeClient("stranger", "stranger"));
  ASSERT_TRUE(pki.MakeClient("gateway", "gateway"));
  const std::vector<std::string> tls = {"--tls-cert", pki.Path("server.pem"), "--tls-key",
                                        pki.Path("server.key"), "--tls-client-ca",
                                        pki.Path("ca.pem")};
  StartServer(tls);
  auto as = [&](const std::string& client, std::vector<std::string> args) {
    std::vector<std::string> argv = {"--tls-ca", pki.Path("ca.pem"), "--tls-cert",
                                     pki.Path(client + ".pem"), "--tls-key",
                                     pki.Path(client + ".key")};
    argv.insert(argv.end(), args.begin(), args.end());
    return Cops(argv);
  };
  CliRun stranger = as("stranger", {"stats"});
  EXPECT_EQ(stranger.exit_code, 2) << stranger.out;
  EXPECT_NE(stranger.err.find("UNAUTHENTICATED"), std::string::npos) << stranger.err;
  EXPECT_NE(stranger.err.find("'stranger' names no known principal"), std::string::npos)
      << stranger.err;
  // Authentication is on: the bootstrap admin exists, and a certificate naming a principal
  // acts as that principal.
  const std::string admin_key = testing::ReadFileOrEmpty(dir_ / "data" / "admin.key");
  ASSERT_FALSE(admin_key.empty());
  CliRun created = as("stranger", {"--api-key", admin_key.substr(0, admin_key.size() - 1),
                                   "admin", "principal", "create", "gateway", "--role",
                                   "checker", "--collection", "mail"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  CliRun gateway = as("gateway", {"stats"});
  EXPECT_EQ(gateway.exit_code, 2);
  EXPECT_NE(gateway.err.find("PERMISSION_DENIED"), std::string::npos) << gateway.err;
  const std::string unrelated = (dir_ / "unrelated.txt").string();
  WriteFile(unrelated, testing_corpus::UnrelatedText());
  CliRun checked = as("gateway", {"check", "--collection", "mail", unrelated});
  EXPECT_EQ(checked.exit_code, 0) << checked.err;
  EXPECT_EQ(StopServer(), 0);

  std::vector<std::string> argv = {BuildDir() + "/server/copsd", "--data-dir",
                                   (dir_ / "data").string(),     "--listen",
                                   "127.0.0.1:0",                "--auth",
                                   "off"};
  argv.insert(argv.end(), tls.begin(), tls.end());
  const pid_t off = Spawn(argv, {}, dir_ / "copsd-off.out", dir_ / "copsd-off.log");
  EXPECT_EQ(WaitExit(off), 2);
  EXPECT_NE(testing::ReadFileOrEmpty(dir_ / "copsd-off.log").find("--tls-client-ca"),
            std::string::npos)
      << testing::ReadFileOrEmpty(dir_ / "copsd-off.log");
}

// ---- Expiry, embargo and "who matched my documents" ----

TEST_F(CopsCliTest, ExpiryAndEmbargoAreShownKeptAcrossRestartsAndCheckedOnInput) {
  StartServer();
  const fs::path lighthouse = dir_ / "corpus" / "0.txt";
  const fs::path bread = dir_ / "corpus" / "1.txt";
  const auto now_micros = [] {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  const int64_t before = now_micros();
  CliRun reg = Cops({"--json", "register", "--expires", "30d", lighthouse.string()});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  const uint64_t expiring = json::parse(reg.out)["doc_id"].get<uint64_t>();
  reg = Cops({"--json", "register", "--not-before", "2999-01-01", bread.string()});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  const uint64_t embargoed = json::parse(reg.out)["doc_id"].get<uint64_t>();

  // The embargoed document is registered but no check reports it; the other one is found.
  EXPECT_TRUE(CheckJson(bread, 0)["matches"].empty());
  EXPECT_EQ(CheckJson(lighthouse, 1)["matches"][0]["doc_id"].get<uint64_t>(), expiring);

  ASSERT_EQ(StopServer(), 0);
  StartServer();
  CliRun get = Cops({"--json", "get", std::to_string(expiring)});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  const int64_t expires = json::parse(get.out)["expires_unix_micros"].get<int64_t>();
  constexpr int64_t k30Days = int64_t{30} * 86400 * 1000000;
  EXPECT_GE(expires, before + k30Days);
  EXPECT_LE(expires, now_micros() + k30Days);
  get = Cops({"get", std::to_string(embargoed)});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  EXPECT_NE(get.out.find("not_before_unix_micros: 32472144000000000 (2999-01-01T00:00:00Z)"),
            std::string::npos)
      << get.out;
  EXPECT_NE(get.out.find("expires_unix_micros: 0 (-)"), std::string::npos) << get.out;
  CliRun list = Cops({"list"});
  EXPECT_NE(list.out.find("not before 2999-01-01T00:00:00Z"), std::string::npos) << list.out;
  EXPECT_TRUE(CheckJson(bread, 0)["matches"].empty());

  // An expiry in the past is the server's INVALID_ARGUMENT; one it cannot read, the CLI's.
  CliRun past = Cops({"register", "--expires", "2020-01-01", (dir_ / "corpus" / "2.txt").string()});
  EXPECT_EQ(past.exit_code, 2);
  EXPECT_NE(past.err.find("INVALID_ARGUMENT"), std::string::npos) << past.err;
  EXPECT_NE(past.err.find("expiry 2020-01-01T00:00:00Z is not in the future"), std::string::npos)
      << past.err;
  CliRun unreadable = Cops({"register", "--expires", "soon", (dir_ / "corpus" / "2.txt").string()});
  EXPECT_EQ(unreadable.exit_code, 2);
  EXPECT_NE(unreadable.err.find("--expires: \"soon\""), std::string::npos) << unreadable.err;
  EXPECT_EQ(Documents(), 2u);
}

TEST_F(CopsCliTest, MatchesListsTheChecksOfTheCallersDocumentsOnly) {
  StartServer({"--auth", "on"});
  std::string admin = testing::ReadFileOrEmpty(dir_ / "data" / "admin.key");
  while (!admin.empty() && std::isspace(static_cast<unsigned char>(admin.back()))) admin.pop_back();
  ASSERT_FALSE(admin.empty());
  auto create = [&](const std::string& name, const std::string& role) {
    CliRun r = Cops({"--api-key", admin, "--json", "admin", "principal", "create", name,
                     "--role", role, "--collection", "essays"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json j = json::parse(r.out, nullptr, false);
    return j.is_object() ? j["api_key"].get<std::string>() : std::string();
  };
  const std::string press = create("harbour-press", "owner");
  const std::string kitchen = create("kitchen-notes", "owner");
  const std::string pc = create("pc", "checker");
  const fs::path lighthouse = dir_ / "corpus" / "0.txt";
  CliRun reg = Cops({"--api-key", press, "--json", "register", "--collection", "essays",
                     lighthouse.string()});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  const uint64_t id = json::parse(reg.out)["doc_id"].get<uint64_t>();
  ASSERT_EQ(Cops({"--api-key", kitchen, "register", "--collection", "essays",
                  (dir_ / "corpus" / "1.txt").string()})
                .exit_code,
            0);
  // The checker submits a copy of the lighthouse essay with a sentence of its own.
  const std::string submitted =
      std::string("A sentence only the checker wrote.\n\n") + Corpus()[0].body;
  WriteFile(dir_ / "submission.txt", submitted);
  EXPECT_EQ(Cops({"--api-key", pc, "check", (dir_ / "submission.txt").string()}).exit_code, 1);

  // The audit entry is written a moment after the check: poll for it.
  json matches;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    CliRun m = Cops({"--api-key", press, "--json", "matches"});
    ASSERT_EQ(m.exit_code, 0) << m.err;
    matches = json::parse(m.out)["matches"];
    if (!matches.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < deadline);
  ASSERT_EQ(matches.size(), 1u) << matches.dump();
  EXPECT_EQ(matches[0]["doc_id"].get<uint64_t>(), id);
  EXPECT_EQ(matches[0]["checker"], "pc");
  EXPECT_EQ(matches[0]["violation"], true);
  std::string digest;
  char hex[3];
  for (uint8_t b : Sha256(submitted)) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    digest += hex;
  }
  EXPECT_EQ(matches[0]["test_sha256"], digest);
  CliRun human = Cops({"--api-key", press, "matches", "--doc", std::to_string(id)});
  EXPECT_NE(human.out.find("#" + std::to_string(id) + "\tpc\tratio "), std::string::npos)
      << human.out;
  EXPECT_EQ(human.out.find("only the checker wrote"), std::string::npos) << human.out;
  CliRun later = Cops({"--api-key", press, "--json", "matches", "--since", "2999-01-01"});
  EXPECT_TRUE(json::parse(later.out)["matches"].empty()) << later.out;

  // The other owner's list is empty; a checker has none; an admin reads any owner's.
  CliRun other = Cops({"--api-key", kitchen, "--json", "matches"});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_TRUE(json::parse(other.out)["matches"].empty()) << other.out;
  CliRun checker = Cops({"--api-key", pc, "matches"});
  EXPECT_EQ(checker.exit_code, 2);
  EXPECT_NE(checker.err.find("PERMISSION_DENIED"), std::string::npos) << checker.err;
  CliRun as_admin = Cops({"--api-key", admin, "--json", "matches", "--owner", "harbour-press"});
  ASSERT_EQ(as_admin.exit_code, 0) << as_admin.err;
  EXPECT_EQ(json::parse(as_admin.out)["matches"].size(), 1u);
}

// The real `cops` binary against the services served in process (testing::TestServer), whose
// clock the test moves: a document's expiry passes without anyone waiting for it.
class CopsCliClockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(stack_.ok());
    RetentionSweeperOptions sweep;
    sweep.now_micros = [this] { return now_.load(); };
    sweeper_ = std::make_unique<RetentionSweeper>(stack_.generations(),
                                                  stack_.access()->store(), sweep);
    ASSERT_OK_AND_ASSIGN(server_, testing::TestServer::Start({stack_.service()}));
    WriteFile(dir_ / "essay.txt", Corpus()[0].body);
  }

  CliRun Cops(std::vector<std::string> args) {
    std::vector<std::string> argv = {BuildDir() + "/client/cops", "--server", server_->address()};
    argv.insert(argv.end(), args.begin(), args.end());
    const pid_t pid = Spawn(argv, {}, dir_ / "cli.out", dir_ / "cli.err");
    const int code = WaitExit(pid);
    return {code, testing::ReadFileOrEmpty(dir_ / "cli.out"),
            testing::ReadFileOrEmpty(dir_ / "cli.err")};
  }

  testing::TempDir tmp_{"cops_cli_clock"};
  const fs::path dir_ = tmp_.path();
  // The server's clock: the real time, so that the CLI's "2h from now" is the server's too.
  std::atomic<int64_t> now_{std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count()};
  testing::CopyDetectionStack stack_{tmp_, nullptr, [this] { return now_.load(); }};
  std::unique_ptr<RetentionSweeper> sweeper_;
  std::unique_ptr<testing::TestServer> server_;  // stops before the services go
};

TEST_F(CopsCliClockTest, ADocumentIsMatchedUntilItsExpiryThenSweptAway) {
  CliRun reg = Cops({"--json", "register", "--expires", "2h", (dir_ / "essay.txt").string()});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  const std::string id = std::to_string(json::parse(reg.out)["doc_id"].get<uint64_t>());
  EXPECT_EQ(Cops({"check", (dir_ / "essay.txt").string()}).exit_code, 1);

  now_ += int64_t{7260} * 1000000;  // two hours (and a minute: the CLI read its clock later)
  CliRun after = Cops({"--json", "check", (dir_ / "essay.txt").string()});
  EXPECT_EQ(after.exit_code, 0) << after.out;  // expired: no longer matched
  EXPECT_TRUE(json::parse(after.out)["matches"].empty()) << after.out;
  EXPECT_EQ(Cops({"get", id}).exit_code, 0);  // not yet swept
  // The same text registered again, before the sweep, is a new document, not the expired one.
  reg = Cops({"--json", "register", (dir_ / "essay.txt").string()});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  EXPECT_TRUE(json::parse(reg.out)["created"].get<bool>());
  const uint64_t renewed = json::parse(reg.out)["doc_id"].get<uint64_t>();
  EXPECT_NE(std::to_string(renewed), id);

  ASSERT_OK_AND_ASSIGN(SweepResult swept, sweeper_->SweepOnce());
  EXPECT_EQ(swept.documents_removed, 1u);
  CliRun gone = Cops({"get", id});
  EXPECT_EQ(gone.exit_code, 2);
  EXPECT_NE(gone.err.find("NOT_FOUND"), std::string::npos) << gone.err;
  CliRun found = Cops({"--json", "check", (dir_ / "essay.txt").string()});
  EXPECT_EQ(found.exit_code, 1) << found.out;
  EXPECT_EQ(json::parse(found.out)["matches"][0]["doc_id"].get<uint64_t>(), renewed) << found.out;
}

TEST_F(CopsCliClockTest, ACollectionsRetentionAppliesWithAuthenticationOff) {
  CollectionRecord yearly;
  yearly.name = "yearly";
  yearly.retention_seconds = 365 * 86400;
  ASSERT_OK(stack_.access()->PutCollection(yearly));
  CliRun reg = Cops({"--json", "register", "--collection", "yearly", (dir_ / "essay.txt").string()});
  ASSERT_EQ(reg.exit_code, 0) << reg.err;
  CliRun get = Cops({"--json", "get", std::to_string(json::parse(reg.out)["doc_id"].get<uint64_t>())});
  ASSERT_EQ(get.exit_code, 0) << get.err;
  const json record = json::parse(get.out);
  EXPECT_EQ(record["expires_unix_micros"].get<int64_t>(),
            record["registered_unix_micros"].get<int64_t>() + int64_t{365} * 86400 * 1000000);
}

}  // namespace
}  // namespace cops
