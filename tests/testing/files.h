#ifndef COPS_TESTS_TESTING_FILES_H_
#define COPS_TESTS_TESTING_FILES_H_

// Reading a file whole, as tests check what a program or server wrote.
//
// Thread-safety: a pure function of the file system.

#include <filesystem>
#include <string>

namespace cops::testing {

// The bytes of `path`; "" if it is missing or unreadable (the comparison that follows then
// fails and shows it).
std::string ReadFileOrEmpty(const std::filesystem::path& path);

}  // namespace cops::testing

#endif  // COPS_TESTS_TESTING_FILES_H_
