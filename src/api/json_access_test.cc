// Tests for the shared JSON readers (api/json_access.h): what each reads for a missing field, a
// field of another type and a null object, and where the exact and the truncating integer readers
// part ways.

#include "api/json_access.h"

#include <cstdint>
#include <optional>
#include <string_view>

#include "boost/json/parse.hpp"
#include "gtest/gtest.h"

namespace muster::api {
namespace {

namespace json = boost::json;

json::object Parse(std::string_view text) { return json::parse(text).as_object(); }

TEST(JsonAccessTest, ObjectArrayAndStringReadOnlyTheirOwnType) {
  const json::object o = Parse(R"({"m": {"k": "v"}, "a": [1], "s": "text", "n": 3})");
  ASSERT_NE(ObjectAt(o, "m"), nullptr);
  EXPECT_EQ(StringAt(*ObjectAt(o, "m"), "k"), "v");
  EXPECT_EQ(ObjectAt(o, "a"), nullptr);
  EXPECT_EQ(ObjectAt(o, "missing"), nullptr);
  ASSERT_NE(ArrayAt(o, "a"), nullptr);
  EXPECT_EQ(ArrayAt(o, "a")->size(), 1u);
  EXPECT_EQ(ArrayAt(o, "m"), nullptr);
  EXPECT_EQ(StringAt(o, "s"), "text");
  EXPECT_EQ(StringAt(o, "n"), "");
  EXPECT_EQ(StringAt(o, "missing"), "");
}

TEST(JsonAccessTest, NullObjectReadsAsEmpty) {
  const json::object* none = nullptr;
  EXPECT_EQ(ObjectAt(none, "m"), nullptr);
  EXPECT_EQ(StringAt(none, "s"), "");
  const json::object o = Parse(R"({"m": {"k": "v"}})");
  EXPECT_EQ(StringAt(ObjectAt(&o, "m"), "k"), "v");
}

TEST(JsonAccessTest, MetaStringReadsMetadata) {
  EXPECT_EQ(MetaString(Parse(R"({"metadata": {"name": "p"}})"), "name"), "p");
  EXPECT_EQ(MetaString(Parse(R"({"metadata": "p"})"), "name"), "");
  EXPECT_EQ(MetaString(Parse(R"({})"), "name"), "");
}

TEST(JsonAccessTest, IntAtTakesOnlyExactInt64s) {
  const json::object o = Parse(
      R"({"i": -2, "d": 2.0, "frac": 2.5, "big": 18446744073709551615, "huge": 1e300,
          "low": -9223372036854775808.0, "s": "2"})");
  EXPECT_EQ(IntAt(o, "i"), -2);
  EXPECT_EQ(IntAt(o, "d"), 2);
  EXPECT_EQ(IntAt(o, "frac"), std::nullopt);
  EXPECT_EQ(IntAt(o, "big"), std::nullopt);
  EXPECT_EQ(IntAt(o, "huge"), std::nullopt);
  EXPECT_EQ(IntAt(o, "low"), INT64_MIN);
  EXPECT_EQ(IntAt(o, "s"), std::nullopt);
  EXPECT_EQ(IntAt(o, "missing"), std::nullopt);
  EXPECT_EQ(ExactInt64(json::value(uint64_t{INT64_MAX})), INT64_MAX);
}

TEST(JsonAccessTest, TruncatedIntAtTakesAnyNumber) {
  const json::object o = Parse(R"({"i": 7, "frac": 2.9, "neg": -2.9, "u": 18446744073709551615,
                                   "s": "2", "b": true})");
  EXPECT_EQ(TruncatedIntAt(o, "i"), 7);
  EXPECT_EQ(TruncatedIntAt(o, "frac"), 2);
  EXPECT_EQ(TruncatedIntAt(o, "neg"), -2);
  EXPECT_EQ(TruncatedIntAt(o, "u"), -1);  // cast as it is
  EXPECT_EQ(TruncatedIntAt(o, "s"), std::nullopt);
  EXPECT_EQ(TruncatedIntAt(o, "b"), std::nullopt);
  EXPECT_EQ(TruncatedIntAt(o, "missing"), std::nullopt);
}

}  // namespace
}  // namespace muster::api
