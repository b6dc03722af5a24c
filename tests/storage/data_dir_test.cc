#include "storage/data_dir.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
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

class DataDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = root_.path() / "data";
    fs::create_directories(dir_);
    fs::create_directories(root_.path() / "trash");
  }

  testing::TempDir root_{"data_dir"};
  fs::path dir_;
};

TEST_F(DataDirTest, NamesAreTheOnDiskOnes) {
  DataDir data(dir_.string());
  EXPECT_EQ(DataDir::IndexDirName(0), "index");
  EXPECT_EQ(DataDir::KeyFileName(0), "hash.key");
  EXPECT_EQ(DataDir::IndexDirName(12), "index.12");
  EXPECT_EQ(DataDir::KeyFileName(12), "hash_key.12");
  EXPECT_EQ(data.IndexPath(3), (dir_ / "index.3").string());
  EXPECT_EQ(data.AccessStorePath(), (dir_ / "access").string());
  EXPECT_EQ(data.AdminKeyPath(), (dir_ / "admin.key").string());
  EXPECT_EQ(data.SnapshotsPath(), (dir_ / "snapshots").string());
  EXPECT_EQ(data.SnapshotPath("nightly"), (dir_ / "snapshots" / "nightly").string());
  EXPECT_EQ(data.SnapshotTempPath("nightly"), (dir_ / "snapshots" / "nightly~tmp").string());
  EXPECT_EQ(data.PathOf(DataDir::kParamsFile), (dir_ / "params").string());
  EXPECT_EQ(DataDir::SigningKeyFileName(3), "signing_key.3");
  EXPECT_EQ(DataDir::SigningPublicKeyFileName(3), "signing_key.3.pub");
}

TEST_F(DataDirTest, CreateMakesTheDirectoryAndItsParents) {
  DataDir data((dir_ / "a" / "b").string());
  ASSERT_OK(data.Create());
  EXPECT_TRUE(fs::is_directory(dir_ / "a" / "b"));
  ASSERT_OK(data.Create()) << "an existing directory is fine";
  std::ofstream(dir_ / "file") << "x";
  EXPECT_FALSE(DataDir((dir_ / "file").string()).Create().ok());
}

TEST_F(DataDirTest, ANewDataDirectoryIsTheOwnersAlone) {
  const fs::path fresh = dir_ / "fresh";
  ASSERT_OK(DataDir(fresh.string()).Create());
  struct stat st;
  ASSERT_EQ(stat(fresh.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u) << "other users could read the stored texts";
}

TEST_F(DataDirTest, CurrentNamesTheLiveGeneration) {
  DataDir data(dir_.string());
  EXPECT_EQ(data.ReadCurrent().value(), 0u) << "no CURRENT: generation 0";
  ASSERT_OK(data.SetCurrent(7));
  EXPECT_EQ(testing::ReadFileOrEmpty(dir_ / "CURRENT"), "index.7 hash_key.7\n");
  EXPECT_FALSE(fs::exists(dir_ / "CURRENT.tmp"));
  EXPECT_EQ(data.ReadCurrent().value(), 7u);
  for (const char* bad :
       {"index.7 hash_key.8\n", "index.07 hash_key.07\n", "index hash.key\n", "garbage"}) {
    std::ofstream(dir_ / "CURRENT", std::ios::trunc) << bad;
    EXPECT_EQ(data.ReadCurrent().status().code(), absl::StatusCode::kDataLoss) << bad;
  }
}

TEST_F(DataDirTest, KeyFilesArePrivateAndNeverOverwritten) {
  DataDir data(dir_.string());
  ASSERT_OK(data.Create());
  EXPECT_EQ(data.ReadKey(0).status().code(), absl::StatusCode::kNotFound);
  ASSERT_OK(data.CreateKey(0, Key('a')));
  EXPECT_EQ(testing::ReadFileOrEmpty(dir_ / "hash.key"), Key('a').ToHex() + "\n");
  struct stat st;
  ASSERT_EQ(stat((dir_ / "hash.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(data.CreateKey(0, Key('b')).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(data.ReadKey(0)->Id(), Key('a').Id());
  std::ofstream(dir_ / "hash_key.1") << "  " << Key('c').ToHex() << "\n\n";
  EXPECT_EQ(data.ReadKey(1)->Id(), Key('c').Id()) << "whitespace around the digits is fine";
  std::ofstream(dir_ / "hash_key.2") << "not a key\n";
  EXPECT_EQ(data.ReadKey(2).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ParseHashKey("\t" + Key('d').ToHex() + " \n")->Id(), Key('d').Id());
  EXPECT_EQ(ParseHashKey("abc").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(DataDirTest, SigningKeysArePrivateAndTheirPublicKeysOutliveThem) {
  FaultFileSystem faulty((root_.path() / "trash").string());
  DataDir data(dir_.string(), &faulty);
  EXPECT_EQ(data.ReadSigningKey(1).status().code(), absl::StatusCode::kNotFound);
  ASSERT_OK(data.CreateSigningKey(1, "private 1\n"));
  ASSERT_OK(data.WriteSigningPublicKey(1, "public 1\n"));
  EXPECT_EQ(data.CreateSigningKey(1, "other").code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(data.ReadSigningKey(1).value(), "private 1\n");
  EXPECT_EQ(data.ReadSigningPublicKey(1).value(), "public 1\n");
  struct stat st;
  ASSERT_EQ(stat((dir_ / "signing_key.1").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(stat((dir_ / "signing_key.1.pub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);

  ASSERT_OK(data.CreateSigningKey(12, "private 12\n"));
  std::ofstream(dir_ / "signing_key.05") << "not canonical";
  std::ofstream(dir_ / "signing_key.x.pub") << "not a key file";
  std::ofstream(dir_ / "signing_key.2.pub.tmp") << "a leftover temporary";
  DataDir::SigningKeyFiles files = data.ListSigningKeys().value();
  EXPECT_EQ(files.private_keys, (std::vector<uint64_t>{1, 12}));
  EXPECT_EQ(files.public_keys, std::vector<uint64_t>{1});

  // The private key is zeroed before it is unlinked; a power loss right after the unlink
  // brings the name back, without the key. Its public key stays.
  faulty.CrashAtOperation(faulty.operations() + 3);  // zero, unlink, sync
  EXPECT_FALSE(data.RemoveSigningKey(1).ok());
  ASSERT_OK(faulty.DropUnsyncedChanges());
  EXPECT_EQ(testing::ReadFileOrEmpty(dir_ / "signing_key.1"), std::string(10, '\0'));
  ASSERT_OK(data.RemoveSigningKey(1));
  EXPECT_FALSE(fs::exists(dir_ / "signing_key.1"));
  EXPECT_EQ(data.ReadSigningPublicKey(1).value(), "public 1\n");
  ASSERT_OK(data.RemoveSigningKey(7)) << "an absent key is fine";
}

TEST_F(DataDirTest, ParamsRoundTripAsHex) {
  DataDir data(dir_.string());
  ASSERT_OK(data.Create());
  EXPECT_FALSE(data.ReadParams().value().has_value());
  ChunkingParams params;
  params.k = 7;
  params.key_id = Key('a').Id();
  ASSERT_OK(data.WriteParams(params));
  const std::string text = testing::ReadFileOrEmpty(dir_ / "params");
  ASSERT_EQ(text.back(), '\n');
  EXPECT_EQ(text.find_first_not_of("0123456789abcdef"), text.size() - 1);
  std::optional<ChunkingParams> read = data.ReadParams().value();
  ASSERT_TRUE(read.has_value());
  EXPECT_TRUE(*read == params);
  params.k = 9;
  ASSERT_OK(data.WriteParams(params));
  EXPECT_EQ(data.ReadParams().value()->k, 9u);
  for (const char* bad : {"abc\n", "zz\n", "00\n"}) {
    std::ofstream(dir_ / "params", std::ios::trunc) << bad;
    EXPECT_EQ(data.ReadParams().status().code(), absl::StatusCode::kDataLoss) << bad;
  }
}

TEST_F(DataDirTest, OtherGenerationsAndTheirRemoval) {
  DataDir data(dir_.string());
  ASSERT_OK(data.Create());
  fs::create_directories(dir_ / "index");
  ASSERT_OK(data.CreateKey(0, Key('a')));
  fs::create_directories(dir_ / "index.2" / "sub");
  std::ofstream(dir_ / "index.2" / "sub" / "000007.log") << "half written";
  ASSERT_OK(data.CreateKey(3, Key('c')));
  fs::create_directories(dir_ / "index.x");  // not a generation
  fs::create_directories(dir_ / "access");
  EXPECT_EQ(data.OtherGenerations(0).value(), (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(data.OtherGenerations(2).value(), (std::vector<uint64_t>{0, 3}));

  ASSERT_OK(data.RemoveGeneration(2));
  ASSERT_OK(data.RemoveGeneration(3));
  EXPECT_FALSE(fs::exists(dir_ / "index.2"));
  EXPECT_FALSE(fs::exists(dir_ / "hash_key.3"));
  EXPECT_EQ(data.OtherGenerations(0).value(), std::vector<uint64_t>{});
  EXPECT_TRUE(fs::exists(dir_ / "index.x"));
  EXPECT_TRUE(fs::exists(dir_ / "access"));
  ASSERT_OK(data.RemoveGeneration(9)) << "absent parts are fine";

  std::ofstream(dir_ / "CURRENT.tmp") << "index.4 hash_key.4\n";
  std::ofstream(dir_ / "params.tmp") << "00";
  ASSERT_OK(data.RemoveTemporaryFiles());
  EXPECT_FALSE(fs::exists(dir_ / "CURRENT.tmp"));
  EXPECT_FALSE(fs::exists(dir_ / "params.tmp"));

  // A snapshot an interrupted CreateSnapshot left goes; finished snapshots stay.
  fs::create_directories(data.SnapshotTempPath("nightly") + "/index");
  fs::create_directories(data.SnapshotPath("weekly") + "/index");
  ASSERT_OK(data.RemoveTemporaryFiles());
  EXPECT_FALSE(fs::exists(data.SnapshotTempPath("nightly")));
  EXPECT_TRUE(fs::exists(data.SnapshotPath("weekly")));
}

TEST_F(DataDirTest, KeyFileIsZeroedBeforeItIsUnlinked) {
  FaultFileSystem faulty((root_.path() / "trash").string());
  DataDir data(dir_.string(), &faulty);
  ASSERT_OK(data.CreateKey(1, Key('k')));
  // Crash right after the unlink: after the power loss the name is back, without the key.
  faulty.CrashAtOperation(faulty.operations() + 4);  // remove index, zero, unlink, sync
  EXPECT_FALSE(data.RemoveGeneration(1).ok());
  ASSERT_OK(faulty.DropUnsyncedChanges());
  ASSERT_TRUE(fs::exists(dir_ / "hash_key.1"));
  EXPECT_EQ(testing::ReadFileOrEmpty(dir_ / "hash_key.1"),
            std::string(Key('k').ToHex().size() + 1, '\0'));
}

// The switch of a rotation from generation 1 to 2, crashed at each of its file operations
// and followed by a power loss: the directory names one complete generation, whose key
// file is intact, and which params repaired to its key describe.
TEST_F(DataDirTest, ACrashAtAnyStepOfTheSwitchLeavesOneCompleteGeneration) {
  int landed_on_old = 0, landed_on_new = 0;
  for (int crash_at = 1;; ++crash_at) {
    SCOPED_TRACE("crash at operation " + std::to_string(crash_at));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    FaultFileSystem faulty((root_.path() / "trash").string());
    DataDir data(dir_.string(), &faulty);
    ASSERT_OK(data.CreateKey(1, Key('1')));
    fs::create_directories(dir_ / "index.1");
    ASSERT_OK(data.SetCurrent(1));
    ChunkingParams params;
    params.key_id = Key('1').Id();
    ASSERT_OK(data.WriteParams(params));
    ASSERT_OK(data.Sync());

    const int before = faulty.operations();
    faulty.CrashAtOperation(before + crash_at);
    // The rotation's file steps, in IndexGenerations' order.
    absl::Status s = data.CreateKey(2, Key('2'));
    if (s.ok()) s = faulty.CreateDir(data.IndexPath(2));  // stands for RocksDB's index
    if (s.ok()) s = data.SetCurrent(2);
    if (s.ok()) s = data.Sync();
    params.key_id = Key('2').Id();
    if (s.ok()) s = data.WriteParams(params);
    if (s.ok()) s = data.RemoveGeneration(1);
    const bool finished = !faulty.crashed();
    ASSERT_OK(faulty.DropUnsyncedChanges());

    const uint64_t live = data.ReadCurrent().value();
    ASSERT_TRUE(live == 1 || live == 2) << live;
    ++(live == 1 ? landed_on_old : landed_on_new);
    EXPECT_TRUE(fs::exists(data.IndexPath(live)));
    absl::StatusOr<HashKey> key = data.ReadKey(live);
    ASSERT_OK(key);
    EXPECT_EQ(key->Id(), Key(live == 1 ? '1' : '2').Id());
    // params names the live key, or the old one when the crash came before its rewrite
    // (a start rewrites it then).
    const std::string recorded = data.ReadParams().value()->key_id;
    EXPECT_TRUE(recorded == key->Id() || (live == 2 && recorded == Key('1').Id()));
    if (finished) {
      EXPECT_EQ(live, 2u);
      EXPECT_EQ(data.OtherGenerations(live).value(), std::vector<uint64_t>{});
      EXPECT_GT(crash_at, 10);
      break;
    }
  }
  // The rename of CURRENT counts only once its directory is synced.
  EXPECT_EQ(landed_on_old, 6);
  EXPECT_EQ(landed_on_new, 8);
}

}  // namespace
}  // namespace cops
