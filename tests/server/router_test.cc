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
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "client/client.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/message_differencer.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "http/api.h"
#include "httplib.h"
#include "nlohmann/json.hpp"
#include "proto/cops_admin.grpc.pb.h"
#include "tests/server/test_certificates.h"
#include "tests/testing/copsd_process.h"
#include "tests/testing/documents.h"
#include "tests/testing/files.h"
#include "tests/testing/nats_server.h"
#include "tests/testing/net.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

// The registration a router publishes: every metadata field as sent, the registration time
// its own, and the collection's retention as the expiry when none was given.
TEST(RoutedRegistrationEventTest, CarriesTheLifetimeAndAppliesTheCollectionsRetention) {
  constexpr int64_t kNow = 1'800'000'000'000'000;
  const Principal kAdmin{"admin", Role::kAdmin, {}, {}};
  v1::Document doc;
  doc.set_content("text");
  doc.mutable_metadata()->set_not_before_unix_micros(kNow + 10);
  doc.mutable_metadata()->set_expires_unix_micros(kNow + 20);
  ASSERT_OK_AND_ASSIGN(RegistrationEvent given, RoutedRegistrationEvent(doc, kAdmin, {}, kNow));
  EXPECT_EQ(given.metadata.not_before_unix_micros, kNow + 10);
  EXPECT_EQ(given.metadata.expires_unix_micros, kNow + 20);
  EXPECT_EQ(given.metadata.registered_unix_micros, kNow);
  CollectionPolicy policy;
  policy.retention_seconds = 60;
  ASSERT_OK_AND_ASSIGN(RegistrationEvent kept, RoutedRegistrationEvent(doc, kAdmin, policy, kNow));
  EXPECT_EQ(kept.metadata.expires_unix_micros, kNow + 20);  // its own expiry wins
  doc.mutable_metadata()->clear_expires_unix_micros();
  ASSERT_OK_AND_ASSIGN(RegistrationEvent retained, RoutedRegistrationEvent(doc, kAdmin, policy, kNow));
  EXPECT_EQ(retained.metadata.expires_unix_micros, kNow + 60'000'000);
  doc.mutable_metadata()->set_expires_unix_micros(kNow - 1);  // in the past
  EXPECT_TRUE(absl::IsInvalidArgument(RoutedRegistrationEvent(doc, kAdmin, policy, kNow).status()));
}

// An owner's routed registration is its own whatever owner the request names, as on a
// single node; an admin's keeps the owner it names.
TEST(RoutedRegistrationEventTest, AnOwnersDocumentIsOwnedByTheOwnerNotByTheNameItSends) {
  v1::Document doc;
  doc.set_content("text");
  doc.mutable_metadata()->set_owner("mallory");
  const Principal alice{"alice", Role::kOwner, {"a"}, {}};
  ASSERT_OK_AND_ASSIGN(RegistrationEvent owned, RoutedRegistrationEvent(doc, alice, {}, 1));
  EXPECT_EQ(owned.metadata.owner, "alice");
  const Principal admin{"admin", Role::kAdmin, {}, {}};
  ASSERT_OK_AND_ASSIGN(RegistrationEvent named, RoutedRegistrationEvent(doc, admin, {}, 1));
  EXPECT_EQ(named.metadata.owner, "mallory");
}

// The fan-out pool never runs more tasks at once than it has threads, however many queue.
TEST(FanOutPoolTest, RunsAtMostItsThreadsAtOnce) {
  std::atomic<int> running{0}, most{0}, done{0};
  {
    FanOutPool pool(3);
    for (int i = 0; i < 30; ++i) {
      pool.Schedule([&] {
        const int now = running.fetch_add(1) + 1;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
        running.fetch_sub(1);
        done.fetch_add(1);
      });
    }
  }  // the destructor runs what is queued
  EXPECT_EQ(done.load(), 30);
  EXPECT_LE(most.load(), 3);
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
    for (const std::string& flag : RouterFlags()) router.push_back(flag);
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
  // The router's own flags beyond those of the cluster.
  virtual std::vector<std::string> RouterFlags() const { return {}; }

  void TearDown() override {
    for (auto& partition : replicas_) {
      for (Copsd& replica : partition) Stop(&replica);
    }
    Stop(&router_);
    Stop(&single_);
  }

  void Start(const std::string& name, std::vector<std::string> flags, Copsd* out) {
    flags.insert(flags.begin(), {"--hash-key", "000102030405060708090a0b0c0d0e0f"});
    if (flags.size() > 2) {  // a cluster node on one NATS server: one copy of the log
      flags.insert(flags.end(), {"--log-replicas", "1", "--allow-unreplicated-log"});
    }
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
  const std::string build = testing::BuildDir();
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
  ASSERT_OK_AND_ASSIGN(v1::UnregisterDocumentReply gone,
                       router_.client->Unregister(routed_ids_[5]));
  for (size_t i = 0; i < kDocuments; ++i) {
    // Every event up to the unregistration, the log's last.
    ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply local, Check(&gateway, i, gone.log_sequence()));
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

// The router's check defaults decide for the cluster: with copsd --heavy-revisions=false on
// the router alone (the replicas keep the default, on), a routed check that does not say
// looks for heavy revisions on no partition, and one that asks for them finds one.
class RouterCheckDefaultsTest : public PartitionedClusterTest {
 protected:
  std::vector<std::string> RouterFlags() const override {
    return {"--heavy-revisions=false", "--metrics-listen",
            "127.0.0.1:" + std::to_string(router_metrics_port_)};
  }
  const int router_metrics_port_ = testing::FreePort();
};

TEST_F(RouterCheckDefaultsTest, TheRoutersHeavyRevisionDefaultReachesEveryPartition) {
  v1::Document source;
  source.set_content(testing::kDripIrrigation.source);
  source.mutable_metadata()->set_title("drip irrigation");
  ASSERT_OK_AND_ASSIGN(v1::RegisterDocumentReply registered, router_.client->Register(source));
  v1::CheckDocumentRequest request;
  request.set_content(testing::kDripIrrigation.reworded);
  request.set_min_log_sequence(registered.doc_id());  // the source is there on its partition
  ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply unsaid, router_.client->Check(request));
  EXPECT_FALSE(unsaid.params().heavy_revisions());
  EXPECT_FALSE(unsaid.violation()) << unsaid.DebugString();
  request.mutable_options()->set_heavy_revisions(true);
  ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply said, router_.client->Check(request));
  EXPECT_TRUE(said.params().heavy_revisions());
  ASSERT_EQ(said.matches_size(), 1) << said.DebugString();
  EXPECT_EQ(said.matches(0).doc_id(), registered.doc_id());
  EXPECT_TRUE(said.matches(0).revision_violation()) << said.DebugString();
  EXPECT_TRUE(said.violation());
  // The router counts the answers it merged, and which evidence decided.
  const std::string metrics = testing::HttpGet(router_metrics_port_, "/metrics");
  for (const auto& [series, count] : std::map<std::string, double>{
           {R"(cops_checks_total{verdict="violation"})", 1},
           {R"(cops_checks_total{verdict="clean"})", 1},
           {R"(cops_check_violations_total{decided_by="heavy_revision"})", 1},
           {R"(cops_check_violations_total{decided_by="chunks"})", 0}}) {
    EXPECT_EQ(testing::ExposedValue(metrics, series), count) << series << "\n" << metrics;
  }
}

// An unregistration through the router answers with its log event, and a check that asks for
// that event (read your writes) never finds the document, on whichever replica answers: no
// waiting. `cops unregister` prints the event and `cops check --min-log-sequence` sends it.
TEST_F(PartitionedClusterTest, UnregistrationThroughTheRouterReachesTheDocumentsPartition) {
  ASSERT_NO_FATAL_FAILURE(RegisterAll());
  const std::string cops = std::string(testing::BuildDir()) + "/client/cops";
  const std::filesystem::path out = dir_.path() / "unregister.out";
  ASSERT_EQ(
      testing::WaitExit(testing::Spawn({cops, "--server", router_.process->address(), "--json",
                                        "unregister", std::to_string(routed_ids_[1])},
                                       {}, out, out)),
      0);
  const std::string printed = testing::ReadFileOrEmpty(out);
  std::smatch event;
  ASSERT_TRUE(std::regex_search(printed, event, std::regex("\"log_sequence\":([0-9]+)")))
      << printed;
  const uint64_t sequence = std::stoull(event[1]);
  EXPECT_GT(sequence, LastSequence()) << "the unregistration is the log's latest event";
  for (int round = 0; round < 4; ++round) {  // the router takes turns between replicas
    ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply reply, Check(&router_, 1, sequence));
    EXPECT_FALSE(reply.partial());
    for (const v1::Match& m : reply.matches()) EXPECT_NE(m.doc_id(), routed_ids_[1]);
  }
  ASSERT_OK_AND_ASSIGN(v1::GetStatsReply stats, router_.client->Stats());
  EXPECT_EQ(stats.documents(), kDocuments - 1);
  EXPECT_TRUE(absl::IsNotFound(router_.client->Unregister(routed_ids_[1]).status()));

  // The CLI sends the sequence: a node without the log refuses it (exit 2, a message).
  const std::filesystem::path text = dir_.path() / "check.txt";
  std::ofstream(text) << Text(1);
  const std::filesystem::path refused = dir_.path() / "check.out";
  EXPECT_EQ(testing::WaitExit(testing::Spawn(
                {cops, "--server", single_.process->address(), "check", "--format", "text",
                 "--min-log-sequence", std::to_string(sequence), text.string()},
                {}, refused, refused)),
            2);
  EXPECT_NE(testing::ReadFileOrEmpty(refused).find("does not follow a registration log"),
            std::string::npos)
      << testing::ReadFileOrEmpty(refused);
}

// The HTTP API on a router reads its writes: a check with min_log_sequence (a registration's
// doc_id, or an unregistration's Cops-Log-Sequence header) answers as of that event on
// whichever replica it reaches, with no waiting; a value that is no number is a 400.
class RouterHttpTest : public PartitionedClusterTest {
 protected:
  std::vector<std::string> RouterFlags() const override {
    return {"--auth",           "off",
            "--http-listen",    "127.0.0.1:0",
            "--http-port-file", http_port_file_.string()};
  }
  const std::filesystem::path http_port_file_ = dir_.path() / "router-http.port";
};

TEST_F(RouterHttpTest, ChecksOverHttpAskAsOfARegistrationOrUnregistration) {
  httplib::Client http("127.0.0.1", std::stoi(testing::ReadFileOrEmpty(http_port_file_)));
  const std::string text = Text(60);
  httplib::Result registered = http.Post("/v1/documents?title=sixty", text, "text/plain");
  ASSERT_TRUE(registered);
  ASSERT_EQ(registered->status, 201) << registered->body;
  const uint64_t id = nlohmann::json::parse(registered->body)["doc_id"].get<uint64_t>();
  const auto check = [&](uint64_t sequence) {
    httplib::Result r =
        http.Post("/v1/checks?min_log_sequence=" + std::to_string(sequence), text, "text/plain");
    EXPECT_TRUE(r);
    EXPECT_EQ(r ? r->status : 0, 200) << (r ? r->body : "");
    // A failed call (reported above) gives an empty object, so that what follows fails
    // rather than reading keys of a reply that is not there.
    return r && r->status == 200 ? nlohmann::json::parse(r->body) : nlohmann::json::object();
  };
  for (int round = 0; round < 4; ++round) {  // the router takes turns between replicas
    nlohmann::json found = check(id);
    EXPECT_FALSE(found.value("partial", false)) << found;
    ASSERT_FALSE(found["matches"].empty()) << found;
    EXPECT_EQ(found["matches"][0]["doc_id"], id);
  }

  httplib::Result deleted = http.Delete("/v1/documents/" + std::to_string(id));
  ASSERT_TRUE(deleted);
  ASSERT_EQ(deleted->status, 204) << deleted->body;
  ASSERT_TRUE(deleted->has_header(kLogSequenceHeader));
  const uint64_t event = std::stoull(deleted->get_header_value(kLogSequenceHeader));
  EXPECT_GT(event, id);
  for (int round = 0; round < 4; ++round) {
    nlohmann::json gone = check(event);
    EXPECT_FALSE(gone.value("partial", false)) << gone;
    for (const nlohmann::json& m : gone["matches"]) EXPECT_NE(m["doc_id"], id) << gone;
  }

  httplib::Result bad = http.Post("/v1/checks?min_log_sequence=soon", text, "text/plain");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  EXPECT_NE(bad->body.find("min_log_sequence"), std::string::npos) << bad->body;
}

// Every field of a registration request reaches the replicas: each field of the document's
// metadata is set through its descriptor (a field added to the message is set too), the
// document is registered through the router and read back from its replica. A field the
// router does not forward comes back empty and fails the test. The embargo it carries is
// kept: a check does not report the document before it.
TEST_F(PartitionedClusterTest, EveryRegistrationFieldReachesTheReplicas) {
  using google::protobuf::FieldDescriptor;
  // The request's other fields are each forwarded on purpose: a new one fails here until
  // RoutedRegistrationEvent forwards it and this test sets it. (omit_receipt asks about the
  // reply alone, and a router's reply carries no receipt.)
  const google::protobuf::Descriptor* request = v1::RegisterDocumentRequest::descriptor();
  ASSERT_EQ(request->field_count(), 2);
  EXPECT_NE(request->FindFieldByName("omit_receipt"), nullptr);
  const google::protobuf::Descriptor* document = v1::Document::descriptor();
  ASSERT_EQ(document->field_count(), 3);
  for (const char* name : {"content", "format", "metadata"}) {
    EXPECT_NE(document->FindFieldByName(name), nullptr) << name;
  }
  const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  constexpr int64_t kDay = 86400ll * 1000000;
  // Times a single node accepts: the embargo ends a day from now, before the expiry.
  const std::map<std::string, int64_t> times = {{"not_before_unix_micros", now + kDay},
                                                {"expires_unix_micros", now + 2 * kDay}};
  v1::Document doc;
  doc.set_content(Text(40));
  doc.set_format(v1::DOCUMENT_FORMAT_TEXT);
  v1::DocumentMetadata* metadata = doc.mutable_metadata();
  const google::protobuf::Reflection* reflection = metadata->GetReflection();
  const google::protobuf::Descriptor* fields = metadata->GetDescriptor();
  for (int i = 0; i < fields->field_count(); ++i) {
    const FieldDescriptor* f = fields->field(i);
    ASSERT_FALSE(f->is_repeated()) << f->name() << ": extend this test";
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING:
        reflection->SetString(metadata, f, f->name() + "-value");
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        reflection->SetInt64(metadata, f,
                             times.count(f->name()) > 0 ? times.at(f->name()) : now + 3 * kDay);
        break;
      case FieldDescriptor::CPPTYPE_UINT64:
        reflection->SetUInt64(metadata, f, 7);
        break;
      case FieldDescriptor::CPPTYPE_INT32:
        reflection->SetInt32(metadata, f, 7);
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        reflection->SetUInt32(metadata, f, 7);
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        reflection->SetBool(metadata, f, true);
        break;
      case FieldDescriptor::CPPTYPE_ENUM:
        reflection->SetEnumValue(metadata, f,
                                 f->enum_type()->value(f->enum_type()->value_count() - 1)->number());
        break;
      default:
        FAIL() << f->name() << ": a field of a type this test does not set yet: extend it";
    }
  }
  ASSERT_OK_AND_ASSIGN(v1::RegisterDocumentReply registered, router_.client->Register(doc));
  ASSERT_OK_AND_ASSIGN(v1::DocumentInfo info, router_.client->Get(registered.doc_id()));
  google::protobuf::util::MessageDifferencer differencer;
  std::string differences;
  differencer.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differencer.Compare(doc.metadata(), info.metadata())) << differences;
  EXPECT_EQ(info.format(), "text");

  // Embargoed for a day: a check, even one that waits for the registration, reports nothing.
  v1::CheckDocumentRequest check;
  check.set_content(Text(40));
  check.set_min_log_sequence(registered.doc_id());
  ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply reply, router_.client->Check(check));
  EXPECT_FALSE(reply.partial());
  for (const v1::Match& m : reply.matches()) EXPECT_NE(m.doc_id(), registered.doc_id());
  EXPECT_FALSE(reply.violation());
}

// A collection's retention, recorded on the router (as on a single node), gives a document
// registered through the router without an expiry its expiry on every replica.
TEST_F(PartitionedClusterTest, ACollectionsRetentionAppliesToRoutedRegistrations) {
  auto admin = v1::Admin::NewStub(grpc::CreateChannel(router_.process->address(),
                                                      grpc::InsecureChannelCredentials()));
  v1::CreateCollectionRequest create;
  create.mutable_collection()->set_name("mail");
  create.mutable_collection()->set_keep_audit(true);
  create.mutable_collection()->set_retention_seconds(3600);
  v1::CreateCollectionResponse created;
  grpc::ClientContext context;
  const grpc::Status status = admin->CreateCollection(&context, create, &created);
  ASSERT_TRUE(status.ok()) << status.error_message();

  v1::Document doc = DocumentOf(41);
  doc.mutable_metadata()->set_collection("mail");
  ASSERT_OK_AND_ASSIGN(v1::RegisterDocumentReply registered, router_.client->Register(doc));
  ASSERT_OK_AND_ASSIGN(v1::DocumentInfo info, router_.client->Get(registered.doc_id()));
  EXPECT_EQ(info.metadata().expires_unix_micros(),
            info.registered_unix_micros() + 3600ll * 1000000);
}

// ---- Admission control ----

// A replica for the router to call: answers each check with an empty reply at once, except
// those whose request_id is "hold", which wait until Release().
class HeldReplica final : public v1::CopyDetection::Service {
 public:
  grpc::Status CheckDocument(grpc::ServerContext* /*context*/,
                             const v1::CheckDocumentRequest* request,
                             v1::CheckDocumentReply* reply) override {
    if (request->request_id() == "hold") {
      held_.fetch_add(1);
      release_.WaitForNotification();
    }
    reply->set_total_chunks(1);
    return grpc::Status::OK;
  }
  int held() const { return held_.load(); }
  void Release() { release_.Notify(); }

 private:
  std::atomic<int> held_{0};
  absl::Notification release_;
};

// The router admits checks as a single copsd does: with one call at work and no room to
// wait (--max-concurrent-calls 1, --threads 3: none waiting), a second check is refused
// with RESOURCE_EXHAUSTED before any replica is asked, and the first one is answered.
TEST(RouterAdmissionTest, ACheckOverTheRoutersLimitsIsRefusedWithResourceExhausted) {
  if (!testing::NatsServer::Installed()) GTEST_SKIP() << testing::NatsServer::kNotInstalled;
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto nats, testing::NatsServer::Start(dir.Join("nats")));
  // One replica per partition, each on its own port.
  HeldReplica replicas[2];
  std::unique_ptr<grpc::Server> servers[2];
  std::vector<std::string> flags = {"--route", nats->url(), "--partitions", "2",
                                    "--max-concurrent-calls", "1", "--threads", "3",
                                    "--hash-key", "000102030405060708090a0b0c0d0e0f",
                                    "--log-replicas", "1", "--allow-unreplicated-log"};
  for (int p = 0; p < 2; ++p) {
    int port = 0;
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&replicas[p]);
    servers[p] = builder.BuildAndStart();
    ASSERT_NE(servers[p], nullptr);
    flags.push_back("--replica");
    flags.push_back(std::to_string(p) + "=127.0.0.1:" + std::to_string(port));
  }
  ASSERT_OK_AND_ASSIGN(auto router,
                       testing::CopsdProcess::Start(dir.path() / "router", flags));
  ClientOptions options;
  options.target = router->address();
  options.timeout = std::chrono::seconds(20);
  options.own_connection = true;
  ASSERT_OK_AND_ASSIGN(auto first_client, Client::Connect(options));
  ASSERT_OK_AND_ASSIGN(auto second_client, Client::Connect(options));

  v1::CheckDocumentRequest held;
  held.set_request_id("hold");
  held.set_content(Text(1));
  absl::StatusOr<v1::CheckDocumentReply> first;
  std::thread caller([&] { first = first_client->Check(held); });
  // Both partitions' calls of the first check are at their replicas.
  const bool at_work =
      Eventually([&] { return replicas[0].held() == 1 && replicas[1].held() == 1; });
  absl::StatusOr<v1::CheckDocumentReply> second = absl::UnknownError("not called");
  if (at_work) {
    v1::CheckDocumentRequest other;
    other.set_content(Text(2));
    second = second_client->Check(other);
  }
  for (HeldReplica& replica : replicas) replica.Release();
  caller.join();
  ASSERT_TRUE(at_work) << "the first check never reached the replicas";
  EXPECT_TRUE(absl::IsResourceExhausted(second.status())) << second.status();
  EXPECT_OK(first.status());
  for (auto& server : servers) server->Shutdown();
}

// ---- Authentication through the router ----

// A router with authentication on in front of 2 partitions (one replica each) that run with
// authentication on too: the replicas serve TLS, require client certificates of the test CA
// and believe forwarded identities from the certificate "router-node" only. Principals live
// in the router's access store.
class AuthenticatedClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::NatsServer::Installed()) GTEST_SKIP() << testing::NatsServer::kNotInstalled;
    ASSERT_TRUE(pki_.Create(dir_.path()) && pki_.MakeClient("node", "router-node") &&
                pki_.MakeClient("mallory", "mallory"))
        << "openssl could not make the test certificates";
    ASSERT_OK_AND_ASSIGN(nats_, testing::NatsServer::Start(dir_.Join("nats")));
    std::vector<std::string> router = {"--route", nats_->url(), "--partitions", "2",
                                       "--route-timeout-ms", "5000", "--auth", "on",
                                       "--log-replicas", "1", "--allow-unreplicated-log",
                                       "--node-ca", pki_.Path("ca.pem"),
                                       "--node-cert", pki_.Path("node.pem"),
                                       "--node-key", pki_.Path("node.key")};
    for (uint32_t p = 0; p < 2; ++p) {
      ASSERT_OK_AND_ASSIGN(
          replicas_[p],
          testing::CopsdProcess::Start(
              dir_.path() / ("index-p" + std::to_string(p)),
              {"--hash-key", kKey, "--follow", nats_->url(), "--partitions", "2", "--partition",
               std::to_string(p), "--tls-cert", pki_.Path("server.pem"), "--tls-key",
               pki_.Path("server.key"), "--tls-client-ca", pki_.Path("ca.pem"),
               "--trusted-nodes", "router-node", "--log-replicas", "1",
               "--allow-unreplicated-log"}));
      router.push_back("--replica");
      router.push_back(std::to_string(p) + "=" + replicas_[p]->address());
    }
    router.insert(router.begin(), {"--hash-key", kKey});
    ASSERT_OK_AND_ASSIGN(router_, testing::CopsdProcess::Start(dir_.path() / "router", router));
    admin_key_ = testing::ReadFileOrEmpty(dir_.path() / "router" / "data" / "admin.key");
    while (!admin_key_.empty() && admin_key_.back() == '\n') admin_key_.pop_back();
    ASSERT_FALSE(admin_key_.empty()) << "the router wrote no admin.key";
    ASSERT_OK_AND_ASSIGN(admin_, ClientWithKey(admin_key_));
  }

  absl::StatusOr<std::unique_ptr<Client>> ClientWithKey(const std::string& key) {
    ClientOptions options;
    options.target = router_->address();
    options.timeout = std::chrono::seconds(10);
    options.security.api_key = key;
    return Client::Connect(options);
  }

  // A principal created through the router's Admin API; its API key.
  std::string CreatePrincipal(const std::string& name, v1::PrincipalRole role,
                              const std::string& collection) {
    auto stub = v1::Admin::NewStub(
        grpc::CreateChannel(router_->address(), grpc::InsecureChannelCredentials()));
    v1::CreatePrincipalRequest request;
    request.set_name(name);
    request.set_role(role);
    request.add_collections(collection);
    v1::CreatePrincipalResponse response;
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer " + admin_key_);
    const grpc::Status status = stub->CreatePrincipal(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.api_key();
  }

  // A client calling replica `p` directly over mutual TLS with certificate `name`.
  std::unique_ptr<v1::CopyDetection::Stub> DirectStub(uint32_t p, const std::string& name) {
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = pki_.Pem("ca.pem");
    tls.pem_cert_chain = pki_.Pem(name + ".pem");
    tls.pem_private_key = pki_.Pem(name + ".key");
    return v1::CopyDetection::NewStub(
        grpc::CreateChannel(replicas_[p]->address(), grpc::SslCredentials(tls)));
  }

  static v1::Document DocumentIn(size_t i, const std::string& collection) {
    v1::Document doc;
    doc.set_content(Text(i));
    doc.mutable_metadata()->set_title("document " + std::to_string(i));
    doc.mutable_metadata()->set_collection(collection);
    return doc;
  }

  static constexpr char kKey[] = "000102030405060708090a0b0c0d0e0f";
  testing::TempDir dir_;
  testing::TestPki pki_;
  std::unique_ptr<testing::NatsServer> nats_;
  std::unique_ptr<testing::CopsdProcess> replicas_[2];
  std::unique_ptr<testing::CopsdProcess> router_;
  std::string admin_key_;
  std::unique_ptr<Client> admin_;
};

// The router authenticates as a single copsd: no key and a wrong key are UNAUTHENTICATED,
// for checks and registrations alike; the admin's key registers and checks through it.
TEST_F(AuthenticatedClusterTest, TheRouterRefusesAMissingOrWrongKey) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> anonymous, ClientWithKey(""));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> wrong,
                       ClientWithKey("cops_0123456789abcdef_" + std::string(43, 'x')));
  v1::CheckDocumentRequest check;
  check.set_content(Text(1));
  EXPECT_TRUE(absl::IsUnauthenticated(anonymous->Check(check).status()));
  EXPECT_TRUE(absl::IsUnauthenticated(wrong->Check(check).status()));
  EXPECT_TRUE(absl::IsUnauthenticated(wrong->Register(DocumentIn(1, "a")).status()));
  EXPECT_TRUE(absl::IsUnauthenticated(wrong->Stats().status()));

  ASSERT_OK_AND_ASSIGN(v1::RegisterDocumentReply registered, admin_->Register(DocumentIn(1, "a")));
  check.set_min_log_sequence(registered.doc_id());
  ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply reply, admin_->Check(check));
  EXPECT_FALSE(reply.partial());
  ASSERT_EQ(reply.matches_size(), 1);
  EXPECT_EQ(reply.matches(0).doc_id(), registered.doc_id());
}

// A checker granted collection "a" sees, through the router, the documents of "a" only:
// a copy of a document of "b" is no match for it, naming "b" is PERMISSION_DENIED, and it
// cannot read documents' metadata it has no grant for.
TEST_F(AuthenticatedClusterTest, AScopedPrincipalSeesOnlyItsCollections) {
  const std::string carol = CreatePrincipal("carol", v1::PRINCIPAL_ROLE_CHECKER, "a");
  CreatePrincipal("bob", v1::PRINCIPAL_ROLE_OWNER, "b");
  ASSERT_OK_AND_ASSIGN(v1::RegisterDocumentReply in_a, admin_->Register(DocumentIn(1, "a")));
  ASSERT_OK_AND_ASSIGN(v1::RegisterDocumentReply in_b, admin_->Register(DocumentIn(2, "b")));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> checker, ClientWithKey(carol));

  v1::CheckDocumentRequest check;
  check.set_min_log_sequence(std::max(in_a.doc_id(), in_b.doc_id()));
  check.set_content(Text(2));
  ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply of_b, checker->Check(check));
  EXPECT_EQ(of_b.matches_size(), 0);
  EXPECT_FALSE(of_b.violation());
  check.set_content(Text(1));
  ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply of_a, checker->Check(check));
  ASSERT_EQ(of_a.matches_size(), 1);
  EXPECT_EQ(of_a.matches(0).doc_id(), in_a.doc_id());
  check.add_collections("b");
  EXPECT_TRUE(absl::IsPermissionDenied(checker->Check(check).status()));
  // The admin sees both (the same checks, unscoped).
  check.clear_collections();
  check.set_content(Text(2));
  ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply admin_of_b, admin_->Check(check));
  EXPECT_EQ(admin_of_b.matches_size(), 1);
  EXPECT_FALSE(checker->Get(in_b.doc_id()).ok());
}

// An owner registering through the router owns the document, whatever owner it names.
TEST_F(AuthenticatedClusterTest, AnOwnersRoutedDocumentIsOwnedByIt) {
  const std::string alice = CreatePrincipal("alice", v1::PRINCIPAL_ROLE_OWNER, "a");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Client> owner, ClientWithKey(alice));
  v1::Document doc = DocumentIn(3, "a");
  doc.mutable_metadata()->set_owner("mallory");
  ASSERT_OK_AND_ASSIGN(v1::RegisterDocumentReply registered, owner->Register(doc));
  ASSERT_OK_AND_ASSIGN(v1::DocumentInfo info, admin_->Get(registered.doc_id()));
  EXPECT_EQ(info.metadata().owner(), "alice");
  // Not into a collection it has no grant for.
  EXPECT_TRUE(absl::IsPermissionDenied(owner->Register(DocumentIn(4, "b")).status()));
}

// A caller reaching a replica directly with a client certificate of the cluster's CA that
// is not a node's, naming itself the admin in the forwarded-identity metadata, is refused;
// the node's certificate with the same metadata is served (the replica's statistics, an
// unrestricted admin's only).
TEST_F(AuthenticatedClusterTest, AForwardedIdentityFromANonNodeIsRefused) {
  auto call = [&](const std::string& certificate) {
    std::unique_ptr<v1::CopyDetection::Stub> stub = DirectStub(0, certificate);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    context.AddMetadata("x-cops-forwarded-principal", "admin");
    context.AddMetadata("x-cops-forwarded-role", "admin");
    v1::GetStatsReply reply;
    return stub->GetStats(&context, v1::GetStatsRequest(), &reply);
  };
  const grpc::Status mallory = call("mallory");
  EXPECT_EQ(mallory.error_code(), grpc::StatusCode::UNAUTHENTICATED) << mallory.error_message();
  const grpc::Status node = call("node");
  EXPECT_TRUE(node.ok()) << node.error_message();
}

}  // namespace
}  // namespace cops
