// The store's object text (object_text.h): written member by member it is boost::json::serialize's
// text, byte for byte, with or without field ownership spliced in, and the ownership is found
// again in any valid text, never the same word elsewhere.

#include "store/object_text.h"

#include <optional>
#include <string>
#include <string_view>

#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "gtest/gtest.h"

namespace muster::store {
namespace {

namespace json = boost::json;

std::string_view SpanOf(const std::string& text, TextSpan span) {
  return std::string_view(text).substr(span.offset, span.size);
}

TEST(ObjectTextTest, WrittenAsItIsTheTextIsSerializesAndTheSpanIsTheOwnership) {
  for (std::string_view source : {
           R"({"apiVersion":"v1","metadata":{"name":"p","managedFields":[{"manager":"m"}],)"
           R"("labels":{"a":"b"}},"spec":{"x":[1,2.5,-3e+20,"\u00e9\n\"q\""],"y":null}})",
           R"({"metadata":{"managedFields":[]}})",
           R"({"kind":"K","metadata":{"name":"no ownership"}})",
           R"({"metadata":{},"data":{"managedFields":"not this one"}})",
           R"({"spec":{"ke\"y\\":{"\u0001":true}},"metadata":{"na\nme":"x","managedFields":[1]}})",
           R"({"metadata":"not an object"})",
           R"({})",
       }) {
    const json::value object = json::parse(source);
    TextSpan span;
    const std::string text = WriteObjectText(object.as_object(), std::nullopt, span);
    EXPECT_EQ(text, json::serialize(object)) << source;
    const json::value* meta = object.as_object().if_contains("metadata");
    const json::value* managed = meta != nullptr && meta->is_object()
                                     ? meta->as_object().if_contains("managedFields")
                                     : nullptr;
    EXPECT_EQ(SpanOf(text, span), managed != nullptr ? json::serialize(*managed) : "") << source;
    const TextSpan found = FindManagedFields(text);
    EXPECT_EQ(found.offset, span.offset) << source;
    EXPECT_EQ(found.size, span.size) << source;
  }
}

TEST(ObjectTextTest, OwnershipGivenAsTextIsTheLastMemberOfMetadata) {
  const std::string managed = R"([{"manager":"m","fieldsV1":{"f:data":{}}}])";
  const json::value with_own = json::parse(
      R"({"kind":"K","metadata":{"managedFields":[{"manager":"old"}],"name":"c","uid":"u"},)"
      R"("data":{"a":"1"}})");
  TextSpan span;
  const std::string text = WriteObjectText(with_own.as_object(), managed, span);
  EXPECT_EQ(text,
            R"({"kind":"K","metadata":{"name":"c","uid":"u","managedFields":)" + managed +
                R"(},"data":{"a":"1"}})");
  EXPECT_EQ(SpanOf(text, span), managed);

  // None given: none written, whatever the object holds.
  EXPECT_EQ(WriteObjectText(with_own.as_object(), std::string_view(), span),
            R"({"kind":"K","metadata":{"name":"c","uid":"u"},"data":{"a":"1"}})");
  EXPECT_EQ(span.size, 0u);

  // An object without metadata gets one; an empty metadata holds the ownership alone.
  EXPECT_EQ(WriteObjectText(json::parse(R"({"a":1})").as_object(), managed, span),
            R"({"a":1,"metadata":{"managedFields":)" + managed + "}}");
  EXPECT_EQ(WriteObjectText(json::parse(R"({"metadata":{}})").as_object(), managed, span),
            R"({"metadata":{"managedFields":)" + managed + "}}");
  EXPECT_EQ(SpanOf(R"({"metadata":{"managedFields":)" + managed + "}}", span), managed);
}

TEST(ObjectTextTest, OwnershipIsFoundInAnyValidTextAndNeverElsewhere) {
  auto found = [](const std::string& text) {
    const TextSpan span = FindManagedFields(text);
    return std::string(SpanOf(text, span));
  };
  // Spaces between tokens, escaped keys, the last of repeated members (as a parse keeps it).
  EXPECT_EQ(found(" { \"metadata\" : { \"name\" : \"x\" , \"managedFields\" : [ 1 , {\"a\":2} ] } } "),
            "[ 1 , {\"a\":2} ]");
  EXPECT_EQ(found(R"({"metadata":{"managed\u0046ields":[3]}})"), "[3]");
  EXPECT_EQ(found(R"({"meta\u0064ata":{"managedFields":[4]}})"), "[4]");
  EXPECT_EQ(found(R"({"metadata":{"managedFields":[1],"managedFields":[2]}})"), "[2]");
  EXPECT_EQ(found(R"({"metadata":{"managedFields":[1]},"metadata":{"name":"x"}})"), "");
  // The word elsewhere: in another object, in a string, as a value, as a key's prefix.
  EXPECT_EQ(found(R"({"spec":{"managedFields":[1]},"metadata":{"name":"managedFields"}})"), "");
  EXPECT_EQ(found(R"({"metadata":{"annotations":{"managedFields":"[1]"},"x\"managedFields":1}})"),
            "");
  EXPECT_EQ(found(R"({"metadata":{"managedFieldsX":[1]}})"), "");
  EXPECT_EQ(found(R"({"metadata":"managedFields"})"), "");
  EXPECT_EQ(found(R"([{"metadata":{"managedFields":[1]}}])"), "");
  EXPECT_EQ(found(""), "");
}

}  // namespace
}  // namespace muster::store
