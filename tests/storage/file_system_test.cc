#include "storage/file_system.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rocksdb/env.h"
#include "rocksdb/file_system.h"
#include "tests/storage/fault_file_system.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

namespace fs = std::filesystem;

class FileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (root_.path() / "data").string();
    fs::create_directories(dir_);
    fs::create_directories(root_.path() / "trash");
  }

  std::string Path(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  std::string Read(FileSystem& fs, const std::string& name) {
    absl::StatusOr<std::string> text = fs.ReadFile(Path(name));
    return text.ok() ? *text : "<" + std::string(text.status().message()) + ">";
  }

  testing::TempDir root_{"file_system"};
  std::string dir_;
};

TEST_F(FileSystemTest, PosixWritesReadsListsAndRemoves) {
  FileSystem& posix = *FileSystem::Default();
  ASSERT_OK(posix.WriteFile(Path("a"), "alpha", 0600, /*exclusive=*/true));
  EXPECT_EQ(Read(posix, "a"), "alpha");
  struct stat st;
  ASSERT_EQ(stat(Path("a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(posix.WriteFile(Path("a"), "other", 0600, /*exclusive=*/true).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Read(posix, "a"), "alpha") << "an exclusive create never touches the file";
  ASSERT_OK(posix.WriteFile(Path("a"), "b", 0600, /*exclusive=*/false));
  EXPECT_EQ(Read(posix, "a"), "b") << "a plain write truncates";

  ASSERT_OK(posix.ZeroFill(Path("a")));
  EXPECT_EQ(Read(posix, "a"), std::string(1, '\0'));
  ASSERT_OK(posix.CreateDir(Path("sub/deeper")));
  ASSERT_OK(posix.Rename(Path("a"), Path("c")));
  absl::StatusOr<std::vector<std::string>> names = posix.List(dir_);
  ASSERT_OK(names);
  std::sort(names->begin(), names->end());
  EXPECT_EQ(*names, (std::vector<std::string>{"c", "sub"}));
  ASSERT_OK(posix.RemoveAll(Path("sub")));
  ASSERT_OK(posix.RemoveAll(Path("never-there")));
  EXPECT_FALSE(posix.Exists(Path("sub")));
  EXPECT_TRUE(posix.Exists(Path("c")));
  EXPECT_EQ(posix.ReadFile(Path("a")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_OK(posix.SyncDir(dir_));
}

TEST_F(FileSystemTest, WriteFileDurablyReplacesTheWholeFile) {
  FileSystem& posix = *FileSystem::Default();
  ASSERT_OK(WriteFileDurably(posix, Path("p"), "one\n", 0644));
  ASSERT_OK(WriteFileDurably(posix, Path("p"), "two\n", 0644));
  EXPECT_EQ(Read(posix, "p"), "two\n");
  EXPECT_FALSE(posix.Exists(Path("p.tmp")));
  ASSERT_OK(CreateFileDurably(posix, Path("k"), "key\n", 0600));
  EXPECT_EQ(CreateFileDurably(posix, Path("k"), "other\n", 0600).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Read(posix, "k"), "key\n");
}

TEST_F(FileSystemTest, MakeOwnerOnlyRestrictsATreeButNotWhatLinksPointTo) {
  FileSystem& posix = *FileSystem::Default();
  const std::string outside = (root_.path() / "outside").string();
  ASSERT_OK(posix.WriteFile(outside, "x", 0644, /*exclusive=*/true));
  ASSERT_OK(posix.CreateDir(Path("tree/sub")));
  ASSERT_OK(posix.WriteFile(Path("tree/sub/f"), "f", 0644, /*exclusive=*/true));
  ASSERT_OK(posix.WriteFile(Path("tree/g"), "g", 0666, /*exclusive=*/true));
  fs::create_symlink(outside, Path("tree/link"));
  ASSERT_OK(posix.MakeOwnerOnly(Path("tree")));
  auto mode = [](const std::string& path) {
    struct stat st;
    return stat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 01000u;
  };
  EXPECT_EQ(mode(Path("tree")), 0700u);
  EXPECT_EQ(mode(Path("tree/sub")), 0700u);
  EXPECT_EQ(mode(Path("tree/sub/f")), 0600u);
  EXPECT_EQ(mode(Path("tree/g")), 0600u);
  EXPECT_EQ(mode(outside), 0644u) << "a symbolic link is not followed";
  ASSERT_OK(posix.MakeOwnerOnly(Path("tree/g"))) << "a single file";
  EXPECT_FALSE(posix.MakeOwnerOnly(Path("never-there")).ok());
}

TEST_F(FileSystemTest, FaultFileSystemFailsTheChosenOperationOnce) {
  FaultFileSystem faulty((root_.path() / "trash").string());
  faulty.FailOperation(3);
  ASSERT_OK(faulty.WriteFile(Path("p"), "old", 0644, false));  // operation 1
  // Operation 2 writes p.tmp, operation 3 (the rename) fails: p is untouched.
  EXPECT_EQ(WriteFileDurably(faulty, Path("p"), "new", 0644).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(Read(faulty, "p"), "old");
  EXPECT_EQ(faulty.operations(), 3);
  ASSERT_OK(WriteFileDurably(faulty, Path("p"), "new", 0644)) << "only once";
  EXPECT_EQ(Read(faulty, "p"), "new");
}

TEST_F(FileSystemTest, ACrashStopsEveryOperationAndDropsUnsyncedNames) {
  FaultFileSystem faulty((root_.path() / "trash").string());
  ASSERT_OK(CreateFileDurably(faulty, Path("kept"), "synced", 0600));  // 2 operations
  ASSERT_OK(WriteFileDurably(faulty, Path("p"), "old", 0644));         // 3 operations
  faulty.CrashAtOperation(faulty.operations() + 3);  // after the write and rename of "new"
  EXPECT_FALSE(WriteFileDurably(faulty, Path("p"), "new", 0644).ok());
  EXPECT_TRUE(faulty.crashed());
  EXPECT_FALSE(faulty.ReadFile(Path("kept")).ok()) << "a stopped process reads nothing";
  EXPECT_FALSE(faulty.RemoveAll(Path("kept")).ok());
  // Before the power loss the rename is visible ...
  EXPECT_EQ(Read(*FileSystem::Default(), "p"), "new");
  // ... after it, the unsynced rename is undone and the replaced file is back.
  ASSERT_OK(faulty.DropUnsyncedChanges());
  EXPECT_FALSE(faulty.crashed());
  EXPECT_EQ(Read(faulty, "p"), "old");
  EXPECT_EQ(Read(faulty, "kept"), "synced");
  EXPECT_FALSE(faulty.Exists(Path("p.tmp")));

  // Unsynced creations and removals are undone too; synced ones stay.
  ASSERT_OK(faulty.WriteFile(Path("fresh"), "x", 0644, true));
  ASSERT_OK(faulty.RemoveAll(Path("kept")));
  ASSERT_OK(faulty.CreateDir(Path("dir")));
  EXPECT_FALSE(faulty.Exists(Path("kept")));
  ASSERT_OK(faulty.DropUnsyncedChanges());
  EXPECT_FALSE(faulty.Exists(Path("fresh")));
  EXPECT_FALSE(faulty.Exists(Path("dir")));
  EXPECT_EQ(Read(faulty, "kept"), "synced");
  ASSERT_OK(faulty.RemoveAll(Path("kept")));
  ASSERT_OK(faulty.SyncDir(dir_ + "/"));
  ASSERT_OK(faulty.DropUnsyncedChanges());
  EXPECT_FALSE(faulty.Exists(Path("kept")));
  EXPECT_TRUE(fs::is_empty(root_.path() / "trash")) << "a synced removal is final";
}

TEST_F(FileSystemTest, RocksDBFilesLoseWhatWasNotSyncedAtAPowerCut) {
  FaultFileSystem faulty((root_.path() / "trash").string());
  rocksdb::FileSystem& rocks = *faulty.rocksdb_env()->GetFileSystem();
  const rocksdb::IOOptions io;
  ASSERT_OK(faulty.WriteFile(Path("old"), "durable", 0644, false));
  ASSERT_OK(faulty.SyncDir(dir_));
  // "log": created, synced in part, its name made durable by a directory fsync.
  std::unique_ptr<rocksdb::FSWritableFile> log;
  ASSERT_TRUE(rocks.NewWritableFile(Path("log"), rocksdb::FileOptions(), &log, nullptr).ok());
  ASSERT_TRUE(log->Append("synced|", io, nullptr).ok());
  ASSERT_TRUE(log->Sync(io, nullptr).ok());
  std::unique_ptr<rocksdb::FSDirectory> dir;
  ASSERT_TRUE(rocks.NewDirectory(dir_, io, &dir, nullptr).ok());
  ASSERT_TRUE(dir->Fsync(io, nullptr).ok());
  ASSERT_TRUE(log->Append("written", io, nullptr).ok());
  ASSERT_TRUE(log->RangeSync(0, 14, io, nullptr).ok());  // starts writeback, promises nothing
  // "fresh": synced data under a name no directory fsync made durable; "old" deleted and
  // "log2" renamed, both unsynced.
  std::unique_ptr<rocksdb::FSWritableFile> fresh;
  ASSERT_TRUE(rocks.NewWritableFile(Path("fresh"), rocksdb::FileOptions(), &fresh, nullptr).ok());
  ASSERT_TRUE(fresh->Append("data", io, nullptr).ok());
  ASSERT_TRUE(fresh->Sync(io, nullptr).ok());
  ASSERT_TRUE(rocks.DeleteFile(Path("old"), io, nullptr).ok());
  ASSERT_TRUE(rocks.RenameFile(Path("fresh"), Path("renamed"), io, nullptr).ok());
  EXPECT_EQ(Read(faulty, "log"), "synced|written");

  faulty.Crash();
  EXPECT_FALSE(log->Append("after", io, nullptr).ok()) << "the machine has stopped";
  EXPECT_FALSE(log->Sync(io, nullptr).ok());
  log.reset();
  fresh.reset();
  ASSERT_OK(faulty.DropUnsyncedChanges());
  EXPECT_EQ(Read(faulty, "log"), "synced|");
  EXPECT_EQ(Read(faulty, "old"), "durable");
  EXPECT_FALSE(faulty.Exists(Path("fresh")));
  EXPECT_FALSE(faulty.Exists(Path("renamed")));
}

}  // namespace
}  // namespace cops
