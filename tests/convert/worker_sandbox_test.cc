// The converter worker's confinement (convert/worker_sandbox.h), seen from outside as an
// operator would: /proc of a live worker, and what a probe inside it may do.

#include <gtest/gtest.h>
#include <linux/landlock.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "convert/converter.h"
#include "convert/sandbox.h"
#include "convert/worker_pool.h"
#include "tests/testing/files.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/subprocess.h"
#include "tests/testing/temp_dir.h"

namespace cops {
namespace {

// The live cops-convert-worker processes this test process started.
std::vector<pid_t> Workers() {
  std::vector<pid_t> pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos || stat.find("(cops-convert-wo") == std::string::npos) {
      continue;
    }
    std::istringstream rest(stat.substr(paren + 1));
    char state = 0;
    pid_t ppid = 0;
    if (rest >> state >> ppid && ppid == getpid() && state != 'Z') {
      pids.push_back(std::stoi(name));
    }
  }
  return pids;
}

std::string StatusField(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(field + ":")) {
      const size_t value = line.find_first_not_of(" \t", field.size() + 1);
      return value == std::string::npos ? "" : line.substr(value);
    }
  }
  return "?";
}

std::string Link(const std::string& path) {
  std::error_code ec;
  return std::filesystem::read_symlink(path, ec).string();
}

// Whether a child of this process may enter a new network namespace (as the worker tries).
bool KernelAllowsNetworkNamespace() {
  const pid_t child = fork();
  if (child == 0) {
    _exit(unshare(CLONE_NEWNET) == 0 || unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0 ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(WorkerSandboxTest, LiveWorkerIsFilteredWithoutPrivilegesEnvironmentOrNetwork) {
  // copsd's environment may hold its hashing key (deploy/k8s passes COPS_HASH_KEY so).
  setenv("COPS_HASH_KEY", "00112233445566778899aabbccddeeff", 1);
  ConvertWorkerPool pool({.max_workers = 1, .max_uses = 10});
  // A document converted first: the worker has set itself up and waits for the next one.
  ASSERT_OK(pool.Convert("<p>first</p>", DocumentFormat::kHtml, {}, {}));
  unsetenv("COPS_HASH_KEY");
  const std::vector<pid_t> workers = Workers();
  ASSERT_EQ(workers.size(), 1u);
  const pid_t pid = workers[0];
  EXPECT_EQ(StatusField(pid, "Seccomp"), "2");  // SECCOMP_MODE_FILTER
  EXPECT_EQ(StatusField(pid, "NoNewPrivs"), "1");
  const std::string environ = testing::ReadFileOrEmpty("/proc/" + std::to_string(pid) + "/environ");
  // (Not printed: the test runner's environment may hold secrets of its own.)
  EXPECT_TRUE(environ.empty()) << "the worker inherited " << environ.size()
                               << " bytes of environment, COPS_HASH_KEY "
                               << (environ.find("COPS_HASH_KEY=") == std::string::npos
                                       ? "not among them"
                                       : "among them");
  const std::string own_net = Link("/proc/self/ns/net");
  const std::string worker_net = Link("/proc/" + std::to_string(pid) + "/ns/net");
  if (KernelAllowsNetworkNamespace()) {
    EXPECT_NE(worker_net, own_net) << "the worker shares copsd's network";
  } else {
    std::cout << "this kernel refuses new network namespaces here: the worker shares the "
                 "network, and only its seccomp filter keeps sockets closed\n";
  }
  // It still converts.
  absl::StatusOr<ConvertedDocument> doc =
      pool.Convert("<p>second</p>", DocumentFormat::kHtml, {}, {});
  ASSERT_OK(doc);
  EXPECT_EQ(doc->text, "second");
}

// Runs the worker's test probe (after it has entered its sandbox): "allowed" or "refused".
std::string Probe(const testing::TempDir& dir, const std::string& what) {
  const std::string out = dir.Join("probe.out");
  const pid_t pid = testing::Spawn({ConvertWorkerPath(), "--probe=" + what}, "", out, out);
  const int status = testing::WaitExit(pid);
  return status == 0 ? "allowed" : status == 3 ? "refused" : "exit " + std::to_string(status);
}

TEST(WorkerSandboxTest, ParserTakenOverCannotReadTheKeyFileNorOpenASocket) {
  ASSERT_FALSE(ConvertWorkerPath().empty());
  testing::TempDir dir("cops_worker_sandbox_test");
  // A data directory's hashing key, readable by this user as copsd's is.
  const std::string key = dir.Join("hash.key");
  std::ofstream(key) << "00112233445566778899aabbccddeeff\n";
  ASSERT_FALSE(testing::ReadFileOrEmpty(key).empty());
  EXPECT_EQ(Probe(dir, "open:" + key), "refused");
  EXPECT_EQ(Probe(dir, "socket"), "refused");
  // What parsing reads stays readable, libraries' data under /usr, where Landlock confines
  // reads to it (without Landlock, no open is allowed at all).
  if (syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION) >= 1) {
    EXPECT_EQ(Probe(dir, "open:/usr/share/common-licenses/GPL-3"), "allowed");
  } else {
    EXPECT_EQ(Probe(dir, "open:/usr/share/common-licenses/GPL-3"), "refused");
  }
}

}  // namespace
}  // namespace cops
