#ifndef COPS_TESTS_TESTING_NATS_SERVER_H_
#define COPS_TESTS_TESTING_NATS_SERVER_H_

// A real nats-server with JetStream for a test: a child process on 127.0.0.1 and a free
// port, its store under the test's directory, stopped when destroyed.
//
//   if (!testing::NatsServer::Installed()) GTEST_SKIP() << testing::NatsServer::kNotInstalled;
//   ASSERT_OK_AND_ASSIGN(auto nats, testing::NatsServer::Start(dir_.Join("nats")));
//   ... nats->url() ...
//
// Thread-safety: not thread-safe; one test thread uses it.

#include <sys/types.h>

#include <memory>
#include <string>

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
  ~NatsServer();  // SIGTERM, then waits for the exit
  NatsServer(const NatsServer&) = delete;
  NatsServer& operator=(const NatsServer&) = delete;

  std::string url() const { return "nats://127.0.0.1:" + std::to_string(port_); }

 private:
  NatsServer(pid_t pid, int port) : pid_(pid), port_(port) {}
  pid_t pid_;
  int port_;
};

}  // namespace cops::testing

#endif  // COPS_TESTS_TESTING_NATS_SERVER_H_
