#include "server/request_log.h"

#include <atomic>

#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace cops {
namespace {

std::atomic<bool> json_logs{false};

// Values that would break key=value parsing are quoted.
std::string KeyValueValue(const std::string& v) {
  if (!v.empty() && v.find_first_of(" \t\n\"=") == std::string::npos) return v;
  return nlohmann::json(v).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void SetJsonLogs(bool json) {
  json_logs = json;
  if (json) {
    spdlog::set_pattern(R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l",%v})",
                        spdlog::pattern_time_type::utc);
  } else {
    spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%fZ %l %v", spdlog::pattern_time_type::utc);
  }
}

void LogEvent(LogLevel level, std::string_view event, const std::vector<LogField>& fields) {
  std::string line;
  if (json_logs) {
    nlohmann::json j;
    j["event"] = event;
    for (const auto& [k, v] : fields) j[std::string(k)] = v;
    line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    line = line.substr(1, line.size() - 2);  // the pattern supplies the braces
  } else {
    line = std::string(event);
    for (const auto& [k, v] : fields) {
      line += ' ';
      line += k;
      line += '=';
      line += KeyValueValue(v);
    }
  }
  switch (level) {
    case LogLevel::kDebug:
      spdlog::debug("{}", line);
      break;
    case LogLevel::kInfo:
      spdlog::info("{}", line);
      break;
    case LogLevel::kWarn:
      spdlog::warn("{}", line);
      break;
    case LogLevel::kError:
      spdlog::error("{}", line);
      break;
  }
}

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
