#include "core/time_format.h"

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace cops {
namespace {

constexpr int64_t kSecond = 1000000;
// 2025-06-01T00:00:00Z
constexpr int64_t kJune1st = int64_t{1748736000} * kSecond;

TEST(TimeFormatTest, DurationsInEveryUnitAndCombined) {
  EXPECT_EQ(*ParseDurationSeconds("90s"), 90);
  EXPECT_EQ(*ParseDurationSeconds("5m"), 300);
  EXPECT_EQ(*ParseDurationSeconds("12h"), 12 * 3600);
  EXPECT_EQ(*ParseDurationSeconds("30d"), 30 * 86400);
  EXPECT_EQ(*ParseDurationSeconds("2w"), 14 * 86400);
  EXPECT_EQ(*ParseDurationSeconds("1d12h"), 36 * 3600);
  EXPECT_EQ(*ParseDurationSeconds("0s"), 0);
}

TEST(TimeFormatTest, MalformedDurationsAreRefusedNamingTheText) {
  for (const char* bad : {"", "30", "d", "-1d", "1.5h", "3y", "1d 2h", "99999999999999999999d"}) {
    absl::StatusOr<int64_t> d = ParseDurationSeconds(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(d.status())) << bad;
    EXPECT_NE(d.status().message().find(std::string("\"") + bad + "\""), std::string::npos)
        << d.status();
  }
}

TEST(TimeFormatTest, Rfc3339TimesWithOffsetsAndDates) {
  EXPECT_EQ(*ParseTimeMicros("2025-06-01T00:00:00Z"), kJune1st);
  EXPECT_EQ(*ParseTimeMicros("2025-06-01T02:00:00+02:00"), kJune1st);
  EXPECT_EQ(*ParseTimeMicros("2025-06-01T00:00:00.25Z"), kJune1st + kSecond / 4);
  EXPECT_EQ(*ParseTimeMicros("2025-06-01"), kJune1st);
  EXPECT_TRUE(absl::IsInvalidArgument(ParseTimeMicros("June 1st").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ParseTimeMicros("2025-13-01").status()));
}

TEST(TimeFormatTest, TimeOrDurationCountsDurationsFromNow) {
  EXPECT_EQ(*ParseTimeOrDuration("30d", kJune1st), kJune1st + 30 * 86400 * kSecond);
  EXPECT_EQ(*ParseTimeOrDuration("2025-06-01", 0), kJune1st);
  absl::StatusOr<int64_t> bad = ParseTimeOrDuration("tomorrow", kJune1st);
  EXPECT_TRUE(absl::IsInvalidArgument(bad.status()));
  EXPECT_NE(bad.status().message().find("tomorrow"), std::string::npos);
}

TEST(TimeFormatTest, FormatsUtcAndRoundTrips) {
  EXPECT_EQ(FormatTimeMicros(kJune1st), "2025-06-01T00:00:00Z");
  EXPECT_EQ(FormatTimeMicros(kJune1st + kSecond / 2), "2025-06-01T00:00:00.5Z");
  EXPECT_EQ(*ParseTimeMicros(FormatTimeMicros(kJune1st + 1234567)), kJune1st + 1234567);
}

}  // namespace
}  // namespace cops
