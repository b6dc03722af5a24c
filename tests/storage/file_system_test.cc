#include "storage/file_system.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/storage/fault_file_system.h"

namespace cops {
namespace {

namespace fs = std::filesystem;

class FileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "file_system_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    dir_ = (root_ / "data").string();
    fs::create_directories(dir_);
    fs::create_directories(root_ / "trash");
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string Path(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  std::string Read(FileSystem& fs, const std::string& name) {
    absl::StatusOr<std::string> text = fs.ReadFile(Path(name));
    return text.ok() ? *text : "<" + std::string(text.status().message()) + ">";
  }

  fs::path root_;
  std::string dir_;
};

TEST_F(FileSystemTest, PosixWritesReadsListsAndRemoves) {
  FileSystem& posix = *FileSystem::Default();
  ASSERT_TRUE(posix.WriteFile(Path("a"), "alpha", 0600, /*exclusive=*/true).ok());
  EXPECT_EQ(Read(posix, "a"), "alpha");
  struct stat st;
  ASSERT_EQ(stat(Path("a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(posix.WriteFile(Path("a"), "other", 0600, /*exclusive=*/true).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Read(posix, "a"), "alpha") << "an exclusive create never touches the file";
  ASSERT_TRUE(posix.WriteFile(Path("a"), "b", 0600, /*exclusive=*/false).ok());
  EXPECT_EQ(Read(posix, "a"), "b") << "a plain write truncates";

  ASSERT_TRUE(posix.ZeroFill(Path("a")).ok());
  EXPECT_EQ(Read(posix, "a"), std::string(1, '\0'));
  ASSERT_TRUE(posix.CreateDir(Path("sub/deeper")).ok());
  ASSERT_TRUE(posix.Rename(Path("a"), Path("c")).ok());
  absl::StatusOr<std::vector<std::string>> names = posix.List(dir_);
  ASSERT_TRUE(names.ok()) << names.status();
  std::sort(names->begin(), names->end());
  EXPECT_EQ(*names, (std::vector<std::string>{"c", "sub"}));
  ASSERT_TRUE(posix.RemoveAll(Path("sub")).ok());
  ASSERT_TRUE(posix.RemoveAll(Path("never-there")).ok());
  EXPECT_FALSE(posix.Exists(Path("sub")));
  EXPECT_TRUE(posix.Exists(Path("c")));
  EXPECT_EQ(posix.ReadFile(Path("a")).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(posix.SyncDir(dir_).ok());
}

TEST_F(FileSystemTest, WriteFileDurablyReplacesTheWholeFile) {
  FileSystem& posix = *FileSystem::Default();
  ASSERT_TRUE(WriteFileDurably(posix, Path("p"), "one\n", 0644).ok());
  ASSERT_TRUE(WriteFileDurably(posix, Path("p"), "two\n", 0644).ok());
  EXPECT_EQ(Read(posix, "p"), "two\n");
  EXPECT_FALSE(posix.Exists(Path("p.tmp")));
  ASSERT_TRUE(CreateFileDurably(posix, Path("k"), "key\n", 0600).ok());
  EXPECT_EQ(CreateFileDurably(posix, Path("k"), "other\n", 0600).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(Read(posix, "k"), "key\n");
}

TEST_F(FileSystemTest, FaultFileSystemFailsTheChosenOperationOnce) {
  FaultFileSystem faulty((root_ / "trash").string());
  faulty.FailOperation(3);
  ASSERT_TRUE(faulty.WriteFile(Path("p"), "old", 0644, false).ok());  // operation 1
  // Operation 2 writes p.tmp, operation 3 (the rename) fails: p is untouched.
  EXPECT_EQ(WriteFileDurably(faulty, Path("p"), "new", 0644).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(Read(faulty, "p"), "old");
  EXPECT_EQ(faulty.operations(), 3);
  ASSERT_TRUE(WriteFileDurably(faulty, Path("p"), "new", 0644).ok()) << "only once";
  EXPECT_EQ(Read(faulty, "p"), "new");
}

TEST_F(FileSystemTest, ACrashStopsEveryOperationAndDropsUnsyncedNames) {
  FaultFileSystem faulty((root_ / "trash").string());
  ASSERT_TRUE(CreateFileDurably(faulty, Path("kept"), "synced", 0600).ok());  // 2 operations
  ASSERT_TRUE(WriteFileDurably(faulty, Path("p"), "old", 0644).ok());         // 3 operations
  faulty.CrashAtOperation(faulty.operations() + 3);  // after the write and rename of "new"
  EXPECT_FALSE(WriteFileDurably(faulty, Path("p"), "new", 0644).ok());
  EXPECT_TRUE(faulty.crashed());
  EXPECT_FALSE(faulty.ReadFile(Path("kept")).ok()) << "a stopped process reads nothing";
  EXPECT_FALSE(faulty.RemoveAll(Path("kept")).ok());
  // Before the power loss the rename is visible ...
  EXPECT_EQ(Read(*FileSystem::Default(), "p"), "new");
  // ... after it, the unsynced rename is undone and the replaced file is back.
  ASSERT_TRUE(faulty.DropUnsyncedChanges().ok());
  EXPECT_FALSE(faulty.crashed());
  EXPECT_EQ(Read(faulty, "p"), "old");
  EXPECT_EQ(Read(faulty, "kept"), "synced");
  EXPECT_FALSE(faulty.Exists(Path("p.tmp")));

  // Unsynced creations and removals are undone too; synced ones stay.
  ASSERT_TRUE(faulty.WriteFile(Path("fresh"), "x", 0644, true).ok());
  ASSERT_TRUE(faulty.RemoveAll(Path("kept")).ok());
  ASSERT_TRUE(faulty.CreateDir(Path("dir")).ok());
  EXPECT_FALSE(faulty.Exists(Path("kept")));
  ASSERT_TRUE(faulty.DropUnsyncedChanges().ok());
  EXPECT_FALSE(faulty.Exists(Path("fresh")));
  EXPECT_FALSE(faulty.Exists(Path("dir")));
  EXPECT_EQ(Read(faulty, "kept"), "synced");
  ASSERT_TRUE(faulty.RemoveAll(Path("kept")).ok());
  ASSERT_TRUE(faulty.SyncDir(dir_ + "/").ok());
  ASSERT_TRUE(faulty.DropUnsyncedChanges().ok());
  EXPECT_FALSE(faulty.Exists(Path("kept")));
  EXPECT_TRUE(fs::is_empty(root_ / "trash")) << "a synced removal is final";
}

}  // namespace
}  // namespace cops
