// The cluster map: the member record's encoding, liveness by lease under an injected clock,
// and ClusterMember / ClusterMap against real nats-servers (one, and a 3-server JetStream
// cluster that loses a server to kill -9).

#include "replication/cluster_map.h"

#include <nats/nats.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "replication/jetstream.h"
#include "replication/registration_event.h"
#include "replication/registration_log.h"
#include "tests/replication/jetstream_test.h"
#include "tests/testing/eventually.h"
#include "tests/testing/nats_server.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;
using ::testing::IsEmpty;

MemberRecord Record(const std::string& node, uint32_t partition, uint64_t applied,
                    uint32_t partitions = 2) {
  MemberRecord r;
  r.node_id = node;
  r.address = "127.0.0.1:" + std::to_string(7000 + partition);
  r.partition = partition;
  r.partitions = partitions;
  r.applied_sequence = applied;
  r.time_unix_micros = 1700000000000000;
  return r;
}

// A wall clock the test moves forward: real time plus an offset.
class TestClock {
 public:
  absl::Time Now() const {
    absl::MutexLock lock(&mu_);
    return absl::Now() + offset_;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    offset_ += d;
  }
  std::function<absl::Time()> Function() {
    return [this] { return Now(); };
  }

 private:
  mutable absl::Mutex mu_;
  absl::Duration offset_ ABSL_GUARDED_BY(mu_);
};

using testing::Eventually;

std::vector<std::string> LiveIds(const ReplicaDirectory& directory, uint32_t partition) {
  std::vector<std::string> ids;
  for (const ReplicaInfo& r : directory.LiveReplicas(partition)) ids.push_back(r.node_id);
  return ids;
}

TEST(MemberRecordTest, RoundTripsAndRefusesOtherVersionsAndBadBytes) {
  const MemberRecord record = Record("index-p1r2", 1, 42);
  ASSERT_OK_AND_ASSIGN(MemberRecord decoded, DecodeMemberRecord(EncodeMemberRecord(record)));
  EXPECT_EQ(decoded, record);
  EXPECT_EQ(DecodeMemberRecord(R"({"v":2,"node":"x"})").status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(DecodeMemberRecord("not json").status().code(), absl::StatusCode::kInvalidArgument);
  // A partition outside its own count is not a record a router could use.
  MemberRecord bad = record;
  bad.partition = 2;
  EXPECT_EQ(DecodeMemberRecord(EncodeMemberRecord(bad)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MemberKey("index-p0r1"), "members.index-p0r1");
  EXPECT_OK(ValidateNodeId("index-p0r1"));
  EXPECT_FALSE(ValidateNodeId("a.b").ok());  // would be two tokens of the key
  EXPECT_FALSE(ValidateNodeId("").ok());
}

TEST(MemberTableTest, LiveWithinTheLeaseBestFirstAndOnlyForTheSameLayout) {
  TestClock clock;
  MemberTable table(/*partitions=*/0, absl::Seconds(3), clock.Function());
  EXPECT_EQ(table.partitions(), 1u);  // nothing known yet
  table.Put(Record("a", 0, 10), clock.Now());
  table.Put(Record("b", 0, 30), clock.Now());
  table.Put(Record("c", 1, 5), clock.Now() - absl::Seconds(2));
  table.Put(Record("stray", 0, 99, /*partitions=*/4), clock.Now());  // another layout
  EXPECT_EQ(table.partitions(), 4u);  // the largest stated: P is not configured here

  MemberTable configured(/*partitions=*/2, absl::Seconds(3), clock.Function());
  for (const MemberStatus& m : table.Members()) configured.Put(m.record, m.heard);
  EXPECT_EQ(configured.partitions(), 2u);
  EXPECT_THAT(LiveIds(configured, 0), ElementsAre("b", "a"));  // most applied first
  EXPECT_THAT(LiveIds(configured, 1), ElementsAre("c"));
  EXPECT_EQ(configured.Health().live_members, 3u);
  EXPECT_EQ(configured.Health().partitions_without_replica, 0u);

  clock.Advance(absl::Milliseconds(1500));  // c was heard 3.5 s ago
  EXPECT_THAT(LiveIds(configured, 1), IsEmpty());
  EXPECT_EQ(configured.Health().partitions_without_replica, 1u);
  EXPECT_EQ(configured.Members().size(), 4u);  // still listed, not live

  configured.Put(Record("c", 1, 6), clock.Now());  // its next heartbeat
  EXPECT_THAT(LiveIds(configured, 1), ElementsAre("c"));
  configured.Remove("b");
  EXPECT_THAT(LiveIds(configured, 0), ElementsAre("a"));
}

TEST(MemberTableTest, ARecordStampedAheadOfTheClockCountsAsHeardNow) {
  TestClock clock;
  MemberTable table(1, absl::Seconds(3), clock.Function());
  table.Put(Record("a", 0, 1, 1), clock.Now() + absl::Hours(1));  // the server's clock is ahead
  clock.Advance(absl::Seconds(4));
  EXPECT_THAT(LiveIds(table, 0), IsEmpty());
}

class ClusterMapTest : public JetStreamTest {
 protected:
  absl::StatusOr<std::unique_ptr<ClusterMember>> StartMember(const MemberRecord& record,
                                                             std::atomic<uint64_t>* applied) {
    ClusterMemberOptions options;
    options.record = record;
    options.heartbeat_interval = absl::Milliseconds(100);
    options.applied_sequence = [applied] { return applied->load(); };
    return ClusterMember::Start(js_.get(), options);
  }

  // A map judging liveness by `clock` (the fixture's by default).
  absl::StatusOr<std::unique_ptr<ClusterMap>> StartMap(TestClock* clock = nullptr) {
    ClusterMapOptions options;
    options.partitions = 2;
    options.lease = absl::Seconds(3);
    options.clock = (clock != nullptr ? clock : &clock_)->Function();
    return ClusterMap::Start(js_.get(), options);
  }

  TestClock clock_;
};

TEST_F(ClusterMapTest, RecordsAppearWithTheirAddressAndAppliedSequenceBestFirst) {
  std::atomic<uint64_t> applied_a{5};
  std::atomic<uint64_t> applied_b{7};
  ASSERT_OK_AND_ASSIGN(auto a, StartMember(Record("index-p0r1", 0, 0), &applied_a));
  ASSERT_OK_AND_ASSIGN(auto map, StartMap());
  // Start returns once the bucket's current records are in.
  ASSERT_THAT(LiveIds(*map, 0), ElementsAre("index-p0r1"));
  EXPECT_EQ(map->LiveReplicas(0)[0].address, "127.0.0.1:7000");
  EXPECT_EQ(map->LiveReplicas(0)[0].applied_sequence, 5u);
  EXPECT_EQ(map->partitions(), 2u);
  EXPECT_EQ(map->Health().partitions_without_replica, 1u);

  ASSERT_OK_AND_ASSIGN(auto b, StartMember(Record("index-p0r2", 0, 0), &applied_b));
  EXPECT_TRUE(Eventually([&] { return LiveIds(*map, 0).size() == 2; }));
  EXPECT_THAT(LiveIds(*map, 0), ElementsAre("index-p0r2", "index-p0r1"));
  // Heartbeats carry the applied sequence as it moves.
  applied_a = 9;
  EXPECT_TRUE(Eventually([&] {
    return LiveIds(*map, 0) == std::vector<std::string>{"index-p0r1", "index-p0r2"};
  }));
  EXPECT_OK(map->LastError());
  EXPECT_GE(a->Health().heartbeats, 1u);
  EXPECT_EQ(a->Health().failed_heartbeats, 0u);
}

TEST_F(ClusterMapTest, AStoppedMemberDisappearsAfterItsLeaseAndALeavingOneAtOnce) {
  std::atomic<uint64_t> applied{0};
  ASSERT_OK_AND_ASSIGN(auto crashed, StartMember(Record("index-p0r1", 0, 0), &applied));
  ASSERT_OK_AND_ASSIGN(auto leaving, StartMember(Record("index-p1r1", 1, 0), &applied));
  ASSERT_OK_AND_ASSIGN(auto map, StartMap());
  ASSERT_THAT(LiveIds(*map, 0), ElementsAre("index-p0r1"));
  ASSERT_THAT(LiveIds(*map, 1), ElementsAre("index-p1r1"));

  crashed->Stop();  // no more heartbeats; its record stays, as after kill -9
  ASSERT_OK(leaving->Leave());
  EXPECT_TRUE(Eventually([&] { return map->Members().size() == 1; }));  // the leaver is gone
  EXPECT_THAT(LiveIds(*map, 0), ElementsAre("index-p0r1"));             // within its lease still
  clock_.Advance(absl::Seconds(3));
  EXPECT_THAT(LiveIds(*map, 0), IsEmpty());
  EXPECT_EQ(map->Health().partitions_without_replica, 2u);
  ASSERT_EQ(map->Members().size(), 1u);
  EXPECT_FALSE(map->Members()[0].live);
}

TEST_F(ClusterMapTest, ARestartedNodeRegistersAgainAndAFreshMapSeesOnlyLiveRecords) {
  std::atomic<uint64_t> applied{3};
  ASSERT_OK_AND_ASSIGN(auto map, StartMap());
  ASSERT_OK_AND_ASSIGN(auto member, StartMember(Record("index-p0r1", 0, 0), &applied));
  EXPECT_TRUE(Eventually([&] { return LiveIds(*map, 0).size() == 1; }));
  member.reset();  // gone without leaving
  clock_.Advance(absl::Seconds(5));
  ASSERT_THAT(LiveIds(*map, 0), IsEmpty());

  applied = 4;  // restarted with what it has applied meanwhile
  ASSERT_OK_AND_ASSIGN(member, StartMember(Record("index-p0r1", 0, 0), &applied));
  EXPECT_TRUE(Eventually([&] { return LiveIds(*map, 0).size() == 1; }));
  EXPECT_EQ(map->LiveReplicas(0)[0].applied_sequence, 4u);
  // A map started later judges a record already in the bucket by when it was stored, not
  // when it arrived.
  TestClock later_clock;
  ASSERT_OK_AND_ASSIGN(auto later, StartMap(&later_clock));
  EXPECT_THAT(LiveIds(*later, 0), ElementsAre("index-p0r1"));
  member.reset();
  later_clock.Advance(absl::Seconds(5));
  ASSERT_OK_AND_ASSIGN(auto latest, StartMap(&later_clock));
  EXPECT_THAT(LiveIds(*latest, 0), IsEmpty());
  EXPECT_EQ(latest->Members().size(), 1u);
}

TEST_F(ClusterMapTest, AnUnreadableRecordIsCountedAndSkipped) {
  ASSERT_OK_AND_ASSIGN(auto map, StartMap());
  kvStore* kv = nullptr;
  ASSERT_EQ(js_KeyValue(&kv, js_->context(), "COPS_CLUSTER"), NATS_OK);
  ASSERT_EQ(kvStore_PutString(nullptr, kv, "members.future", R"({"v":9})"), NATS_OK);
  kvStore_Destroy(kv);
  EXPECT_TRUE(Eventually([&] { return map->Health().unreadable_records == 1; }));
  EXPECT_EQ(map->Members().size(), 0u);
}

// With a cluster key, a member record nobody signed with it is ignored: a forged member
// claiming a huge applied sequence, written straight into the bucket, is never listed (it
// would be asked first and receive every routed check), while a member holding the key is.
TEST_F(ClusterMapTest, AForgedMemberRecordIsIgnoredWithAClusterKey) {
  const std::string cluster_key(32, 'k');
  ClusterMapOptions map_options;
  map_options.partitions = 2;
  map_options.clock = clock_.Function();
  map_options.bucket.signing_key = cluster_key;
  ASSERT_OK_AND_ASSIGN(auto map, ClusterMap::Start(js_.get(), map_options));
  std::atomic<uint64_t> applied{5};
  ClusterMemberOptions member_options;
  member_options.record = Record("index-p0r1", 0, 0);
  member_options.heartbeat_interval = absl::Milliseconds(100);
  member_options.applied_sequence = [&applied] { return applied.load(); };
  member_options.bucket.signing_key = cluster_key;
  ASSERT_OK_AND_ASSIGN(auto member, ClusterMember::Start(js_.get(), member_options));

  MemberRecord forged = Record("index-p0r9", 0, 0);
  forged.address = "127.0.0.1:6666";
  forged.applied_sequence = 1'000'000'000;
  forged.time_unix_micros = absl::ToUnixMicros(absl::Now());
  const std::string unsigned_bytes = EncodeMemberRecord(forged);
  const std::string wrong_key =
      SignMemberRecord(unsigned_bytes, std::string(32, 'x'), "members.index-p0r9");
  kvStore* kv = nullptr;
  ASSERT_EQ(js_KeyValue(&kv, js_->context(), "COPS_CLUSTER"), NATS_OK);
  // One at a time: the bucket keeps one record per key, so a second put that lands before
  // the watch delivered the first removes it unseen (seen in a fresh chroot).
  ASSERT_EQ(kvStore_PutString(nullptr, kv, "members.index-p0r9", unsigned_bytes.c_str()),
            NATS_OK);
  EXPECT_TRUE(Eventually([&] { return map->Health().unreadable_records >= 1; }));
  ASSERT_EQ(kvStore_PutString(nullptr, kv, "members.index-p0r9", wrong_key.c_str()), NATS_OK);
  kvStore_Destroy(kv);
  EXPECT_TRUE(Eventually([&] { return map->Health().unreadable_records >= 2; }));
  EXPECT_TRUE(Eventually([&] { return LiveIds(*map, 0).size() == 1; }));
  EXPECT_THAT(LiveIds(*map, 0), ElementsAre("index-p0r1"));
  for (const MemberStatus& m : map->Members()) EXPECT_NE(m.record.node_id, "index-p0r9");
}

TEST_F(ClusterMapTest, StartRefusesABadNodeIdAndAMissingBucketWhenNotCreating) {
  std::atomic<uint64_t> applied{0};
  EXPECT_EQ(StartMember(Record("a.b", 0, 0), &applied).status().code(),
            absl::StatusCode::kInvalidArgument);
  ClusterMapOptions options;
  options.bucket.bucket = "NO_SUCH_BUCKET";
  options.bucket.create = false;
  EXPECT_EQ(ClusterMap::Start(js_.get(), options).status().code(), absl::StatusCode::kNotFound);
}

// Three nats-servers in one JetStream cluster: the registration stream and the cluster map's
// bucket, both with 3 replicas, keep acknowledging writes and serving reads after one server
// is killed with SIGKILL.
TEST(ClusterMapOnThreeServersTest, StreamAndBucketSurviveKillOfOneServer) {
  if (!testing::NatsServer::Installed()) GTEST_SKIP() << testing::NatsServer::kNotInstalled;
  testing::TempDir dir;
  ASSERT_OK_AND_ASSIGN(auto cluster, testing::NatsCluster::Start(dir.Join("nats"), 3));
  RegistrationStreamOptions stream;
  stream.url = cluster->url();  // every server: the client fails over between them
  stream.replicas = 3;
  stream.publish_timeout_ms = 1000;  // retry sooner while JetStream elects new leaders
  ASSERT_OK_AND_ASSIGN(auto js, JetStream::Connect(stream));
  RegistrationLog log(js.get());
  ClusterMemberOptions member_options;
  member_options.bucket.replicas = 3;
  member_options.record = Record("index-p0r1", 0, 0, 1);
  member_options.heartbeat_interval = absl::Milliseconds(100);
  ASSERT_OK_AND_ASSIGN(auto member, ClusterMember::Start(js.get(), member_options));
  ClusterMapOptions map_options;
  map_options.bucket.replicas = 3;
  map_options.lease = absl::Seconds(1);  // 10 heartbeats; a stalled watch is renewed in 0.5 s
  ASSERT_OK_AND_ASSIGN(auto map, ClusterMap::Start(js.get(), map_options));
  ASSERT_THAT(LiveIds(*map, 0), ElementsAre("index-p0r1"));

  // Both are really replicated three times.
  jsStreamInfo* info = nullptr;
  ASSERT_EQ(js_GetStreamInfo(&info, js->context(), "COPS_REGISTRATIONS", nullptr, nullptr),
            NATS_OK);
  EXPECT_EQ(info->Config->Replicas, 3);
  jsStreamInfo_Destroy(info);
  ASSERT_EQ(js_GetStreamInfo(&info, js->context(), "KV_COPS_CLUSTER", nullptr, nullptr), NATS_OK);
  EXPECT_EQ(info->Config->Replicas, 3);
  jsStreamInfo_Destroy(info);

  RegistrationEvent event;
  event.kind = RegistrationEventKind::kUnregister;
  event.doc_id = 1;
  ASSERT_OK_AND_ASSIGN(uint64_t before, log.Publish(event));

  // Kill the server this client is connected to, if any, else the first: the harder case.
  char connected[256] = {};
  natsConnection_GetConnectedUrl(js->connection(), connected, sizeof(connected));
  int victim = 0;
  for (int i = 0; i < cluster->size(); ++i) {
    if (cluster->server(i).url() == connected) victim = i;
  }
  cluster->server(victim).Kill();

  // Writes are acknowledged again once JetStream has moved leaders (a few seconds at most).
  uint64_t after = 0;
  ASSERT_TRUE(Eventually(
      [&] {
        absl::StatusOr<uint64_t> published = log.Publish(event);
        if (published.ok()) after = *published;
        return published.ok();
      },
      std::chrono::seconds(15)));
  EXPECT_GT(after, before);
  const uint64_t beats = member->Health().heartbeats;
  EXPECT_TRUE(Eventually([&] { return member->Health().heartbeats >= beats + 3; }));
  // The map still reads the member's fresh records: it stays live with only real time passing.
  EXPECT_TRUE(Eventually([&] {
    const std::vector<MemberStatus> members = map->Members();
    return members.size() == 1 && members[0].live &&
           absl::Now() - members[0].heard < absl::Milliseconds(500);
  }));
  // And the stream holds both events.
  ASSERT_EQ(js_GetStreamInfo(&info, js->context(), "COPS_REGISTRATIONS", nullptr, nullptr),
            NATS_OK);
  EXPECT_EQ(info->State.LastSeq, after);
  jsStreamInfo_Destroy(info);
}

}  // namespace
}  // namespace cops
