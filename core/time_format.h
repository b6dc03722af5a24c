#ifndef COPS_CORE_TIME_FORMAT_H_
#define COPS_CORE_TIME_FORMAT_H_

// Times and durations as people write them on command lines and flags: RFC 3339 times
// ("2025-06-01T12:00:00Z"), dates ("2025-06-01") and durations ("30d", "12h", "1d12h").
// Times are microseconds since the Unix epoch, as the protocol carries them.
//
// Thread-safety: pure functions.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace cops {

// A duration of one or more <digits><unit> groups, unit s (seconds), m (minutes), h (hours),
// d (days of 24 hours) or w (weeks), e.g. "30d", "12h", "1d12h", "90s", "0s"; in seconds.
// INVALID_ARGUMENT naming the text for anything else (no sign, no fraction, no unit-less
// number) or a duration beyond 10^6 days.
absl::StatusOr<int64_t> ParseDurationSeconds(std::string_view text);

// An RFC 3339 time ("2025-06-01T12:00:00Z", "2025-06-01T14:00:00+02:00", fractions of a
// second allowed) or a date ("2025-06-01", midnight UTC); microseconds since the epoch.
// INVALID_ARGUMENT naming the text otherwise.
absl::StatusOr<int64_t> ParseTimeMicros(std::string_view text);

// A time as ParseTimeMicros reads it, or a duration (as ParseDurationSeconds) counted from
// `now_micros`. INVALID_ARGUMENT naming the text when it is neither.
absl::StatusOr<int64_t> ParseTimeOrDuration(std::string_view text, int64_t now_micros);

// RFC 3339 in UTC, e.g. "2025-06-01T12:00:00Z" (with a fraction when there is one).
std::string FormatTimeMicros(int64_t micros);

}  // namespace cops

#endif  // COPS_CORE_TIME_FORMAT_H_
