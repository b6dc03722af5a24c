#ifndef COPS_TESTS_TESTING_FILES_H_
#define COPS_TESTS_TESTING_FILES_H_

// Reading a file whole, and the permissions of a tree, as tests check what a program or
// server wrote; where the programs under test were built.
//
// Thread-safety: a pure function of the file system.

#include <filesystem>
#include <string>
#include <vector>

namespace cops::testing {

// The bytes of `path`; "" if it is missing or unreadable (the comparison that follows then
// fails and shows it).
std::string ReadFileOrEmpty(const std::filesystem::path& path);

// The entries of the tree at `root` (root included, symbolic links not followed) that are not
// owner-only, as "<path> <octal mode>" lines: owner-only is 0700 for a directory, 0600 for
// anything else. Empty when all are (compare with an empty vector to see the offenders).
std::vector<std::string> NotOwnerOnly(const std::filesystem::path& root);

// The build directory holding the programs tests start (server/copsd, client/cops,
// milter/cops-milter): $COPS_BUILD_DIR (CTest sets it), else the directory this harness was
// built in, so that a test program runs the same from any working directory.
std::string BuildDir();

}  // namespace cops::testing

#endif  // COPS_TESTS_TESTING_FILES_H_
