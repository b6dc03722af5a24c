#ifndef COPS_TESTS_TESTING_NATS_SERVER_H_
#define COPS_TESTS_TESTING_NATS_SERVER_H_

// A real nats-server with JetStream for a test: a child process on 127.0.0.1 and a free
// port, its store under the test's directory, stopped when destroyed.
//
//   if (!testing::NatsServer::Installed()) GTEST_SKIP() << testing::NatsServer::kNotInstalled;
//   ASSERT_OK_AND_ASSIGN(auto nats, testing::NatsServer::Start(dir_.Join("nats")));
//   ... nats->url() ...
//
// NatsCluster runs three (or more) of them as one JetStream cluster on loopback, for tests
// of replicated streams and buckets that kill a server:
//
//   ASSERT_OK_AND_ASSIGN(auto cluster, testing::NatsCluster::Start(dir_.Join("nats"), 3));
//   ... JetStream::Connect({.url = cluster->url(), .replicas = 3}) ...
//   cluster->server(1).Kill();   // SIGKILL; ASSERT_OK(cluster->Restart(1)) brings it back
//
// Thread-safety: not thread-safe; one test thread uses them.

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cops::testing {

class NatsServer {
 public:
  static constexpr const char* kNotInstalled =
      "nats-server is not installed (apt-get install nats-server; scripts/install-deps.sh)";
  // True when a nats-server binary is found (PATH, /usr/sbin, /usr/bin).
  static bool Installed();
  // Starts `nats-server -js -sd <dir>/store` on a free loopback port and waits (up to 10 s)
  // until it accepts connections. UNAVAILABLE when it does not come up (its log is quoted).
  static absl::StatusOr<std::unique_ptr<NatsServer>> Start(const std::string& dir);
  // As Start, on `port` (0: a free one) with `extra_args` after the usual ones (cluster
  // flags).
  static absl::StatusOr<std::unique_ptr<NatsServer>> StartWith(
      const std::string& dir, int port, const std::vector<std::string>& extra_args);
  ~NatsServer();  // SIGTERM, then waits for the exit
  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;

  // SIGKILL (no clean shutdown), then waits for the exit.
  void Kill();
  int port() const { return port_; }
  pid_t pid() const { return pid_; }  // -1 once stopped
  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }
  // What the server has logged so far.
  std::string Log() const;

 private:
  NatsServer(pid_t pid, int port, std::string log) : pid_(pid), port_(port), log_(std::move(log)) {}
  pid_t pid_;
  int port_;
  std::string log_;
};

// `n` nats-servers with JetStream forming one cluster ("cops") over loopback routes, each
// with its own store under `dir`/attempt-<a>/nats-<i>.
class NatsCluster {
 public:
  // Starts them and waits (up to 20 s) until JetStream's meta leader is elected and known to
  // every server; once more, on new ports under `dir`/attempt-2, when it is not.
  // UNAVAILABLE, quoting the logs, when neither cluster elected one.
  static absl::StatusOr<std::unique_ptr<NatsCluster>> Start(const std::string& dir, int n = 3);
  // Kills every server still running (SIGKILL: a clustered nats-server takes seconds to shut
  // down cleanly, and its store goes with the test's directory).
  ~NatsCluster();
  NatsCluster(const NatsCluster&) = delete;
  NatsCluster& operator=(const NatsCluster&) = delete;

  int size() const { return static_cast<int>(servers_.size()); }
  // Server i (0-based); valid until Restart(i).
  NatsServer& server(int i) { return *servers_[i]; }
  // Every server's client URL, comma-separated (what a client connects to).
  std::string url() const;
  // Starts server i again on its old port and store (after Kill), and waits until it is
  // ready and knows the meta leader.
  absl::Status Restart(int i);

 private:
  NatsCluster(std::string dir, std::vector<int> client_ports, std::vector<int> route_ports)
      : dir_(std::move(dir)),
        client_ports_(std::move(client_ports)),
        route_ports_(std::move(route_ports)) {}
  static absl::StatusOr<std::unique_ptr<NatsCluster>> StartOnce(const std::string& dir, int n);
  absl::StatusOr<std::unique_ptr<NatsServer>> StartServer(int i) const;

  const std::string dir_;
  const std::vector<int> client_ports_;
  const std::vector<int> route_ports_;
  std::vector<std::unique_ptr<NatsServer>> servers_;
};

}  // namespace cops::testing

#endif  // COPS_TESTS_TESTING_NATS_SERVER_H_
