// Rotation of the chunk-hashing key end to end: copsd's IndexGenerations behind the real
// CopyDetection and Admin services on an ephemeral loopback port, with access control on.
// Each test owns a data directory and restarts the "server" on it where a restart matters.

#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "access/access_control.h"
#include "core/params.h"
#include "core/stem_pairs.h"
#include "engine/index_generations.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "proto/cops.grpc.pb.h"
#include "proto/cops_admin.grpc.pb.h"
#include "rocksdb/db.h"
#include "server/admin_service.h"
#include "server/service.h"
#include "storage/data_dir.h"
#include "storage/stem_pair_store.h"
#include "tests/storage/raw_stem_pairs.h"
#include "tests/server/test_corpus.h"
#include "tests/storage/fault_file_system.h"
#include "tests/testing/documents.h"
#include "tests/testing/files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_server.h"

namespace cops {
namespace {

using testing_corpus::Prose;

namespace fs = std::filesystem;

class IndexGenerationsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "key_rotation_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    options_.data_dir = dir_.string();
  }
  void TearDown() override {
    Stop();
    fs::remove_all(dir_);
  }

  // Opens the data directory as copsd does and serves it; a fatal test failure on error.
  void Start() {
    auto generations = IndexGenerations::Open(options_);
    ASSERT_TRUE(generations.ok()) << generations.status();
    generations_ = *std::move(generations);
    auto access = OpenAccessControl(dir_.string(), /*bootstrap_admin=*/true);
    ASSERT_TRUE(access.ok()) << access.status();
    access_ = *std::move(access);
    std::ifstream(dir_ / "admin.key") >> admin_key_;
    ASSERT_FALSE(admin_key_.empty());
    usage_ = std::make_unique<UsageLedger>(access_->store());
    audit_ = std::make_unique<AuditSink>(AppendTo(access_->store()));
    service_ = std::make_unique<CopyDetectionService>(generations_.get(), access_.get(),
                                                      usage_.get(), audit_.get());
    admin_ = std::make_unique<AdminService>(access_.get(), access_.get(), usage_.get(),
                                            generations_.get());
    // Served as every test server is (one port, not shared with any other process's).
    auto server = testing::TestServer::Start({service_.get(), admin_.get()});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = server_->NewStub<v1::CopyDetection>();
    admin_stub_ = server_->NewStub<v1::Admin>();
  }

  // As copsd shuts down: drain, then close the generations.
  void Stop() {
    server_.reset();
    stub_.reset();
    admin_stub_.reset();
    admin_.reset();
    service_.reset();
    audit_.reset();
    usage_.reset();
    access_.reset();
    generations_.reset();
  }

  void Prepare(grpc::ClientContext* ctx, const std::string& key = "") {
    ctx->AddMetadata("authorization", "Bearer " + (key.empty() ? admin_key_ : key));
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  }

  uint64_t Register(const std::string& text, const std::string& title) {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    v1::RegisterDocumentRequest req;
    req.mutable_document()->set_content(text);
    req.mutable_document()->set_format(v1::DOCUMENT_FORMAT_TEXT);
    req.mutable_document()->mutable_metadata()->set_title(title);
    req.mutable_document()->mutable_metadata()->set_collection("papers");
    v1::RegisterDocumentReply reply;
    grpc::Status s = stub_->RegisterDocument(&ctx, req, &reply);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_TRUE(reply.created());
    return reply.doc_id();
  }

  grpc::Status Unregister(uint64_t id) {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    v1::UnregisterDocumentRequest req;
    req.set_doc_id(id);
    v1::UnregisterDocumentReply reply;
    return stub_->UnregisterDocument(&ctx, req, &reply);
  }

  // The ids of the documents reported for `text`.
  std::vector<uint64_t> MatchingIds(const std::string& text) {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    v1::CheckDocumentRequest req;
    req.set_content(text);
    req.set_format(v1::DOCUMENT_FORMAT_TEXT);
    v1::CheckDocumentReply reply;
    grpc::Status s = stub_->CheckDocument(&ctx, req, &reply);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::vector<uint64_t> ids;
    for (const v1::Match& m : reply.matches()) ids.push_back(m.doc_id());
    return ids;
  }

  v1::GetStatsReply Stats() {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    v1::GetStatsReply reply;
    grpc::Status s = stub_->GetStats(&ctx, v1::GetStatsRequest(), &reply);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return reply;
  }

  grpc::Status RotateKey(v1::RotateKeyResponse* response, bool drop = false,
                         const std::string& key = "") {
    grpc::ClientContext ctx;
    Prepare(&ctx, key);
    v1::RotateKeyRequest req;
    req.set_drop_documents_without_text(drop);
    return admin_stub_->RotateKey(&ctx, req, response);
  }

  v1::KeyRotationStatus RotationStatus() {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    v1::GetKeyRotationStatusResponse response;
    grpc::Status s = admin_stub_->GetKeyRotationStatus(&ctx, v1::GetKeyRotationStatusRequest(),
                                                       &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return response.status();
  }

  // Polls until the rotation is done or failed (at most 60 s).
  v1::KeyRotationStatus WaitForRotation() {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    v1::KeyRotationStatus status;
    do {
      status = RotationStatus();
      if (status.state() == v1::KEY_ROTATION_STATE_DONE ||
          status.state() == v1::KEY_ROTATION_STATE_FAILED) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    } while (std::chrono::steady_clock::now() < until);
    return status;
  }

  void RotateAndWait() {
    v1::RotateKeyResponse started;
    grpc::Status s = RotateKey(&started);
    ASSERT_TRUE(s.ok()) << s.error_message();
    v1::KeyRotationStatus done = WaitForRotation();
    ASSERT_EQ(done.state(), v1::KEY_ROTATION_STATE_DONE) << done.error();
  }

  // The live index's stats once its block cache warm-up has ended (at most 30 s).
  IndexStats WarmedStats() {
    std::shared_ptr<CopyDetector> live = generations_->Current();
    for (int i = 0; i < 3000 && live->index()->Stats().block_cache_warming; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return live->index()->Stats();
  }

  fs::path dir_;
  IndexGenerationsOptions options_;
  std::unique_ptr<IndexGenerations> generations_;
  std::unique_ptr<AccessControl> access_;
  std::unique_ptr<UsageLedger> usage_;
  std::unique_ptr<AuditSink> audit_;
  std::string admin_key_;
  std::unique_ptr<CopyDetectionService> service_;
  std::unique_ptr<AdminService> admin_;
  std::unique_ptr<testing::TestServer> server_;
  std::unique_ptr<v1::CopyDetection::Stub> stub_;
  std::unique_ptr<v1::Admin::Stub> admin_stub_;
};

TEST_F(IndexGenerationsTest, RotationKeepsIdsChangesKeyAndForgetsTheOldOne) {
  Start();
  std::vector<uint64_t> ids;
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    ids.push_back(Register(Prose(seed, 300), "paper " + std::to_string(seed)));
  }
  const std::string old_key_id = Stats().key_id();
  const std::string copy = "Intro of my own. " + Prose(3, 300).substr(0, 900);
  ASSERT_EQ(MatchingIds(copy), std::vector<uint64_t>{ids[2]});
  ASSERT_TRUE(fs::exists(dir_ / "hash.key"));

  v1::RotateKeyResponse started;
  grpc::Status s = RotateKey(&started);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(started.status().documents_total(), 5u);
  EXPECT_FALSE(started.status().new_key_id().empty());
  EXPECT_NE(started.status().new_key_id(), old_key_id);
  const v1::KeyRotationStatus done = WaitForRotation();
  ASSERT_EQ(done.state(), v1::KEY_ROTATION_STATE_DONE) << done.error();
  EXPECT_EQ(done.documents_done(), 5u);
  EXPECT_EQ(done.generation(), 1u);
  EXPECT_EQ(done.key_id(), started.status().new_key_id());

  // The same copy is found as the same document; the reported key id is the new one.
  EXPECT_EQ(MatchingIds(copy), std::vector<uint64_t>{ids[2]});
  const v1::GetStatsReply stats = Stats();
  EXPECT_EQ(stats.key_id(), started.status().new_key_id());
  EXPECT_EQ(stats.documents(), 5u);
  // The old generation and its key are gone; CURRENT names the new one.
  EXPECT_FALSE(fs::exists(dir_ / "hash.key"));
  EXPECT_FALSE(fs::exists(dir_ / "index"));
  EXPECT_TRUE(fs::exists(dir_ / "hash_key.1"));
  EXPECT_EQ(testing::ReadFileOrEmpty(dir_ / "CURRENT"), "index.1 hash_key.1\n");
  // A new registration takes a fresh id, never one of the old ones.
  const uint64_t after = Register(Prose(99, 300), "after");
  EXPECT_GT(after, ids.back());

  // Restart: only the new generation and key exist, and everything is still found.
  Stop();
  Start();
  EXPECT_EQ(Stats().key_id(), started.status().new_key_id());
  EXPECT_EQ(MatchingIds(copy), std::vector<uint64_t>{ids[2]});
  EXPECT_EQ(MatchingIds(Prose(99, 300)), std::vector<uint64_t>{after});
  EXPECT_FALSE(fs::exists(dir_ / "hash.key"));

  // A second rotation retires generation 1 the same way.
  RotateAndWait();
  EXPECT_FALSE(fs::exists(dir_ / "hash_key.1"));
  EXPECT_FALSE(fs::exists(dir_ / "index.1"));
  EXPECT_EQ(testing::ReadFileOrEmpty(dir_ / "CURRENT"), "index.2 hash_key.2\n");
  EXPECT_EQ(MatchingIds(copy), std::vector<uint64_t>{ids[2]});
}

// An index made with content-stem pairs keeps them through a rotation: the new generation's
// pairs are hashed under the new key from the stored texts, so a heavy rewrite (no run of 5
// words shared, found by its pairs alone) is still found after the switch and a restart.
TEST_F(IndexGenerationsTest, ARotationKeepsTheContentStemPairsOfAnIndexMadeWithThem) {
  options_.index.params.stem_pairs = 1;
  options_.index.params.stem_version = kStemPairsVersion;
  Start();
  const uint64_t source = Register(testing::kDripIrrigation.source, "drip irrigation");
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    Register(Prose(seed, 300), "paper " + std::to_string(seed));
  }
  // The stem-pair evidence of a check of the rewrite, as a client sees it.
  const auto rewrite_found_by_pairs = [&] {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    v1::CheckDocumentRequest req;
    req.set_content(testing::kDripIrrigation.rewrite);
    req.set_format(v1::DOCUMENT_FORMAT_TEXT);
    v1::CheckDocumentReply reply;
    grpc::Status s = stub_->CheckDocument(&ctx, req, &reply);
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_TRUE(reply.stem_pairs_checked());
    EXPECT_GT(reply.stem_pairs(), 0u);
    return reply.matches_size() == 1 && reply.matches(0).doc_id() == source &&
           reply.matches(0).stem_pair_violation() && !reply.matches(0).chunk_violation();
  };
  ASSERT_TRUE(rewrite_found_by_pairs());
  const std::string old_key_id = Stats().key_id();

  RotateAndWait();
  EXPECT_NE(Stats().key_id(), old_key_id);
  EXPECT_TRUE(rewrite_found_by_pairs());
  EXPECT_EQ(generations_->Current()->index()->params().stem_pairs, 1u);

  Stop();
  Start();
  EXPECT_TRUE(rewrite_found_by_pairs());
}

// The first byte of each stem-pairs key: 'p' and 'd' in layout 1, 'P' and 'd' in layout 2.
// REQUIRES: the index was flushed before it closed (testing::RawStemPairs).
std::set<char> PairKeyTags(const fs::path& index) {
  std::set<char> tags;
  for (const std::string& key : testing::RawStemPairs(index.string()).Keys()) tags.insert(key[0]);
  return tags;
}

// An index whose stem pairs are in the first layout (one key per pair and holder, what the
// build before the merged layout wrote) keeps working, and a rotation, the documented way to
// move it, rebuilds the pairs in the current layout.
TEST_F(IndexGenerationsTest, ARotationMovesStemPairsOfTheFirstLayoutToTheCurrentOne) {
  options_.index.params.stem_pairs = 1;
  options_.index.params.stem_version = kStemPairsVersion;
  Start();
  Stop();
  {  // What that build left: the same index without the recorded layout.
    testing::RawStemPairs raw((dir_ / "index").string());
    ASSERT_TRUE(raw.db->Delete(rocksdb::WriteOptions(), kStemPairsLayoutKey).ok());
  }
  Start();
  const uint64_t source = Register(testing::kDripIrrigation.source, "drip irrigation");
  Register(Prose(1, 300), "paper 1");
  EXPECT_EQ(MatchingIds(testing::kDripIrrigation.rewrite), std::vector<uint64_t>{source});
  ASSERT_OK(generations_->Current()->index()->Flush());
  Stop();
  EXPECT_EQ(PairKeyTags(dir_ / "index"), (std::set<char>{'d', 'p'}));

  Start();
  RotateAndWait();
  EXPECT_EQ(MatchingIds(testing::kDripIrrigation.rewrite), std::vector<uint64_t>{source});
  ASSERT_OK(generations_->Current()->index()->Flush());
  Stop();
  EXPECT_EQ(PairKeyTags(dir_ / "index.1"), (std::set<char>{'P', 'd'}));
  testing::RawStemPairs rotated((dir_ / "index.1").string());
  std::string layout;
  EXPECT_TRUE(rotated.db->Get(rocksdb::ReadOptions(), kStemPairsLayoutKey, &layout).ok());
}

TEST_F(IndexGenerationsTest, TheLiveIndexIsReadIntoItsCacheWhenOpenedAndAfterASwitch) {
  Start();
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    Register(Prose(seed, 3000), "paper " + std::to_string(seed));
  }
  Stop();
  Start();  // without warming (the fixture's default): the index's files, untouched
  IndexStats cold = WarmedStats();
  ASSERT_GT(cold.postings_disk_bytes, 0u);
  EXPECT_LT(cold.block_cache_bytes, cold.postings_disk_bytes / 2);
  Stop();

  options_.warm_cache_fill = 0.9;
  Start();
  IndexStats warm = WarmedStats();
  EXPECT_FALSE(warm.block_cache_warming);
  EXPECT_GE(warm.block_cache_bytes, warm.postings_disk_bytes);

  // The rotation's new generation was written, not read: it is warmed once live.
  RotateAndWait();
  warm = WarmedStats();
  ASSERT_GT(warm.postings_disk_bytes, 0u);
  EXPECT_GE(warm.block_cache_bytes, warm.postings_disk_bytes / 2);
}

TEST_F(IndexGenerationsTest, RotationKeepsEachDocumentsExpiryAndEmbargo) {
  Start();
  constexpr int64_t kExpires = 4'000'000'000'000'000, kNotBefore = 3'000'000'000'000'000;
  grpc::ClientContext ctx;
  Prepare(&ctx);
  v1::RegisterDocumentRequest req;
  req.mutable_document()->set_content(Prose(7, 300));
  req.mutable_document()->set_format(v1::DOCUMENT_FORMAT_TEXT);
  req.mutable_document()->mutable_metadata()->set_expires_unix_micros(kExpires);
  req.mutable_document()->mutable_metadata()->set_not_before_unix_micros(kNotBefore);
  v1::RegisterDocumentReply reply;
  const grpc::Status s = stub_->RegisterDocument(&ctx, req, &reply);
  ASSERT_TRUE(s.ok()) << s.error_message();
  const uint64_t plain = Register(Prose(8, 300), "plain");

  RotateAndWait();
  const std::shared_ptr<CopyDetector> live = generations_->Current();
  ASSERT_OK_AND_ASSIGN(const DocumentRecord record, live->index()->GetDocument(reply.doc_id()));
  EXPECT_EQ(record.expires_unix_micros, kExpires);
  EXPECT_EQ(record.not_before_unix_micros, kNotBefore);
  EXPECT_EQ(live->index()->GetDocument(plain)->expires_unix_micros, 0);
  // Under embargo in the new generation as in the old, and swept there when due.
  EXPECT_TRUE(MatchingIds(Prose(7, 300)).empty());
  EXPECT_EQ(live->index()->ExpiredDocuments(kExpires, 10).value(),
            std::vector<DocId>{reply.doc_id()});
}

// Turns the (empty) data directory into what a build before verification and
// normalization version 3 created: both copies of the parameters say so.
void MakeDataDirOfAnOlderBuild(const fs::path& dir) {
  DataDir data_dir(dir.string());
  ChunkingParams params = data_dir.ReadParams().value().value();
  params.normalization_version = 2;
  params.verify_k = 0;
  params.dense_chunks = 0;
  ASSERT_TRUE(data_dir.WriteParams(params).ok());
  const std::string encoded = params.Encode();
  rocksdb::DB* raw = nullptr;
  std::vector<std::string> names;
  const std::string path = (dir / "index").string();
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const auto& n : names) cfs.emplace_back(n, rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), path, cfs, &handles, &raw).ok());
  EXPECT_TRUE(raw->Put(rocksdb::WriteOptions(), "chunking_params", encoded).ok());
  for (auto* h : handles) {
    if (h->GetName() == "verify") {
      EXPECT_TRUE(raw->DropColumnFamily(h).ok());
    }
  }
  for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
  delete raw;
}

TEST_F(IndexGenerationsTest, AnIndexOfAnOlderBuildKeepsWorkingAndARotationUpgradesIt) {
  Start();
  Stop();
  MakeDataDirOfAnOlderBuild(dir_);
  Start();
  EXPECT_EQ(Stats().chunking().find("verify_k"), std::string::npos) << Stats().chunking();
  EXPECT_NE(Stats().chunking().find("norm=2"), std::string::npos) << Stats().chunking();
  std::vector<uint64_t> ids;
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    ids.push_back(Register(Prose(seed, 300), "paper " + std::to_string(seed)));
  }
  const std::string copy = "Intro of my own. " + Prose(2, 300).substr(0, 900);
  ASSERT_EQ(MatchingIds(copy), std::vector<uint64_t>{ids[1]}) << "the old index still works";

  RotateAndWait();
  const std::string chunking = Stats().chunking();
  EXPECT_NE(chunking.find("verify_k=3"), std::string::npos) << chunking;
  EXPECT_NE(chunking.find("norm=3"), std::string::npos) << chunking;
  EXPECT_EQ(Stats().documents(), 4u);
  EXPECT_EQ(MatchingIds(copy), std::vector<uint64_t>{ids[1]});
  // The upgrade is recorded: a restart opens the new generation under the new parameters.
  Stop();
  Start();
  EXPECT_NE(Stats().chunking().find("verify_k=3"), std::string::npos);
  EXPECT_EQ(MatchingIds(copy), std::vector<uint64_t>{ids[1]});
}

TEST_F(IndexGenerationsTest, WritesDuringRotationArePresentOrAbsentAfterwards) {
  // Throttled so that the writes below land while the new generation is being built.
  options_.rotation.pause_per_document = std::chrono::milliseconds(40);
  Start();
  std::vector<uint64_t> ids;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    ids.push_back(Register(Prose(seed, 400), "paper " + std::to_string(seed)));
  }
  v1::RotateKeyResponse started;
  grpc::Status s = RotateKey(&started);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // While the new generation is built: one document removed, two added; checks and
  // reads keep working on the live generation.
  ASSERT_EQ(RotationStatus().state(), v1::KEY_ROTATION_STATE_REBUILDING);
  EXPECT_EQ(MatchingIds(Prose(2, 400)), std::vector<uint64_t>{ids[1]});
  ASSERT_TRUE(Unregister(ids[0]).ok());
  const uint64_t added = Register(Prose(500, 400), "added during rotation");
  ASSERT_TRUE(Unregister(ids[39]).ok());
  const uint64_t added2 = Register(Prose(501, 400), "added during rotation too");
  EXPECT_EQ(RotationStatus().state(), v1::KEY_ROTATION_STATE_REBUILDING);
  // A second rotation cannot start while one runs.
  v1::RotateKeyResponse again;
  EXPECT_EQ(RotateKey(&again).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  const v1::KeyRotationStatus done = WaitForRotation();
  ASSERT_EQ(done.state(), v1::KEY_ROTATION_STATE_DONE) << done.error();

  EXPECT_EQ(Stats().documents(), 40u);
  EXPECT_TRUE(MatchingIds(Prose(1, 400)).empty());
  EXPECT_TRUE(MatchingIds(Prose(40, 400)).empty());
  EXPECT_EQ(MatchingIds(Prose(500, 400)), std::vector<uint64_t>{added});
  EXPECT_EQ(MatchingIds(Prose(501, 400)), std::vector<uint64_t>{added2});
  EXPECT_EQ(MatchingIds(Prose(20, 400)), std::vector<uint64_t>{ids[19]});
  grpc::ClientContext ctx;
  Prepare(&ctx);
  v1::GetDocumentRequest req;
  req.set_doc_id(ids[0]);
  v1::GetDocumentReply reply;
  EXPECT_EQ(stub_->GetDocument(&ctx, req, &reply).error_code(), grpc::StatusCode::NOT_FOUND);

  Stop();
  Start();
  EXPECT_EQ(Stats().documents(), 40u);
  EXPECT_EQ(MatchingIds(Prose(500, 400)), std::vector<uint64_t>{added});
}

TEST_F(IndexGenerationsTest, ASnapshotDuringARotationIsOfTheLiveGenerationAndTheRotationGoesOn) {
  // Throttled so that the snapshot below is taken while the new generation is built.
  options_.rotation.pause_per_document = std::chrono::milliseconds(50);
  Start();
  std::vector<uint64_t> ids;
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    ids.push_back(Register(Prose(seed, 300), "paper " + std::to_string(seed)));
  }
  const std::string old_key_id = Stats().key_id();
  v1::RotateKeyResponse started;
  grpc::Status s = RotateKey(&started);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(RotationStatus().state(), v1::KEY_ROTATION_STATE_REBUILDING);
  v1::CreateSnapshotResponse snapshot;
  {
    grpc::ClientContext ctx;
    Prepare(&ctx);
    v1::CreateSnapshotRequest req;
    req.set_name("mid-rotation");
    s = admin_stub_->CreateSnapshot(&ctx, req, &snapshot);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  // Still rebuilding: the switch, which would have waited for the snapshot, had not begun.
  ASSERT_EQ(RotationStatus().state(), v1::KEY_ROTATION_STATE_REBUILDING);
  const v1::KeyRotationStatus done = WaitForRotation();
  ASSERT_EQ(done.state(), v1::KEY_ROTATION_STATE_DONE) << done.error();
  EXPECT_EQ(done.key_id(), started.status().new_key_id());

  // The snapshot is generation 0 under the old key, with nothing of generation 1.
  const fs::path path = snapshot.path();
  EXPECT_TRUE(fs::exists(path / "hash.key"));
  EXPECT_TRUE(fs::exists(path / "index"));
  EXPECT_FALSE(fs::exists(path / "CURRENT"));
  EXPECT_FALSE(fs::exists(path / "hash_key.1"));
  EXPECT_FALSE(fs::exists(path / "index.1"));

  // Served from a copy elsewhere: the old key, every document under its id.
  Stop();
  const fs::path live = dir_;
  dir_ = live.string() + "-restored";
  fs::copy(path, dir_, fs::copy_options::recursive);
  fs::remove_all(live);
  options_.data_dir = dir_.string();
  Start();
  EXPECT_EQ(Stats().key_id(), old_key_id);
  EXPECT_EQ(Stats().documents(), ids.size());
  for (uint32_t seed = 1; seed <= 30; ++seed) {
    EXPECT_EQ(MatchingIds(Prose(seed, 300)), std::vector<uint64_t>{ids[seed - 1]}) << seed;
  }
}

TEST_F(IndexGenerationsTest, ACallInFlightFinishesOnTheOldGenerationBeforeItIsRetired) {
  Start();
  const uint64_t id = Register(Prose(5, 300), "paper");
  // What a check in flight holds: the generation it started on.
  std::shared_ptr<CopyDetector> in_flight = generations_->Current();
  const std::string old_key_id = in_flight->params().key_id;
  v1::RotateKeyResponse started;
  ASSERT_TRUE(RotateKey(&started).ok());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (Stats().key_id() == old_key_id && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Switched: new calls use the new key, the old generation is still open for the held call.
  EXPECT_EQ(Stats().key_id(), started.status().new_key_id());
  EXPECT_EQ(RotationStatus().state(), v1::KEY_ROTATION_STATE_SWITCHING);
  EXPECT_TRUE(fs::exists(dir_ / "hash.key"));
  CheckRequestInfo check;
  const std::string text = Prose(5, 300);
  check.content = text;
  auto result = in_flight->Check(check);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->report.matches.size(), 1u);
  EXPECT_EQ(result->report.matches[0].doc_id, id);
  // Once released, the old generation and its key are deleted.
  in_flight.reset();
  EXPECT_EQ(WaitForRotation().state(), v1::KEY_ROTATION_STATE_DONE);
  EXPECT_FALSE(fs::exists(dir_ / "hash.key"));
  EXPECT_FALSE(fs::exists(dir_ / "index"));
  EXPECT_EQ(MatchingIds(text), std::vector<uint64_t>{id});
}

TEST_F(IndexGenerationsTest, OnlyAdminsMayRotate) {
  Start();
  PrincipalRecord owner;
  owner.name = "press";
  owner.role = static_cast<uint8_t>(Role::kOwner);
  owner.collections = {"papers"};
  auto issued = access_->CreatePrincipal(owner);
  ASSERT_TRUE(issued.ok()) << issued.status();
  const std::string key_id = Stats().key_id();

  v1::RotateKeyResponse response;
  EXPECT_EQ(RotateKey(&response, false, issued->api_key).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  grpc::ClientContext ctx;
  Prepare(&ctx, issued->api_key);
  v1::GetKeyRotationStatusResponse status;
  EXPECT_EQ(
      admin_stub_->GetKeyRotationStatus(&ctx, v1::GetKeyRotationStatusRequest(), &status)
          .error_code(),
      grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(RotationStatus().state(), v1::KEY_ROTATION_STATE_IDLE);
  EXPECT_EQ(Stats().key_id(), key_id);
  EXPECT_FALSE(fs::exists(dir_ / "CURRENT"));
}

TEST_F(IndexGenerationsTest, CrashBeforeTheSwitchRestartsOnTheOldGeneration) {
  Start();
  const uint64_t id = Register(Prose(7, 300), "kept");
  const std::string key_id = Stats().key_id();
  const std::string old_key = testing::ReadFileOrEmpty(dir_ / "hash.key");
  Stop();
  // What a crash during the rebuild leaves: the new key and a half-built index, no CURRENT.
  fs::create_directories(dir_ / "index.1");
  std::ofstream(dir_ / "index.1" / "000007.log") << "half written";
  std::ofstream(dir_ / "hash_key.1") << std::string(32, 'a') << "\n";
  std::ofstream(dir_ / "CURRENT.tmp") << "index.1 hash_key.1\n";
  std::ofstream(dir_ / "ROTATING") << "index.1 hash_key.1\n";

  Start();
  EXPECT_FALSE(fs::exists(dir_ / "ROTATING"));
  EXPECT_FALSE(fs::exists(dir_ / "index.1"));
  EXPECT_FALSE(fs::exists(dir_ / "hash_key.1"));
  EXPECT_FALSE(fs::exists(dir_ / "CURRENT"));
  EXPECT_EQ(testing::ReadFileOrEmpty(dir_ / "hash.key"), old_key);
  EXPECT_EQ(Stats().key_id(), key_id);
  EXPECT_EQ(MatchingIds(Prose(7, 300)), std::vector<uint64_t>{id});
  // And the rotation can simply be run again.
  RotateAndWait();
  EXPECT_EQ(MatchingIds(Prose(7, 300)), std::vector<uint64_t>{id});
  EXPECT_NE(Stats().key_id(), key_id);
}

TEST_F(IndexGenerationsTest, CrashAfterTheSwitchFinishesRetiringTheOldGeneration) {
  Start();
  const uint64_t id = Register(Prose(8, 300), "kept");
  RotateAndWait();
  const std::string key_id = Stats().key_id();
  Stop();
  // What a crash between the CURRENT rename and the retirement leaves: the old pair, and
  // ROTATING naming the new generation.
  fs::create_directories(dir_ / "index");
  std::ofstream(dir_ / "hash.key") << std::string(32, 'b') << "\n";
  std::ofstream(dir_ / "ROTATING") << "index.1 hash_key.1\n";

  Start();
  EXPECT_FALSE(fs::exists(dir_ / "index"));
  EXPECT_FALSE(fs::exists(dir_ / "hash.key"));
  EXPECT_FALSE(fs::exists(dir_ / "ROTATING"));
  EXPECT_EQ(Stats().key_id(), key_id);
  EXPECT_EQ(MatchingIds(Prose(8, 300)), std::vector<uint64_t>{id});
  Stop();

  // And an unfinished next generation from an interrupted second rotation.
  fs::create_directories(dir_ / "index.2");
  std::ofstream(dir_ / "hash_key.2") << std::string(32, 'c') << "\n";
  std::ofstream(dir_ / "ROTATING") << "index.2 hash_key.2\n";
  Start();
  EXPECT_FALSE(fs::exists(dir_ / "index.2"));
  EXPECT_FALSE(fs::exists(dir_ / "hash_key.2"));
  EXPECT_FALSE(fs::exists(dir_ / "ROTATING"));
  EXPECT_TRUE(fs::exists(dir_ / "index.1"));
  EXPECT_EQ(Stats().key_id(), key_id);
  EXPECT_EQ(MatchingIds(Prose(8, 300)), std::vector<uint64_t>{id});
}

TEST_F(IndexGenerationsTest, DocumentsWithoutTextRefuseRotationUnlessDropped) {
  options_.index.store_texts = false;
  Start();
  Register(Prose(11, 300), "no text 1");
  Register(Prose(12, 300), "no text 2");
  const std::string key_id = Stats().key_id();

  v1::RotateKeyResponse response;
  grpc::Status refused = RotateKey(&response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(refused.error_message().find("2 of 2 documents"), std::string::npos)
      << refused.error_message();
  EXPECT_EQ(Stats().key_id(), key_id);
  EXPECT_FALSE(fs::exists(dir_ / "hash_key.1"));

  ASSERT_TRUE(RotateKey(&response, /*drop=*/true).ok());
  const v1::KeyRotationStatus done = WaitForRotation();
  ASSERT_EQ(done.state(), v1::KEY_ROTATION_STATE_DONE) << done.error();
  EXPECT_EQ(done.documents_dropped(), 2u);
  EXPECT_EQ(Stats().documents(), 0u);
  EXPECT_NE(Stats().key_id(), key_id);
}

TEST_F(IndexGenerationsTest, TheKeyIsGeneratedOncePrivatelyUnlessGivenFromOutside) {
  Start();
  const std::string key_id = Stats().key_id();
  struct stat st;
  ASSERT_EQ(stat((dir_ / "hash.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(DataDir(dir_.string()).ReadParams().value()->key_id, key_id);
  Stop();
  Start();
  EXPECT_EQ(Stats().key_id(), key_id) << "the same key after a restart";
  Stop();

  // A key given from outside that is not the index's is refused.
  options_.key.hex = "00112233445566778899aabbccddeeff";
  EXPECT_EQ(IndexGenerations::Open(options_).status().code(),
            absl::StatusCode::kFailedPrecondition);
  fs::remove_all(dir_);
  generations_ = IndexGenerations::Open(options_).value();
  EXPECT_EQ(generations_->Current()->params().key_id,
            HashKey::FromHex(options_.key.hex).value().Id());
  EXPECT_FALSE(fs::exists(dir_ / "hash.key"));
}

TEST_F(IndexGenerationsTest, KeyGivenOutsideTheDataDirectoryIsNotRotated) {
  options_.key.hex = std::string(32, 'd');
  Start();
  v1::RotateKeyResponse response;
  EXPECT_EQ(RotateKey(&response).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_FALSE(fs::exists(dir_ / "CURRENT"));
}

// A crash at each file step of a rotation (removing a leftover generation, writing the new
// key, replacing CURRENT, rewriting params, retiring the old generation), followed by a power
// loss that drops every directory change not yet synced: the directory reopens on the old
// or the new generation, with every document found under the key that generation was built
// with and params naming that key, never a mix.
TEST_F(IndexGenerationsTest, WithSyncWritesAPowerCutLosesNoAcknowledgedChangeAroundARotation) {
  const fs::path trash = dir_.string() + ".trash";
  fs::create_directories(trash);
  FaultFileSystem disk(trash.string());
  options_.file_system = &disk;
  options_.index.env = disk.rocksdb_env();
  options_.index.sync_writes = true;
  Start();
  const uint64_t before = Register(Prose(1, 300), "before");
  const uint64_t gone = Register(Prose(2, 300), "unregistered before");
  ASSERT_TRUE(Unregister(gone).ok());
  RotateAndWait();
  const std::string new_key_id = Stats().key_id();
  const uint64_t after = Register(Prose(3, 300), "after");
  const uint64_t gone_after = Register(Prose(4, 300), "unregistered after");
  ASSERT_TRUE(Unregister(gone_after).ok());
  disk.Crash();
  Stop();
  ASSERT_TRUE(disk.DropUnsyncedChanges().ok());
  options_.file_system = nullptr;
  options_.index.env = nullptr;

  Start();
  EXPECT_EQ(Stats().key_id(), new_key_id);
  EXPECT_EQ(Stats().documents(), 2u);
  EXPECT_EQ(MatchingIds(Prose(1, 300)), std::vector<uint64_t>{before});
  EXPECT_EQ(MatchingIds(Prose(3, 300)), std::vector<uint64_t>{after});
  EXPECT_TRUE(MatchingIds(Prose(2, 300)).empty());
  EXPECT_TRUE(MatchingIds(Prose(4, 300)).empty());
  EXPECT_GT(Register(Prose(5, 300), "next"), gone_after) << "an acknowledged id given again";
  fs::remove_all(trash);
}

TEST_F(IndexGenerationsTest, ACrashAtAnyStepOfARotationLandsOnTheOldOrTheNewGeneration) {
  Start();
  std::vector<uint64_t> ids;
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    ids.push_back(Register(Prose(seed, 300), "paper " + std::to_string(seed)));
  }
  const std::string old_key_id = Stats().key_id();
  Stop();
  const fs::path before = dir_.string() + ".before";
  const fs::path trash = dir_.string() + ".trash";
  fs::copy(dir_, before, fs::copy_options::recursive);

  int landed_on_old = 0, landed_on_new = 0;
  for (int step = 1;; ++step) {
    SCOPED_TRACE("crash at file operation " + std::to_string(step) + " of the rotation");
    fs::remove_all(dir_);
    fs::copy(before, dir_, fs::copy_options::recursive);
    fs::remove_all(trash);
    fs::create_directories(trash);
    FaultFileSystem faulty(trash.string());
    options_.file_system = &faulty;
    options_.index.env = faulty.rocksdb_env();
    Start();
    faulty.CrashAtOperation(faulty.operations() + step);
    v1::RotateKeyResponse started;
    if (RotateKey(&started).ok()) WaitForRotation();
    const bool crashed = faulty.crashed();
    faulty.Crash();  // the power goes: what RocksDB did not sync is lost too
    Stop();
    ASSERT_OK(faulty.DropUnsyncedChanges());

    options_.file_system = nullptr;
    options_.index.env = nullptr;
    Start();
    const std::string key_id = Stats().key_id();
    const std::string new_key_id = started.status().new_key_id();
    ASSERT_TRUE(key_id == old_key_id || (!new_key_id.empty() && key_id == new_key_id)) << key_id;
    absl::StatusOr<uint64_t> live = DataDir(dir_.string()).ReadCurrent();
    ASSERT_TRUE(live.ok()) << live.status();
    EXPECT_EQ(*live, key_id == old_key_id ? 0u : 1u);
    ++(key_id == old_key_id ? landed_on_old : landed_on_new);
    EXPECT_EQ(DataDir(dir_.string()).ReadParams().value()->key_id, key_id);
    EXPECT_EQ(Stats().documents(), ids.size());
    for (uint32_t seed = 1; seed <= ids.size(); ++seed) {
      EXPECT_EQ(MatchingIds(Prose(seed, 300)), std::vector<uint64_t>{ids[seed - 1]});
    }
    Stop();
    if (!crashed) {  // the rotation ran to its end: every step has been crashed at
      EXPECT_EQ(key_id, new_key_id);
      EXPECT_GT(step, 8);
      break;
    }
  }
  EXPECT_GT(landed_on_old, 0);
  EXPECT_GT(landed_on_new, 1);
  fs::remove_all(before);
  fs::remove_all(trash);
}


// Corruption at open: a data directory damaged by an operator or a disk (a lost or cut
// file, flipped bytes) never makes copsd delete anything; it refuses with an error that
// names the damage, and the directory is byte for byte as it was.

// Every file under `root` (relative path -> bytes), RocksDB's info logs excepted: RocksDB
// writes and rotates those at each open, failed or not.
std::map<std::string, std::string> Image(const fs::path& root) {
  std::map<std::string, std::string> image;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (name == "LOG" || name.starts_with("LOG.old")) continue;
    const std::string rel = fs::relative(entry.path(), root).string();
    image[rel] = entry.is_directory() ? "<dir>" : testing::ReadFileOrEmpty(entry.path());
  }
  return image;
}

// The entries of `before` missing or changed in `after`.
std::vector<std::string> LostOrChanged(const std::map<std::string, std::string>& before,
                                       const std::map<std::string, std::string>& after) {
  std::vector<std::string> lost;
  for (const auto& [path, bytes] : before) {
    auto it = after.find(path);
    if (it == after.end()) {
      lost.push_back(path + " deleted");
    } else if (it->second != bytes) {
      lost.push_back(path + " changed");
    }
  }
  return lost;
}

void FlipByteAt(const fs::path& file, std::streamoff offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(offset);
  char c = 0;
  f.read(&c, 1);
  f.seekp(offset);
  c = static_cast<char>(c ^ 0x5a);
  f.write(&c, 1);
}

std::vector<fs::path> FilesEndingWith(const fs::path& dir, const std::string& suffix) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().string().ends_with(suffix)) files.push_back(entry.path());
  }
  return files;
}

class CorruptionAtOpenTest : public IndexGenerationsTest {
 protected:
  // A data directory after one completed rotation, holding two documents (flushed to SST
  // files when `flush`, else only in the write-ahead log), the server stopped.
  void MakeRotatedDirectory(bool flush = true) {
    ASSERT_NO_FATAL_FAILURE(Start());
    ids_.push_back(Register(Prose(21, 300), "first"));
    RotateAndWait();
    ids_.push_back(Register(Prose(22, 300), "second"));
    if (flush) {
      ASSERT_OK(generations_->Current()->index()->Flush());
    }
    Stop();
  }

  // Opens the directory, expecting a refusal that leaves every file as it was; returns it.
  absl::Status OpenRefused() {
    const auto before = Image(dir_);
    absl::StatusOr<std::unique_ptr<IndexGenerations>> opened = IndexGenerations::Open(options_);
    EXPECT_FALSE(opened.ok()) << "opened a damaged data directory";
    EXPECT_EQ(LostOrChanged(before, Image(dir_)), std::vector<std::string>{});
    return opened.ok() ? absl::OkStatus() : opened.status();
  }

  std::vector<uint64_t> ids_;
};

TEST_F(CorruptionAtOpenTest, AMissingCurrentAfterARotationDeletesNothingAndSaysHowToRecover) {
  ASSERT_NO_FATAL_FAILURE(MakeRotatedDirectory());
  fs::remove(dir_ / "CURRENT");
  const absl::Status refused = OpenRefused();
  EXPECT_TRUE(fs::exists(dir_ / "index.1"));
  EXPECT_TRUE(fs::exists(dir_ / "hash_key.1"));
  EXPECT_NE(refused.message().find("CURRENT"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("index.1"), std::string::npos) << refused;
  EXPECT_NE(refused.message().find("printf 'index.1 hash_key.1\\n' > " +
                                   (dir_ / "CURRENT").string()),
            std::string::npos)
      << refused;

  // The recovery the message gives brings every document back.
  std::ofstream(dir_ / "CURRENT") << "index.1 hash_key.1\n";
  ASSERT_NO_FATAL_FAILURE(Start());
  EXPECT_EQ(MatchingIds(Prose(21, 300)), std::vector<uint64_t>{ids_[0]});
  EXPECT_EQ(MatchingIds(Prose(22, 300)), std::vector<uint64_t>{ids_[1]});
}

TEST_F(CorruptionAtOpenTest, ATruncatedCurrentDeletesNothing) {
  ASSERT_NO_FATAL_FAILURE(MakeRotatedDirectory());
  for (const char* cut : {"", "index.", "index.1 hash_"}) {
    SCOPED_TRACE(std::string("CURRENT holding '") + cut + "'");
    std::ofstream(dir_ / "CURRENT", std::ios::trunc) << cut;
    const absl::Status refused = OpenRefused();
    EXPECT_EQ(refused.code(), absl::StatusCode::kDataLoss) << refused;
    EXPECT_NE(refused.message().find("index.1"), std::string::npos) << refused;
  }
}

TEST_F(CorruptionAtOpenTest, CurrentNamingAMissingGenerationDeletesTheOthersNot) {
  ASSERT_NO_FATAL_FAILURE(MakeRotatedDirectory());
  std::ofstream(dir_ / "CURRENT", std::ios::trunc) << "index.2 hash_key.2\n";
  const absl::Status refused = OpenRefused();
  EXPECT_NE(refused.message().find("index.2"), std::string::npos) << refused;
  EXPECT_FALSE(fs::exists(dir_ / "index.2"));
}

TEST_F(CorruptionAtOpenTest, AGenerationNoRotationExplainsIsKept) {
  ASSERT_NO_FATAL_FAILURE(MakeRotatedDirectory());
  // A partial restore put back the generation the rotation replaced; nothing records an
  // interrupted rotation, so nothing proves it stale.
  fs::create_directories(dir_ / "index");
  std::ofstream(dir_ / "hash.key") << std::string(32, 'b') << "\n";
  const absl::Status refused = OpenRefused();
  EXPECT_NE(refused.message().find("index/"), std::string::npos) << refused;
}

TEST_F(CorruptionAtOpenTest, AMissingOrTruncatedKeyFileDeletesNothing) {
  ASSERT_NO_FATAL_FAILURE(MakeRotatedDirectory());
  const std::string key = testing::ReadFileOrEmpty(dir_ / "hash_key.1");
  std::ofstream(dir_ / "hash_key.1", std::ios::trunc) << key.substr(0, 10);
  EXPECT_EQ(OpenRefused().code(), absl::StatusCode::kDataLoss);
  fs::remove(dir_ / "hash_key.1");
  const absl::Status refused = OpenRefused();
  EXPECT_NE(refused.message().find("hash_key.1"), std::string::npos) << refused;
  EXPECT_FALSE(fs::exists(dir_ / "hash_key.1"));
}

TEST_F(CorruptionAtOpenTest, AMissingKeyBesideAnUnrotatedIndexIsNotReplacedByANewOne) {
  Start();
  Register(Prose(23, 300), "unrotated");
  Stop();
  fs::remove(dir_ / "hash.key");
  const absl::Status refused = OpenRefused();
  EXPECT_NE(refused.message().find("hash.key"), std::string::npos) << refused;
  EXPECT_FALSE(fs::exists(dir_ / "hash.key")) << "a new key written beside the old index";
}

TEST_F(CorruptionAtOpenTest, ATruncatedParamsFileDeletesNothing) {
  ASSERT_NO_FATAL_FAILURE(MakeRotatedDirectory());
  const std::string params = testing::ReadFileOrEmpty(dir_ / "params");
  std::ofstream(dir_ / "params", std::ios::trunc) << params.substr(0, params.size() / 2 + 1);
  const absl::Status refused = OpenRefused();
  EXPECT_EQ(refused.code(), absl::StatusCode::kDataLoss) << refused;
  EXPECT_NE(refused.message().find("params"), std::string::npos) << refused;
}

TEST_F(CorruptionAtOpenTest, AMissingParamsFileIsRestoredFromTheIndexItself) {
  ASSERT_NO_FATAL_FAILURE(MakeRotatedDirectory());
  const std::string params = testing::ReadFileOrEmpty(dir_ / "params");
  fs::remove(dir_ / "params");
  ASSERT_NO_FATAL_FAILURE(Start());
  EXPECT_EQ(testing::ReadFileOrEmpty(dir_ / "params"), params);
  EXPECT_EQ(MatchingIds(Prose(21, 300)), std::vector<uint64_t>{ids_[0]});
  EXPECT_EQ(MatchingIds(Prose(22, 300)), std::vector<uint64_t>{ids_[1]});
}

TEST_F(CorruptionAtOpenTest, FlippedBytesInAnSstFileAreAnErrorNotACrashAndDeleteNothing) {
  ASSERT_NO_FATAL_FAILURE(MakeRotatedDirectory(/*flush=*/true));
  const std::vector<fs::path> ssts = FilesEndingWith(dir_ / "index.1", ".sst");
  ASSERT_FALSE(ssts.empty());
  // Inside each file's first data block: what a read of its first keys verifies.
  for (const fs::path& sst : ssts) FlipByteAt(sst, 10);
  const auto before = Image(dir_);
  absl::StatusOr<std::unique_ptr<IndexGenerations>> opened = IndexGenerations::Open(options_);
  if (opened.ok()) {
    // RocksDB verifies a data block's checksum when it reads it: every path that reads the
    // damaged files answers DATA_LOSS.
    Index& index = *(*opened)->Current()->index();
    absl::Status read = index.ListDocuments("", 100).status();
    for (uint64_t id : ids_) {
      if (read.ok()) read = index.GetText(id).status();
    }
    EXPECT_EQ(read.code(), absl::StatusCode::kDataLoss) << read;
    opened->reset();
  } else {
    EXPECT_EQ(opened.status().code(), absl::StatusCode::kDataLoss) << opened.status();
  }
  // RocksDB's open rolls its MANIFEST and OPTIONS files over before the damage is read; the
  // data files and the directory's own files stay as they were.
  std::map<std::string, std::string> data;
  for (const auto& [path, bytes] : before) {
    if (path.ends_with(".sst") || path.ends_with(".log") || path.find('/') == std::string::npos) {
      data.emplace(path, bytes);
    }
  }
  EXPECT_EQ(LostOrChanged(data, Image(dir_)), std::vector<std::string>{});
}

TEST_F(CorruptionAtOpenTest, FlippedBytesInTheWriteAheadLogAreAnErrorAndDeleteNothing) {
  ASSERT_NO_FATAL_FAILURE(MakeRotatedDirectory(/*flush=*/false));
  const std::vector<fs::path> logs = FilesEndingWith(dir_ / "index.1", ".log");
  ASSERT_FALSE(logs.empty());
  for (const fs::path& log : logs) {
    FlipByteAt(log, static_cast<std::streamoff>(fs::file_size(log) / 2));
  }
  const absl::Status refused = OpenRefused();
  EXPECT_EQ(refused.code(), absl::StatusCode::kDataLoss) << refused;
}

}  // namespace
}  // namespace cops
