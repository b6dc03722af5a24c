#ifndef COPS_TESTS_TESTING_TEMP_DIR_H_
#define COPS_TESTS_TESTING_TEMP_DIR_H_

// A fresh, empty directory for one test, removed with everything in it when the TempDir
// is destroyed. Made by mkdtemp(3) under std::filesystem::temp_directory_path() ($TMPDIR,
// else /tmp), so tests running in parallel never share one. With COPS_TEST_KEEP_DIRS=1 in
// the environment it is left in place (its path printed on stderr) for a post-mortem.
//
//   class IndexTest : public ::testing::Test {
//     testing::TempDir dir_;
//     ... Index::Open(dir_.Join("index")) ...
//   };
//
// Thread-safety: const methods may be called concurrently.

#include <filesystem>
#include <string>
#include <string_view>

namespace cops::testing {

class TempDir {
 public:
  // Creates "<temp>/<prefix>_XXXXXX". Aborts the test program with a message if the
  // directory cannot be made (no test can run without it).
  explicit TempDir(std::string_view prefix = "cops_test");
  ~TempDir();

  // Movable (the moved-from object owns nothing); not copyable.
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&& other) noexcept;
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // path() / name, as a string (the form most APIs take).
  std::string Join(std::string_view name) const;

 private:
  void Remove();

  std::filesystem::path path_;
};

}  // namespace cops::testing

#endif  // COPS_TESTS_TESTING_TEMP_DIR_H_
