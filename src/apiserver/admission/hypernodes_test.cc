#include "apiserver/admission/admission_test_util.h"

// Volcano HyperNode admission (hypernodes.cc): what kubectl apply of a rack or a spine is refused
// for, and that a member matching no node yet is accepted.

#include <optional>
#include <string>

#include "boost/json.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::apiserver::admission_test {
namespace {

using ::testing::HasSubstr;

const ResourceInfo& HyperNodes() { return Res("topology.volcano.sh", "v1alpha1", "hypernodes"); }

json::object HyperNode(const std::string& name, const std::string& spec) {
  return Obj(R"({"apiVersion":"topology.volcano.sh/v1alpha1","kind":"HyperNode",
      "metadata":{"name":")" + name + R"("},"spec":)" + spec + "}");
}

TEST_F(AdmissionTest, HyperNodeAcceptsAMemberMatchingNoNodeYet) {
  json::object rack = Created(HyperNodes(), HyperNode("rack-1", R"({"tier":1,"members":[
      {"type":"Node","selector":{"regexMatch":{"pattern":"^rack-1-"}}},
      {"type":"Node","selector":{"exactMatch":{"name":"not-joined-yet"}}},
      {"type":"Node","selector":{"labelMatch":{"matchLabels":{"rack":"1"}}}}]})"));
  EXPECT_EQ(rack["spec"].at("tier"), 1);
}

TEST_F(AdmissionTest, HyperNodeSchemaRefusalsNameTheField) {
  auto refused = [&](const std::string& spec) {
    json::object hn = HyperNode("hn", spec);
    std::optional<ApiError> err = Create(HyperNodes(), hn);
    EXPECT_TRUE(err.has_value()) << spec;
    if (!err) return std::string();
    EXPECT_EQ(err->code, 422) << err->message;
    return err->message;
  };
  EXPECT_EQ(refused(R"({"members":[{"type":"Node","selector":{"exactMatch":{"name":"n1"}}}]})"),
            "HyperNode.topology.volcano.sh \"hn\" is invalid: spec.tier: Required value");
  EXPECT_THAT(refused(R"({"tier":-1,"members":[{"type":"Node","selector":{"exactMatch":{"name":"n1"}}}]})"),
              HasSubstr("spec.tier: Invalid value: -1: spec.tier in body should be greater than "
                        "or equal to 0"));
  EXPECT_THAT(refused(R"({"tier":1,"members":[]})"),
              HasSubstr("spec.members: Invalid value: 0: spec.members in body should have at "
                        "least 1 items"));
  EXPECT_THAT(refused(R"({"tier":1,"members":[{"type":"Rack","selector":{"exactMatch":{"name":"n1"}}}]})"),
              HasSubstr("spec.members[0].type: Unsupported value: \"Rack\": supported values: "
                        "\"Node\", \"HyperNode\""));
  EXPECT_THAT(refused(R"({"tier":1,"members":[{"type":"Node","selector":{}}]})"),
              HasSubstr("spec.members[0].selector: Invalid value: \"object\": Either ExactMatch "
                        "or RegexMatch or LabelMatch must be specified"));
  EXPECT_THAT(refused(R"({"tier":1,"members":[{"type":"Node","selector":{
      "exactMatch":{"name":"n1"},"regexMatch":{"pattern":"n"}}}]})"),
              HasSubstr("spec.members[0].selector: Invalid value: \"object\": Only one of "
                        "ExactMatch, RegexMatch, or LabelMatch can be specified"));
}

TEST_F(AdmissionTest, HyperNodeBadPatternIsTheWebhooks) {
  json::object hn = HyperNode("hn", R"({"tier":1,"members":[
      {"type":"Node","selector":{"regexMatch":{"pattern":"rack-["}}}]})");
  std::optional<ApiError> err = Create(HyperNodes(), hn);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 400);
  EXPECT_THAT(err->message,
              HasSubstr("admission webhook \"validatehypernode.volcano.sh\" denied the request: "
                        "spec.members.selector.regexMatch.pattern: Invalid value: \"rack-[\": "
                        "member regexMatch pattern is invalid: "));
}

TEST_F(AdmissionTest, HyperNodeCycleIsRefused) {
  store_.Put(HyperNodes(), HyperNode("spine", R"({"tier":2,"members":[
      {"type":"HyperNode","selector":{"exactMatch":{"name":"rack-1"}}}]})"));
  store_.Put(HyperNodes(), HyperNode("rack-1", R"({"tier":1,"members":[
      {"type":"HyperNode","selector":{"exactMatch":{"name":"pod-1"}}}]})"));
  json::object pod = HyperNode("pod-1", R"({"tier":0,"members":[
      {"type":"Node","selector":{"exactMatch":{"name":"n1"}}},
      {"type":"HyperNode","selector":{"exactMatch":{"name":"spine"}}}]})");
  std::optional<ApiError> err = Create(HyperNodes(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 422);
  EXPECT_EQ(err->message,
            "HyperNode.topology.volcano.sh \"pod-1\" is invalid: "
            "spec.members[1].selector.exactMatch.name: Invalid value: \"spine\": HyperNode "
            "members must not form a cycle: pod-1 -> spine -> rack-1 -> pod-1");
  // Its own member.
  json::object self = HyperNode("self", R"({"tier":1,"members":[
      {"type":"HyperNode","selector":{"exactMatch":{"name":"self"}}}]})");
  err = Create(HyperNodes(), self);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message, HasSubstr("cycle: self -> self"));
}

}  // namespace
}  // namespace muster::apiserver::admission_test
