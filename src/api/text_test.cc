#include "api/text.h"

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace muster::api {
namespace {

TEST(Utf8Test, SequenceLengthFollowsRfc3629) {
  EXPECT_EQ(Utf8SequenceLength("a", 0), 1u);
  EXPECT_EQ(Utf8SequenceLength("\xC3\xA9", 0), 2u);          // é
  EXPECT_EQ(Utf8SequenceLength("\xE2\x82\xAC", 0), 3u);      // €
  EXPECT_EQ(Utf8SequenceLength("\xF0\x9F\x98\x80", 0), 4u);  // U+1F600
  EXPECT_EQ(Utf8SequenceLength("\xC0\xB5", 0), 0u);          // overlong
  EXPECT_EQ(Utf8SequenceLength("\xED\xA0\x80", 0), 0u);      // surrogate
  EXPECT_EQ(Utf8SequenceLength("\xF4\x90\x80\x80", 0), 0u);  // past U+10FFFF
  EXPECT_EQ(Utf8SequenceLength("\xC3", 0), 0u);              // truncated
  EXPECT_EQ(Utf8SequenceLength("\xFF", 0), 0u);
}

TEST(Utf8Test, ToValidUtf8ReplacesEachBadByteAsEncodingJsonDoes) {
  EXPECT_EQ(ToValidUtf8("plain"), "plain");
  EXPECT_EQ(ToValidUtf8("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(ToValidUtf8(std::string("a\xFF\xFE") + "b"), "a\uFFFD\uFFFDb");
  EXPECT_EQ(ToValidUtf8("\xC0\xB5"), "\uFFFD\uFFFD");
  EXPECT_EQ(ToValidUtf8("x\xE2\x82"), "x\uFFFD\uFFFD");
}

TEST(GoQuoteTest, QuotesAsStrconvQuote) {
  EXPECT_EQ(GoQuote("abc"), "\"abc\"");
  EXPECT_EQ(GoQuote(""), "\"\"");
  EXPECT_EQ(GoQuote("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(GoQuote("a\nb\tc\x01\x7F"), R"("a\nb\tc\x01\x7f")");
  EXPECT_EQ(GoQuote(std::string("\xFF") + "a"), R"("\xffa")");
  EXPECT_EQ(GoQuote("caf\xC3\xA9"), "\"caf\xC3\xA9\"");
  EXPECT_EQ(GoQuote("\xC2\x85"), R"("\u0085")");
}

TEST(ParseGoInt64Test, ReadsWhatStrconvReadsAndSaysWhatItSays) {
  EXPECT_EQ(*ParseGoInt64("42"), 42);
  EXPECT_EQ(*ParseGoInt64("+7"), 7);
  EXPECT_EQ(*ParseGoInt64("-9223372036854775808"), INT64_MIN);
  EXPECT_EQ(*ParseGoInt64("9223372036854775807"), INT64_MAX);
  const auto message = [](std::string_view text) {
    auto parsed = ParseGoInt64(text);
    return parsed.ok() ? std::string("ok") : std::string(parsed.status().message());
  };
  EXPECT_EQ(message("abc"), R"(strconv.ParseInt: parsing "abc": invalid syntax)");
  EXPECT_EQ(message(""), R"(strconv.ParseInt: parsing "": invalid syntax)");
  EXPECT_EQ(message(" 1"), R"(strconv.ParseInt: parsing " 1": invalid syntax)");
  EXPECT_EQ(message("1_000"), R"(strconv.ParseInt: parsing "1_000": invalid syntax)");
  EXPECT_EQ(message("9223372036854775808"),
            R"(strconv.ParseInt: parsing "9223372036854775808": value out of range)");
  EXPECT_EQ(message("99999999999999999999x"),
            R"(strconv.ParseInt: parsing "99999999999999999999x": value out of range)");
}

}  // namespace
}  // namespace muster::api
