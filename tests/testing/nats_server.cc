#include "tests/testing/nats_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include "tests/testing/files.h"
#include "tests/testing/subprocess.h"

namespace cops::testing {
namespace {

namespace fs = std::filesystem;

std::string NatsServerPath() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(std::string(path != nullptr ? path : "") + ":/usr/sbin:/usr/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const fs::path candidate = fs::path(dir) / "nats-server";
    if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

// A loopback port nothing listens on now (the kernel's pick for port 0).
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

bool Accepts(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

}  // namespace

bool NatsServer::Installed() { return !NatsServerPath().empty(); }

absl::StatusOr<std::unique_ptr<NatsServer>> NatsServer::Start(const std::string& dir) {
  const std::string binary = NatsServerPath();
  if (binary.empty()) return absl::FailedPreconditionError(kNotInstalled);
  fs::create_directories(fs::path(dir) / "store");
  const int port = FreePort();
  const fs::path log = fs::path(dir) / "nats-server.log";
  const pid_t pid = Spawn({binary, "-a", "127.0.0.1", "-p", std::to_string(port), "-js", "-sd",
                           (fs::path(dir) / "store").string()},
                          {}, log, log);
  std::unique_ptr<NatsServer> server(new NatsServer(pid, port));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      server->pid_ = -1;
      return absl::UnavailableError("nats-server exited: " + ReadFileOrEmpty(log));
    }
    // JetStream is ready once the log says so; the port alone opens a little earlier.
    if (Accepts(port) && ReadFileOrEmpty(log).find("Server is ready") != std::string::npos) {
      return server;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::UnavailableError("nats-server did not come up: " + ReadFileOrEmpty(log));
}

NatsServer::~NatsServer() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  WaitExit(pid_);
}

}  // namespace cops::testing
