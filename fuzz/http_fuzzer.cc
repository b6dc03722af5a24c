// libFuzzer entry for the HTTP/JSON API (http/api.h) over raw bytes on a socket: each input is
// sent as it is to a real HttpApi on 127.0.0.1 (one connection, then the write side closed),
// in front of the real CopyDetection service with authentication on over an in-process
// channel, on a fresh data directory in /tmp. "$KEY" in the input becomes the API key of an
// owner of collection "a", so that requests reach the handlers behind authentication.
// Every request must be answered within 20 s (or the connection closed, for bytes that are
// no request) and never with 500: a 500 is a bug of ours (it was how text fields that were
// not UTF-8 showed). Only the HTTP layer (http/*.cc) is compiled with coverage and
// sanitizers; the service beneath is the normal build. Seeds: fuzz/fuzz_seeds.cc ("http"),
// one request per route; dictionary: fuzz/http.dict.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/service_parts.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "http/api.h"
#include "server/service.h"

namespace {

using cops::fuzzing::Must;
using cops::fuzzing::Require;

// The service, its in-process gRPC server and the HTTP API; built once, kept for the run.
struct Stack {
  Stack() : parts("http") {
    service = parts.Service(parts.access.get());
    grpc::EnableDefaultHealthCheckService(true);  // as copsd: /healthz asks it
    grpc::ServerBuilder builder;
    builder.RegisterService(service.get());
    builder.SetMaxReceiveMessageSize(64 << 20);
    server = builder.BuildAndStart();
    Require(server != nullptr);

    cops::HttpApiOptions options;
    options.listen = "127.0.0.1:0";
    options.max_body_bytes = 1 << 20;
    options.request_timeout = std::chrono::milliseconds(5000);
    options.idle_timeout = std::chrono::milliseconds(1000);
    options.call_timeout = std::chrono::milliseconds(10000);
    options.jobs.max_queued = 8;  // jobs beyond are 429, not memory
    cops::AccessControl* control = parts.access.get();
    options.authenticate = [control](const std::string& key, const std::vector<std::string>& names,
                                     const std::string& peer) -> absl::StatusOr<std::string> {
      absl::StatusOr<cops::Principal> principal =
          control->AuthenticateCredentials(cops::CallCredentials{key, names, peer});
      if (!principal.ok()) return principal.status();
      return principal->name;
    };
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    http = Must(cops::HttpApi::Start(options, server->InProcessChannel(args)));
  }

  cops::fuzzing::ServiceParts parts;
  std::unique_ptr<cops::CopyDetectionService> service;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<cops::HttpApi> http;
};

Stack& TheStack() {
  // Never destroyed: libFuzzer exits without unwinding, and the servers' threads outlive
  // any static destructor order.
  static Stack* stack = new Stack();
  return *stack;
}

// `input` with each "$KEY" replaced by the owner's API key.
std::string WithKey(std::string_view input, const std::string& key) {
  std::string out;
  out.reserve(input.size());
  for (size_t at = 0;;) {
    const size_t next = input.find("$KEY", at);
    out.append(input.substr(at, next == std::string_view::npos ? next : next - at));
    if (next == std::string_view::npos) return out;
    out += key;
    at = next + 4;
  }
}

// Sends `request` on a fresh connection, closes the write side and reads the whole answer;
// aborts when none comes within 20 s.
std::string Exchange(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  Require(fd >= 0, "socket");
  // From 127.0.0.2 .. 127.0.0.254 in turn: each closed connection holds its port pair for a
  // minute (TIME_WAIT), and one source address has too few ports for a minute of inputs.
  static uint32_t next_source = 0;
  sockaddr_in source{};
  source.sin_family = AF_INET;
  source.sin_addr.s_addr = htonl(INADDR_LOOPBACK + 1 + (next_source++ % 253));
  Require(bind(fd, reinterpret_cast<sockaddr*>(&source), sizeof(source)) == 0, "bind");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    // Interrupted by libFuzzer's time-out alarm, the connection goes on being made: wait
    // for it, then read how it ended.
    Require(errno == EINTR, "connect");
    pollfd p{fd, POLLOUT, 0};
    while (poll(&p, 1, 20000) < 0) Require(errno == EINTR, "poll");
    int error = 0;
    socklen_t len = sizeof(error);
    Require(getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0, "connect");
  }
  timeval tv{20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;  // libFuzzer's time-out alarm
    if (n <= 0) break;  // the server may close early (a refused request): read its answer
    sent += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  std::string answer;
  char buf[65536];
  for (;;) {
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      answer.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;  // libFuzzer's time-out alarm
    // A time-out is a hang; a reset after the answer (unread request bytes) is fine.
    Require(n == 0 || errno == ECONNRESET, "no answer");
    break;
  }
  close(fd);
  return answer;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Stack& stack = TheStack();
  const std::string request =
      WithKey(std::string_view(reinterpret_cast<const char*>(data), size), stack.parts.owner_key);
  const std::string answer = Exchange(stack.http->port(), request);
  // The first answer's status line; pipelined requests' later answers are not parsed apart.
  Require(answer.rfind("HTTP/1.1 500", 0) != 0, answer.substr(0, 300).c_str());
  return 0;
}
