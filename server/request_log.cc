#include "server/request_log.h"

namespace cops {

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

RequestLog::RequestLog(std::string_view method, std::string peer)
    : method_(method), peer_(std::move(peer)), start_(std::chrono::steady_clock::now()) {}

grpc::Status RequestLog::Finish(const absl::Status& status) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now() - start_)
                          .count();
  std::vector<LogField> fields = {
      {"method", std::string(method_)},
      {"status", std::string(absl::StatusCodeToString(status.code()))},
      {"latency_us", std::to_string(micros)},
      {"in_bytes", std::to_string(in_bytes_)},
      {"out_bytes", std::to_string(out_bytes_)},
      {"principal", principal_},
      {"peer", peer_},
  };
  for (auto& f : extra_) fields.push_back(std::move(f));
  if (!status.ok()) fields.emplace_back("error", std::string(status.message()));
  const bool server_fault = status.code() == absl::StatusCode::kInternal ||
                            status.code() == absl::StatusCode::kUnavailable ||
                            status.code() == absl::StatusCode::kDataLoss ||
                            status.code() == absl::StatusCode::kUnknown;
  LogEvent(server_fault ? LogLevel::kWarn : LogLevel::kInfo, "rpc", fields);
  return ToGrpc(status);
}

}  // namespace cops
