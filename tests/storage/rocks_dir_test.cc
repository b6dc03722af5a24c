#include "storage/rocks_dir.h"

#include <filesystem>

#include "gtest/gtest.h"
#include "rocksdb/env.h"
#include "tests/storage/fault_file_system.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

namespace fs = std::filesystem;

TEST(RocksDirTest, ADirectoryCreatedDurablySurvivesAPowerCutAPlainOneDoesNot) {
  testing::TempDir dir{"rocks_dir"};
  fs::create_directories(dir.path() / "trash");
  fs::create_directories(dir.path() / "a");
  fs::create_directories(dir.path() / "b");
  FaultFileSystem disk(dir.Join("trash"));
  rocksdb::Env& env = *disk.rocksdb_env();
  ASSERT_TRUE(env.CreateDirIfMissing(dir.Join("a/plain")).ok());
  ASSERT_OK(CreateDirDurably(env, dir.Join("b/durable/")));
  ASSERT_OK(CreateDirDurably(env, dir.Join("b/durable")));  // exists: fine
  EXPECT_TRUE(fs::is_directory(dir.path() / "a/plain"));
  disk.Crash();
  ASSERT_OK(disk.DropUnsyncedChanges());
  EXPECT_TRUE(fs::is_directory(dir.path() / "b/durable"));
  EXPECT_FALSE(fs::exists(dir.path() / "a/plain")) << "its parent was never synced";
}

TEST(RocksDirTest, AMissingParentIsAnError) {
  testing::TempDir dir{"rocks_dir"};
  absl::Status s = CreateDirDurably(*rocksdb::Env::Default(), dir.Join("no/such"));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no/such"), std::string_view::npos) << s;
}

}  // namespace
}  // namespace cops
