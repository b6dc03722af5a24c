#ifndef COPS_LOGGING_LOG_EVENT_H_
#define COPS_LOGGING_LOG_EVENT_H_

// Structured log lines (spdlog): one event name plus key/value fields, rendered as
// `event key=value ...` or, after SetJsonLogs(true), as one JSON object per line
// ({"ts":..,"level":..,"event":..,<fields>}). Shared by copsd (its RPC log,
// server/request_log.h, and the engine's background work) and cops-milter, which links this
// library alone rather than the server.
//
// Thread-safety: LogEvent may be used from any thread; SetJsonLogs is called once at
// start-up before any logging.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cops {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

using LogField = std::pair<std::string_view, std::string>;

// Switches the default spdlog logger's pattern and the field rendering to JSON lines.
void SetJsonLogs(bool json);
// Renders and logs the line when `level` is enabled (LogEnabled); otherwise does nothing.
void LogEvent(LogLevel level, std::string_view event, const std::vector<LogField>& fields);
// Whether a line at `level` would be logged: callers skip building costly fields when not.
bool LogEnabled(LogLevel level);

}  // namespace cops

#endif  // COPS_LOGGING_LOG_EVENT_H_
