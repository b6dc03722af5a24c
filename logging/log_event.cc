#include "logging/log_event.h"

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

spdlog::level::level_enum SpdlogLevel(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      break;
  }
  return spdlog::level::err;
}

}  // namespace

bool LogEnabled(LogLevel level) { return spdlog::should_log(SpdlogLevel(level)); }

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
  // A line below the level is not rendered (cops-milter logs every message at info).
  if (!LogEnabled(level)) return;
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

}  // namespace cops
