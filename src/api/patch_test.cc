#include "api/patch.h"

#include <array>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "api/testing/json.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::api {
namespace {

using boost::json::value;
using ::testing::HasSubstr;

using test::Json;

// Compares JSON values; objects compare without regard to member order, arrays in order.
void ExpectJson(const absl::StatusOr<value>& actual, std::string_view expected) {
  ASSERT_TRUE(actual.ok()) << actual.status();
  EXPECT_EQ(*actual, Json(expected))
      << "got      " << boost::json::serialize(*actual) << "\nexpected " << expected;
}

void ExpectError(const absl::StatusOr<value>& actual, std::string_view message_part) {
  ASSERT_FALSE(actual.ok()) << "unexpected success: " << boost::json::serialize(*actual);
  EXPECT_EQ(actual.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(actual.status().message()), HasSubstr(std::string(message_part)));
}

struct PatchCase {
  std::string name;
  std::string target;
  std::string patch;
  std::string expected;  // empty: the patch must fail
  std::string error = "";
};

void PrintTo(const PatchCase& c, std::ostream* os) { *os << c.name; }

std::string CaseName(const ::testing::TestParamInfo<PatchCase>& info) { return info.param.name; }

// --- RFC 7386 merge patch: the appendix A table
// ----------------------------------------------------

class MergePatchRfcTest : public ::testing::TestWithParam<PatchCase> {};

TEST_P(MergePatchRfcTest, MatchesRfcAppendix) {
  const PatchCase& c = GetParam();
  ExpectJson(ApplyMergePatch(Json(c.target), Json(c.patch)), c.expected);
}

INSTANTIATE_TEST_SUITE_P(
    Rfc7386, MergePatchRfcTest,
    ::testing::Values(
        PatchCase{"ReplaceMember", R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
        PatchCase{"AddMember", R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})"},
        PatchCase{"RemoveOnlyMember", R"({"a":"b"})", R"({"a":null})", R"({})"},
        PatchCase{"RemoveOneMember", R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})"},
        PatchCase{"ArrayToString", R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})"},
        PatchCase{"StringToArray", R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})"},
        PatchCase{"NestedMergeAndDelete", R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})",
                  R"({"a":{"b":"d"}})"},
        PatchCase{"ArrayReplacedWhole", R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})"},
        PatchCase{"ArrayTargetArrayPatch", R"(["a","b"])", R"(["c","d"])", R"(["c","d"])"},
        PatchCase{"ObjectTargetArrayPatch", R"({"a":"b"})", R"(["c"])", R"(["c"])"},
        PatchCase{"NullPatch", R"({"a":"foo"})", "null", "null"},
        PatchCase{"StringPatch", R"({"a":"foo"})", R"("bar")", R"("bar")"},
        PatchCase{"NullInTargetKept", R"({"e":null})", R"({"a":1})", R"({"e":null,"a":1})"},
        PatchCase{"ArrayTargetObjectPatch", R"([1,2])", R"({"a":"b","c":null})", R"({"a":"b"})"},
        PatchCase{"NullsDroppedFromNewObjects", R"({})", R"({"a":{"bb":{"ccc":null}}})",
                  R"({"a":{"bb":{}}})"}),
    CaseName);

TEST(MergePatchTest, KubectlLabelAndAnnotate) {
  const value pod = Json(R"({"metadata":{"name":"p","labels":{"app":"web","tier":"fe"},
                                         "annotations":{"a":"1"}}})");
  ExpectJson(ApplyMergePatch(pod, Json(R"({"metadata":{"labels":{"tier":null,"env":"prod"}}})")),
             R"({"metadata":{"name":"p","labels":{"app":"web","env":"prod"},
                             "annotations":{"a":"1"}}})");
}

// --- RFC 6902 JSON patch: appendix A
// ---------------------------------------------------------------

class JsonPatchRfcTest : public ::testing::TestWithParam<PatchCase> {};

TEST_P(JsonPatchRfcTest, MatchesRfcAppendix) {
  const PatchCase& c = GetParam();
  absl::StatusOr<value> result = ApplyJsonPatch(Json(c.target), Json(c.patch));
  if (c.expected.empty()) {
    ExpectError(result, c.error);
  } else {
    ExpectJson(result, c.expected);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Rfc6902, JsonPatchRfcTest,
    ::testing::Values(PatchCase{"A1_AddObjectMember", R"({"foo":"bar"})",
                                R"([{"op":"add","path":"/baz","value":"qux"}])",
                                R"({"baz":"qux","foo":"bar"})"},
                      PatchCase{"A2_AddArrayElement", R"({"foo":["bar","baz"]})",
                                R"([{"op":"add","path":"/foo/1","value":"qux"}])",
                                R"({"foo":["bar","qux","baz"]})"},
                      PatchCase{"A3_RemoveObjectMember", R"({"baz":"qux","foo":"bar"})",
                                R"([{"op":"remove","path":"/baz"}])", R"({"foo":"bar"})"},
                      PatchCase{"A4_RemoveArrayElement", R"({"foo":["bar","qux","baz"]})",
                                R"([{"op":"remove","path":"/foo/1"}])", R"({"foo":["bar","baz"]})"},
                      PatchCase{"A5_ReplaceValue", R"({"baz":"qux","foo":"bar"})",
                                R"([{"op":"replace","path":"/baz","value":"boo"}])",
                                R"({"baz":"boo","foo":"bar"})"},
                      PatchCase{"A6_MoveValue",
                                R"({"foo":{"bar":"baz","waldo":"fred"},"qux":{"corge":"grault"}})",
                                R"([{"op":"move","from":"/foo/waldo","path":"/qux/thud"}])",
                                R"({"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}})"},
                      PatchCase{"A7_MoveArrayElement", R"({"foo":["all","grass","cows","eat"]})",
                                R"([{"op":"move","from":"/foo/1","path":"/foo/3"}])",
                                R"({"foo":["all","cows","eat","grass"]})"},
                      PatchCase{"A8_TestSuccess", R"({"baz":"qux","foo":["a",2,"c"]})",
                                R"([{"op":"test","path":"/baz","value":"qux"},
                      {"op":"test","path":"/foo/1","value":2}])",
                                R"({"baz":"qux","foo":["a",2,"c"]})"},
                      PatchCase{"A9_TestError", R"({"baz":"qux"})",
                                R"([{"op":"test","path":"/baz","value":"bar"}])", "",
                                "op 0 (test /baz): test failed"},
                      PatchCase{"A10_AddNestedMemberObject", R"({"foo":"bar"})",
                                R"([{"op":"add","path":"/child","value":{"grandchild":{}}}])",
                                R"({"foo":"bar","child":{"grandchild":{}}})"},
                      PatchCase{"A11_IgnoreUnrecognizedElements", R"({"foo":"bar"})",
                                R"([{"op":"add","path":"/baz","value":"qux","xyz":123}])",
                                R"({"foo":"bar","baz":"qux"})"},
                      PatchCase{"A12_AddToNonexistentTarget", R"({"foo":"bar"})",
                                R"([{"op":"add","path":"/baz/bat","value":"qux"}])", "",
                                "op 0 (add /baz/bat): path not found"},
                      // The parser keeps the last of the duplicate "op" members, so this is a
                      // remove of a missing member; either reading makes the document fail.
                      PatchCase{"A13_InvalidPatchDocument", R"({"foo":"bar"})",
                                R"([{"op":"add","path":"/baz","value":"qux","op":"remove"}])", "",
                                "op 0 (remove /baz): path not found"},
                      PatchCase{"A14_EscapeOrdering", R"({"/":9,"~1":10})",
                                R"([{"op":"test","path":"/~01","value":10}])",
                                R"({"/":9,"~1":10})"},
                      PatchCase{"A15_StringsAndNumbersDiffer", R"({"/":9,"~1":10})",
                                R"([{"op":"test","path":"/~01","value":"10"}])", "",
                                "op 0 (test /~01): test failed"},
                      PatchCase{"A16_AddArrayValue", R"({"foo":["bar"]})",
                                R"([{"op":"add","path":"/foo/-","value":["abc","def"]}])",
                                R"({"foo":["bar",["abc","def"]]})"}),
    CaseName);

class JsonPatchEdgeTest : public ::testing::TestWithParam<PatchCase> {};

TEST_P(JsonPatchEdgeTest, Applies) {
  const PatchCase& c = GetParam();
  absl::StatusOr<value> result = ApplyJsonPatch(Json(c.target), Json(c.patch));
  if (c.expected.empty()) {
    ExpectError(result, c.error);
  } else {
    ExpectJson(result, c.expected);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Edges, JsonPatchEdgeTest,
    ::testing::Values(
        PatchCase{"ErrorNamesOpIndexAndPath", R"({"spec":{"bar":1}})",
                  R"([{"op":"test","path":"/spec/bar","value":1},
                      {"op":"replace","path":"/spec/foo","value":2}])",
                  "", "op 1 (replace /spec/foo): path not found"},
        PatchCase{"ReplaceRoot", R"({"a":1})", R"([{"op":"replace","path":"","value":[1]}])",
                  "[1]"},
        PatchCase{"AddRoot", R"({"a":1})", R"([{"op":"add","path":"","value":{"b":2}}])",
                  R"({"b":2})"},
        PatchCase{"RemoveRootFails", R"({"a":1})", R"([{"op":"remove","path":""}])", "",
                  "op 0 (remove ): cannot remove the whole document"},
        PatchCase{"AddReplacesExistingMember", R"({"a":1})",
                  R"([{"op":"add","path":"/a","value":2}])", R"({"a":2})"},
        PatchCase{"AddAtArrayEnd", R"([1,2])", R"([{"op":"add","path":"/2","value":3}])",
                  "[1,2,3]"},
        PatchCase{"AddPastArrayEndFails", R"([1,2])", R"([{"op":"add","path":"/3","value":3}])", "",
                  "array index 3 out of range (array size 2)"},
        PatchCase{"LeadingZeroIndexFails", R"([1,2])", R"([{"op":"remove","path":"/01"}])", "",
                  "invalid array index \"01\""},
        PatchCase{"DashOnlyForAdd", R"([1,2])", R"([{"op":"remove","path":"/-"}])", "",
                  "op 0 (remove /-): path not found"},
        PatchCase{"HugeIndexFails", R"([1])",
                  R"([{"op":"remove","path":"/99999999999999999999999"}])", "", "out of range"},
        PatchCase{"BadEscapeFails", R"({"a":1})", R"([{"op":"remove","path":"/a~2"}])", "",
                  "'~' must be followed by '0' or '1'"},
        PatchCase{"PointerWithoutSlashFails", R"({"a":1})", R"([{"op":"remove","path":"a"}])", "",
                  "must be empty or start with '/'"},
        PatchCase{"SlashEscapeInKey", R"({"a/b":1})", R"([{"op":"remove","path":"/a~1b"}])", "{}"},
        PatchCase{"EmptyKey", R"({"":1})", R"([{"op":"replace","path":"/","value":2}])",
                  R"({"":2})"},
        PatchCase{"CopyValue", R"({"a":{"x":[1]}})",
                  R"([{"op":"copy","from":"/a","path":"/b"},
                      {"op":"add","path":"/b/x/-","value":2}])",
                  R"({"a":{"x":[1]},"b":{"x":[1,2]}})"},
        PatchCase{"CopyMissingFromFails", R"({})", R"([{"op":"copy","from":"/nope","path":"/b"}])",
                  "", "op 0 (copy /b from /nope): from: path not found"},
        PatchCase{"MoveIntoOwnChildFails", R"({"a":{"b":{}}})",
                  R"([{"op":"move","from":"/a","path":"/a/b/c"}])", "",
                  "cannot move a value into one of its own children"},
        PatchCase{"MoveToItselfIsNoOp", R"({"a":1})", R"([{"op":"move","from":"/a","path":"/a"}])",
                  R"({"a":1})"},
        PatchCase{"TestComparesNumbersByValue", R"({"a":1,"b":[{"c":2.0}]})",
                  R"([{"op":"test","path":"/a","value":1.0},
                      {"op":"test","path":"/b","value":[{"c":2}]}])",
                  R"({"a":1,"b":[{"c":2.0}]})"},
        PatchCase{"TestObjectsIgnoreMemberOrder", R"({"a":{"x":1,"y":2}})",
                  R"([{"op":"test","path":"/a","value":{"y":2,"x":1}}])", R"({"a":{"x":1,"y":2}})"},
        PatchCase{"TestNullValue", R"({"a":null})", R"([{"op":"test","path":"/a","value":null}])",
                  R"({"a":null})"},
        PatchCase{"UnknownOpFails", R"({})", R"([{"op":"frobnicate","path":"/a"}])", "",
                  "op 0 (frobnicate /a): unknown op"},
        PatchCase{"MissingValueFails", R"({})", R"([{"op":"add","path":"/a"}])", "",
                  "op 0 (add /a): missing \"value\""},
        PatchCase{"MissingOpFails", R"({})", R"([{"path":"/a"}])", "", "op 0: missing \"op\""},
        PatchCase{"MissingFromFails", R"({})", R"([{"op":"move","path":"/a"}])", "",
                  "op 0 (move /a): missing \"from\""},
        PatchCase{"OperationNotObjectFails", R"({})", R"([1])", "", "op 0: not a JSON object"},
        PatchCase{"PatchNotArrayFails", R"({})", R"({"op":"add"})", "", "must be a JSON array"},
        PatchCase{"EmptyPatchIsIdentity", R"({"a":[1,{"b":null}]})", "[]",
                  R"({"a":[1,{"b":null}]})"}),
    CaseName);

TEST(JsonPatchTest, FailedPatchLeavesNoTrace) {
  constexpr std::string_view kTarget = R"({"spec":{"replicas":1}})";
  const value target = Json(kTarget);
  absl::StatusOr<value> result =
      ApplyJsonPatch(target, Json(R"([{"op":"replace","path":"/spec/replicas","value":5},
                        {"op":"test","path":"/spec/replicas","value":1}])"));
  ExpectError(result, "op 1 (test /spec/replicas): test failed: the value is 5, not 1");
  EXPECT_EQ(target, Json(kTarget));
}

TEST(JsonPatchTest, KubectlPatchTypeJson) {
  // kubectl patch pod p --type=json -p '[{"op":"replace","path":"/spec/containers/0/image",...}]'
  const value pod = Json(R"({"spec":{"containers":[{"name":"c","image":"nginx:1"}]}})");
  ExpectJson(ApplyJsonPatch(pod, Json(R"([
                 {"op":"replace","path":"/spec/containers/0/image","value":"nginx:2"},
                 {"op":"add","path":"/metadata","value":{"labels":{"app~x":"y"}}},
                 {"op":"remove","path":"/metadata/labels/app~0x"}])")),
             R"({"spec":{"containers":[{"name":"c","image":"nginx:2"}]},
                 "metadata":{"labels":{}}})");
}

// --- Strategic merge patch
// --------------------------------------------------------------------------

// A live pod with two containers, as the store holds it.
value LivePod() {
  return Json(R"({
    "apiVersion":"v1","kind":"Pod",
    "metadata":{"name":"web","namespace":"default","labels":{"app":"web","tier":"fe"},
                "finalizers":["a.io/x","b.io/y"],
                "ownerReferences":[{"uid":"u1","kind":"Job","name":"j"}]},
    "spec":{
      "containers":[
        {"name":"c","image":"nginx:1.0","ports":[{"containerPort":80,"protocol":"TCP"}],
         "env":[{"name":"A","value":"1"}],
         "volumeMounts":[{"name":"data","mountPath":"/data"}]},
        {"name":"sidecar","image":"busybox"}],
      "tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule"}],
      "volumes":[{"name":"data","hostPath":{"path":"/srv"}}]},
    "status":{"phase":"Pending",
              "conditions":[{"type":"PodScheduled","status":"True"},
                            {"type":"Ready","status":"False"}]}})");
}

// Sets the member or element at `pointer` (no escapes; the parent must exist) in a copy of
// `document`: test setup shorthand.
value With(value document, std::string_view pointer, std::string_view json) {
  const size_t slash = pointer.rfind('/');
  value& parent = document.at_pointer(pointer.substr(0, slash));
  const std::string last(pointer.substr(slash + 1));
  if (parent.is_array()) {
    parent.as_array().at(std::stoul(last)) = Json(json);
  } else {
    parent.as_object()[last] = Json(json);
  }
  return document;
}

TEST(StrategicMergePatchTest, KubectlApplyChangesContainerImageByName) {
  // Observed from kubectl apply (k8s.io/apiserver pkg/endpoints/handlers/patch.go applies it).
  const value patch = Json(R"({"metadata":{"annotations":{"k":"v"},"labels":{"tier":"be"}},
      "spec":{"$setElementOrder/containers":[{"name":"c"},{"name":"sidecar"}],
              "containers":[{"image":"nginx:3.0","name":"c"}]}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  value expected = With(LivePod(), "/spec/containers/0/image", R"("nginx:3.0")");
  expected = With(expected, "/metadata/labels/tier", R"("be")");
  expected = With(expected, "/metadata/annotations", R"({"k":"v"})");
  ExpectJson(result, boost::json::serialize(expected));
}

// batch/v1 kinds embed a pod template whose lists merge as a Pod's (kubectl set image job/x).
TEST(StrategicMergePatchTest, JobAndCronJobTemplatesMergeContainersByName) {
  const value job = Json(R"({"spec":{"template":{"spec":{"containers":[
      {"name":"a","image":"a:1"},{"name":"b","image":"b:1"}]}}}})");
  const value patch = Json(R"({"spec":{"template":{"spec":{"containers":[
      {"name":"b","image":"b:2"}]}}}})");
  ExpectJson(ApplyStrategicMergePatch(job, patch, "Job"),
             R"({"spec":{"template":{"spec":{"containers":[{"name":"a","image":"a:1"},)"
             R"({"name":"b","image":"b:2"}]}}}})");
  const value cron = Json(R"({"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[
      {"name":"a","image":"a:1"},{"name":"b","image":"b:1"}]}}}}}})");
  const value cron_patch = Json(R"({"spec":{"jobTemplate":{"spec":{"template":{"spec":{
      "containers":[{"name":"a","image":"a:2"}]}}}}}})");
  ExpectJson(ApplyStrategicMergePatch(cron, cron_patch, "CronJob"),
             R"({"spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[)"
             R"({"name":"a","image":"a:2"},{"name":"b","image":"b:1"}]}}}}}})");
  EXPECT_TRUE(SupportsStrategicMergePatch("Job"));
  EXPECT_TRUE(SupportsStrategicMergePatch("CronJob"));
}

TEST(StrategicMergePatchTest, AddsEnvVarByName) {
  const value patch =
      Json(R"({"spec":{"containers":[{"name":"c","env":[{"name":"B","value":"2"}]}]}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  // Without $setElementOrder the patch's elements come first, as upstream orders them.
  ExpectJson(result, boost::json::serialize(With(LivePod(), "/spec/containers/0/env",
                                                 R"([{"name":"B","value":"2"},
                                                     {"name":"A","value":"1"}])")));
}

TEST(StrategicMergePatchTest, SetElementOrderOrdersMergedList) {
  const value patch = Json(R"({"spec":{"containers":[{"name":"c",
      "$setElementOrder/env":[{"name":"A"},{"name":"B"}],
      "env":[{"name":"B","value":"2"}]}]}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  ExpectJson(result, boost::json::serialize(With(LivePod(), "/spec/containers/0/env",
                                                 R"([{"name":"A","value":"1"},
                                                     {"name":"B","value":"2"}])")));
}

TEST(StrategicMergePatchTest, SetElementOrderAloneReordersList) {
  const value patch =
      Json(R"({"spec":{"$setElementOrder/containers":[{"name":"sidecar"},{"name":"c"}]}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  const value& containers = result->at_pointer("/spec/containers");
  ASSERT_EQ(containers.as_array().size(), 2u);
  EXPECT_EQ(containers.at_pointer("/0/name"), "sidecar");
  EXPECT_EQ(containers.at_pointer("/1/name"), "c");
  EXPECT_EQ(containers.at_pointer("/1/image"), "nginx:1.0");
}

TEST(StrategicMergePatchTest, SetElementOrderForAtomicListIsTolerated) {
  const value patch = Json(R"({"spec":{"$setElementOrder/tolerations":[{"key":"x"}],
      "tolerations":[{"key":"x","operator":"Exists"}]}})");
  ExpectJson(ApplyStrategicMergePatch(LivePod(), patch, "Pod"),
             boost::json::serialize(
                 With(LivePod(), "/spec/tolerations", R"([{"key":"x","operator":"Exists"}])")));
}

TEST(StrategicMergePatchTest, MergesPortsByContainerPortNumerically) {
  const value patch = Json(
      R"({"spec":{"containers":[{"name":"c","ports":[{"containerPort":80.0,"name":"http"}]}]}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  const value& ports = result->at_pointer("/spec/containers/0/ports");
  ASSERT_EQ(ports.as_array().size(), 1u);
  EXPECT_EQ(ports.at_pointer("/0/name"), "http");
  EXPECT_EQ(ports.at_pointer("/0/protocol"), "TCP");
}

TEST(StrategicMergePatchTest, AddsContainerWithNestedListsMaterialized) {
  const value patch = Json(R"({"spec":{
      "$setElementOrder/containers":[{"name":"c"},{"name":"sidecar"},{"name":"new"}],
      "containers":[{"name":"new","image":"x","args":null,
                     "env":[{"name":"E","value":"1"},{"name":"F","$patch":"delete"}]}]}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->at_pointer("/spec/containers/2"),
            Json(R"({"name":"new","image":"x","env":[{"name":"E","value":"1"}]})"));
}

TEST(StrategicMergePatchTest, TolerationsAreReplacedWhole) {
  // kubectl apply sends the whole atomic list, whether adding or removing an entry.
  const value two = Json(R"({"spec":{"tolerations":[
      {"key":"gpu","operator":"Exists","effect":"NoSchedule"},
      {"key":"spot","operator":"Equal","value":"true","effect":"NoExecute"}]}})");
  absl::StatusOr<value> added = ApplyStrategicMergePatch(LivePod(), two, "Pod");
  ASSERT_TRUE(added.ok()) << added.status();
  EXPECT_EQ(added->at_pointer("/spec/tolerations"), two.at_pointer("/spec/tolerations"));

  const value one = Json(R"({"spec":{"tolerations":[
      {"key":"spot","operator":"Equal","value":"true","effect":"NoExecute"}]}})");
  absl::StatusOr<value> removed = ApplyStrategicMergePatch(*added, one, "Pod");
  ASSERT_TRUE(removed.ok()) << removed.status();
  EXPECT_EQ(removed->at_pointer("/spec/tolerations"), one.at_pointer("/spec/tolerations"));

  absl::StatusOr<value> none =
      ApplyStrategicMergePatch(*removed, Json(R"({"spec":{"tolerations":null}})"), "Pod");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->at_pointer("/spec").as_object().contains("tolerations"));
}

TEST(StrategicMergePatchTest, KubectlTaintAddsAndRemovesNodeTaints) {
  const value node = Json(R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},
      "spec":{"unschedulable":false,"taints":[{"key":"a","effect":"NoSchedule"}]}})");
  // `kubectl taint node n1 gpu=true:NoSchedule` sends the node's whole new taint list.
  absl::StatusOr<value> tainted =
      ApplyStrategicMergePatch(node, Json(R"({"spec":{"taints":[{"effect":"NoSchedule","key":"a"},
                                       {"effect":"NoSchedule","key":"gpu","value":"true"}]}})"),
                               "Node");
  ASSERT_TRUE(tainted.ok()) << tainted.status();
  EXPECT_EQ(tainted->at_pointer("/spec/taints"), Json(R"([{"effect":"NoSchedule","key":"a"},
                     {"effect":"NoSchedule","key":"gpu","value":"true"}])"));
  // `kubectl taint node n1 a-` sends the remaining list; a merge by key would keep "a".
  absl::StatusOr<value> untainted = ApplyStrategicMergePatch(
      *tainted, Json(R"({"spec":{"taints":[{"effect":"NoSchedule","key":"gpu","value":"true"}]}})"),
      "Node");
  ASSERT_TRUE(untainted.ok()) << untainted.status();
  EXPECT_EQ(untainted->at_pointer("/spec/taints"),
            Json(R"([{"effect":"NoSchedule","key":"gpu","value":"true"}])"));
  // Removing the last taint: the Go client omits the empty list, so the diff says null.
  absl::StatusOr<value> clean =
      ApplyStrategicMergePatch(*untainted, Json(R"({"spec":{"taints":null}})"), "Node");
  ExpectJson(clean, R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},
                         "spec":{"unschedulable":false}})");
}

TEST(StrategicMergePatchTest, KubectlCordon) {
  const value node = Json(R"({"kind":"Node","metadata":{"name":"n1"},"spec":{}})");
  ExpectJson(ApplyStrategicMergePatch(node, Json(R"({"spec":{"unschedulable":true}})"), "Node"),
             R"({"kind":"Node","metadata":{"name":"n1"},"spec":{"unschedulable":true}})");
}

TEST(StrategicMergePatchTest, DeletesContainerWithPatchDelete) {
  const value patch = Json(R"({"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  const value& containers = result->at_pointer("/spec/containers");
  ASSERT_EQ(containers.as_array().size(), 1u);
  EXPECT_EQ(containers.at_pointer("/0"), LivePod().at_pointer("/spec/containers/0"));
}

TEST(StrategicMergePatchTest, DeleteFromPrimitiveListFinalizers) {
  const value patch = Json(R"({"metadata":{"$deleteFromPrimitiveList/finalizers":["a.io/x"]}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->at_pointer("/metadata/finalizers"), Json(R"(["b.io/y"])"));
}

TEST(StrategicMergePatchTest, KubectlApplyReplacesAFinalizer) {
  // apply changing finalizers [x, y] to [x, z]: delete list, additions and the desired order.
  const value patch = Json(R"({"metadata":{
      "$setElementOrder/finalizers":["a.io/x","c.io/z"],
      "$deleteFromPrimitiveList/finalizers":["b.io/y"],
      "finalizers":["c.io/z"]}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->at_pointer("/metadata/finalizers"), Json(R"(["a.io/x","c.io/z"])"));
}

TEST(StrategicMergePatchTest, FinalizersMergeAsASet) {
  const value patch = Json(R"({"metadata":{"finalizers":["b.io/y","c.io/z"]}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->at_pointer("/metadata/finalizers"), Json(R"(["a.io/x","b.io/y","c.io/z"])"));
}

TEST(StrategicMergePatchTest, RetainKeysClearsOtherVolumeSources) {
  // kubectl apply switching a volume from hostPath to emptyDir.
  const value patch = Json(R"({"spec":{"$setElementOrder/volumes":[{"name":"data"}],
      "volumes":[{"$retainKeys":["emptyDir","name"],"emptyDir":{},"name":"data"}]}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->at_pointer("/spec/volumes"), Json(R"([{"name":"data","emptyDir":{}}])"));
}

TEST(StrategicMergePatchTest, RetainKeysMustCoverPatchedFields) {
  const value patch = Json(R"({"spec":{"volumes":[
      {"$retainKeys":["name"],"emptyDir":{},"name":"data"}]}})");
  ExpectError(ApplyStrategicMergePatch(LivePod(), patch, "Pod"),
              "spec.volumes[]: field \"emptyDir\" is set by the patch but missing from "
              "$retainKeys");
}

TEST(StrategicMergePatchTest, NullRemovesLabel) {
  const value patch = Json(R"({"metadata":{"labels":{"tier":null,"absent":null}}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->at_pointer("/metadata/labels"), Json(R"({"app":"web"})"));
}

TEST(StrategicMergePatchTest, PodConditionsMergeByType) {
  const value patch = Json(R"({"status":{"phase":"Running",
      "conditions":[{"type":"Ready","status":"True"},{"type":"Initialized","status":"True"}]}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->at_pointer("/status"), Json(R"({"phase":"Running","conditions":[
      {"type":"PodScheduled","status":"True"},
      {"type":"Ready","status":"True"},
      {"type":"Initialized","status":"True"}]})"));
}

TEST(StrategicMergePatchTest, NodeConditionsAndAddressesMergeByType) {
  const value node = Json(R"({"kind":"Node","status":{
      "conditions":[{"type":"Ready","status":"False","reason":"KubeletNotReady"},
                    {"type":"MemoryPressure","status":"False"}],
      "addresses":[{"type":"InternalIP","address":"10.0.0.1"},
                   {"type":"Hostname","address":"n1"}]}})");
  const value patch = Json(R"({"status":{
      "conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"}],
      "addresses":[{"type":"InternalIP","address":"10.0.0.2"}]}})");
  ExpectJson(ApplyStrategicMergePatch(node, patch, "Node"), R"({"kind":"Node","status":{
      "conditions":[{"type":"Ready","status":"True","reason":"KubeletReady"},
                    {"type":"MemoryPressure","status":"False"}],
      "addresses":[{"type":"InternalIP","address":"10.0.0.2"},
                   {"type":"Hostname","address":"n1"}]}})");
}

TEST(StrategicMergePatchTest, OwnerReferencesMergeByUid) {
  const value patch = Json(R"({"metadata":{"ownerReferences":[
      {"uid":"u1","controller":true},{"uid":"u2","kind":"PodGroup","name":"pg"}]}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->at_pointer("/metadata/ownerReferences"), Json(R"([
      {"uid":"u1","kind":"Job","name":"j","controller":true},
      {"uid":"u2","kind":"PodGroup","name":"pg"}])"));
}

TEST(StrategicMergePatchTest, PatchReplaceInListReplacesList) {
  const value patch = Json(R"({"spec":{"containers":[
      {"name":"only","image":"x"},{"$patch":"replace"}]}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->at_pointer("/spec/containers"), Json(R"([{"name":"only","image":"x"}])"));
}

TEST(StrategicMergePatchTest, PatchReplaceInMapReplacesMap) {
  const value patch = Json(R"({"metadata":{"labels":{"$patch":"replace","new":"1"}}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->at_pointer("/metadata/labels"), Json(R"({"new":"1"})"));
}

TEST(StrategicMergePatchTest, PatchDeleteInMapDeletesMap) {
  absl::StatusOr<value> result = ApplyStrategicMergePatch(
      LivePod(), Json(R"({"metadata":{"labels":{"$patch":"delete"}}})"), "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->at_pointer("/metadata").as_object().contains("labels"));
  ExpectJson(ApplyStrategicMergePatch(LivePod(), Json(R"({"$patch":"delete"})"), "Pod"), "{}");
}

TEST(StrategicMergePatchTest, PatchMergeIsTheDefault) {
  const value patch = Json(R"({"metadata":{"labels":{"$patch":"merge","new":"1"}},
      "spec":{"containers":[{"$patch":"merge"}]}})");
  absl::StatusOr<value> result = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->at_pointer("/metadata/labels"), Json(R"({"app":"web","tier":"fe","new":"1"})"));
  EXPECT_EQ(result->at_pointer("/spec/containers"), LivePod().at_pointer("/spec/containers"));
}

TEST(StrategicMergePatchTest, UnknownKindIsAMergePatch) {
  const value group = Json(R"({"kind":"PodGroup","metadata":{"finalizers":["a"]},
                               "spec":{"minMember":2,"list":[{"name":"x","v":1}]}})");
  const value patch = Json(R"({"metadata":{"finalizers":["b"]},
                               "spec":{"minMember":3,"list":[{"name":"x","w":2}]}})");
  ExpectJson(ApplyStrategicMergePatch(group, patch, "PodGroup"),
             R"({"kind":"PodGroup","metadata":{"finalizers":["b"]},
                 "spec":{"minMember":3,"list":[{"name":"x","w":2}]}})");
  EXPECT_FALSE(SupportsStrategicMergePatch("PodGroup"));
  EXPECT_TRUE(SupportsStrategicMergePatch("Pod"));
  EXPECT_TRUE(SupportsStrategicMergePatch("Namespace"));
  EXPECT_TRUE(SupportsStrategicMergePatch("Event"));
}

TEST(StrategicMergePatchTest, NamespaceAndEventUseObjectMetaLists) {
  const value ns = Json(R"({"kind":"Namespace","metadata":{"name":"x","finalizers":["a"]},
                            "spec":{"finalizers":["kubernetes"]}})");
  ExpectJson(ApplyStrategicMergePatch(ns, Json(R"({"metadata":{"finalizers":["b"]},
                                                  "spec":{"finalizers":[]}})"),
                                      "Namespace"),
             R"({"kind":"Namespace","metadata":{"name":"x","finalizers":["b","a"]},
                 "spec":{"finalizers":[]}})");
  const value event = Json(R"({"kind":"Event","count":1,"metadata":{"name":"e"}})");
  ExpectJson(ApplyStrategicMergePatch(event, Json(R"({"count":2})"), "Event"),
             R"({"kind":"Event","count":2,"metadata":{"name":"e"}})");
}

TEST(StrategicMergePatchTest, EveryServedBuiltInKindTakesStrategicMergePatches) {
  for (std::string_view kind :
       {"Namespace", "Node", "Pod", "Event", "Service", "ConfigMap", "PriorityClass", "Lease",
        "PodDisruptionBudget", "Job", "CronJob"}) {
    EXPECT_TRUE(SupportsStrategicMergePatch(kind)) << kind;
  }
  // Volcano's kinds are custom resources (415 upstream; its Job, a kind of the same name as
  // batch/v1's, is refused by the handler as a custom resource), and kinds muster does not serve
  // have no metadata here.
  for (std::string_view kind : {"Queue", "PodGroup", "Deployment"}) {
    EXPECT_FALSE(SupportsStrategicMergePatch(kind)) << kind;
  }
}

// `kubectl patch cm x -p '{"data":{"k":"v"}}'`: maps merge, null removes a key, and the ObjectMeta
// lists merge as for every kind. (Merged lists come in apimachinery's order: the patch's elements
// first unless the live list put a server-only element before one of them.)
TEST(StrategicMergePatchTest, ConfigMapDataMergesAndOwnerReferencesMergeByUid) {
  const value cm = Json(R"({"kind":"ConfigMap","metadata":{"name":"x",
                            "ownerReferences":[{"uid":"u1","name":"a"}]},
                            "data":{"a":"1","b":"2"}})");
  ExpectJson(ApplyStrategicMergePatch(cm, Json(R"({"data":{"k":"v","b":null},
                                                  "metadata":{"ownerReferences":[
                                                    {"uid":"u2","name":"b"}]}})"),
                                      "ConfigMap"),
             R"({"kind":"ConfigMap","metadata":{"name":"x","ownerReferences":[
                   {"uid":"u2","name":"b"},{"uid":"u1","name":"a"}]},
                 "data":{"a":"1","k":"v"}})");
}

TEST(StrategicMergePatchTest, ServicePortsMergeByPortAndConditionsByType) {
  const value svc = Json(R"({"kind":"Service","metadata":{"name":"s"},
      "spec":{"selector":{"app":"a"},"ports":[{"name":"http","port":80,"targetPort":8080},
                                              {"name":"https","port":443}]},
      "status":{"conditions":[{"type":"Ready","status":"False"}],
                "loadBalancer":{"ingress":[{"ip":"10.0.0.1"}]}}})");
  ExpectJson(ApplyStrategicMergePatch(svc, Json(R"({"spec":{"ports":[
      {"port":80,"targetPort":9090},{"name":"metrics","port":9100}]}})"),
                                      "Service"),
             R"({"kind":"Service","metadata":{"name":"s"},
      "spec":{"selector":{"app":"a"},"ports":[{"name":"http","port":80,"targetPort":9090},
                                              {"name":"metrics","port":9100},
                                              {"name":"https","port":443}]},
      "status":{"conditions":[{"type":"Ready","status":"False"}],
                "loadBalancer":{"ingress":[{"ip":"10.0.0.1"}]}}})");
  // status.conditions merge by type; loadBalancer.ingress is atomic upstream.
  ExpectJson(ApplyStrategicMergePatch(svc, Json(R"({"status":{
      "conditions":[{"type":"Ready","status":"True"},{"type":"Other","status":"True"}],
      "loadBalancer":{"ingress":[{"ip":"10.0.0.2"}]}}})"),
                                      "Service"),
             R"({"kind":"Service","metadata":{"name":"s"},
      "spec":{"selector":{"app":"a"},"ports":[{"name":"http","port":80,"targetPort":8080},
                                              {"name":"https","port":443}]},
      "status":{"conditions":[{"type":"Ready","status":"True"},{"type":"Other","status":"True"}],
                "loadBalancer":{"ingress":[{"ip":"10.0.0.2"}]}}})");
  // A port is deleted by its merge key.
  ExpectJson(ApplyStrategicMergePatch(
                 svc, Json(R"({"spec":{"ports":[{"port":443,"$patch":"delete"}]}})"), "Service"),
             R"({"kind":"Service","metadata":{"name":"s"},
      "spec":{"selector":{"app":"a"},"ports":[{"name":"http","port":80,"targetPort":8080}]},
      "status":{"conditions":[{"type":"Ready","status":"False"}],
                "loadBalancer":{"ingress":[{"ip":"10.0.0.1"}]}}})");
}

TEST(StrategicMergePatchTest, NamespaceConditionsMergeByTypeAndSpecFinalizersAreAtomic) {
  const value ns = Json(R"({"kind":"Namespace","metadata":{"name":"x"},
      "spec":{"finalizers":["kubernetes"]},
      "status":{"phase":"Terminating","conditions":[{"type":"A","status":"True"}]}})");
  ExpectJson(ApplyStrategicMergePatch(ns, Json(R"({"spec":{"finalizers":["other"]},
      "status":{"conditions":[{"type":"B","status":"False"}]}})"),
                                      "Namespace"),
             R"({"kind":"Namespace","metadata":{"name":"x"},"spec":{"finalizers":["other"]},
      "status":{"phase":"Terminating","conditions":[{"type":"B","status":"False"},
                                                    {"type":"A","status":"True"}]}})");
}

TEST(StrategicMergePatchTest, PodResourceClaimStatusesMergeByName) {
  const value pod = Json(R"({"kind":"Pod","status":{"resourceClaimStatuses":[
      {"name":"gpu","resourceClaimName":"c1"}]}})");
  ExpectJson(ApplyStrategicMergePatch(pod, Json(R"({"status":{"resourceClaimStatuses":[
      {"name":"nic","resourceClaimName":"c2"}]}})"),
                                      "Pod"),
             R"({"kind":"Pod","status":{"resourceClaimStatuses":[
      {"name":"nic","resourceClaimName":"c2"},{"name":"gpu","resourceClaimName":"c1"}]}})");
}

// Kinds without merge lists of their own: lists replace, maps merge.
TEST(StrategicMergePatchTest, PriorityClassAndLeaseMergeMapsAndReplaceScalars) {
  const value pc = Json(R"({"kind":"PriorityClass","metadata":{"name":"high",
                            "labels":{"a":"1"}},"value":1000,"description":"d"})");
  ExpectJson(ApplyStrategicMergePatch(pc, Json(R"({"metadata":{"labels":{"b":"2"}},
                                                  "description":"new"})"),
                                      "PriorityClass"),
             R"({"kind":"PriorityClass","metadata":{"name":"high","labels":{"a":"1","b":"2"}},
                 "value":1000,"description":"new"})");
  const value lease = Json(R"({"kind":"Lease","metadata":{"name":"l"},
                               "spec":{"holderIdentity":"a","leaseDurationSeconds":15}})");
  ExpectJson(ApplyStrategicMergePatch(lease, Json(R"({"spec":{"holderIdentity":"b"}})"), "Lease"),
             R"({"kind":"Lease","metadata":{"name":"l"},
                 "spec":{"holderIdentity":"b","leaseDurationSeconds":15}})");
}

class StrategicMergePatchErrorTest : public ::testing::TestWithParam<PatchCase> {};

TEST_P(StrategicMergePatchErrorTest, Fails) {
  const PatchCase& c = GetParam();
  ExpectError(ApplyStrategicMergePatch(LivePod(), Json(c.patch), "Pod"), c.error);
}

INSTANTIATE_TEST_SUITE_P(
    Errors, StrategicMergePatchErrorTest,
    ::testing::Values(
        PatchCase{"PatchNotObject", "", "[1]", "", "must be a JSON object"},
        PatchCase{"ElementLacksMergeKey", "", R"({"spec":{"containers":[{"image":"x"}]}})", "",
                  "spec.containers: element {\"image\":\"x\"} lacks the merge key \"name\""},
        PatchCase{"DeleteElementLacksMergeKey", "",
                  R"({"spec":{"containers":[{"$patch":"delete"}]}})", "",
                  "spec.containers: a $patch: delete element lacks the merge key \"name\""},
        PatchCase{"ElementNotObject", "", R"({"spec":{"containers":["c"]}})", "",
                  "spec.containers: patch element 0 is not an object"},
        PatchCase{"UnknownPatchDirective", "", R"({"metadata":{"$patch":"explode"}})", "",
                  "metadata: unknown $patch directive \"explode\""},
        PatchCase{"UnknownPatchDirectiveInList", "",
                  R"({"spec":{"containers":[{"name":"c","$patch":"explode"}]}})", "",
                  "spec.containers: unknown $patch directive \"explode\""},
        PatchCase{"RetainKeysNotStrings", "", R"({"spec":{"$retainKeys":[1]}})", "",
                  "spec: $retainKeys must be a list of strings"},
        PatchCase{"SetElementOrderNotList", "", R"({"spec":{"$setElementOrder/containers":{}}})",
                  "", "spec: $setElementOrder/containers must be a list"},
        PatchCase{"MalformedDirectiveKey", "", R"({"metadata":{"$deleteFromPrimitiveList":[]}})",
                  "", "metadata: malformed directive \"$deleteFromPrimitiveList\""},
        PatchCase{"ObjectsInPrimitiveList", "", R"({"metadata":{"finalizers":[{"a":1}]}})", "",
                  "metadata.finalizers: cannot merge a list of objects"}),
    CaseName);

// --- Server-side apply
// ------------------------------------------------------------------------------

TEST(ServerSideApplyTest, UpsertsNewFieldsAndKeepsOthers) {
  const value applied = Json(R"({"apiVersion":"v1","kind":"Pod",
      "metadata":{"name":"web","labels":{"tier":"be","owner":"me"}},
      "spec":{"containers":[{"name":"c","image":"nginx:2.0"}]}})");
  absl::StatusOr<value> result = ApplyServerSideApply(LivePod(), applied, "Pod");
  value expected = With(LivePod(), "/metadata/labels", R"({"app":"web","tier":"be","owner":"me"})");
  expected = With(expected, "/spec/containers/0/image", R"("nginx:2.0")");
  ExpectJson(result, boost::json::serialize(expected));
}

TEST(ServerSideApplyTest, KeyedListsMergeOtherListsReplace) {
  const value applied = Json(R"({"spec":{
      "containers":[{"name":"c","env":[{"name":"A","value":"9"},{"name":"B","value":"2"}]},
                    {"name":"sidecar","image":"busybox"},
                    {"name":"extra","image":"x"}],
      "tolerations":[{"key":"other","operator":"Exists"}]}})");
  absl::StatusOr<value> result = ApplyServerSideApply(LivePod(), applied, "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->at_pointer("/spec/containers/0/env"),
            Json(R"([{"name":"A","value":"9"},{"name":"B","value":"2"}])"));
  EXPECT_EQ(result->at_pointer("/spec/containers/0/image"), "nginx:1.0");
  EXPECT_EQ(result->at_pointer("/spec/containers/2"), Json(R"({"name":"extra","image":"x"})"));
  EXPECT_EQ(result->at_pointer("/spec/tolerations"),
            Json(R"([{"key":"other","operator":"Exists"}])"));
  EXPECT_EQ(result->at_pointer("/spec/volumes"), LivePod().at_pointer("/spec/volumes"));
}

TEST(ServerSideApplyTest, CreatesFromEmptyLiveObject) {
  const value applied = Json(R"({"kind":"Pod","metadata":{"name":"p","labels":{"x":null}},
                                 "spec":{"containers":[{"name":"c","args":null}]}})");
  ExpectJson(ApplyServerSideApply(value(), applied, "Pod"),
             R"({"kind":"Pod","metadata":{"name":"p","labels":{}},
                 "spec":{"containers":[{"name":"c"}]}})");
}

TEST(ServerSideApplyTest, NullRemovesFieldAndFinalizersUnion) {
  const value applied = Json(R"({"metadata":{"labels":{"tier":null},"finalizers":["c.io/z"]}})");
  absl::StatusOr<value> result = ApplyServerSideApply(LivePod(), applied, "Pod");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->at_pointer("/metadata/labels"), Json(R"({"app":"web"})"));
  EXPECT_EQ(result->at_pointer("/metadata/finalizers"), Json(R"(["c.io/z","a.io/x","b.io/y"])"));
}

TEST(ServerSideApplyTest, ConditionsMergeByTypeForNodes) {
  const value node = Json(R"({"kind":"Node","spec":{"taints":[{"key":"a","effect":"NoSchedule"}]},
      "status":{"conditions":[{"type":"Ready","status":"False"},{"type":"DiskPressure",
                                                                  "status":"False"}]}})");
  const value applied = Json(R"({"spec":{"taints":[{"key":"b","effect":"NoSchedule"}]},
      "status":{"conditions":[{"type":"Ready","status":"True"}]}})");
  ExpectJson(ApplyServerSideApply(node, applied, "Node"),
             R"({"kind":"Node","spec":{"taints":[{"key":"b","effect":"NoSchedule"}]},
                 "status":{"conditions":[{"type":"Ready","status":"True"},
                                         {"type":"DiskPressure","status":"False"}]}})");
}

TEST(ServerSideApplyTest, CustomKindsMergeMapsAndReplaceListsButKeepMetadataRules) {
  const value live = Json(R"({"kind":"Queue","metadata":{"finalizers":["a"]},
                              "spec":{"weight":1,"capability":{"cpu":"4"},"list":[1,2]}})");
  const value applied = Json(R"({"metadata":{"finalizers":["b"]},
                                 "spec":{"capability":{"memory":"1Gi"},"list":[3]}})");
  ExpectJson(ApplyServerSideApply(live, applied, "Queue"),
             R"({"kind":"Queue","metadata":{"finalizers":["b","a"]},
                 "spec":{"weight":1,"capability":{"cpu":"4","memory":"1Gi"},"list":[3]}})");
}

TEST(ServerSideApplyTest, Errors) {
  ExpectError(ApplyServerSideApply(LivePod(), Json("[1]"), "Pod"), "must be a JSON object");
  ExpectError(
      ApplyServerSideApply(LivePod(), Json(R"({"spec":{"containers":[{"image":"x"}]}})"), "Pod"),
      "spec.containers: element 0 lacks the merge key \"name\"");
  ExpectError(ApplyServerSideApply(LivePod(), Json(R"({"metadata":{"finalizers":[[1]]}})"), "Pod"),
              "metadata.finalizers: cannot merge a list of objects or lists");
}

// --- Properties
// -------------------------------------------------------------------------------------

// A random JSON value of maps and scalars (no lists, no nulls), at most `depth` deep.
value RandomMapTree(std::mt19937& rng, int depth) {
  std::uniform_int_distribution<int> pick(0, 5);
  constexpr std::array<std::string_view, 5> kKeys = {"metadata", "spec", "labels", "x", "y"};
  const int choice = depth == 0 ? pick(rng) % 3 : pick(rng);
  // Assigned rather than returned in braces: braces would make a JSON array.
  value tree;
  if (choice == 0) {
    tree = static_cast<int64_t>(rng() % 5);
  } else if (choice == 1) {
    tree = std::string(1, static_cast<char>('a' + rng() % 3));
  } else if (choice == 2) {
    tree = rng() % 2 == 0;
  } else {
    boost::json::object& object = tree.emplace_object();
    const int members = static_cast<int>(rng() % 4);
    for (int i = 0; i < members; ++i) {
      object[kKeys[rng() % kKeys.size()]] = RandomMapTree(rng, depth - 1);
    }
  }
  return tree;
}

// Like RandomMapTree, but members may be null (deletions).
value RandomMapPatch(std::mt19937& rng, int depth) {
  value tree = RandomMapTree(rng, depth);
  if (tree.is_object()) {
    for (auto& member : tree.as_object()) {
      if (rng() % 4 == 0) {
        member.value() = nullptr;
      } else if (member.value().is_object()) {
        member.value() = RandomMapPatch(rng, depth - 1);
      }
    }
  }
  return tree;
}

TEST(PatchPropertyTest, StrategicEqualsMergePatchWithoutListsOrDirectives) {
  std::mt19937 rng(20240601);
  for (int i = 0; i < 500; ++i) {
    value target = RandomMapTree(rng, 4);
    value patch = RandomMapPatch(rng, 4);
    if (!patch.is_object()) patch = boost::json::object();
    absl::StatusOr<value> strategic = ApplyStrategicMergePatch(target, patch, "Pod");
    absl::StatusOr<value> merge =
        ApplyMergePatch(target.is_object() ? target : value(boost::json::object()), patch);
    ASSERT_TRUE(strategic.ok()) << strategic.status();
    ASSERT_TRUE(merge.ok());
    EXPECT_EQ(*strategic, *merge) << "target " << boost::json::serialize(target) << "\npatch "
                                  << boost::json::serialize(patch);
    absl::StatusOr<value> applied = ApplyServerSideApply(target, patch, "Pod");
    ASSERT_TRUE(applied.ok()) << applied.status();
    EXPECT_EQ(*applied, *merge);
  }
}

TEST(PatchPropertyTest, MergePatchIsIdempotent) {
  std::mt19937 rng(7);
  for (int i = 0; i < 500; ++i) {
    const value target = RandomMapTree(rng, 4);
    const value patch = RandomMapPatch(rng, 4);
    absl::StatusOr<value> once = ApplyMergePatch(target, patch);
    ASSERT_TRUE(once.ok());
    absl::StatusOr<value> twice = ApplyMergePatch(*once, patch);
    ASSERT_TRUE(twice.ok());
    EXPECT_EQ(*once, *twice);
  }
}

TEST(PatchPropertyTest, StrategicPatchOfAPodIsIdempotentAndDeterministic) {
  const std::array<value, 4> patches = {
      Json(R"({"spec":{"containers":[{"name":"c","env":[{"name":"B","value":"2"}]}]}})"),
      Json(R"({"metadata":{"$setElementOrder/finalizers":["a.io/x","c.io/z"],
               "$deleteFromPrimitiveList/finalizers":["b.io/y"],"finalizers":["c.io/z"]}})"),
      Json(R"({"status":{"conditions":[{"type":"Ready","status":"True"}]}})"),
      Json(R"({"spec":{"containers":[{"name":"sidecar","$patch":"delete"}]}})"),
  };
  for (const value& patch : patches) {
    absl::StatusOr<value> once = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
    ASSERT_TRUE(once.ok()) << once.status();
    absl::StatusOr<value> again = ApplyStrategicMergePatch(LivePod(), patch, "Pod");
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(boost::json::serialize(*once), boost::json::serialize(*again));
    absl::StatusOr<value> twice = ApplyStrategicMergePatch(*once, patch, "Pod");
    ASSERT_TRUE(twice.ok()) << twice.status();
    EXPECT_EQ(*once, *twice) << boost::json::serialize(patch);
  }
}

TEST(PatchPropertyTest, JsonPatchAddThenRemoveRestoresDocument) {
  std::mt19937 rng(11);
  for (int i = 0; i < 200; ++i) {
    value target = RandomMapTree(rng, 3);
    if (!target.is_object()) continue;
    const std::string key = "k~/" + std::to_string(i);
    const std::string pointer = "/k~0~1" + std::to_string(i);
    boost::json::array ops;
    ops.push_back(boost::json::object{{"op", "add"}, {"path", pointer}, {"value", {1, 2}}});
    ops.push_back(boost::json::object{{"op", "remove"}, {"path", pointer + "/0"}});
    ops.push_back(boost::json::object{{"op", "test"}, {"path", pointer}, {"value", {2}}});
    ops.push_back(boost::json::object{{"op", "remove"}, {"path", pointer}});
    absl::StatusOr<value> result = ApplyJsonPatch(target, value(ops));
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(*result, target);
  }
}

}  // namespace
}  // namespace muster::api
