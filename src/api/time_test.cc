#include "api/time.h"

#include <ctime>
#include <random>
#include <string>

#include "gtest/gtest.h"

namespace muster::api {
namespace {

using std::chrono::system_clock;
using namespace std::chrono_literals;

constexpr int64_t kDec1 = 1796120430;  // 2026-12-01T10:20:30Z

system_clock::time_point At(int64_t unix_seconds) {
  return system_clock::time_point(std::chrono::seconds(unix_seconds));
}

TEST(ParseTimeTest, ReadsKubeTimestamps) {
  EXPECT_EQ(ParseUnixTime("2026-12-01T10:20:30Z"), kDec1);
  EXPECT_EQ(ParseTime("2026-12-01T10:20:30Z"), At(kDec1));
  EXPECT_EQ(ParseUnixTime("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(ParseUnixTime("2024-02-29T12:00:00Z"), 1709208000);
  // RFC 3339 allows the separator and the zone in lower case.
  EXPECT_EQ(ParseUnixTime("2026-12-01t10:20:30z"), kDec1);
}

TEST(ParseTimeTest, KeepsFractionsToTheNanosecond) {
  EXPECT_EQ(ParseTime("2026-12-01T10:20:30.123456Z"), At(kDec1) + 123456us);
  EXPECT_EQ(ParseTime("2026-12-01T10:20:30.5Z"), At(kDec1) + 500ms);
  EXPECT_EQ(ParseTime("2026-12-01T10:20:30.123456789123Z"), At(kDec1) + 123456789ns);
  // Whole seconds drop the fraction: rounding toward the past, before the epoch too.
  EXPECT_EQ(ParseUnixTime("2026-12-01T10:20:30.999999Z"), kDec1);
  EXPECT_EQ(ParseUnixTime("1969-12-31T23:59:59.5Z"), -1);
}

TEST(ParseTimeTest, AppliesNumericOffsets) {
  EXPECT_EQ(ParseUnixTime("2026-12-01T12:20:30+02:00"), kDec1);
  EXPECT_EQ(ParseUnixTime("2026-12-01T09:50:30-00:30"), kDec1);
  EXPECT_EQ(ParseUnixTime("2026-12-01T10:20:30+00:00"), kDec1);
  EXPECT_EQ(ParseTime("2026-12-01T12:20:30.25+02:00"), At(kDec1) + 250ms);
  // Across midnight and a year's end.
  EXPECT_EQ(ParseUnixTime("2027-01-01T01:00:00+02:00"), ParseUnixTime("2026-12-31T23:00:00Z"));
}

TEST(ParseTimeTest, CountsOverflowingDaysAndLeapSecondsOn) {
  EXPECT_EQ(ParseUnixTime("2024-02-30T12:00:00Z"), ParseUnixTime("2024-03-01T12:00:00Z"));
  EXPECT_EQ(ParseUnixTime("2026-12-01T10:20:60Z"), kDec1 + 30);
}

TEST(ParseTimeTest, TimesSystemClockCannotHoldAreNulloptNotWrapped) {
  // Valid RFC 3339 far from now: whole seconds hold them, system_clock's nanoseconds do not.
  EXPECT_EQ(ParseUnixTime("9999-12-31T23:59:59Z"), 253402300799);
  EXPECT_EQ(ParseUnixTime("0001-01-01T00:00:00Z"), -62135596800);
  EXPECT_EQ(ParseTime("9999-12-31T23:59:59Z"), std::nullopt);
  EXPECT_EQ(ParseTime("0001-01-01T00:00:00Z"), std::nullopt);
  EXPECT_EQ(ParseTime("2261-12-31T00:00:00Z"), At(*ParseUnixTime("2261-12-31T00:00:00Z")));
}

TEST(ParseTimeTest, RejectsMalformedText) {
  for (std::string_view bad : {
           "",
           "2026-12-01",
           "2026-12-01T10:20:30",         // no zone
           "2026-12-01 10:20:30Z",        // a space for the T
           "2026-12-01T10:20:30Zjunk",    // trailing text
           "2026-12-01T10:20:30.Z",       // a '.' without digits
           "2026-12-01T10:20:30.5",       // a fraction, no zone
           "2026-12-1T10:20:30Z",         // a short field
           "2026-12-01T10:2:30Z",
           " 2026-12-01T10:20:30Z",       // leading space
           "+2026-12-01T10:20:30Z",       // a sign
           "2026-13-01T10:20:30Z",        // month 13
           "2026-00-01T10:20:30Z",        // month 0
           "2026-12-00T10:20:30Z",        // day 0
           "2026-12-32T10:20:30Z",        // day 32
           "2026-12-01T24:00:00Z",        // hour 24
           "2026-12-01T10:60:30Z",        // minute 60
           "2026-12-01T10:20:61Z",        // second 61
           "2026-12-01T10:20:30+02",      // an offset without minutes
           "2026-12-01T10:20:30+0200",    // or without its colon
           "2026-12-01T10:20:30+02:00Z",  // and a Z
           "2026-12-01T10:20:30 UTC",
       }) {
    EXPECT_EQ(ParseTime(bad), std::nullopt) << bad;
    EXPECT_EQ(ParseUnixTime(bad), std::nullopt) << bad;
  }
}

TEST(FormatTimeTest, WritesUtcWithWholeSeconds) {
  EXPECT_EQ(FormatUnixTime(kDec1), "2026-12-01T10:20:30Z");
  EXPECT_EQ(FormatUnixTime(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatUnixTime(-1), "1969-12-31T23:59:59Z");
  EXPECT_EQ(FormatTime(At(kDec1)), "2026-12-01T10:20:30Z");
  EXPECT_EQ(FormatTime(At(kDec1) + 999ms), "2026-12-01T10:20:30Z");
  EXPECT_EQ(FormatTime(At(0) - 1ms), "1969-12-31T23:59:59Z");
}

TEST(FormatTimeTest, WritesMicroTime) {
  EXPECT_EQ(FormatMicroTime(At(kDec1) + 123456789ns), "2026-12-01T10:20:30.123456Z");
  EXPECT_EQ(FormatMicroTime(At(kDec1)), "2026-12-01T10:20:30.000000Z");
  EXPECT_EQ(FormatMicroTime(At(0) - 1us), "1969-12-31T23:59:59.999999Z");
  EXPECT_EQ(ParseTime(FormatMicroTime(At(kDec1) + 42us)), At(kDec1) + 42us);
}

// The dates agree with the C library's gmtime_r (what the former copies formatted with), and
// every formatted time reads back as itself: 100,000 seeded seconds from 1900 to 2400.
TEST(FormatTimeTest, AgreesWithGmtimeAndRoundTrips) {
  std::mt19937_64 rng(20261201);
  std::uniform_int_distribution<int64_t> seconds(-2208988800, 13569465600);
  for (int i = 0; i < 100000; ++i) {
    const int64_t s = seconds(rng);
    const std::time_t t = static_cast<std::time_t>(s);
    std::tm tm{};
    ASSERT_NE(gmtime_r(&t, &tm), nullptr);
    char want[32];
    std::strftime(want, sizeof(want), "%Y-%m-%dT%H:%M:%SZ", &tm);
    ASSERT_EQ(FormatUnixTime(s), want) << s;
    ASSERT_EQ(ParseUnixTime(want), s) << want;
  }
}

// What Go's time.Parse(time.RFC3339, ...) answers, messages included (kube's sinceTime).
TEST(ParseGoRfc3339Test, ReadsWhatGoReads) {
  EXPECT_EQ(*ParseGoRfc3339("2026-12-01T10:20:30Z"), kDec1);
  EXPECT_EQ(*ParseGoRfc3339("2026-12-01T12:20:30.123456789123+02:00"), kDec1);
  EXPECT_EQ(*ParseGoRfc3339("2026-12-01T9:20:30-01:00"), kDec1);  // a one-digit hour
}

TEST(ParseGoRfc3339Test, RefusesWithGosMessages) {
  const auto message = [](std::string_view text) {
    absl::StatusOr<int64_t> parsed = ParseGoRfc3339(text);
    return parsed.ok() ? std::string("ok") : std::string(parsed.status().message());
  };
  EXPECT_EQ(message("abc"),
            R"(parsing time "abc" as "2006-01-02T15:04:05Z07:00": cannot parse "abc" as "2006")");
  EXPECT_EQ(message("2024-1-01T00:00:00Z"),
            R"(parsing time "2024-1-01T00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot )"
            R"(parse "1-01T00:00:00Z" as "01")");
  EXPECT_EQ(message("2024-01-01 00:00:00Z"),
            R"(parsing time "2024-01-01 00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot )"
            R"(parse " 00:00:00Z" as "T")");
  EXPECT_EQ(message("2024-01-01T00:00:00"),
            R"(parsing time "2024-01-01T00:00:00" as "2006-01-02T15:04:05Z07:00": cannot )"
            R"(parse "" as "Z07:00")");
  EXPECT_EQ(message("2024-13-01T00:00:00Z"),
            R"(parsing time "2024-13-01T00:00:00Z": month out of range)");
  EXPECT_EQ(message("2024-02-30T00:00:00Z"),
            R"(parsing time "2024-02-30T00:00:00Z": day out of range)");
  EXPECT_EQ(message("2024-01-01T24:00:00Z"),
            R"(parsing time "2024-01-01T24:00:00Z": hour out of range)");
  EXPECT_EQ(message("2024-01-01T00:00:00Zx"),
            R"(parsing time "2024-01-01T00:00:00Zx": extra text: "x")");
  EXPECT_EQ(message("2024-01-01t00:00:00Z"),
            R"(parsing time "2024-01-01t00:00:00Z" as "2006-01-02T15:04:05Z07:00": cannot )"
            R"(parse "t00:00:00Z" as "T")");
}

TEST(FormatNanoTimeFixedTest, AlwaysNineDigits) {
  EXPECT_EQ(FormatNanoTimeFixed(kDec1 * 1000000000 + 5), "2026-12-01T10:20:30.000000005Z");
  EXPECT_EQ(FormatNanoTimeFixed(kDec1 * 1000000000), "2026-12-01T10:20:30.000000000Z");
  EXPECT_EQ(FormatNanoTimeFixed(-1), "1969-12-31T23:59:59.999999999Z");
}

}  // namespace
}  // namespace muster::api
