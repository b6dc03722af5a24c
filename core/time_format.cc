#include "core/time_format.h"

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace cops {
namespace {

constexpr int64_t kMaxDurationSeconds = int64_t{1000000} * 86400;

int64_t UnitSeconds(char unit) {
  switch (unit) {
    case 's': return 1;
    case 'm': return 60;
    case 'h': return 3600;
    case 'd': return 86400;
    case 'w': return int64_t{7} * 86400;
    default: return 0;
  }
}

absl::Status NotADuration(std::string_view text) {
  return absl::InvalidArgumentError("\"" + std::string(text) +
                                    "\" is not a duration (e.g. 30d, 12h, 1d12h; units s m h "
                                    "d w)");
}

}  // namespace

absl::StatusOr<int64_t> ParseDurationSeconds(std::string_view text) {
  if (text.empty()) return NotADuration(text);
  int64_t total = 0;
  size_t i = 0;
  while (i < text.size()) {
    int64_t n = 0;
    const size_t digits_begin = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      n = n * 10 + (text[i] - '0');
      if (n > kMaxDurationSeconds) return NotADuration(text);
      ++i;
    }
    if (i == digits_begin || i == text.size()) return NotADuration(text);
    const int64_t unit = UnitSeconds(text[i++]);
    if (unit == 0 || n > kMaxDurationSeconds / unit) return NotADuration(text);
    total += n * unit;
    if (total > kMaxDurationSeconds) return NotADuration(text);
  }
  return total;
}

absl::StatusOr<int64_t> ParseTimeMicros(std::string_view text) {
  const std::string s(text);
  absl::Time t;
  std::string error;
  if (absl::ParseTime(absl::RFC3339_full, s, &t, &error) ||
      (s.size() == 10 && absl::ParseTime("%Y-%m-%d", s, absl::UTCTimeZone(), &t, &error))) {
    return absl::ToUnixMicros(t);
  }
  return absl::InvalidArgumentError("\"" + s +
                                    "\" is not an RFC 3339 time (e.g. 2025-06-01T12:00:00Z) "
                                    "or a date (2025-06-01)");
}

absl::StatusOr<int64_t> ParseTimeOrDuration(std::string_view text, int64_t now_micros) {
  if (absl::StatusOr<int64_t> seconds = ParseDurationSeconds(text); seconds.ok()) {
    return now_micros + *seconds * 1000000;
  }
  absl::StatusOr<int64_t> time = ParseTimeMicros(text);
  if (time.ok()) return time;
  return absl::InvalidArgumentError("\"" + std::string(text) +
                                    "\" is neither an RFC 3339 time (2025-06-01T12:00:00Z), a "
                                    "date (2025-06-01) nor a duration (30d, 12h)");
}

std::string FormatTimeMicros(int64_t micros) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", absl::FromUnixMicros(micros),
                          absl::UTCTimeZone());
}

}  // namespace cops
