// copsd in the cluster map end to end: real `copsd --log` / `--follow` processes with
// --cluster-node-id heartbeat their records into a real nats-server's bucket; a ClusterMap
// and `copsd --show-cluster` read them; a clean stop leaves the map, a kill -9 expires.

#include "replication/cluster_presence.h"

#include <signal.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replication/cluster_map.h"
#include "replication/jetstream.h"
#include "tests/server/test_corpus.h"
#include "tests/testing/copsd_process.h"
#include "tests/testing/eventually.h"
#include "tests/testing/files.h"
#include "tests/testing/nats_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

using ::testing::HasSubstr;

using testing::Eventually;

class ClusterPresenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::NatsServer::Installed()) GTEST_SKIP() << testing::NatsServer::kNotInstalled;
    ASSERT_OK_AND_ASSIGN(nats_, testing::NatsServer::Start(dir_.Join("nats")));
  }

  absl::StatusOr<std::unique_ptr<testing::CopsdProcess>> StartCopsd(
      const std::string& node, const std::string& role, std::vector<std::string> flags = {}) {
    flags.insert(flags.begin(), {"--hash-key", "000102030405060708090a0b0c0d0e0f", role,
                                 nats_->url(), "--cluster-node-id", node, "--heartbeat-ms", "100",
                                 "--log-replicas", "1", "--allow-unreplicated-log"});
    return testing::CopsdProcess::Start(dir_.path() / node, flags);
  }

  // What `copsd --show-cluster` prints.
  std::string ShowCluster() {
    const std::string out = dir_.Join("show.out");
    const pid_t pid = testing::Spawn({testing::BuildDir() + "/server/copsd",
                                      "--show-cluster", nats_->url(), "--heartbeat-ms", "100"},
                                     {}, out, out);
    EXPECT_EQ(testing::WaitExit(pid), 0) << testing::ReadFileOrEmpty(out);
    return testing::ReadFileOrEmpty(out);
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::NatsServer> nats_;
};

TEST_F(ClusterPresenceTest, NodesAppearWithTheirAddressAndProgressAndLeaveOnAStop) {
  ASSERT_OK_AND_ASSIGN(auto primary, StartCopsd("primary", "--log"));
  ASSERT_OK_AND_ASSIGN(auto replica, StartCopsd("replica", "--follow"));
  RegistrationStreamOptions stream;
  stream.url = nats_->url();
  ASSERT_OK_AND_ASSIGN(auto js, JetStream::Connect(stream));
  ClusterMapOptions options;
  options.lease = absl::Milliseconds(300);
  ASSERT_OK_AND_ASSIGN(auto map, ClusterMap::Start(js.get(), options));
  ASSERT_TRUE(Eventually([&] { return map->LiveReplicas(0).size() == 2; }));
  for (const ReplicaInfo& r : map->LiveReplicas(0)) {
    EXPECT_EQ(r.address, r.node_id == "primary" ? primary->address() : replica->address());
  }

  // A registration on the primary shows in both nodes' applied sequence.
  ClientOptions client_options;
  client_options.target = primary->address();
  ASSERT_OK_AND_ASSIGN(auto client, Client::Connect(client_options));
  v1::Document doc;
  doc.set_content(testing_corpus::Corpus()[0].body);
  ASSERT_OK(client->Register(doc).status());
  ASSERT_TRUE(Eventually([&] {
    const std::vector<ReplicaInfo> live = map->LiveReplicas(0);
    return live.size() == 2 && live[0].applied_sequence == 1 && live[1].applied_sequence == 1;
  }));
  const std::string shown = ShowCluster();
  EXPECT_THAT(shown, HasSubstr("primary " + primary->address() + " 0/1 1 "));
  EXPECT_THAT(shown, HasSubstr("replica " + replica->address() + " 0/1 1 "));

  // A clean stop deletes the record at once; a kill -9 leaves it to expire with its lease.
  EXPECT_EQ(replica->Stop(), 0);
  ASSERT_TRUE(Eventually([&] { return map->Members().size() == 1; }));
  kill(primary->pid(), SIGKILL);
  primary->Stop();
  ASSERT_TRUE(Eventually([&] { return map->LiveReplicas(0).empty(); }));
  ASSERT_EQ(map->Members().size(), 1u);
  EXPECT_THAT(ShowCluster(), HasSubstr(" expired\n"));

  // Restarted on its data, the node is back with what it had applied.
  ASSERT_OK_AND_ASSIGN(primary, StartCopsd("primary", "--log"));
  ASSERT_TRUE(Eventually([&] {
    const std::vector<ReplicaInfo> live = map->LiveReplicas(0);
    return live.size() == 1 && live[0].address == primary->address() &&
           live[0].applied_sequence == 1;
  }));
}

// copsd --route without --replica: its replicas are those of the cluster map, and a replica
// that leaves it (or comes back) is dropped from (or back in) the routed answers.
TEST_F(ClusterPresenceTest, ARouterFindsItsReplicasInTheClusterMap) {
  std::unique_ptr<testing::CopsdProcess> replicas[2];
  for (int p = 0; p < 2; ++p) {
    const std::string name = "index-p" + std::to_string(p) + "r1";
    ASSERT_OK_AND_ASSIGN(
        replicas[p],
        StartCopsd(name, "--follow", {"--partitions", "2", "--partition", std::to_string(p)}));
  }
  ASSERT_OK_AND_ASSIGN(auto router, testing::CopsdProcess::Start(
                                        dir_.path() / "router",
                                        {"--hash-key", "000102030405060708090a0b0c0d0e0f",
                                         "--route", nats_->url(), "--partitions", "2",
                                         "--heartbeat-ms", "100", "--route-timeout-ms", "3000",
                                         "--log-replicas", "1", "--allow-unreplicated-log"}));
  ClientOptions options;
  options.target = router->address();
  ASSERT_OK_AND_ASSIGN(auto client, Client::Connect(options));
  // A document registered through the router lands on the replica of its partition.
  v1::Document doc;
  doc.set_content(testing_corpus::Corpus()[0].body);
  ASSERT_OK_AND_ASSIGN(v1::RegisterDocumentReply registered, client->Register(doc));
  int p = -1;
  for (int q = 0; q < 2; ++q) {
    options.target = replicas[q]->address();
    ASSERT_OK_AND_ASSIGN(auto replica, Client::Connect(options));
    if (replica->Get(registered.doc_id()).ok()) p = q;
  }
  ASSERT_GE(p, 0);
  v1::CheckDocumentRequest check;
  check.set_content(doc.content());
  ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply whole, client->Check(check));
  EXPECT_FALSE(whole.partial());
  EXPECT_TRUE(whole.violation());

  // The partition's only replica leaves the map: the partition is missing at once.
  EXPECT_EQ(replicas[p]->Stop(), 0);
  ASSERT_OK_AND_ASSIGN(v1::CheckDocumentReply partial, client->Check(check));
  EXPECT_TRUE(partial.partial());
  ASSERT_EQ(partial.missing_partitions_size(), 1);
  EXPECT_EQ(partial.missing_partitions(0), static_cast<uint32_t>(p));
  EXPECT_FALSE(partial.violation());
  // Restarted, it registers again and the router uses it.
  ASSERT_OK_AND_ASSIGN(replicas[p],
                       StartCopsd("index-p" + std::to_string(p) + "r1", "--follow",
                                  {"--partitions", "2", "--partition", std::to_string(p)}));
  ASSERT_TRUE(Eventually([&] {
    absl::StatusOr<v1::CheckDocumentReply> reply = client->Check(check);
    return reply.ok() && !reply->partial() && reply->violation();
  }));
}

}  // namespace
}  // namespace cops
