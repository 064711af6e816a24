#include "api/yaml.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "yaml-cpp/yaml.h"

namespace muster::api {
namespace {

template <typename... Parts>
std::string Cat(const Parts&... parts) {
  std::string out;
  ((out += std::string_view(parts)), ...);
  return out;
}

using boost::json::value;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The single document in `text`, converted; fails the test on error.
value One(const std::string& text) {
  absl::StatusOr<std::vector<value>> documents = ParseYamlDocuments(text);
  EXPECT_TRUE(documents.ok()) << documents.status();
  if (!documents.ok() || documents->size() != 1) {
    ADD_FAILURE() << "expected one document in: " << text;
    return value();
  }
  return documents->front();
}

std::string ErrorOf(const std::string& text) {
  absl::StatusOr<std::vector<value>> documents = ParseYamlDocuments(text);
  EXPECT_FALSE(documents.ok()) << "parsed: " << text;
  if (documents.ok()) return "";
  EXPECT_EQ(documents.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(documents.status().message());
}

struct ScalarCase {
  std::string yaml;  // the scalar as written after "v: "
  value want;

  friend std::ostream& operator<<(std::ostream& out, const ScalarCase& c) {
    return out << c.yaml << " -> " << boost::json::serialize(c.want);
  }
};

class ScalarTest : public ::testing::TestWithParam<ScalarCase> {};

TEST_P(ScalarTest, ResolvesLikeSigsK8sYaml) {
  const ScalarCase& c = GetParam();
  const value got = One("v: " + c.yaml + "\n");
  ASSERT_TRUE(got.is_object());
  const value& v = got.as_object().at("v");
  EXPECT_EQ(v.kind(), c.want.kind()) << c.yaml << " gave " << boost::json::serialize(v);
  EXPECT_EQ(v, c.want) << c.yaml << " gave " << boost::json::serialize(v);
}

INSTANTIATE_TEST_SUITE_P(
    Plain, ScalarTest,
    ::testing::Values(
        // YAML 1.1 booleans and nulls.
        ScalarCase{"true", value(true)}, ScalarCase{"False", value(false)},
        ScalarCase{"yes", value(true)}, ScalarCase{"On", value(true)},
        ScalarCase{"n", value(false)}, ScalarCase{"OFF", value(false)},
        ScalarCase{"~", value(nullptr)}, ScalarCase{"null", value(nullptr)},
        ScalarCase{"", value(nullptr)},
        // Integers, Go base-0 syntax.
        ScalarCase{"42", value(int64_t{42})}, ScalarCase{"-7", value(int64_t{-7})},
        ScalarCase{"+5", value(int64_t{5})}, ScalarCase{"0x1F", value(int64_t{31})},
        ScalarCase{"010", value(int64_t{8})}, ScalarCase{"0o17", value(int64_t{15})},
        ScalarCase{"0b101", value(int64_t{5})}, ScalarCase{"-0b11", value(int64_t{-3})},
        ScalarCase{"1_000", value(int64_t{1000})},
        ScalarCase{"-9223372036854775808", value(INT64_MIN)},
        ScalarCase{"18446744073709551615", value(UINT64_MAX)},
        // Floats.
        ScalarCase{"1.5", value(1.5)}, ScalarCase{"1e3", value(1000.0)},
        ScalarCase{".5", value(0.5)}, ScalarCase{"5.", value(5.0)},
        ScalarCase{"08", value(8.0)},  // not octal, so go-yaml's float pattern takes it
        ScalarCase{"99999999999999999999", value(1e20)},
        // Strings: quantities, versions, dates, out-of-range floats, anything else.
        ScalarCase{"4Gi", value("4Gi")}, ScalarCase{"500m", value("500m")},
        ScalarCase{"1.2.3", value("1.2.3")}, ScalarCase{"2024-01-02", value("2024-01-02")},
        ScalarCase{"1e400", value("1e400")}, ScalarCase{"0x", value("0x")},
        ScalarCase{"nvidia.com/gpu", value("nvidia.com/gpu")}, ScalarCase{"<<", value("<<")}));

INSTANTIATE_TEST_SUITE_P(
    QuotedAndTagged, ScalarTest,
    ::testing::Values(ScalarCase{"\"true\"", value("true")}, ScalarCase{"'42'", value("42")},
                      ScalarCase{"\"\"", value("")}, ScalarCase{"'null'", value("null")},
                      ScalarCase{"!!str 42", value("42")}, ScalarCase{"!!str yes", value("yes")},
                      ScalarCase{"!!int \"7\"", value(int64_t{7})},
                      ScalarCase{"!!float 3", value(3.0)}, ScalarCase{"!!bool yes", value(true)},
                      ScalarCase{"!custom 12", value("12")},
                      ScalarCase{"|\n  true", value("true\n")},
                      ScalarCase{">-\n  a\n  b", value("a b")}));

// Found by fuzzing the API server: each of these took the server down or corrupted its store
// from one small request body.
TEST(YamlHostileInputTest, AliasInsideTheCollectionItNamesIsAnError) {
  auto r = ParseYamlDocuments("a: &a [*a]\n");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("an alias refers to a collection"));
}

TEST(YamlHostileInputTest, LoneCommaDoesNotLoopForever) {
  auto r = ParseYamlDocuments(",");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("line 1: malformed YAML"));
}

TEST(YamlHostileInputTest, InvalidUtf8IsRefusedWithItsLine) {
  auto r = ParseYamlDocuments("a: ok\nb: caf\xe9\n");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(std::string(r.status().message()), "line 2: invalid UTF-8");
}

// Forms that only look like UTF-8 (found by handlers_fuzz: an overlong key was stored, and the
// object's JSON no longer parsed). Each must be refused, as Boost.JSON refuses it later.
TEST(YamlHostileInputTest, OverlongSurrogateAndOutOfRangeFormsAreNotUtf8) {
  for (std::string_view bad : {"\xc0\xb5",           // overlong 'u'
                               "\xc1\xbf",           // overlong
                               "\xe0\x80\xaf",       // overlong '/', three bytes
                               "\xed\xa0\x80",       // a surrogate half, U+D800
                               "\xf0\x80\x80\xaf",   // overlong, four bytes
                               "\xf4\x90\x80\x80",   // U+110000
                               "\xf5\x80\x80\x80"}) {  // no such lead byte
    auto as_key = ParseYamlDocuments(Cat("a: ok\nk", bad, ": x\n"));
    ASSERT_FALSE(as_key.ok()) << bad;
    EXPECT_EQ(std::string(as_key.status().message()), "line 2: invalid UTF-8");
    EXPECT_FALSE(ParseYamlDocuments(Cat("a: ok\nk: ", bad, "\n")).ok());
    boost::json::error_code ec;
    (void)boost::json::parse(Cat("\"", bad, "\""), ec);
    EXPECT_TRUE(ec) << "Boost.JSON, which parses the stored objects, refuses it too";
  }
  // The valid edges: U+0080, U+07FF, U+0800, U+D7FF, U+E000, U+10000, U+10FFFF.
  auto ok = ParseYamlDocuments(
      "k: \"\xc2\x80 \xdf\xbf \xe0\xa0\x80 \xed\x9f\xbf \xee\x80\x80 \xf0\x90\x80\x80 "
      "\xf4\x8f\xbf\xbf\"\n");
  EXPECT_TRUE(ok.ok()) << ok.status();
}

// yaml-cpp 0.7 decodes the escapes \N and \_ to the Latin-1 bytes 0x85 and 0xA0, and a NUL
// before N in a plain scalar the same way: valid UTF-8 in, invalid out. Refused, key or value.
TEST(YamlHostileInputTest, ScalarsThatDecodeToInvalidUtf8AreRefused) {
  static constexpr char kNulBeforeN[] = "sched\x1culer\x01\x00Name: volcano\n";
  for (std::string_view text : {std::string_view("k: \"a\\Nb\"\n"), std::string_view("k: \"a\\_b\"\n"),
                                std::string_view("\"a\\Nb\": v\n"),
                                std::string_view(kNulBeforeN, sizeof(kNulBeforeN) - 1)}) {
    auto r = ParseYamlDocuments(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr("not valid UTF-8")) << text;
  }
  // \L and \P decode to proper UTF-8 (U+2028, U+2029) and stay accepted.
  auto ok = ParseYamlDocuments("k: \"a\\Lb\\Pc\"\n");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ((*ok)[0].at("k").as_string(), "a\xe2\x80\xa8" "b\xe2\x80\xa9" "c");
}

TEST(YamlHostileInputTest, DeepNestingIsRefusedNotAStackOverflow) {
  std::string deep(100000, '[');
  auto r = ParseYamlDocuments(deep);
  EXPECT_FALSE(r.ok());
}

TEST(YamlToJsonTest, ConvertsCollectionsAndFlowStyle) {
  const value got =
      One("- {apiVersion: v1, kind: Pod, metadata: {name: p, labels: {app: web}}}\n"
          "- [1, two, 3.5, null]\n"
          "- nested:\n"
          "    list:\n"
          "    - a: 1\n");
  EXPECT_EQ(got, boost::json::parse(R"([
      {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": "web"}}},
      [1, "two", 3.5, null],
      {"nested": {"list": [{"a": 1}]}}])"));
}

TEST(YamlToJsonTest, ConvertsAParsedNode) {
  absl::StatusOr<value> got = YamlToJson(YAML::Load("spec: {minMember: 2, queue: q1}"));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, boost::json::parse(R"({"spec": {"minMember": 2, "queue": "q1"}})"));
}

TEST(YamlToJsonTest, NonStringKeysBecomeTheirText) {
  // As sigs.k8s.io/yaml: integer, float and boolean keys (yes, `y` is a boolean) turn into text.
  EXPECT_EQ(
      One("{1: a, true: b, 1.5: c, 1e7: d, 0.00001: e, y: f}"),
      boost::json::parse(R"({"1": "a", "true": "f", "1.5": "c", "1e+07": "d", "1e-05": "e"})"));
  EXPECT_EQ(One("{'1': a, \"true\": b}"), boost::json::parse(R"({"1": "a", "true": "b"})"));
}

TEST(YamlToJsonTest, RepeatedKeyKeepsTheLastValue) {
  EXPECT_EQ(One("a: 1\na: 2\n"), boost::json::parse(R"({"a": 2})"));
}

TEST(YamlToJsonTest, ExpandsAliasesAndMergeKeys) {
  const value got =
      One("base: &base {cpu: \"1\", memory: 1Gi}\n"
          "extra: &extra {memory: 2Gi, gpu: 1}\n"
          "both: {<<: [*base, *extra], cpu: \"4\"}\n"
          "one:\n"
          "  cpu: \"8\"\n"
          "  <<: *base\n"
          "alias: *extra\n");
  EXPECT_EQ(got.as_object().at("both"),
            boost::json::parse(R"({"cpu": "4", "memory": "1Gi", "gpu": 1})"));
  EXPECT_EQ(got.as_object().at("one"), boost::json::parse(R"({"cpu": "8", "memory": "1Gi"})"));
  EXPECT_EQ(got.as_object().at("alias"), boost::json::parse(R"({"memory": "2Gi", "gpu": 1})"));
}

TEST(ParseYamlDocumentsTest, SplitsDocumentsAndSkipsEmptyOnes) {
  absl::StatusOr<std::vector<value>> documents =
      ParseYamlDocuments("---\na: 1\n---\n---\n# only a comment\n...\n--- null\n---\nb: 2\n");
  ASSERT_TRUE(documents.ok()) << documents.status();
  ASSERT_EQ(documents->size(), 2u);
  EXPECT_EQ((*documents)[0], boost::json::parse(R"({"a": 1})"));
  EXPECT_EQ((*documents)[1], boost::json::parse(R"({"b": 2})"));
}

TEST(ParseYamlDocumentsTest, EmptyStreamHasNoDocuments) {
  for (const char* text : {"", "\n", "# nothing here\n", "---\n"}) {
    absl::StatusOr<std::vector<value>> documents = ParseYamlDocuments(text);
    ASSERT_TRUE(documents.ok()) << documents.status();
    EXPECT_TRUE(documents->empty()) << "for: " << text;
  }
}

TEST(ParseYamlDocumentsTest, JsonIsYaml) {
  EXPECT_EQ(One(R"({"a": [1, 2.5, "x", true, null], "b": {"c": "d"}})"),
            boost::json::parse(R"({"a": [1, 2.5, "x", true, null], "b": {"c": "d"}})"));
}

TEST(ParseYamlDocumentsTest, SyntaxErrorsNameTheLine) {
  EXPECT_THAT(ErrorOf("a: 1\nb: [1, 2\nc: 3\n"), StartsWith("line 3: "));
  EXPECT_THAT(ErrorOf("a: 1\n  b: 2\n"), StartsWith("line 2: "));
  EXPECT_THAT(ErrorOf("kind: Pod\nmetadata:\n  name: p\n- x\n"), StartsWith("line 4: "));
  EXPECT_THAT(ErrorOf("---\na: 1\n---\nb: *missing\n"), StartsWith("line 4: "));
}

TEST(ParseYamlDocumentsTest, ConversionErrorsNameTheLine) {
  EXPECT_EQ(ErrorOf("a: 1\nb: .inf\n"), "line 2: `.inf` is not a number JSON can represent");
  EXPECT_EQ(ErrorOf("a:\n  b: !!int abc\n"), "line 2: cannot decode !!str `abc` as a !!int");
  EXPECT_EQ(ErrorOf("a: 1\n~: 2\n"), "line 2: a map key may not be null");
  EXPECT_THAT(ErrorOf("a: 1\n[x]: 2\n"), StartsWith("line 2: a map key must be a scalar"));
  EXPECT_THAT(ErrorOf("a: &a 1\nb: {<<: *a}\n"), HasSubstr("merge key"));
}

// "Billion laughs": each level repeats the one below nine times, 9^levels values in all.
std::string AliasBomb(int levels) {
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level < levels; ++level) {
    bomb += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int i = 0; i < 9; ++i) bomb += (i ? ", *a" : "*a") + std::to_string(level - 1);
    bomb += "]\n";
  }
  return bomb;
}

TEST(ParseYamlDocumentsTest, BoundsAliasExpansion) {
  const YamlLimits limits{.max_alias_values = 1000};
  // Three levels add 9*10 + 9*(1 + 9*10) = 909 values through aliases: within the limit.
  absl::StatusOr<std::vector<value>> small = ParseYamlDocuments(AliasBomb(3), limits);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->front().at("a2").as_array().size(), 9u);
  // Four levels add 909 + 9*(1 + 9*91) = 8289.
  absl::StatusOr<std::vector<value>> large = ParseYamlDocuments(AliasBomb(4), limits);
  ASSERT_FALSE(large.ok());
  EXPECT_THAT(std::string(large.status().message()),
              testing::AllOf(StartsWith("line "), HasSubstr("by more than 1000 values")));
}

TEST(ParseYamlDocumentsTest, PlainDocumentsHaveNoExpansionLimit) {
  std::string big = "[";
  for (int i = 0; i < 5000; ++i) big += "{a: 1, b: [x, y]},";
  big += "]";
  absl::StatusOr<std::vector<value>> parsed =
      ParseYamlDocuments(big, YamlLimits{.max_alias_values = 10});
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->front().as_array().size(), 5000u);
}

}  // namespace
}  // namespace muster::api
