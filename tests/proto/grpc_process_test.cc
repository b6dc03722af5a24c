#include "proto/grpc_process.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"

namespace cops {
namespace {

// Whether thread `tid` of this process sleeps (state S: blocked on the mutex's futex).
bool Sleeping(pid_t tid) {
  std::ifstream stat("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const size_t name_end = line.rfind(')');
  return name_end != std::string::npos && name_end + 2 < line.size() &&
         line[name_end + 2] == 'S';
}

// The errno a thread sees right after taking `absl::Mutex` that another thread holds, having
// set errno to EINPROGRESS just before (as gRPC's connect path does between connect() and
// its errno check).
int ErrnoAfterAContendedLock() {
  absl::Mutex mutex;
  mutex.Lock();
  std::atomic<pid_t> waiter{0};
  int seen = 0;
  std::thread thread([&] {
    waiter = static_cast<pid_t>(syscall(SYS_gettid));
    errno = EINPROGRESS;
    mutex.Lock();  // blocks: the slow path
    seen = errno;
    mutex.Unlock();
  });
  while (waiter == 0 || !Sleeping(waiter)) std::this_thread::yield();
  mutex.Unlock();
  thread.join();
  return seen;
}

// The issue's fresh-machine failure ("UNAVAILABLE: ... ipv4:127.0.0.1:PORT: No such file or
// directory" from a client connecting to a server that was serving) comes from machines with
// no /sys. A child process takes its first contended lock on such a machine: this one if it
// has no /sys (a chroot), else in a mount namespace of its own with a tmpfs over /sys. The
// exit code says what errno was afterwards.
TEST(GrpcProcessTest, WithoutSysAPreparedProcessKeepsErrnoAcrossItsFirstContendedLock) {
  const bool has_sys = access("/sys/devices/system/cpu/online", F_OK) == 0;
  if (has_sys && geteuid() != 0) GTEST_SKIP() << "not root: /sys cannot be hidden";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Private first, so that the tmpfs stays in this namespace.
    if (has_sys && (unshare(CLONE_NEWNS) != 0 ||
                    mount(nullptr, "/sys", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
                    mount("none", "/sys", "tmpfs", 0, nullptr) != 0)) {
      _exit(3);
    }
    PrepareGrpcProcess();
    const int seen = ErrnoAfterAContendedLock();
    _exit(seen == EINPROGRESS ? 0 : seen == ENOENT ? 1 : 2);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 3) GTEST_SKIP() << "no mount namespace with a tmpfs over /sys here";
  EXPECT_NE(WEXITSTATUS(status), 1) << "the first contended lock left ENOENT in errno";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "errno changed across a contended lock";
}

}  // namespace
}  // namespace cops
