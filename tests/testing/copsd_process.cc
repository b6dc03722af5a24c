#include "tests/testing/copsd_process.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/testing/files.h"
#include "tests/testing/subprocess.h"

namespace cops::testing {

namespace fs = std::filesystem;

absl::StatusOr<ProcessMemory> ReadProcessMemory(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  if (!status) return absl::NotFoundError("no process " + std::to_string(pid));
  ProcessMemory memory;
  std::string line;
  while (std::getline(status, line)) {
    std::istringstream fields(line);
    std::string name;
    uint64_t kib = 0;
    fields >> name >> kib;  // "VmRSS:	  46304 kB"
    if (name == "VmRSS:") memory.rss = kib << 10;
    if (name == "VmHWM:") memory.peak_rss = kib << 10;
  }
  return memory;
}

namespace {

// COPS_TEST_COPSD_LOG_LEVEL (e.g. info) for a soak's post-mortem; warn by default.
std::string LogLevel() {
  const char* level = std::getenv("COPS_TEST_COPSD_LOG_LEVEL");
  return level != nullptr && *level != '\0' ? level : "warn";
}

}  // namespace

absl::StatusOr<std::unique_ptr<CopsdProcess>> CopsdProcess::Start(
    const fs::path& dir, const std::vector<std::string>& flags) {
  const fs::path port_file = dir / "copsd.port";
  const fs::path log = dir / "copsd.log";
  fs::remove(port_file);
  // A restart's log starts afresh; the earlier runs' go on in copsd-earlier.log.
  if (fs::exists(log)) {
    std::ofstream(dir / "copsd-earlier.log", std::ios::app) << ReadFileOrEmpty(log);
  }
  std::vector<std::string> argv = {fs::path(BuildDir()) / "server" / "copsd", "--data-dir",
                                   (dir / "data").string(), "--port-file", port_file.string()};
  if (std::find(flags.begin(), flags.end(), "--log-level") == flags.end()) {
    argv.insert(argv.end(), {"--log-level", LogLevel()});
  }
  // A --listen of the caller's (a restart on the old port) replaces the free port.
  if (std::find(flags.begin(), flags.end(), "--listen") == flags.end()) {
    argv.insert(argv.end(), {"--listen", "127.0.0.1:0"});
  }
  argv.insert(argv.end(), flags.begin(), flags.end());
  const pid_t pid = Spawn(argv, {}, log, log);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(port_file)) {  // written once serving (by rename: never half)
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return absl::UnavailableError("copsd exited before serving: " + ReadFileOrEmpty(log));
    }
    if (std::chrono::steady_clock::now() > give_up) {
      kill(pid, SIGKILL);
      WaitExit(pid);
      return absl::UnavailableError("copsd did not serve within 30 s: " + ReadFileOrEmpty(log));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const std::string address = "127.0.0.1:" + std::to_string(std::stoi(ReadFileOrEmpty(port_file)));
  return std::unique_ptr<CopsdProcess>(new CopsdProcess(pid, log, address));
}

CopsdProcess::~CopsdProcess() { Stop(); }

int CopsdProcess::Stop() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  const int code = WaitExit(pid_);
  pid_ = -1;
  return code;
}

std::string CopsdProcess::Log() const { return ReadFileOrEmpty(log_); }

}  // namespace cops::testing
