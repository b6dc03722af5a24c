#ifndef COPS_SERVER_REQUEST_LOG_H_
#define COPS_SERVER_REQUEST_LOG_H_

// Every RPC logs one "rpc" event (logging/log_event.h) on completion with its method, status
// code, latency and sizes (RequestLog); ServeAuthenticated opens every authenticated handler.
//
// Thread-safety: a RequestLog belongs to one call; ToGrpc may be used from any thread.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "access/authorizer.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/status.h"
#include "logging/log_event.h"

namespace cops {

// The canonical gRPC status of an absl::Status: the codes are the same numbers.
grpc::Status ToGrpc(const absl::Status& status);

// Times one RPC and logs it when finished.
class RequestLog {
 public:
  RequestLog(std::string_view method, std::string peer);
  void set_principal(std::string name) { principal_ = std::move(name); }
  void add_in_bytes(uint64_t n) { in_bytes_ += n; }
  void add_out_bytes(uint64_t n) { out_bytes_ += n; }
  void add_field(std::string_view key, std::string value) {
    extra_.emplace_back(key, std::move(value));
  }
  // Logs the call (warn level for server-side failures) and returns ToGrpc(status).
  grpc::Status Finish(const absl::Status& status);

 private:
  std::string_view method_;
  std::string peer_;
  std::string principal_;
  uint64_t in_bytes_ = 0;
  uint64_t out_bytes_ = 0;
  std::vector<LogField> extra_;
  std::chrono::steady_clock::time_point start_;
};

// The opening every handler shares: one "rpc" line for the call (RequestLog), the caller
// authenticated before anything else, then `body(principal, log)` as that caller; the
// call's status is the body's. A failed authentication ends the call at once.
template <typename Body>
grpc::Status ServeAuthenticated(std::string_view method, grpc::ServerContext& context,
                                Authorizer& authorizer, Body&& body) {
  static_assert(std::is_invocable_r_v<absl::Status, Body, const Principal&, RequestLog&>);
  RequestLog log(method, context.peer());
  absl::StatusOr<Principal> principal = authorizer.Authenticate(context);
  if (!principal.ok()) return log.Finish(principal.status());
  log.set_principal(principal->name);
  return log.Finish(std::forward<Body>(body)(*principal, log));
}

}  // namespace cops

#endif  // COPS_SERVER_REQUEST_LOG_H_
