#ifndef COPS_TESTS_TESTING_COPSD_PROCESS_H_
#define COPS_TESTS_TESTING_COPSD_PROCESS_H_

// The real copsd binary as a child process on an ephemeral 127.0.0.1 port, for tests that
// need the whole server (its flags, gRPC limits, memory):
//
//   ASSERT_OK_AND_ASSIGN(auto copsd, testing::CopsdProcess::Start(dir.path(), {"--threads", "4"}));
//   ... Client::Connect({.target = copsd->address()}) ...
//   EXPECT_EQ(copsd->Stop(), 0);
//
// The binary is $COPS_BUILD_DIR/server/copsd (CTest sets COPS_BUILD_DIR).
//
// Thread-safety: const methods may be called from any thread; Stop() and the destructor
// from one.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cops::testing {

// Memory of a process from /proc/PID/status, in bytes.
struct ProcessMemory {
  uint64_t rss = 0;       // VmRSS: resident now
  uint64_t peak_rss = 0;  // VmHWM: the most resident since the process started
};

// The memory of process `pid`; NOT_FOUND when it is gone.
absl::StatusOr<ProcessMemory> ReadProcessMemory(pid_t pid);

class CopsdProcess {
 public:
  // Starts copsd with --data-dir `dir`/data, --listen 127.0.0.1:0 (unless `flags` has a
  // --listen: a restart on the old address), --port-file, --log-level warn
  // (unless `flags` has one; $COPS_TEST_COPSD_LOG_LEVEL if set) and then `flags`, and waits
  // (polling, at most 30 s) until it serves. Its output goes to `dir`/copsd.log (an earlier
  // run's, restarted in `dir`, is appended to `dir`/copsd-earlier.log first). UNAVAILABLE,
  // with the log, when it exits or does not serve in time.
  static absl::StatusOr<std::unique_ptr<CopsdProcess>> Start(const std::filesystem::path& dir,
                                                             const std::vector<std::string>& flags);
  // Stop()s it if still running.
  ~CopsdProcess();
  CopsdProcess(const CopsdProcess&) = delete;
  CopsdProcess& operator=(const CopsdProcess&) = delete;

  // SIGTERM, then the exit code of the graceful shutdown (128 + signal if killed); -1 when
  // already stopped.
  int Stop();

  pid_t pid() const { return pid_; }
  // "127.0.0.1:<port>".
  const std::string& address() const { return address_; }
  // What copsd has written to its log so far.
  std::string Log() const;

 private:
  CopsdProcess(pid_t pid, std::filesystem::path log, std::string address)
      : pid_(pid), log_(std::move(log)), address_(std::move(address)) {}

  pid_t pid_;
  const std::filesystem::path log_;
  const std::string address_;
};

}  // namespace cops::testing

#endif  // COPS_TESTS_TESTING_COPSD_PROCESS_H_
