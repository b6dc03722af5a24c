// Scale-out end to end (docs/scale-out.md): a real nats-server with JetStream, a primary
// `copsd --log` and a read-only `copsd --follow`, both real processes on loopback, driven
// through the client library.

#include "replication/log_replica.h"

#include <signal.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nats/nats.h>
#include <rocksdb/env.h>

#include "client/client.h"
#include "core/status_macros.h"
#include "engine/index_generations.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/cops_admin.grpc.pb.h"
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

namespace fs = std::filesystem;
using testing_corpus::Corpus;

using testing::BuildDir;
using testing::Eventually;

// LogReplica::OutcomeOf between the index write of an event and the record of its outcome
// (what a router's GetDocument(log_sequence) may meet under load): it waits for the record
// instead of answering NOT_FOUND. An event applied before the replica was constructed has no
// outcome here: NOT_FOUND at once.
TEST(LogReplicaOutcomeTest, WaitsForTheRecordOfAnEventTheIndexAlreadyShowsApplied) {
  testing::TempDir dir;
  IndexGenerationsOptions options;
  options.data_dir = dir.path().string();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<IndexGenerations> generations,
                       IndexGenerations::Open(options));
  LogReplica replica(generations.get(), /*ids_from_log_sequence=*/true);
  // Event 5 written to the index the way Apply writes it, its outcome not recorded yet.
  ASSERT_OK(generations->WithWriter([](CopyDetector& detector) -> absl::Status {
    COPS_RETURN_IF_ERROR(detector.index()->RaiseNextDocId(5));
    return detector.Register(testing_corpus::Prose(1, 200), DocumentFormat::kText, {}, 5)
        .status();
  }));
  ASSERT_EQ(replica.AppliedLogSequence(), 5u);
  const auto soon = [] { return std::chrono::steady_clock::now() + std::chrono::milliseconds(50); };
  EXPECT_TRUE(absl::IsUnavailable(replica.OutcomeOf(5, soon()).status()));

  LogReplica restarted(generations.get(), /*ids_from_log_sequence=*/true);
  EXPECT_TRUE(absl::IsNotFound(restarted.OutcomeOf(5, soon()).status()));
}

// RocksDB's files, with appends to its write-ahead log failing while `fail` is set (a full
// disk, an I/O error at the moment of one write).
class FailingWalEnv : public rocksdb::EnvWrapper {
 public:
  FailingWalEnv() : rocksdb::EnvWrapper(rocksdb::Env::Default()) {}
  const char* Name() const override { return "FailingWalEnv"; }
  rocksdb::Status NewWritableFile(const std::string& name,
                                  std::unique_ptr<rocksdb::WritableFile>* result,
                                  const rocksdb::EnvOptions& options) override {
    rocksdb::Status s = target()->NewWritableFile(name, result, options);
    if (s.ok() && name.size() > 4 && name.substr(name.size() - 4) == ".log") {
      *result = std::make_unique<File>(std::move(*result), &fail);
    }
    return s;
  }
  std::atomic<bool> fail{false};

 private:
  class File : public rocksdb::WritableFileWrapper {
   public:
    File(std::unique_ptr<rocksdb::WritableFile> file, std::atomic<bool>* fail)
        : rocksdb::WritableFileWrapper(file.get()), file_(std::move(file)), fail_(fail) {}
    rocksdb::Status Append(const rocksdb::Slice& data) override {
      if (fail_->load()) return rocksdb::Status::NoSpace("injected: disk full");
      return rocksdb::WritableFileWrapper::Append(data);
    }
    rocksdb::Status Append(const rocksdb::Slice& data,
                           const rocksdb::DataVerificationInfo& info) override {
      if (fail_->load()) return rocksdb::Status::NoSpace("injected: disk full");
      return rocksdb::WritableFileWrapper::Append(data, info);
    }

   private:
    std::unique_ptr<rocksdb::WritableFile> file_;
    std::atomic<bool>* fail_;
  };
};

// A registration event whose write fails is applied again under the same id: the log
// sequence with partitions, the next id without; a failed write must not use one up, or
// the retry stores the document under an id other nodes do not give it.
TEST(LogReplicaApplyTest, AFailedWriteDoesNotUseUpTheEventsId) {
  for (const bool partitioned : {true, false}) {
    SCOPED_TRACE(partitioned ? "partitioned" : "unpartitioned");
    testing::TempDir dir;
    FailingWalEnv env;
    IndexGenerationsOptions options;
    options.data_dir = dir.path().string();
    options.index.env = &env;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<IndexGenerations> generations,
                         IndexGenerations::Open(options));
    LogReplica replica(generations.get(), /*ids_from_log_sequence=*/partitioned);
    RegistrationEvent event;
    event.content = testing_corpus::Prose(3, 200);
    event.format = static_cast<uint32_t>(DocumentFormat::kText);
    event.metadata.registered_unix_micros = 1;
    env.fail = true;
    const absl::Status failed = replica.Apply(1, event);
    env.fail = false;
    ASSERT_FALSE(failed.ok());
    // Tried again as the applier does, until RocksDB has recovered from the error.
    absl::Status retried;
    ASSERT_TRUE(Eventually([&] { return (retried = replica.Apply(1, event)).ok(); }))
        << retried << " after " << failed;
    ASSERT_OK_AND_ASSIGN(RegisterResultInfo outcome,
                         replica.OutcomeOf(1, std::chrono::steady_clock::now()));
    EXPECT_EQ(outcome.outcome.id, 1u);
  }
}

// One copsd child process with its own data directory; killed if a test ends (or fails)
// without stopping it.
struct Copsd {
  Copsd() = default;
  Copsd(const Copsd&) = delete;
  Copsd& operator=(const Copsd&) = delete;
  ~Copsd() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      testing::WaitExit(pid);
    }
  }
  pid_t pid = -1;
  std::string address;
  std::unique_ptr<Client> client;
};

class LogReplicaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::NatsServer::Installed()) GTEST_SKIP() << testing::NatsServer::kNotInstalled;
    ASSERT_OK_AND_ASSIGN(nats_, testing::NatsServer::Start(dir_.Join("nats")));
  }
  void TearDown() override {
    Stop(&follower_, SIGTERM);
    Stop(&primary_, SIGTERM);
  }

  // Starts copsd on `name`'s data directory with `role` ("--log" or "--follow") and `extra`
  // flags.
  void Start(const std::string& name, const std::string& role, Copsd* out,
             const std::vector<std::string>& extra = {}) {
    const fs::path dir = dir_.path() / name;
    fs::create_directories(dir);
    fs::remove(dir / "port");
    std::vector<std::string> argv = {
        BuildDir() + "/server/copsd", "--data-dir", (dir / "data").string(), "--listen",
        "127.0.0.1:0", "--port-file", (dir / "port").string(), "--hash-key",
        "000102030405060708090a0b0c0d0e0f", "--log-level", "warn", "--primary",
        "primary.example:7411", role, nats_->url(), "--log-replicas", "1",
        "--allow-unreplicated-log"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    out->pid = testing::Spawn(argv, {}, dir / "copsd.out", dir / "copsd.log");
    ASSERT_TRUE(Eventually([&] {
      int status = 0;
      return fs::exists(dir / "port") || waitpid(out->pid, &status, WNOHANG) != 0;
    }));
    ASSERT_TRUE(fs::exists(dir / "port")) << testing::ReadFileOrEmpty(dir / "copsd.log");
    out->address = "127.0.0.1:" + std::to_string(std::stoi(testing::ReadFileOrEmpty(dir / "port")));
    ClientOptions options;
    options.target = out->address;
    options.timeout = std::chrono::seconds(10);
    ASSERT_OK_AND_ASSIGN(out->client, Client::Connect(options));
  }

  static void Stop(Copsd* copsd, int signal) {
    if (copsd->pid <= 0) return;
    copsd->client.reset();
    kill(copsd->pid, signal);
    testing::WaitExit(copsd->pid);
    copsd->pid = -1;
  }

  // A primary (--log) and a follower (--follow) of the test's log.
  void StartPrimaryAndFollower() {
    ASSERT_NO_FATAL_FAILURE(Start("primary", "--log", &primary_));
    ASSERT_NO_FATAL_FAILURE(Start("follower", "--follow", &follower_));
  }

  // Registers corpus texts [from, to) on the primary, appending their ids to `ids`.
  void RegisterOnPrimary(size_t from, size_t to, std::vector<uint64_t>* ids) {
    for (size_t i = from; i < to; ++i) {
      ASSERT_OK_AND_ASSIGN(v1::RegisterDocumentReply r, primary_.client->Register(DocumentOf(i)));
      EXPECT_TRUE(r.created());
      ids->push_back(r.doc_id());
    }
  }

  static v1::Document DocumentOf(size_t i) {
    v1::Document doc;
    doc.set_content(Corpus()[i].body);
    doc.mutable_metadata()->set_title(Corpus()[i].title);
    doc.mutable_metadata()->set_external_id("doc-" + std::to_string(i));
    return doc;
  }

  static uint64_t Documents(Copsd* copsd) {
    absl::StatusOr<v1::GetStatsReply> stats = copsd->client->Stats();
    return stats.ok() ? stats->documents() : UINT64_MAX;
  }

  // The best match's id, 0 when none; as of log event `min_log_sequence` when it is not 0.
  static uint64_t BestMatch(Copsd* copsd, size_t i, uint64_t min_log_sequence = 0) {
    v1::CheckDocumentRequest request;
    request.set_content(Corpus()[i].body);
    request.set_min_log_sequence(min_log_sequence);
    absl::StatusOr<v1::CheckDocumentReply> reply = copsd->client->Check(request);
    EXPECT_OK(reply);
    return reply.ok() && reply->matches_size() > 0 ? reply->matches(0).doc_id() : 0;
  }

  testing::TempDir dir_;
  std::unique_ptr<testing::NatsServer> nats_;
  Copsd primary_;
  Copsd follower_;
};

TEST_F(LogReplicaTest, FollowerFindsDocumentsRegisteredOnThePrimaryAndRefusesWrites) {
  ASSERT_NO_FATAL_FAILURE(StartPrimaryAndFollower());
  std::vector<uint64_t> ids;
  ASSERT_NO_FATAL_FAILURE(RegisterOnPrimary(0, 3, &ids));
  // Acknowledged means applied on the primary: its own checks see the documents at once.
  EXPECT_EQ(Documents(&primary_), 3u);
  EXPECT_EQ(BestMatch(&primary_, 1), ids[1]);
  ASSERT_TRUE(Eventually([&] { return Documents(&follower_) == 3; }));
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(BestMatch(&follower_, i), ids[i]);

  absl::StatusOr<v1::RegisterDocumentReply> refused = follower_.client->Register(DocumentOf(3));
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("primary.example:7411"), std::string::npos)
      << refused.status();
  EXPECT_TRUE(absl::IsFailedPrecondition(follower_.client->Unregister(ids[0]).status()));
  EXPECT_EQ(Documents(&follower_), 3u);
}

TEST_F(LogReplicaTest, UnregistrationPropagatesToTheFollower) {
  ASSERT_NO_FATAL_FAILURE(StartPrimaryAndFollower());
  std::vector<uint64_t> ids;
  ASSERT_NO_FATAL_FAILURE(RegisterOnPrimary(0, 2, &ids));
  ASSERT_TRUE(Eventually([&] { return Documents(&follower_) == 2; }));
  ASSERT_OK_AND_ASSIGN(v1::UnregisterDocumentReply gone, primary_.client->Unregister(ids[0]));
  EXPECT_EQ(gone.log_sequence(), 3u) << "the log's third event, after two registrations";
  EXPECT_EQ(BestMatch(&primary_, 0), 0u);
  // Read your writes: asked as of the unregistration, the follower answers without it at once.
  EXPECT_EQ(BestMatch(&follower_, 0, gone.log_sequence()), 0u);
  EXPECT_EQ(Documents(&follower_), 1u);
  EXPECT_EQ(BestMatch(&follower_, 1), ids[1]);
  EXPECT_TRUE(absl::IsNotFound(follower_.client->Get(ids[0]).status()));
}

TEST_F(LogReplicaTest, ExpiryAndEmbargoTravelToTheFollower) {
  ASSERT_NO_FATAL_FAILURE(StartPrimaryAndFollower());
  const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const int64_t tomorrow = now + int64_t{86400} * 1000000;
  const int64_t year_2999 = int64_t{32472144000} * 1000000;
  v1::Document expiring = DocumentOf(0);
  expiring.mutable_metadata()->set_expires_unix_micros(tomorrow);
  v1::Document embargoed = DocumentOf(1);
  embargoed.mutable_metadata()->set_not_before_unix_micros(year_2999);
  ASSERT_OK_AND_ASSIGN(v1::RegisterDocumentReply a, primary_.client->Register(expiring));
  ASSERT_OK_AND_ASSIGN(v1::RegisterDocumentReply b, primary_.client->Register(embargoed));
  // An expiry in the past is refused before it reaches the log.
  v1::Document past = DocumentOf(2);
  past.mutable_metadata()->set_expires_unix_micros(now - 1000000);
  EXPECT_TRUE(absl::IsInvalidArgument(primary_.client->Register(past).status()));
  ASSERT_OK(primary_.client->Register(DocumentOf(3)));

  ASSERT_TRUE(Eventually([&] { return Documents(&follower_) == 3; }));
  ASSERT_OK_AND_ASSIGN(v1::DocumentInfo got, follower_.client->Get(a.doc_id()));
  EXPECT_EQ(got.metadata().expires_unix_micros(), tomorrow);
  ASSERT_OK_AND_ASSIGN(got, follower_.client->Get(b.doc_id()));
  EXPECT_EQ(got.metadata().not_before_unix_micros(), year_2999);
  EXPECT_EQ(BestMatch(&follower_, 0), a.doc_id());
  EXPECT_EQ(BestMatch(&follower_, 1), 0u);  // embargoed on every node
  EXPECT_EQ(BestMatch(&primary_, 1), 0u);
}

TEST_F(LogReplicaTest, KilledFollowerCatchesUpWithNoLossAndNoDuplicate) {
  ASSERT_NO_FATAL_FAILURE(StartPrimaryAndFollower());
  std::vector<uint64_t> ids;
  ASSERT_NO_FATAL_FAILURE(RegisterOnPrimary(0, 2, &ids));
  ASSERT_TRUE(Eventually([&] { return Documents(&follower_) == 2; }));
  Stop(&follower_, SIGKILL);
  // While the follower is down: more registrations and one unregistration.
  ASSERT_NO_FATAL_FAILURE(RegisterOnPrimary(2, 4, &ids));
  ASSERT_OK(primary_.client->Unregister(ids[0]));
  ASSERT_NO_FATAL_FAILURE(Start("follower", "--follow", &follower_));
  // Three documents also before the unregistration (the log's last event) is applied: that
  // it is gone is what shows the follower caught up.
  ASSERT_TRUE(Eventually([&] {
    return Documents(&follower_) == 3 && absl::IsNotFound(follower_.client->Get(ids[0]).status());
  }));
  // Every document under the primary's id, the unregistered one gone, nothing twice.
  EXPECT_EQ(BestMatch(&follower_, 0), 0u);
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(BestMatch(&follower_, i), ids[i]) << i;
  ASSERT_OK_AND_ASSIGN(v1::GetStatsReply stats, follower_.client->Stats());
  ASSERT_OK_AND_ASSIGN(v1::GetStatsReply primary_stats, primary_.client->Stats());
  EXPECT_EQ(stats.documents(), 3u);
  EXPECT_EQ(stats.postings(), primary_stats.postings());
}

// The exit code of copsd started with `args` (it is expected to refuse to start), -1 when it
// still runs after 30 s (then killed); its output in `out`.
int RefusedStart(const std::vector<std::string>& args, const fs::path& out) {
  std::vector<std::string> argv = {BuildDir() + "/server/copsd", "--listen", "127.0.0.1:0",
                                   "--hash-key", "000102030405060708090a0b0c0d0e0f"};
  argv.insert(argv.end(), args.begin(), args.end());
  const pid_t pid = testing::Spawn(argv, {}, out, out);
  int status = 0;
  if (!Eventually([&] { return waitpid(pid, &status, WNOHANG) == pid; },
                  std::chrono::seconds(30))) {
    kill(pid, SIGKILL);
    testing::WaitExit(pid);
    return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A node that has applied events from the log never creates the stream anew when it is gone
// (deleted, a NATS store lost): the new stream would number its events 1, 2, ... again, and
// this node would skip as applied the ones up to its applied sequence. It refuses to start,
// naming the stream and what it applied, and the stream stays missing for the operator to
// restore.
TEST_F(LogReplicaTest, ANodeThatAppliedTheLogNeverRecreatesItsMissingStream) {
  ASSERT_NO_FATAL_FAILURE(StartPrimaryAndFollower());
  std::vector<uint64_t> ids;
  ASSERT_NO_FATAL_FAILURE(RegisterOnPrimary(0, 3, &ids));
  ASSERT_TRUE(Eventually([&] { return Documents(&follower_) == 3; }));
  Stop(&follower_, SIGTERM);
  Stop(&primary_, SIGTERM);
  RegistrationStreamOptions stream;
  stream.url = nats_->url();
  stream.create_stream = false;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<JetStream> js, JetStream::Connect(stream));
  ASSERT_EQ(js_DeleteStream(js->context(), stream.stream.c_str(), nullptr, nullptr), NATS_OK);

  for (const char* node : {"primary", "follower"}) {
    SCOPED_TRACE(node);
    const fs::path out = dir_.path() / (std::string(node) + "-restart.log");
    const int code = RefusedStart(
        {"--data-dir", (dir_.path() / node / "data").string(),
         node == std::string("primary") ? "--log" : "--follow", nats_->url(), "--log-replicas",
         "1", "--allow-unreplicated-log"},
        out);
    EXPECT_EQ(code, 2) << testing::ReadFileOrEmpty(out);
    EXPECT_NE(testing::ReadFileOrEmpty(out).find(
                  "FAILED_PRECONDITION: stream COPS_REGISTRATIONS does not exist, but this index "
                  "has applied the log up to event 3 of stream COPS_REGISTRATIONS created at "),
              std::string::npos)
        << testing::ReadFileOrEmpty(out);
    jsStreamInfo* info = nullptr;
    EXPECT_EQ(js_GetStreamInfo(&info, js->context(), stream.stream.c_str(), nullptr, nullptr),
              NATS_NOT_FOUND)
        << "the stream was created anew";
    if (info != nullptr) jsStreamInfo_Destroy(info);
  }
}

// The stream deleted under running nodes: each refuses it (applies nothing more) and says so
// in its health, which turns NOT_SERVING (GET /healthz asks the same service), instead of
// looking healthy while it only logs.
TEST_F(LogReplicaTest, ARunningNodeThatRefusesTheStreamIsNotServing) {
  ASSERT_NO_FATAL_FAILURE(StartPrimaryAndFollower());
  std::vector<uint64_t> ids;
  ASSERT_NO_FATAL_FAILURE(RegisterOnPrimary(0, 3, &ids));
  ASSERT_TRUE(Eventually([&] { return Documents(&follower_) == 3; }));
  EXPECT_OK(follower_.client->Health());
  RegistrationStreamOptions stream;
  stream.url = nats_->url();
  stream.create_stream = false;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<JetStream> js, JetStream::Connect(stream));
  ASSERT_EQ(js_DeleteStream(js->context(), stream.stream.c_str(), nullptr, nullptr), NATS_OK);
  for (Copsd* node : {&follower_, &primary_}) {
    absl::Status health;
    EXPECT_TRUE(Eventually([&] {
      health = node->client->Health();
      return !health.ok();
    })) << "still serving after refusing the stream";
    EXPECT_NE(health.message().find("NOT_SERVING"), std::string::npos) << health;
  }
  EXPECT_EQ(Documents(&follower_), 3u);  // reads go on
}

// One NATS server's store holds the only copy of an event kept once: copsd asks for 3 copies
// unless told otherwise, and refuses a stream that keeps fewer.
TEST_F(LogReplicaTest, ALogKeptByFewerThanThreeServersIsRefusedUnlessAllowed) {
  const fs::path out = dir_.path() / "refused.log";
  EXPECT_EQ(RefusedStart({"--data-dir", dir_.Join("a"), "--log", nats_->url(), "--log-replicas",
                          "1"},
                         out),
            2);
  EXPECT_NE(testing::ReadFileOrEmpty(out).find("--log-replicas 1 keeps fewer than 3 copies of "
                                               "the registration log"),
            std::string::npos)
      << testing::ReadFileOrEmpty(out);
  EXPECT_NE(testing::ReadFileOrEmpty(out).find("--allow-unreplicated-log"), std::string::npos);

  RegistrationStreamOptions stream;  // a stream of one copy, made by an older copsd
  stream.url = nats_->url();
  stream.replicas = 1;
  ASSERT_OK(JetStream::Connect(stream).status());
  for (const char* role : {"--log", "--follow", "--route"}) {
    SCOPED_TRACE(role);
    std::vector<std::string> args = {"--data-dir", dir_.Join(std::string("b") + (role + 2)), role,
                                     nats_->url()};
    if (role == std::string("--route")) {
      args.insert(args.end(), {"--partitions", "1", "--replica", "0=127.0.0.1:1"});
    }
    EXPECT_EQ(RefusedStart(args, out), 2) << testing::ReadFileOrEmpty(out);
    EXPECT_NE(testing::ReadFileOrEmpty(out).find(
                  "FAILED_PRECONDITION: stream COPS_REGISTRATIONS keeps 1 copy of each event, "
                  "fewer than the 3 wanted"),
              std::string::npos)
        << testing::ReadFileOrEmpty(out);
  }
}

// A new replica seeded from another's snapshot (`cops admin snapshot`, a complete data
// directory whose index holds its applied log sequence) consumes the log from that sequence
// on: the stream may have been trimmed below it. A replica that lacks trimmed events refuses
// to start.
TEST_F(LogReplicaTest, AReplicaSeededFromASnapshotCatchesUpFromTheTrimmedLog) {
  ASSERT_NO_FATAL_FAILURE(StartPrimaryAndFollower());
  std::vector<uint64_t> ids;
  ASSERT_NO_FATAL_FAILURE(RegisterOnPrimary(0, 3, &ids));
  ASSERT_TRUE(Eventually([&] { return Documents(&follower_) == 3; }));
  // The follower's snapshot; its index holds the 3 events applied so far.
  v1::CreateSnapshotResponse snapshot;
  {
    auto admin = v1::Admin::NewStub(
        grpc::CreateChannel(follower_.address, grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    v1::CreateSnapshotRequest request;
    request.set_name("seed");
    const grpc::Status s = admin->CreateSnapshot(&context, request, &snapshot);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  // The stream trimmed below the snapshot: events 1..3 are gone from the log.
  RegistrationStreamOptions stream;
  stream.url = nats_->url();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<JetStream> js, JetStream::Connect(stream));
  jsOptions purge;
  jsOptions_Init(&purge);
  purge.Stream.Purge.Sequence = 4;  // up to, not including, sequence 4
  ASSERT_EQ(js_PurgeStream(js->context(), stream.stream.c_str(), &purge, nullptr), NATS_OK);
  // Later events, then a replica started on a copy of the snapshot (as `cp -a` would).
  ASSERT_NO_FATAL_FAILURE(RegisterOnPrimary(3, 4, &ids));
  ASSERT_OK(primary_.client->Unregister(ids[1]));
  const fs::path seeded = dir_.path() / "seeded";
  fs::create_directories(seeded);
  fs::copy(snapshot.path(), seeded / "data", fs::copy_options::recursive);
  Copsd replica;
  ASSERT_NO_FATAL_FAILURE(Start("seeded", "--follow", &replica));
  ASSERT_TRUE(Eventually([&] { return Documents(&replica) == 3; })) << Documents(&replica);
  EXPECT_EQ(BestMatch(&replica, 1), 0u);
  for (size_t i : {0, 2, 3}) EXPECT_EQ(BestMatch(&replica, i), ids[i]) << i;
  Stop(&replica, SIGTERM);
  // A replica started empty would miss the trimmed events: it refuses to start, saying why.
  const fs::path empty = dir_.path() / "empty";
  fs::create_directories(empty);
  const int code = testing::WaitExit(testing::Spawn(
      {BuildDir() + "/server/copsd", "--data-dir", (empty / "data").string(), "--listen",
       "127.0.0.1:0", "--hash-key", "000102030405060708090a0b0c0d0e0f", "--follow",
       nats_->url(), "--log-replicas", "1", "--allow-unreplicated-log"},
      {}, empty / "copsd.out", empty / "copsd.log"));
  EXPECT_EQ(code, 2);
  const std::string log = testing::ReadFileOrEmpty(empty / "copsd.log");
  EXPECT_NE(log.find("FAILED_PRECONDITION: stream COPS_REGISTRATIONS no longer holds events 1 to 3"),
            std::string::npos)
      << log;
}

// A follower that cannot apply an event for a reason of its own (here a smaller
// --max-document-bytes than the primary's: RESOURCE_EXHAUSTED, as a converter's time budget
// or a full disk) does not take it as a refusal every node shares: it retries it, says so in
// its log, and applies nothing after it. Restarted without the limit, it holds every
// document under the primary's ids; had it skipped the event, its later documents would have
// other ids than on the primary (and an unregistration would remove another document there).
TEST_F(LogReplicaTest, AnEventAFollowerCannotApplyIsRetriedNeverSkipped) {
  ASSERT_NO_FATAL_FAILURE(Start("primary", "--log", &primary_));
  ASSERT_NO_FATAL_FAILURE(
      Start("follower", "--follow", &follower_, {"--max-document-bytes", "3000"}));
  v1::Document large;
  large.set_content(testing_corpus::Prose(7, 1500));  // ~10 KB
  ASSERT_GT(large.content().size(), 3000u);
  v1::Document small;
  small.set_content(testing_corpus::Prose(8, 200));
  ASSERT_LT(small.content().size(), 3000u);
  ASSERT_OK_AND_ASSIGN(v1::RegisterDocumentReply a, primary_.client->Register(large));
  ASSERT_OK_AND_ASSIGN(v1::RegisterDocumentReply b, primary_.client->Register(small));
  const fs::path log = dir_.path() / "follower" / "copsd.out";  // spdlog writes to stdout
  ASSERT_TRUE(Eventually([&] {
    return testing::ReadFileOrEmpty(log).find("log_apply_failed") != std::string::npos;
  })) << testing::ReadFileOrEmpty(log);
  EXPECT_EQ(Documents(&follower_), 0u);  // nothing after the event it cannot apply yet

  Stop(&follower_, SIGTERM);
  ASSERT_NO_FATAL_FAILURE(Start("follower", "--follow", &follower_));
  ASSERT_TRUE(Eventually([&] { return Documents(&follower_) == 2; })) << Documents(&follower_);
  ASSERT_OK_AND_ASSIGN(v1::DocumentInfo got, follower_.client->Get(b.doc_id()));
  EXPECT_EQ(got.sha256(), primary_.client->Get(b.doc_id())->sha256());
  ASSERT_OK_AND_ASSIGN(got, follower_.client->Get(a.doc_id()));
  EXPECT_EQ(got.size_bytes(), large.content().size());
}

// Rotating the hashing key of a node that applies the log would rebuild its index without
// its applied sequence (it would then decline every later event): refused, on the log's
// writer and on a follower alike, with FAILED_PRECONDITION naming why.
TEST_F(LogReplicaTest, KeyRotationIsRefusedOnAReplicatedNode) {
  for (const char* role : {"--log", "--follow"}) {
    SCOPED_TRACE(role);
    // Without --hash-key: a key kept in the data directory, which a single node may rotate.
    ASSERT_OK_AND_ASSIGN(auto copsd, testing::CopsdProcess::Start(dir_.path() / (role + 2),
                                                                   {role, nats_->url(), "--log-replicas", "1",
                                                                    "--allow-unreplicated-log"}));
    auto admin = v1::Admin::NewStub(
        grpc::CreateChannel(copsd->address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    v1::RotateKeyRequest request;
    v1::RotateKeyResponse response;
    const grpc::Status s = admin->RotateKey(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
    EXPECT_NE(s.error_message().find("registration log"), std::string::npos)
        << s.error_message();
    copsd->Stop();
  }
}

}  // namespace
}  // namespace cops
