#include "common/quantity.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::common {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
// Base units, expressed in milli units.
constexpr int64_t kUnit = 1000;
constexpr int64_t kKi = int64_t{1} << 10;
constexpr int64_t kMi = int64_t{1} << 20;
constexpr int64_t kGi = int64_t{1} << 30;
constexpr int64_t kTi = int64_t{1} << 40;
constexpr int64_t kPi = int64_t{1} << 50;

struct ParseCase {
  std::string_view text;
  int64_t milli;
};

void ExpectParses(const std::vector<ParseCase>& cases) {
  for (const ParseCase& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<Quantity> q = Quantity::Parse(c.text);
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(q->MilliValue(), c.milli);
  }
}

struct ErrorCase {
  std::string_view text;
  std::string_view problem;  // what the message must say after the quoted input
};

void ExpectRejects(const std::vector<ErrorCase>& cases) {
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<Quantity> q = Quantity::Parse(c.text);
    ASSERT_FALSE(q.ok()) << "parsed as " << q->MilliValue() << "m";
    EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string message(q.status().message());
    EXPECT_THAT(message, StartsWith(fmt::format("quantity \"{}\": ", c.text)));
    EXPECT_THAT(message, HasSubstr(c.problem));
  }
}

TEST(QuantityParseTest, PlainNumbersAndFractions) {
  ExpectParses({
      {"0", 0},
      {"-0", 0},
      {"+0", 0},
      {"0.000", 0},
      {"000", 0},
      {"1", 1 * kUnit},
      {"+1", 1 * kUnit},
      {"-1", -1 * kUnit},
      {"007", 7 * kUnit},
      {"0.5", 500},
      {".5", 500},
      {"-.5", -500},
      {"1.", 1 * kUnit},
      {"0.1", 100},
      {"1.5", 1500},
      {"123.456", 123456},
      {"000000000000000000000000000001", 1 * kUnit},
  });
}

TEST(QuantityParseTest, DecimalSuffixes) {
  ExpectParses({
      {"5000000000n", 5 * kUnit},
      {"2000000u", 2 * kUnit},
      {"500m", 500},
      {"1m", 1},
      {"-500m", -500},
      {"1500m", 1500},
      {"1k", 1'000 * kUnit},
      {"1.5k", 1'500 * kUnit},
      {"2M", 2'000'000 * kUnit},
      {"1G", 1'000'000'000 * kUnit},
      {"1T", 1'000'000'000'000 * kUnit},
      {"1P", 1'000'000'000'000'000 * kUnit},
      {"9.2P", 9'200'000'000'000'000 * kUnit},
      {"0.001E", 1'000'000'000'000'000 * kUnit},
      {"-3G", -3'000'000'000 * kUnit},
  });
}

TEST(QuantityParseTest, BinarySuffixes) {
  ExpectParses({
      {"1Ki", kKi * kUnit},
      {"1Mi", kMi * kUnit},
      {"4Gi", 4 * kGi * kUnit},
      {"1.5Gi", 1'610'612'736'000},
      {"1Ti", kTi * kUnit},
      {"1Pi", kPi * kUnit},
      {"8Pi", 8 * kPi * kUnit},
      {"-2Mi", -2 * kMi * kUnit},
      {"0.5Ki", 512 * kUnit},
      {"0.1Ki", 102'400},
      {"0.0009765625Ki", 1 * kUnit},
      // 2^60 units / 1000 is 2^60 milli units exactly.
      {"0.001Ei", int64_t{1} << 60},
  });
}

TEST(QuantityParseTest, DecimalExponents) {
  ExpectParses({
      {"1e3", 1'000 * kUnit},
      {"1E3", 1'000 * kUnit},
      {"1e+3", 1'000 * kUnit},
      {"1e0", 1 * kUnit},
      {"1E-2", 10},
      {"1e-3", 1},
      {"12e-1", 1'200},
      {"1.5e1", 15 * kUnit},
      {"-2e2", -200 * kUnit},
      {"1e15", 1'000'000'000'000'000 * kUnit},
      {"1000000000000000000000000000000e-30", 1 * kUnit},
      {"0e999999999999999999999999", 0},
  });
}

TEST(QuantityParseTest, FinerThanMilliRoundsUpAwayFromZero) {
  ExpectParses({
      {"1u", 1},
      {"100n", 1},
      {"1n", 1},
      {"1000000n", 1},
      {"1000001n", 2},
      {"1000u", 1},
      {"1001u", 2},
      {"0.5m", 1},
      {"1.0001", 1'001},
      {"0.0001Ki", 103},  // 102.4m
      {"1e-4", 1},
      {"5e-10", 1},
      {"1e-999999999999999999999999", 1},
      {"0.000000000000000000000000000001", 1},
      // 1234567890123.4567890123456789m: the digits past int64 precision still round it up.
      {"123456789012345678901234567890e-20", 1'234'567'890'124},
      // Negative values round away from zero, as resource.Quantity.MilliValue() does.
      {"-1u", -1},
      {"-100n", -1},
      {"-0.5m", -1},
      {"-0.0001Ki", -103},
  });
}

TEST(QuantityParseTest, RangeLimits) {
  ExpectParses({
      {"9223372036854775807m", kMax},
      {"9223372036854775.807", kMax},
      {"-9223372036854775808m", kMin},
      {"-9223372036854775.808", kMin},
      {"9223372036854775806001u", kMax},  // ...806.001m rounds up to the maximum
  });
}

TEST(QuantityParseTest, OverflowIsAnError) {
  ExpectRejects({
      {"100Ei", "out of range"},
      {"1Ei", "out of range"},
      {"9Pi", "out of range"},
      {"1E", "out of range"},
      {"10P", "out of range"},
      {"9.3P", "out of range"},
      {"1e16", "out of range"},
      {"1e999999999999999999999999", "out of range"},
      {"9223372036854775808m", "out of range"},
      {"9223372036854775.8071", "out of range"},  // rounds up past the maximum
      {"-9223372036854775809m", "out of range"},
      {"-9223372036854775.8081", "out of range"},
      {"123456789012345678901234567890n", "out of range"},
      {"99999999999999999999999999999999", "out of range"},
      // 20 integer digits: these would wrap a uint64 accumulator to a small value.
      {"18446744073709551617m", "out of range"},
      {"99999999999999999999m", "out of range"},
  });
}

TEST(QuantityParseTest, MalformedInputIsAnError) {
  constexpr std::string_view kRegex =
      "must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
  ExpectRejects({
      {"", "empty"},
      {"abc", kRegex},
      {"Gi", kRegex},
      {"-", kRegex},
      {"+", kRegex},
      {"--1", kRegex},
      {" 1", kRegex},
      {".", "no digits"},
      {"-.Gi", "no digits"},
      {"1.2.3", "more than one decimal point"},
      {"1..", "more than one decimal point"},
      {"4Gx", "unknown suffix \"Gx\""},
      {"1Zi", "unknown suffix \"Zi\""},
      {"1K", "unknown suffix \"K\""},
      {"1ki", "unknown suffix \"ki\""},
      {"1gi", "unknown suffix \"gi\""},
      {"1e", "unknown suffix \"e\""},
      {"1e+", "unknown suffix \"e+\""},
      {"1E-", "unknown suffix \"E-\""},
      {"1e3.5", "unknown suffix \"e3.5\""},
      {"1e3e3", "unknown suffix \"e3e3\""},
      {"1 ", "unknown suffix \" \""},
      {"1Gi ", "unknown suffix \"Gi \""},
      {"1mi", "unknown suffix \"mi\""},
  });
}

TEST(QuantityParseTest, ErrorMessagesNameTheInput) {
  EXPECT_EQ(Quantity::Parse("4Gx").status(),
            absl::InvalidArgumentError("quantity \"4Gx\": unknown suffix \"Gx\""));
  EXPECT_EQ(Quantity::Parse("").status(), absl::InvalidArgumentError("quantity \"\": empty"));
  EXPECT_EQ(Quantity::Parse("abc").status(),
            absl::InvalidArgumentError("quantity \"abc\": must match the regular expression "
                                       "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"));
  // Unprintable bytes are escaped so the message stays one readable line.
  EXPECT_EQ(Quantity::Parse("1\n").status(),
            absl::InvalidArgumentError("quantity \"1\\n\": unknown suffix \"\\n\""));
}

TEST(QuantityParseTest, SpellingsOfTheSameValueAreEqual) {
  const std::vector<std::vector<std::string_view>> groups = {
      {"1k", "1000", "1e3", "1E3", "1000000m", "1000000000u", "1000000000000n", "0.001M"},
      {"1Ki", "1024", "1024000m", "1.024k"},
      {"1.5Gi", "1536Mi", "1572864Ki"},
      {"0.5", "500m", "5e-1", ".5"},
  };
  for (const auto& group : groups) {
    const absl::StatusOr<Quantity> first = Quantity::Parse(group.front());
    ASSERT_TRUE(first.ok()) << first.status();
    for (std::string_view text : group) {
      SCOPED_TRACE(text);
      absl::StatusOr<Quantity> q = Quantity::Parse(text);
      ASSERT_TRUE(q.ok()) << q.status();
      EXPECT_EQ(*q, *first);
    }
  }
}

TEST(QuantityToStringTest, CanonicalText) {
  struct Case {
    int64_t milli;
    std::string_view text;
  };
  const std::vector<Case> cases = {
      {0, "0"},
      {1, "1m"},
      {500, "500m"},
      {-500, "-500m"},
      {1'500, "1500m"},
      {1 * kUnit, "1"},
      {-1 * kUnit, "-1"},
      {999 * kUnit, "999"},
      {1'000 * kUnit, "1k"},
      {1'024 * kUnit, "1Ki"},
      {1'536 * kUnit, "1536"},
      {2'048 * kUnit, "2Ki"},
      {1'024'000 * kUnit, "1000Ki"},  // 1000Ki beats 1024k
      {2'048'000 * kUnit, "2000Ki"},
      {4 * kGi * kUnit, "4Gi"},
      {-4 * kGi * kUnit, "-4Gi"},
      {1'536 * kMi * kUnit, "1536Mi"},
      {3 * kTi * kUnit, "3Ti"},
      {8 * kPi * kUnit, "8Pi"},
      {2'000'000'000 * kUnit, "2G"},  // a multiple of 1024 too: 1953125Ki
      {1'500'000'000 * kUnit, "1500M"},
      {5'000'000'000'000 * kUnit, "5T"},
      {1'000'000'000'000'000 * kUnit, "1P"},  // a multiple of 1024 too: 976562500000Ki
      {9'000'000'000'000'000 * kUnit, "9P"},
      {kMax, "9223372036854775807m"},
      {kMin, "-9223372036854775808m"},
      {kMin / kUnit * kUnit, "-9223372036854775"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.milli);
    EXPECT_EQ(Quantity::FromMilli(c.milli).ToString(), c.text);
  }
}

TEST(QuantityToStringTest, ParseReadsBackEveryCanonicalText) {
  std::mt19937_64 rng(20240607);
  const std::vector<int64_t> scales = {1,
                                       kUnit,
                                       kKi * kUnit,
                                       kMi * kUnit,
                                       kGi * kUnit,
                                       kTi * kUnit,
                                       1'000'000 * kUnit,
                                       1'000'000'000 * kUnit,
                                       kPi * kUnit,
                                       1'000'000'000'000'000 * kUnit};
  std::vector<int64_t> values = {0, 1, -1, kMax, kMin, kMax - 999, kMin + 999};
  for (int i = 0; i < 2'000; ++i) {
    values.push_back(static_cast<int64_t>(rng()));  // mostly not whole: the "m" form
    const int64_t scale = scales[rng() % scales.size()];
    const int64_t bound = std::min<int64_t>(2'500, kMax / scale);
    const int64_t mantissa =
        static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * bound + 1)) - bound;
    values.push_back(mantissa * scale);
  }
  for (int64_t milli : values) {
    const Quantity q = Quantity::FromMilli(milli);
    const std::string text = q.ToString();
    SCOPED_TRACE(text);
    absl::StatusOr<Quantity> back = Quantity::Parse(text);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->MilliValue(), milli);
  }
}

TEST(QuantityToStringTest, ParsedInputsPrintCanonically) {
  struct Case {
    std::string_view in;
    std::string_view out;
  };
  const std::vector<Case> cases = {
      {"4Gi", "4Gi"},
      {"4096Mi", "4Gi"},
      {"1000", "1k"},
      {"1e3", "1k"},
      {"0.5", "500m"},
      {"1.5", "1500m"},
      {"1024", "1Ki"},
      {"2000000000", "2G"},
      {"100n", "1m"},
      {"-1u", "-1m"},
      {"+007", "7"},
      {"1.5Gi", "1536Mi"},
      {"0.001Ei", "1152921504606846976m"},
      {"-0", "0"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.in);
    absl::StatusOr<Quantity> q = Quantity::Parse(c.in);
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(q->ToString(), c.out);
  }
}

TEST(QuantityTest, ValueRoundsWholeUnitsAwayFromZero) {
  struct Case {
    int64_t milli;
    int64_t units;
  };
  const std::vector<Case> cases = {
      {0, 0},
      {1, 1},
      {999, 1},
      {1'000, 1},
      {1'001, 2},
      {1'500, 2},
      {-1, -1},
      {-1'000, -1},
      {-1'500, -2},
      {-2'000, -2},
      {kMax, 9'223'372'036'854'776},
      {kMin, -9'223'372'036'854'776},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.milli);
    EXPECT_EQ(Quantity::FromMilli(c.milli).Value(), c.units);
  }
}

TEST(QuantityTest, ConstructionAndZero) {
  EXPECT_TRUE(Quantity().IsZero());
  EXPECT_EQ(Quantity().MilliValue(), 0);
  EXPECT_FALSE(Quantity::FromMilli(1).IsZero());
  EXPECT_EQ(Quantity::FromUnits(3).MilliValue(), 3'000);
  EXPECT_EQ(Quantity::FromUnits(-3), Quantity::FromMilli(-3'000));
  static_assert(Quantity::FromUnits(2).Value() == 2, "usable in constant expressions");
}

TEST(QuantityTest, ComparesByValue) {
  const Quantity half = *Quantity::Parse("500m");
  const Quantity one = *Quantity::Parse("1");
  const Quantity kibi = *Quantity::Parse("1Ki");
  const Quantity kilo = *Quantity::Parse("1k");
  EXPECT_LT(half, one);
  EXPECT_GT(kibi, kilo);
  EXPECT_LE(one, one);
  EXPECT_GE(kibi, kilo);
  EXPECT_NE(half, one);
  EXPECT_EQ(*Quantity::Parse("1024"), kibi);
  EXPECT_LT(*Quantity::Parse("-1Gi"), Quantity());
  EXPECT_LT(*Quantity::Parse("100n"), *Quantity::Parse("2m"));
  EXPECT_EQ(*Quantity::Parse("100n"), *Quantity::Parse("1m"));
}

TEST(QuantityTest, Arithmetic) {
  EXPECT_EQ(*Quantity::Parse("1.5") + *Quantity::Parse("500m"), *Quantity::Parse("2"));
  EXPECT_EQ(*Quantity::Parse("4Gi") - *Quantity::Parse("1Gi"), *Quantity::Parse("3Gi"));
  EXPECT_EQ(*Quantity::Parse("1") - *Quantity::Parse("3"), *Quantity::Parse("-2"));
  EXPECT_EQ((*Quantity::Parse("1Gi") - *Quantity::Parse("1Gi")).ToString(), "0");

  Quantity total;
  for (std::string_view text : {"250m", "250m", "1500m", "1Ki"}) total += *Quantity::Parse(text);
  EXPECT_EQ(total.MilliValue(), 1'026'000);
  EXPECT_EQ(total.ToString(), "1026");
  total -= *Quantity::Parse("2");
  EXPECT_EQ(total.ToString(), "1Ki");
}

}  // namespace
}  // namespace muster::common
