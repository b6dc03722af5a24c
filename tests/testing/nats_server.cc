#include "tests/testing/nats_server.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include "tests/testing/files.h"
#include "tests/testing/net.h"
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

// Waits until `server` has logged the election of JetStream's meta leader (a cluster's
// JetStream API answers only from then on).
absl::Status WaitForMetaLeader(const NatsServer& server) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    if (server.Log().find("metadata leader") != std::string::npos) return absl::OkStatus();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::UnavailableError("no JetStream meta leader: " + server.Log());
}

}  // namespace

bool NatsServer::Installed() { return !NatsServerPath().empty(); }

absl::StatusOr<std::unique_ptr<NatsServer>> NatsServer::Start(const std::string& dir) {
  return StartWith(dir, 0, {});
}

absl::StatusOr<std::unique_ptr<NatsServer>> NatsServer::StartWith(
    const std::string& dir, int port, const std::vector<std::string>& extra_args) {
  const std::string binary = NatsServerPath();
  if (binary.empty()) return absl::FailedPreconditionError(kNotInstalled);
  fs::create_directories(fs::path(dir) / "store");
  if (port == 0) port = FreePort();
  const fs::path log = fs::path(dir) / "nats-server.log";
  std::vector<std::string> argv = {binary, "-a", "127.0.0.1", "-p", std::to_string(port), "-js",
                                   "-sd", (fs::path(dir) / "store").string()};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  const pid_t pid = Spawn(argv, {}, log, log);
  std::unique_ptr<NatsServer> server(new NatsServer(pid, port, log.string()));
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

void NatsServer::Kill() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  WaitExit(pid_);
  pid_ = -1;
}

std::string NatsServer::Log() const { return ReadFileOrEmpty(log_); }

absl::StatusOr<std::unique_ptr<NatsCluster>> NatsCluster::Start(const std::string& dir, int n) {
  // Twice at most, on new ports and stores: a loaded machine can lose the first election.
  absl::Status first;
  for (int attempt = 1; attempt <= 2; ++attempt) {
    absl::StatusOr<std::unique_ptr<NatsCluster>> cluster =
        StartOnce((fs::path(dir) / ("attempt-" + std::to_string(attempt))).string(), n);
    if (cluster.ok()) return cluster;
    if (attempt == 1) {
      first = cluster.status();
    } else {
      return absl::UnavailableError(std::string(cluster.status().message()) +
                                    "\n(a first attempt failed too: " +
                                    std::string(first.message()) + ")");
    }
  }
  return first;
}

absl::StatusOr<std::unique_ptr<NatsCluster>> NatsCluster::StartOnce(const std::string& dir,
                                                                     int n) {
  // Ports below the ephemeral range: the routes are dialled before every server listens.
  std::vector<int> client_ports;
  std::vector<int> route_ports;
  for (int i = 0; i < 2 * n; ++i) {
    const int port = FreePortBelowEphemeralRange();
    if (port == 0) return absl::UnavailableError("no free loopback port below the ephemeral range");
    // The same port may be drawn twice: draw again.
    const bool taken = std::count(client_ports.begin(), client_ports.end(), port) > 0 ||
                       std::count(route_ports.begin(), route_ports.end(), port) > 0;
    if (taken) {
      --i;
      continue;
    }
    (i < n ? client_ports : route_ports).push_back(port);
  }
  std::unique_ptr<NatsCluster> cluster(
      new NatsCluster(dir, std::move(client_ports), std::move(route_ports)));
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<std::unique_ptr<NatsServer>> server = cluster->StartServer(i);
    if (!server.ok()) return server.status();
    cluster->servers_.push_back(*std::move(server));
  }
  for (int i = 0; i < n; ++i) {
    absl::Status led = WaitForMetaLeader(*cluster->servers_[i]);
    if (!led.ok()) return led;
  }
  return cluster;
}

NatsCluster::~NatsCluster() {
  for (std::unique_ptr<NatsServer>& server : servers_) {
    if (server != nullptr) server->Kill();
  }
}

std::string NatsCluster::url() const {
  std::string url;
  for (int port : client_ports_) {
    url += (url.empty() ? "" : ",") + std::string("nats://127.0.0.1:") + std::to_string(port);
  }
  return url;
}

absl::StatusOr<std::unique_ptr<NatsServer>> NatsCluster::StartServer(int i) const {
  std::string routes;
  for (size_t j = 0; j < route_ports_.size(); ++j) {
    if (static_cast<int>(j) == i) continue;
    routes += (routes.empty() ? "" : ",") + std::string("nats://127.0.0.1:") +
              std::to_string(route_ports_[j]);
  }
  const std::string name = "nats-" + std::to_string(i + 1);
  return NatsServer::StartWith(
      (fs::path(dir_) / name).string(), client_ports_[i],
      {"-n", name, "--cluster_name", "cops", "--cluster",
       "nats://127.0.0.1:" + std::to_string(route_ports_[i]), "--routes", routes});
}

absl::Status NatsCluster::Restart(int i) {
  servers_[i]->Kill();
  servers_[i].reset();
  absl::StatusOr<std::unique_ptr<NatsServer>> server = StartServer(i);
  if (!server.ok()) return server.status();
  servers_[i] = *std::move(server);
  return WaitForMetaLeader(*servers_[i]);
}

}  // namespace cops::testing
