#include "api/cron_schedule.h"

#include <string>

#include "absl/time/civil_time.h"
#include "gtest/gtest.h"

namespace muster::api {
namespace {

absl::Time Utc(int y, int mo, int d, int h, int mi, int s = 0) {
  return absl::FromCivil(absl::CivilSecond(y, mo, d, h, mi, s), absl::UTCTimeZone());
}

std::string Error(std::string_view spec) {
  absl::StatusOr<CronSchedule> s = CronSchedule::Parse(spec);
  return s.ok() ? "ok" : std::string(s.status().message());
}

absl::Time NextOf(std::string_view spec, absl::Time after,
                  const absl::TimeZone& zone = absl::UTCTimeZone()) {
  absl::StatusOr<CronSchedule> s = CronSchedule::Parse(spec);
  EXPECT_TRUE(s.ok()) << spec << ": " << s.status();
  std::optional<absl::Time> next = s->Next(after, zone);
  EXPECT_TRUE(next.has_value()) << spec;
  return next.value_or(absl::InfinitePast());
}

TEST(CronScheduleTest, RefusesWhatRobfigRefusesWithItsMessages) {
  EXPECT_EQ(Error(""), "empty spec string");
  EXPECT_EQ(Error("* * * *"), "expected exactly 5 fields, found 4: [* * * *]");
  EXPECT_EQ(Error("60 * * * *"), "end of range (60) above maximum (59): 60");
  EXPECT_EQ(Error("* * 0 * *"), "beginning of range (0) below minimum (1): 0");
  EXPECT_EQ(Error("5-1 * * * *"), "beginning of range (5) beyond end of range (1): 5-1");
  EXPECT_EQ(Error("*/0 * * * *"), "step of range should be a positive number: */0");
  EXPECT_EQ(Error("x * * * *"),
            "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax");
  EXPECT_EQ(Error("* * * * 7"), "end of range (7) above maximum (6): 7");
  EXPECT_EQ(Error("@fortnightly"), "unrecognized descriptor: @fortnightly");
  EXPECT_EQ(Error("1-2-3 * * * *"), "too many hyphens: 1-2-3");
  EXPECT_EQ(Error("*/1 * * * *"), "ok");
  EXPECT_EQ(Error("0 9 * jan-mar MON-FRI"), "ok");
  EXPECT_EQ(Error("@hourly"), "ok");
}

TEST(CronScheduleTest, NextIsStrictlyLaterAndWholeMinutes) {
  EXPECT_EQ(NextOf("*/1 * * * *", Utc(2024, 5, 1, 10, 0, 0)), Utc(2024, 5, 1, 10, 1));
  EXPECT_EQ(NextOf("*/1 * * * *", Utc(2024, 5, 1, 10, 0, 30)), Utc(2024, 5, 1, 10, 1));
  EXPECT_EQ(NextOf("*/15 * * * *", Utc(2024, 5, 1, 10, 16)), Utc(2024, 5, 1, 10, 30));
  EXPECT_EQ(NextOf("@hourly", Utc(2024, 5, 1, 10, 16)), Utc(2024, 5, 1, 11, 0));
  EXPECT_EQ(NextOf("@daily", Utc(2024, 12, 31, 23, 59)), Utc(2025, 1, 1, 0, 0));
  EXPECT_EQ(NextOf("@yearly", Utc(2024, 1, 1, 0, 0)), Utc(2025, 1, 1, 0, 0));
  EXPECT_EQ(NextOf("@every 90s", Utc(2024, 5, 1, 10, 0)), Utc(2024, 5, 1, 10, 1, 30));
}

TEST(CronScheduleTest, DayOfMonthAndWeekdayCombineAsCronDoes) {
  // Both restricted: either matches. 2024-05-01 is a Wednesday.
  EXPECT_EQ(NextOf("0 0 15 * fri", Utc(2024, 5, 1, 0, 0)), Utc(2024, 5, 3, 0, 0));
  // One of them "*": both must match.
  EXPECT_EQ(NextOf("0 0 * * fri", Utc(2024, 5, 1, 0, 0)), Utc(2024, 5, 3, 0, 0));
  EXPECT_EQ(NextOf("0 0 15 * *", Utc(2024, 5, 1, 0, 0)), Utc(2024, 5, 15, 0, 0));
  absl::StatusOr<CronSchedule> never = CronSchedule::Parse("0 0 30 2 *");
  ASSERT_TRUE(never.ok());
  EXPECT_FALSE(never->Next(Utc(2024, 1, 1, 0, 0), absl::UTCTimeZone()).has_value());
}

TEST(CronScheduleTest, ReadsTheScheduleInItsTimeZone) {
  absl::StatusOr<absl::TimeZone> tokyo = LoadCronTimeZone("Asia/Tokyo");
  ASSERT_TRUE(tokyo.ok()) << tokyo.status();
  // 09:00 in Tokyo is 00:00 UTC.
  EXPECT_EQ(NextOf("0 9 * * *", Utc(2024, 5, 1, 1, 0), *tokyo), Utc(2024, 5, 2, 0, 0));
  absl::StatusOr<absl::TimeZone> ny = LoadCronTimeZone("America/New_York");
  ASSERT_TRUE(ny.ok());
  // 02:30 does not exist on 2024-03-10 in New York: the run comes right after the change.
  EXPECT_EQ(NextOf("30 2 * * *", Utc(2024, 3, 10, 5, 0), *ny), Utc(2024, 3, 10, 7, 30));
  EXPECT_EQ(LoadCronTimeZone("Mars/Base").status().message(), "unknown time zone Mars/Base");
  EXPECT_FALSE(LoadCronTimeZone("localtime").ok());
  EXPECT_TRUE(LoadCronTimeZone("UTC").ok());
}

}  // namespace
}  // namespace muster::api
