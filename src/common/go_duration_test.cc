#include "common/go_duration.h"

#include <chrono>
#include <climits>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::common {
namespace {

using ::testing::HasSubstr;

struct DurationCase {
  std::string text;
  double seconds;
};

class GoDurationTest : public ::testing::TestWithParam<DurationCase> {};

TEST_P(GoDurationTest, Parses) {
  absl::StatusOr<double> seconds = ParseGoDurationSeconds(GetParam().text);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_DOUBLE_EQ(*seconds, GetParam().seconds);
}

INSTANTIATE_TEST_SUITE_P(
    Valid, GoDurationTest,
    ::testing::Values(DurationCase{"1h30m", 5400}, DurationCase{"90s", 90},
                      DurationCase{"500ms", 0.5}, DurationCase{"1.5h", 5400},
                      DurationCase{"3m", 180}, DurationCase{"0", 0}, DurationCase{"-0", 0},
                      DurationCase{"+2s", 2}, DurationCase{"-1m", -60},
                      DurationCase{"2h45m30.5s", 9930.5}, DurationCase{".5s", 0.5},
                      DurationCase{"1.s", 1}, DurationCase{"100ns", 1e-7},
                      DurationCase{"250us", 2.5e-4}, DurationCase{"250\u00b5s", 2.5e-4},
                      DurationCase{"250\u03bcs", 2.5e-4}, DurationCase{"1m1m", 120},
                      DurationCase{"0s", 0}));

class GoDurationErrorTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GoDurationErrorTest, Rejects) {
  absl::StatusOr<double> seconds = ParseGoDurationSeconds(GetParam());
  ASSERT_FALSE(seconds.ok()) << GetParam() << " parsed as " << *seconds;
  EXPECT_EQ(seconds.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(seconds.status().message()),
              HasSubstr("\"" + GetParam() + "\" is not a duration"));
}

INSTANTIATE_TEST_SUITE_P(Invalid, GoDurationErrorTest,
                         ::testing::Values("", "3", "1.5", "3x", "m", "-", "+", ".s", "1h 30m",
                                           " 3m", "3m ", "3M", "1d", "1..5s", "--1s"));

TEST(GoDurationTest, ErrorSaysWhatIsWrong) {
  EXPECT_EQ(ParseGoDurationSeconds("3x").status().message(),
            "\"3x\" is not a duration (unknown unit \"x\"; units are ns, us, ms, s, m, h); "
            "write it like \"90s\", \"3m\" or \"1h30m\"");
  EXPECT_THAT(std::string(ParseGoDurationSeconds("3").status().message()),
              HasSubstr("without a unit"));
}

// How kube prints a metav1.Duration read from protobuf (apiserver/protobuf/protobuf.cc).
TEST(FormatGoDurationTest, PrintsAsGoDoes) {
  struct Case {
    int64_t nanoseconds;
    std::string_view want;
  };
  // From go/src/time/time_test.go's durationTests.
  const Case cases[] = {
      {0, "0s"},
      {1, "1ns"},
      {1100, "1.1µs"},
      {2200000, "2.2ms"},
      {3300000000, "3.3s"},
      {4 * 60 * 1000000000LL + 5000000000LL, "4m5s"},
      {4 * 60 * 1000000000LL + 5001000000LL, "4m5.001s"},
      {5 * 3600 * 1000000000LL + 6 * 60 * 1000000000LL + 7001000000LL, "5h6m7.001s"},
      {8 * 60 * 1000000000LL + 1, "8m0.000000001s"},
      {INT64_MAX, "2562047h47m16.854775807s"},
      {INT64_MIN, "-2562047h47m16.854775808s"},
      {-1000, "-1µs"},
  };
  for (const Case& c : cases) EXPECT_EQ(FormatGoDuration(c.nanoseconds), c.want) << c.nanoseconds;
}

TEST(FormatGoDurationTest, PrintsAsVolcanoShowsAJobsAge) {
  using namespace std::chrono_literals;
  EXPECT_EQ(FormatGoDuration(std::chrono::nanoseconds(0ns).count()), "0s");
  EXPECT_EQ(FormatGoDuration(std::chrono::nanoseconds(1500ms).count()), "1.5s");
  EXPECT_EQ(FormatGoDuration(std::chrono::nanoseconds(150ms).count()), "150ms");
  EXPECT_EQ(FormatGoDuration(std::chrono::nanoseconds(2min + 3s).count()), "2m3s");
  EXPECT_EQ(FormatGoDuration(std::chrono::nanoseconds(1h + 250ms).count()), "1h0m0.25s");
  EXPECT_EQ(FormatGoDuration(std::chrono::nanoseconds(3min + 46s + 123456789ns).count()),
            "3m46.123456789s");
  EXPECT_EQ(FormatGoDuration(std::chrono::nanoseconds(1500ns).count()), "1.5µs");
  EXPECT_EQ(FormatGoDuration(std::chrono::nanoseconds(-2s).count()), "-2s");
}

}  // namespace
}  // namespace muster::common
