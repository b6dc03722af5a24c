#include "storage/snapshot.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/storage/fault_file_system.h"
#include "tests/testing/files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

namespace fs = std::filesystem;

HashKey Key(char fill) { return HashKey::FromBytes(std::string(HashKey::kSize, fill)).value(); }

// `n` distinct chunks of document `seed`.
DocumentFingerprint Fingerprint(uint64_t seed, uint32_t n = 20) {
  DocumentFingerprint fp;
  for (uint32_t j = 0; j < n; ++j) {
    fp.chunks.push_back(Chunk{seed * 1000003 + j, 2 * j, 10 * j, 10 * j + 7, j, j + 5});
  }
  fp.total_chunks = 2 * n;
  fp.sha256[0] = static_cast<uint8_t>(seed);
  fp.input_bytes = 10 * n + 10;
  return fp;
}

DocumentRecord Record(const std::string& external_id) {
  DocumentRecord r;
  r.title = external_id;
  r.owner = "acm-press";
  r.collection = "acm";
  r.external_id = external_id;
  r.format = "text";
  return r;
}

// A live data directory as copsd keeps it: generation `generation_` with its index, key and
// params, the access store with one principal, admin.key.
class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(root_.path() / "trash");
    ASSERT_OK(live_.Create());
  }

  // Opens generation `generation` of the live directory and registers document "one".
  void OpenLive(uint64_t generation, bool key_in_data_dir = true) {
    generation_ = generation;
    params_.key_id = key_.Id();
    if (key_in_data_dir) {
      ASSERT_OK(live_.CreateKey(generation, key_));
    }
    if (generation != 0) {
      ASSERT_OK(live_.SetCurrent(generation));
    }
    ASSERT_OK(live_.WriteParams(params_));
    index_ = OpenIndex(live_.IndexPath(generation));
    ASSERT_NE(index_, nullptr);
    ASSERT_OK_AND_ASSIGN(RegisterOutcome one, index_->Register(Record("one"), Fingerprint(1), "text one"));
    one_ = one.id;
    ASSERT_OK_AND_ASSIGN(access_, PrincipalStore::Open(live_.AccessStorePath()));
    PrincipalRecord principal;
    principal.name = "acm-press";
    principal.collections = {"acm"};
    ASSERT_OK(access_->PutPrincipal(principal));
    ASSERT_OK(CreateFileDurably(live_.fs(), live_.AdminKeyPath(), "cops_admin_secret\n", 0600));
    // Receipt signing keys after one rotation: key 1 retired (public only), key 2 live.
    ASSERT_OK(live_.WriteSigningPublicKey(1, "public 1\n"));
    ASSERT_OK(live_.CreateSigningKey(2, "private 2\n"));
    ASSERT_OK(live_.WriteSigningPublicKey(2, "public 2\n"));
  }

  std::unique_ptr<Index> OpenIndex(const std::string& path, bool read_only = false) {
    IndexOptions options;
    options.path = path;
    options.params = params_;
    options.read_only = read_only;
    options.block_cache_bytes = 4 << 20;
    options.write_buffer_bytes = 4 << 20;
    absl::StatusOr<std::unique_ptr<Index>> index = Index::Open(options);
    EXPECT_OK(index);
    return index.ok() ? *std::move(index) : nullptr;
  }

  SnapshotSource Source(bool key_in_data_dir = true) const {
    SnapshotSource source;
    source.data_dir = &live_;
    source.generation = generation_;
    source.index = index_.get();
    source.access = access_.get();
    source.key_in_data_dir = key_in_data_dir;
    return source;
  }

  testing::TempDir root_{"snapshot"};
  DataDir live_{(root_.path() / "data").string()};
  HashKey key_ = Key('k');
  ChunkingParams params_;
  uint64_t generation_ = 0;
  std::unique_ptr<Index> index_;
  std::unique_ptr<PrincipalStore> access_;
  DocId one_ = 0;
};

TEST_F(SnapshotTest, IsACompleteOwnerOnlyDataDirectoryOfTheMomentItWasTaken) {
  OpenLive(0);
  ASSERT_OK_AND_ASSIGN(const std::string path, WriteSnapshot(Source(), "nightly"));
  EXPECT_EQ(path, (root_.path() / "data" / "snapshots" / "nightly").string());
  // Written after the snapshot: not in it.
  ASSERT_OK(index_->Register(Record("two"), Fingerprint(2), "text two"));
  PrincipalRecord later;
  later.name = "later";
  ASSERT_OK(access_->PutPrincipal(later));

  // Opened as a data directory of its own, after the live one is closed and copied away.
  index_.reset();
  access_.reset();
  const fs::path copy_path = root_.path() / "elsewhere";
  fs::copy(path, copy_path, fs::copy_options::recursive);
  DataDir copy(copy_path.string());
  EXPECT_EQ(copy.ReadCurrent().value(), 0u);
  ASSERT_OK_AND_ASSIGN(const HashKey key, copy.ReadKey(0));
  EXPECT_EQ(key.Id(), key_.Id());
  ASSERT_OK_AND_ASSIGN(const std::optional<ChunkingParams> params, copy.ReadParams());
  ASSERT_TRUE(params.has_value());
  EXPECT_EQ(params->Encode(), params_.Encode());
  EXPECT_EQ(testing::ReadFileOrEmpty(copy.AdminKeyPath()), "cops_admin_secret\n");
  EXPECT_EQ(copy.ReadSigningKey(2).value(), "private 2\n");
  EXPECT_EQ(copy.ReadSigningPublicKey(1).value(), "public 1\n") << "old receipts verify";
  EXPECT_EQ(copy.ReadSigningPublicKey(2).value(), "public 2\n");
  EXPECT_EQ(copy.ListSigningKeys().value().private_keys, std::vector<uint64_t>{2});
  EXPECT_FALSE(fs::exists(copy.SnapshotsPath()));
  {
    std::unique_ptr<Index> index = OpenIndex(copy.IndexPath(0));
    ASSERT_NE(index, nullptr);
    EXPECT_EQ(index->GetText(one_).value(), "text one");
    EXPECT_EQ(index->Stats().documents, 1u);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<PrincipalStore> access,
                         PrincipalStore::Open(copy.AccessStorePath()));
    EXPECT_OK(access->GetPrincipal("acm-press"));
    EXPECT_TRUE(absl::IsNotFound(access->GetPrincipal("later").status()));
  }
  // Owner-only, the snapshot and its copy alike (the index and the access store included).
  EXPECT_EQ(testing::NotOwnerOnly(path), std::vector<std::string>{});
}

TEST_F(SnapshotTest, CarriesLifetimesTheirSweepOrderAndOwnersMatchLists) {
  OpenLive(0);
  constexpr int64_t kExpires = 2'000'000'000'000'000, kNotBefore = 1'900'000'000'000'000;
  DocumentRecord lifetime = Record("two");
  lifetime.expires_unix_micros = kExpires;
  lifetime.not_before_unix_micros = kNotBefore;
  ASSERT_OK_AND_ASSIGN(RegisterOutcome two, index_->Register(lifetime, Fingerprint(2), "text two"));
  CollectionRecord yearly;
  yearly.name = "acm";
  yearly.retention_seconds = 365 * 86400;
  ASSERT_OK(access_->PutCollection(yearly));
  AuditRecord hit;
  hit.doc_id = two.id;
  hit.collection = "acm";
  hit.unix_micros = 1'800'000'000'000'000;
  hit.checker = "pc";
  hit.owner = "acm-press";
  hit.test_sha256 = std::string(64, 'a');
  ASSERT_OK(access_->AppendAudit({hit}));
  ASSERT_OK_AND_ASSIGN(const std::string path, WriteSnapshot(Source(), "nightly"));
  index_.reset();
  access_.reset();

  DataDir copy(path);
  std::unique_ptr<Index> index = OpenIndex(copy.IndexPath(0));
  ASSERT_NE(index, nullptr);
  ASSERT_OK_AND_ASSIGN(const DocumentRecord record, index->GetDocument(two.id));
  EXPECT_EQ(record.expires_unix_micros, kExpires);
  EXPECT_EQ(record.not_before_unix_micros, kNotBefore);
  EXPECT_EQ(index->GetDocument(one_)->expires_unix_micros, 0);
  // The expiry entries came along: the copy's sweep finds the document when it is due.
  EXPECT_EQ(index->ExpiredDocuments(kExpires - 1, 10).value(), std::vector<DocId>{});
  EXPECT_EQ(index->ExpiredDocuments(kExpires, 10).value(), std::vector<DocId>{two.id});
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<PrincipalStore> access,
                       PrincipalStore::Open(copy.AccessStorePath()));
  EXPECT_EQ(access->GetCollection("acm").value().retention_seconds, 365 * 86400);
  ASSERT_OK_AND_ASSIGN(const std::vector<AuditRecord> mine,
                       access->QueryAuditOfOwner("acm-press", 0, 0, 100));
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].doc_id, two.id);
  EXPECT_EQ(mine[0].test_sha256, hit.test_sha256);
  EXPECT_EQ(access->RemoveAuditBefore(hit.unix_micros + 1, 10).value(), 1u);
}

TEST_F(SnapshotTest, NamesAreCheckedAndNeverReused) {
  OpenLive(0);
  for (const char* bad : {"", ".", "..", "../escape", "a/b", "x~tmp"}) {
    EXPECT_EQ(WriteSnapshot(Source(), bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
  ASSERT_OK(WriteSnapshot(Source(), "s1"));
  EXPECT_EQ(WriteSnapshot(Source(), "s1").status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(testing::NotOwnerOnly(live_.SnapshotPath("s1")), std::vector<std::string>{});
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> names, live_.fs().List(live_.SnapshotsPath()));
  EXPECT_EQ(names, std::vector<std::string>{"s1"});
}

TEST_F(SnapshotTest, ARotatedDirectoryCopiesItsLiveGenerationOnly) {
  OpenLive(2);
  // What a rotation to generation 3 has built so far: not part of the snapshot.
  ASSERT_OK(live_.CreateKey(3, Key('n')));
  fs::create_directories(live_.IndexPath(3));
  ASSERT_OK_AND_ASSIGN(const std::string path, WriteSnapshot(Source(), "mid-rotation"));
  DataDir copy(path);
  EXPECT_EQ(copy.ReadCurrent().value(), 2u);
  EXPECT_EQ(copy.ReadKey(2)->Id(), key_.Id());
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> others, copy.OtherGenerations(2));
  EXPECT_EQ(others, std::vector<uint64_t>{});
  std::unique_ptr<Index> index = OpenIndex(copy.IndexPath(2), /*read_only=*/true);
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->GetText(one_).value(), "text one");
}

TEST_F(SnapshotTest, AKeyGivenFromOutsideStaysOutside) {
  OpenLive(0, /*key_in_data_dir=*/false);
  ASSERT_OK_AND_ASSIGN(const std::string path, WriteSnapshot(Source(/*key_in_data_dir=*/false), "s"));
  EXPECT_FALSE(fs::exists(fs::path(path) / "hash.key"));
  EXPECT_TRUE(fs::exists(fs::path(path) / "index"));
  // A key that should be in the directory and is not: no snapshot.
  EXPECT_EQ(WriteSnapshot(Source(/*key_in_data_dir=*/true), "t").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(live_.SnapshotPath("t")));
}

TEST_F(SnapshotTest, ACrashAtAnyStepLeavesTheWholeSnapshotOrNone) {
  OpenLive(1);
  FaultFileSystem faulty((root_.path() / "trash").string());
  DataDir live(live_.path(), &faulty);
  SnapshotSource source = Source();
  source.data_dir = &live;
  bool finished = false;
  int crashes = 0;
  for (int n = 1; !finished && n < 100; ++n) {
    SCOPED_TRACE("crash at operation " + std::to_string(n));
    const std::string name = "s" + std::to_string(n);
    faulty.CrashAtOperation(n);
    absl::StatusOr<std::string> written = WriteSnapshot(source, name);
    finished = !faulty.crashed();
    crashes += finished ? 0 : 1;
    EXPECT_EQ(written.ok(), finished) << written.status();
    ASSERT_OK(faulty.DropUnsyncedChanges());
    // The next start (not counted): a leftover snapshot under construction goes.
    ASSERT_OK(live_.RemoveTemporaryFiles());
    EXPECT_FALSE(fs::exists(live.SnapshotTempPath(name)));
    if (!fs::exists(live.SnapshotPath(name))) {
      EXPECT_FALSE(finished) << "a finished snapshot is durable";
      continue;
    }
    DataDir copy(live.SnapshotPath(name));
    EXPECT_EQ(copy.ReadCurrent().value(), 1u);
    EXPECT_OK(copy.ReadKey(1));
    EXPECT_OK(copy.ReadParams());
    EXPECT_EQ(testing::NotOwnerOnly(copy.path()), std::vector<std::string>{});
  }
  EXPECT_TRUE(finished);
  // Every step: the directories, the checkpoints, each file, the modes, the renames, syncs.
  EXPECT_GE(crashes, 15);
}

}  // namespace
}  // namespace cops
