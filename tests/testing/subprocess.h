#ifndef COPS_TESTS_TESTING_SUBPROCESS_H_
#define COPS_TESTS_TESTING_SUBPROCESS_H_

// Child processes for end-to-end tests (copsd, cops, cops-milter, postfix, swaks):
//
//   pid_t server = testing::Spawn({build + "/server/copsd", ...}, {}, out, log);
//   ...
//   kill(server, SIGTERM);
//   EXPECT_EQ(testing::WaitExit(server), 0);
//
// Thread-safety: plain functions (fork/exec); safe from any thread of a test.

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace cops::testing {

// Starts argv[0] (looked up in PATH unless it contains a '/') with stdin read from `in`
// (empty: /dev/null), stdout written to `out` (truncated) and stderr appended to `err`
// (the same path as `out`: both go to that one file). Returns the child's pid; a program
// that cannot be started exits 127.
pid_t Spawn(const std::vector<std::string>& argv, const std::filesystem::path& in,
            const std::filesystem::path& out, const std::filesystem::path& err);

// Waits for the child `pid`: its exit code, or 128 + the signal that ended it.
int WaitExit(pid_t pid);

}  // namespace cops::testing

#endif  // COPS_TESTS_TESTING_SUBPROCESS_H_
