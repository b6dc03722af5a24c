#include "tests/testing/temp_dir.h"

#include <filesystem>
#include <fstream>
#include <utility>

#include "gtest/gtest.h"

namespace cops::testing {
namespace {

namespace fs = std::filesystem;

TEST(TempDirTest, FreshEmptyDirectoryRemovedWithItsContents) {
  fs::path kept;
  {
    TempDir dir("temp_dir_test");
    kept = dir.path();
    ASSERT_TRUE(fs::is_directory(kept));
    EXPECT_TRUE(fs::is_empty(kept));
    EXPECT_EQ(kept.filename().string().rfind("temp_dir_test_", 0), 0u) << kept;
    fs::create_directories(dir.Join("a/b"));
    std::ofstream(dir.Join("a/b/file")) << "content";
    EXPECT_EQ(dir.Join("a"), (kept / "a").string());
  }
  EXPECT_FALSE(fs::exists(kept));
}

TEST(TempDirTest, EachIsUnique) {
  TempDir a, b;
  EXPECT_NE(a.path(), b.path());
  EXPECT_TRUE(fs::is_directory(a.path()));
  EXPECT_TRUE(fs::is_directory(b.path()));
}

TEST(TempDirTest, MoveTransfersOwnership) {
  TempDir a;
  const fs::path path = a.path();
  {
    TempDir b(std::move(a));
    EXPECT_EQ(b.path(), path);
    EXPECT_TRUE(a.path().empty());
  }
  EXPECT_FALSE(fs::exists(path));  // removed once, by the new owner
  TempDir c, d;
  const fs::path replaced = c.path();
  c = std::move(d);
  EXPECT_FALSE(fs::exists(replaced));
  EXPECT_TRUE(fs::is_directory(c.path()));
}

}  // namespace
}  // namespace cops::testing
