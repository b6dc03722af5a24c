// The router of a partitioned cluster (server/router.h, docs/scale-out.md): how replies of the
// partitions are merged, and, end to end with real processes on loopback, a nats-server with
// JetStream, two partitions of two `copsd --follow --partitions 2 --partition P` replicas
// each and a `copsd --route` in front, compared with a single node holding the same
// documents.

#include "server/router.h"

#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "gtest/gtest.h"
#include "tests/testing/copsd_process.h"
#include "tests/testing/files.h"
#include "tests/testing/nats_server.h"
#include "tests/testing/net.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

v1::Match MatchOf(uint64_t id, double ratio, bool from_template = false) {
  v1::Match m;
  m.set_doc_id(id);
  m.set_ratio(ratio);
  m.set_from_template(from_template);
  return m;
}

v1::CheckDocumentReply ReplyOf(std::vector<v1::Match> matches, bool violation) {
  v1::CheckDocumentReply r;
  r.set_total_chunks(40);
  r.set_considered_chunks(38);
  r.set_format("text");
  r.set_verified(true);
  r.set_violation(violation);
  for (v1::Match& m : matches) *r.add_matches() = std::move(m);
  return r;
}

std::vector<uint64_t> Ids(const v1::CheckDocumentReply& r) {
  std::vector<uint64_t> ids;
  for (const v1::Match& m : r.matches()) ids.push_back(m.doc_id());
  return ids;
}

TEST(MergeCheckRepliesTest, OrdersAsOneNodeAndCutsAtMaxResults) {
  std::vector<std::optional<v1::CheckDocumentReply>> replies = {
      ReplyOf({MatchOf(7, 0.5), MatchOf(3, 0.2), MatchOf(9, 0.9, /*from_template=*/true)}, true),
      ReplyOf({MatchOf(4, 0.5), MatchOf(12, 0.7)}, false)};
  const v1::CheckDocumentReply merged = MergeCheckReplies(replies, 0);
  // Ratio descending, equal ratios by id, templates last whatever their ratio.
  EXPECT_EQ(Ids(merged), (std::vector<uint64_t>{12, 4, 7, 3, 9}));
  EXPECT_TRUE(merged.violation());
  EXPECT_FALSE(merged.partial());
  EXPECT_EQ(merged.total_chunks(), 40u);
  EXPECT_EQ(merged.considered_chunks(), 38u);
  EXPECT_EQ(Ids(MergeCheckReplies(replies, 2)), (std::vector<uint64_t>{12, 4}));
}

TEST(MergeCheckRepliesTest, ViolationCutOffOnAPartitionStillCounts) {
  // Partition 0 found a violation that its own max_results cut off: no match is shown, the
  // flag stays (as one node's report keeps it).
  std::vector<std::optional<v1::CheckDocumentReply>> replies = {
      ReplyOf({}, true), ReplyOf({MatchOf(2, 0.01)}, false)};
  EXPECT_TRUE(MergeCheckReplies(replies, 1).violation());
}

TEST(MergeCheckRepliesTest, MissingPartitionsMakeThePartialFlag) {
  std::vector<std::optional<v1::CheckDocumentReply>> replies = {
      std::nullopt, ReplyOf({MatchOf(5, 0.3)}, false), std::nullopt};
  const v1::CheckDocumentReply merged = MergeCheckReplies(replies, 20);
  EXPECT_TRUE(merged.partial());
  EXPECT_EQ(std::vector<uint32_t>(merged.missing_partitions().begin(),
                                  merged.missing_partitions().end()),
            (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(Ids(merged), (std::vector<uint64_t>{5}));
  EXPECT_FALSE(merged.violation());
}

TEST(MergeCheckRepliesTest, ExcludedPassagesAreUnitedOnce) {
  v1::CheckDocumentReply a = ReplyOf({}, false), b = ReplyOf({}, false);
  for (v1::CheckDocumentReply* r : {&a, &b}) {
    v1::ExcludedPassage* e = r->add_excluded();
    e->set_test_start(10);
    e->set_test_end(20);
    e->set_reason(v1::EXCLUSION_QUOTE);
  }
  v1::ExcludedPassage* t = b.add_excluded();
  t->set_test_start(0);
  t->set_test_end(5);
  t->set_reason(v1::EXCLUSION_TEMPLATE);
  const v1::CheckDocumentReply merged = MergeCheckReplies({a, b}, 20);
  ASSERT_EQ(merged.excluded_size(), 2);
  EXPECT_EQ(merged.excluded(0).test_start(), 0u);
  EXPECT_EQ(merged.excluded(1).reason(), v1::EXCLUSION_QUOTE);
}

// ---- End to end ----

// Polls `done` every 20 ms for up to 10 s.
bool Eventually(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// Document `i` of the test: 120 words drawn from a vocabulary of made-up words, so that
// documents share almost no passage.
std::string Text(size_t i) {
  std::mt19937 random(static_cast<uint32_t>(1000 + i));
  std::string text;
  for (int w = 0; w < 120; ++w) {
    const int length = 4 + static_cast<int>(random() % 5);
    for (int c = 0; c < length; ++c) text += static_cast<char>('a' + random() % 26);
    text += (w % 12 == 11) ? ". " : " ";
  }
  return text;
}

struct Copsd {
  std::unique_ptr<testing::CopsdProcess> process;
  std::unique_ptr<Client> client;
};

constexpr size_t kDocuments = 8;

class PartitionedClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::NatsServer::Installed()) GTEST_SKIP() << testing::NatsServer::kNotInstalled;
    ASSERT_OK_AND_ASSIGN(nats_, testing::NatsServer::Start(dir_.Join("nats")));
    for (uint32_t p = 0; p < 2; ++p) {
      for (uint32_t r = 0; r < 2; ++r) {
        std::vector<std::string> flags = {"--follow", nats_->url(), "--partitions", "2",
                                          "--partition", std::to_string(p)};
        if (WithMetrics()) {  // (stopping the metrics endpoint adds ~2 s per copsd)
          metrics_ports_[p][r] = testing::FreePort();
          flags.push_back("--metrics-listen");
          flags.push_back("127.0.0.1:" + std::to_string(metrics_ports_[p][r]));
        }
        ASSERT_NO_FATAL_FAILURE(Start("index-p" + std::to_string(p) + "r" + std::to_string(r),
                                      flags, &replicas_[p][r]));
      }
    }
    std::vector<std::string> router = {"--route", nats_->url(), "--partitions", "2",
                                       "--route-timeout-ms", "5000"};
    for (uint32_t p = 0; p < 2; ++p) {
      for (uint32_t r = 0; r < 2; ++r) {
        router.push_back("--replica");
        router.push_back(std::to_string(p) + "=" + replicas_[p][r].process->address());
      }
    }
    ASSERT_NO_FATAL_FAILURE(Start("router", router, &router_));
    ASSERT_NO_FATAL_FAILURE(Start("single", {}, &single_));
  }
  // Whether the replicas serve /metrics on metrics_ports_.
  virtual bool WithMetrics() const { return false; }

  void TearDown() override {
    for (auto& partition : replicas_) {
      for (Copsd& replica : partition) Stop(&replica);
    }
    Stop(&router_);
    Stop(&single_);
  }

  void Start(const std::string& name, std::vector<std::string> flags, Copsd* out) {
    flags.insert(flags.begin(), {"--hash-key", "000102030405060708090a0b0c0d0e0f"});
    ASSERT_OK_AND_ASSIGN(out->process, testing::CopsdProcess::Start(dir_.path() / name, flags));
    ClientOptions options;
    options.target = out->process->address();
    options.timeout = std::chrono::seconds(10);
    ASSERT_OK_AND_ASSIGN(out->client, Client::Connect(options));
  }

  static void Stop(Copsd* copsd, int signal = SIGTERM) {
    if (copsd->process == nullptr) return;
    copsd->client.reset();
    if (signal != SIGTERM) kill(copsd->process->pid(), signal);
    copsd->process->Stop();
    copsd->process.reset();
  }

  static v1::Document DocumentOf(size_t i) {
    v1::Document doc;
    doc.set_content(Text(i));
    doc.mutable_metadata()->set_title("document " + std::to_string(i));
    return doc;
  }

  // Registers the test's documents through the router and on the single node.
  void RegisterAll() {
    for (size_t i = 0; i < kDocuments; ++i) {
      ASSERT_OK_AND_ASSIGN(v1::RegisterDocumentReply routed, router_.client->Register(DocumentOf(i)));
      EXPECT_TRUE(routed.created()) << i;
      routed_ids_.push_back(routed.doc_id());
      ASSERT_OK_AND_ASSIGN(v1::RegisterDocumentReply single, single_.client->Register(DocumentOf(i)));
      single_ids_.push_back(single.doc_id());
    }
  }

  static absl::StatusOr<v1::CheckDocumentReply> Check(Copsd* copsd, size_t i,
                                                      uint64_t min_log_sequence = 0) {
    v1::CheckDocumentRequest request;
    request.set_content(Text(i));
    request.set_min_log_sequence(min_log_sequence);
    return copsd->client->Check(request);
  }

  uint64_t LastSequence() const { return routed_ids_.back(); }

  // out[p]: the index of a registered document that partition p holds (replica 0 says so).
  void DocumentOfEachPartition(size_t out[2]) {
    out[0] = out[1] = kDocuments;
    for (size_t i = 0; i < kDocuments; ++i) {
      for (uint32_t p = 0; p < 2; ++p) {
        if (replicas_[p][0].client->Get(routed_ids_[i]).ok()) out[p] = i;
      }
    }
    ASSERT_LT(out[0], kDocuments);
    ASSERT_LT(out[1], kDocuments);
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::NatsServer> nats_;
  Copsd replicas_[2][2];
  int metrics_ports_[2][2] = {};
  Copsd router_;
  Copsd single_;
  std::vector<uint64_t> routed_ids_;
  std::vector<uint64_t> single_ids_;
};

TEST_F(PartitionedClusterTest, RoutedChecksEqualASingleNodesWithIdsFromTheLog) {
  ASSERT_NO_FATAL_FAILURE(RegisterAll());
  // Ids are the events' log sequences: distinct, increasing.
  EXPECT_EQ(std::set<uint64_t>(routed_ids_.begin(), routed_ids_.end()).size(), kDocuments);
  // The documents are spread over both partitions, and both replicas of a partition hold
  // the same documents under the same ids.
  std::map<uint64_t, uint32_t> partition_of;
  for (uint32_t p = 0; p < 2; ++p) {
    for (uint64_t id : routed_ids_) {
      absl::StatusOr<v1::DocumentInfo> a = replicas_[p][0].client->Get(id);
      if (!a.ok()) continue;
      partition_of[id] = p;
      ASSERT_TRUE(Eventually([&] { return replicas_[p][1].client->Get(id).ok(); })) << id;
      ASSERT_OK_AND_ASSIGN(v1::DocumentInfo b, replicas_[p][1].client->Get(id));
      EXPECT_EQ(a->sha256(), b.sha256());
      EXPECT_EQ(a->metadata().title(), b.metadata().title());
    }
  }
  EXPECT_EQ(partition_of.size(), kDocuments);
  std::set<uint32_t> used;
  for (const auto& [id, p] : partition_of) used.insert(p);
  EXPECT_EQ(used.size(), 2u) << "all documents landed in one partition";

  for (size_t i = 0; i < kDocuments; ++i) {
    // Read your writes: the check asks for every event up to the last registration.
    ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply routed, Check(&router_, i, LastSequence()));
    ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply single, Check(&single_, i));
    EXPECT_FALSE(routed.partial());
    EXPECT_EQ(routed.violation(), single.violation());
    EXPECT_EQ(routed.considered_chunks(), single.considered_chunks());
    ASSERT_EQ(routed.matches_size(), single.matches_size()) << i;
    ASSERT_GT(routed.matches_size(), 0);
    EXPECT_EQ(routed.matches(0).doc_id(), routed_ids_[i]);
    for (int m = 0; m < routed.matches_size(); ++m) {
      const v1::Match& a = routed.matches(m);
      const v1::Match& b = single.matches(m);
      // The same document under its cluster id and its single-node id.
      const size_t doc = static_cast<size_t>(
          std::find(routed_ids_.begin(), routed_ids_.end(), a.doc_id()) - routed_ids_.begin());
      ASSERT_LT(doc, kDocuments);
      EXPECT_EQ(single_ids_[doc], b.doc_id());
      EXPECT_EQ(a.ratio(), b.ratio());
      EXPECT_EQ(a.violation(), b.violation());
      ASSERT_EQ(a.spans_size(), b.spans_size());
      for (int s = 0; s < a.spans_size(); ++s) {
        EXPECT_EQ(a.spans(s).test_start(), b.spans(s).test_start());
        EXPECT_EQ(a.spans(s).test_end(), b.spans(s).test_end());
        EXPECT_EQ(a.spans(s).registered_start(), b.spans(s).registered_start());
        EXPECT_EQ(a.spans(s).registered_end(), b.spans(s).registered_end());
      }
    }
  }
  // Reads through the router: stats sum the partitions, a document is found where it is.
  ASSERT_OK_AND_ASSIGN(v1::GetStatsReply stats, router_.client->Stats());
  EXPECT_EQ(stats.documents(), kDocuments);
  ASSERT_OK_AND_ASSIGN(v1::DocumentInfo info, router_.client->Get(routed_ids_[3]));
  EXPECT_EQ(info.metadata().title(), "document 3");

  // The same text again resolves to the first registration in its partition.
  ASSERT_OK_AND_ASSIGN(v1::RegisterDocumentReply again, router_.client->Register(DocumentOf(2)));
  EXPECT_FALSE(again.created());
  EXPECT_EQ(again.doc_id(), routed_ids_[2]);
}

TEST_F(PartitionedClusterTest, OneReplicaDownKeepsAnswersCompleteBothDownMakesThemPartial) {
  ASSERT_NO_FATAL_FAILURE(RegisterAll());
  // A document of each partition.
  size_t in_partition[2];
  ASSERT_NO_FATAL_FAILURE(DocumentOfEachPartition(in_partition));

  Stop(&replicas_[0][0], SIGKILL);
  for (size_t i : in_partition) {
    ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply reply, Check(&router_, i, LastSequence()));
    EXPECT_FALSE(reply.partial());
    ASSERT_GT(reply.matches_size(), 0);
    EXPECT_EQ(reply.matches(0).doc_id(), routed_ids_[i]);
    EXPECT_TRUE(reply.violation());
  }

  Stop(&replicas_[0][1], SIGKILL);
  // Partition 0 has no replica left: never a clean "no violation" for its document.
  ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply lost, Check(&router_, in_partition[0]));
  EXPECT_TRUE(lost.partial());
  EXPECT_EQ(std::vector<uint32_t>(lost.missing_partitions().begin(),
                                  lost.missing_partitions().end()),
            (std::vector<uint32_t>{0}));
  EXPECT_EQ(lost.matches_size(), 0);
  // Partition 1's documents are still found, in a reply flagged partial all the same.
  ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply kept, Check(&router_, in_partition[1]));
  EXPECT_TRUE(kept.partial());
  ASSERT_GT(kept.matches_size(), 0);
  EXPECT_EQ(kept.matches(0).doc_id(), routed_ids_[in_partition[1]]);
  // Reads that could need the missing partition fail instead of guessing.
  EXPECT_TRUE(absl::IsUnavailable(router_.client->Stats().status()));
}

// `cops check` against the router: a partial answer says so in its JSON and exits 2, unless
// it found a violation anyway (exit 1), as for scripts (README, docs/scale-out.md).
TEST_F(PartitionedClusterTest, TheCliFlagsAPartialAnswerAndExitsTwoUnlessItFoundAViolation) {
  ASSERT_NO_FATAL_FAILURE(RegisterAll());
  // A document of each partition.
  size_t in_partition[2];
  ASSERT_NO_FATAL_FAILURE(DocumentOfEachPartition(in_partition));
  // Both partitions hold every event up to the last registration before the kill.
  for (uint32_t p = 0; p < 2; ++p) {
    ASSERT_OK(Check(&replicas_[p][1], 0, LastSequence()).status());
  }
  Stop(&replicas_[0][0], SIGKILL);
  Stop(&replicas_[0][1], SIGKILL);
  const char* build = std::getenv("COPS_BUILD_DIR");
  ASSERT_NE(build, nullptr) << "run through ctest (COPS_BUILD_DIR)";
  // Runs `cops --json check` on document `i`'s text: exit code and output.
  auto cops_check = [&](size_t i) {
    const std::filesystem::path text = dir_.path() / ("check-" + std::to_string(i) + ".txt");
    const std::filesystem::path out = dir_.path() / ("check-" + std::to_string(i) + ".out");
    std::ofstream(text) << Text(i);
    const int code = testing::WaitExit(testing::Spawn(
        {std::string(build) + "/client/cops", "--server", router_.process->address(), "--json",
         "check", "--format", "text", text.string()},
        {}, out, out));
    return std::make_pair(code, testing::ReadFileOrEmpty(out));
  };
  // Partition 0's document: nowhere to be found, so no verdict, exit 2.
  const auto [lost_code, lost_out] = cops_check(in_partition[0]);
  EXPECT_EQ(lost_code, 2) << lost_out;
  EXPECT_NE(lost_out.find("\"partial\":true"), std::string::npos) << lost_out;
  EXPECT_NE(lost_out.find("\"missing_partitions\":[0]"), std::string::npos) << lost_out;
  EXPECT_NE(lost_out.find("\"violation\":false"), std::string::npos) << lost_out;
  // Partition 1's document: a violation is a violation, partial or not.
  const auto [kept_code, kept_out] = cops_check(in_partition[1]);
  EXPECT_EQ(kept_code, 1) << kept_out;
  EXPECT_NE(kept_out.find("\"partial\":true"), std::string::npos) << kept_out;
  EXPECT_NE(kept_out.find("\"violation\":true"), std::string::npos) << kept_out;
}

// A mail gateway's local replica: `copsd --follow` of a partitioned log without --partition
// consumes every partition's subject and answers as the single node holding the same documents.
TEST_F(PartitionedClusterTest, AGatewayFollowerOfEveryPartitionAnswersAsTheSingleNode) {
  Copsd gateway;
  ASSERT_NO_FATAL_FAILURE(
      Start("gateway", {"--follow", nats_->url(), "--partitions", "2"}, &gateway));
  ASSERT_NO_FATAL_FAILURE(RegisterAll());
  ASSERT_OK(router_.client->Unregister(routed_ids_[5]));
  for (size_t i = 0; i < kDocuments; ++i) {
    ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply local, Check(&gateway, i, LastSequence()));
    ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply single, Check(&single_, i));
    EXPECT_FALSE(local.partial());
    if (i == 5) {  // unregistered through the router
      for (const v1::Match& m : local.matches()) EXPECT_NE(m.doc_id(), routed_ids_[5]);
      continue;
    }
    EXPECT_EQ(local.violation(), single.violation()) << i;
    ASSERT_EQ(local.matches_size(), single.matches_size()) << i;
    ASSERT_GT(local.matches_size(), 0) << i;
    EXPECT_EQ(local.matches(0).doc_id(), routed_ids_[i]);
    EXPECT_EQ(local.matches(0).ratio(), single.matches(0).ratio());
  }
  ASSERT_TRUE(Eventually([&] {
    absl::StatusOr<v1::GetStatsReply> stats = gateway.client->Stats();
    return stats.ok() && stats->documents() == kDocuments - 1;
  }));
  // Read-only: registrations go to the log's writer, not to a gateway.
  EXPECT_FALSE(gateway.client->Register(DocumentOf(99)).ok());
  Stop(&gateway);
}

class PartitionedClusterMetricsTest : public PartitionedClusterTest {
 protected:
  bool WithMetrics() const override { return true; }
};

// The replicas of a partition take turns answering the router's checks: a partition's
// replicas add check capacity, not only availability.
TEST_F(PartitionedClusterMetricsTest, APartitionsReplicasTakeTurnsAnsweringChecks) {
  ASSERT_NO_FATAL_FAILURE(RegisterAll());
  // CheckDocument calls replica r of partition p answered OK, from its /metrics.
  auto checks_answered = [this](uint32_t p, uint32_t r) {
    const std::string series =
        "grpc_server_handled_total{grpc_code=\"OK\",grpc_method=\"CheckDocument\","
        "grpc_service=\"cops.v1.CopyDetection\",grpc_type=\"unary\"} ";
    const std::string text = testing::HttpGet(metrics_ports_[p][r], "/metrics");
    const size_t at = text.find(series);
    return at == std::string::npos ? 0 : std::stoi(text.substr(at + series.size()));
  };
  int before[2][2];
  for (uint32_t p = 0; p < 2; ++p) {
    for (uint32_t r = 0; r < 2; ++r) before[p][r] = checks_answered(p, r);
  }
  constexpr int kChecks = 8;
  for (int i = 0; i < kChecks; ++i) {
    ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply reply, Check(&router_, i % kDocuments));
    EXPECT_FALSE(reply.partial());
  }
  for (uint32_t p = 0; p < 2; ++p) {
    const int a = checks_answered(p, 0) - before[p][0];
    const int b = checks_answered(p, 1) - before[p][1];
    EXPECT_EQ(a + b, kChecks) << "partition " << p;
    EXPECT_EQ(a, kChecks / 2) << "partition " << p;
    EXPECT_EQ(b, kChecks / 2) << "partition " << p;
  }
}

TEST_F(PartitionedClusterTest, UnregistrationThroughTheRouterReachesTheDocumentsPartition) {
  ASSERT_NO_FATAL_FAILURE(RegisterAll());
  ASSERT_OK(router_.client->Unregister(routed_ids_[1]));
  ASSERT_TRUE(Eventually([&] {
    absl::StatusOr<v1::GetStatsReply> stats = router_.client->Stats();
    return stats.ok() && stats->documents() == kDocuments - 1;
  }));
  ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply reply, Check(&router_, 1));
  for (const v1::Match& m : reply.matches()) EXPECT_NE(m.doc_id(), routed_ids_[1]);
  EXPECT_TRUE(absl::IsNotFound(router_.client->Unregister(routed_ids_[1])));
}

}  // namespace
}  // namespace cops
