// JsonToYaml: what it writes reads back, through the same YAML reader kubectl's rules follow
// (yaml.h), as exactly the JSON it was given.

#include "api/yaml_write.h"

#include <gtest/gtest.h>

#include "api/yaml.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"

namespace muster::api {
namespace {

boost::json::value RoundTrip(const boost::json::value& v) {
  auto docs = ParseYamlDocuments(JsonToYaml(v));
  EXPECT_TRUE(docs.ok()) << docs.status() << "\n" << JsonToYaml(v);
  if (!docs.ok() || docs->size() != 1) return nullptr;
  return (*docs)[0];
}

TEST(JsonToYamlTest, StringsYamlWouldRetypeReadBackAsStrings) {
  boost::json::value v = boost::json::parse(R"({
    "words": ["yes", "No", "on", "OFF", "y", "true", "null", "~", ""],
    "numbers": ["1", "010", "0x1F", "1e3", ".5", "-3", "+4", ".inf", "1_000"],
    "indicators": ["*a", "&b", "!c", "- d", "? e", "# f", "a: b", "a:", "%x", "@x", "`x", "{x}",
                   "[x]", "'x'", "\"x\"", " lead", "trail ", "two\nlines", "tab\there"],
    "plain": ["Tesla-T4", "nvidia.com/gpu", "^(\\+|-)?[0-9]+$", "a b c"]
  })");
  EXPECT_EQ(RoundTrip(v), v);
}

TEST(JsonToYamlTest, KeysNumbersBoolsNullsAndEmptiesKeepTheirTypes) {
  boost::json::value v = boost::json::parse(R"({
    "yes": 1, "1": "one", "": "empty key", "int": -42, "big": 9007199254740993,
    "float": 2.5, "bool": false, "null": null, "emptyObject": {}, "emptyArray": [],
    "nested": {"list": [{"name": "a", "value": [1, 2]}, [3, [4]]]}
  })");
  EXPECT_EQ(RoundTrip(v), v);
}

TEST(JsonToYamlTest, WritesBlockStyleInTheObjectsOrder) {
  boost::json::value v = boost::json::parse(R"({"kind": "Queue", "apiVersion": "v1",
                                               "spec": {"weight": 1}})");
  EXPECT_EQ(JsonToYaml(v), "kind: Queue\napiVersion: v1\nspec:\n  weight: 1\n");
}

}  // namespace
}  // namespace muster::api
