#include "api/text.h"

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

}  // namespace
}  // namespace muster::api
