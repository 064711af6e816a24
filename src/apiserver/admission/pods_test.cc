#include "apiserver/admission/admission_test_util.h"

// Pod admission: defaults and mutating plugins (pods_mutate.cc), validation (pods_validate.cc).

#include <optional>
#include <string>
#include <string_view>

#include "boost/json.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::apiserver::admission_test {
namespace {

// --- Pods ----------------------------------------------------------------------------------------

TEST_F(AdmissionTest, PodDefaults) {
  json::object pod = Created(Pods(), Pod(R"({"containers":[
      {"name":"a","image":"nginx"},
      {"name":"b","image":"repo/img:1.0","resources":{"limits":{"cpu":"1","memory":"1Gi"}}}]})"));
  const json::object& spec = pod["spec"].as_object();
  EXPECT_EQ(spec.at("restartPolicy"), "Always");
  EXPECT_EQ(spec.at("schedulerName"), "default-scheduler");
  EXPECT_EQ(spec.at("terminationGracePeriodSeconds"), 30);
  EXPECT_EQ(spec.at("dnsPolicy"), "ClusterFirst");
  EXPECT_EQ(spec.at("enableServiceLinks"), true);
  EXPECT_EQ(spec.at("priority"), 0);
  EXPECT_EQ(spec.at("preemptionPolicy"), "PreemptLowerPriority");
  const json::array& containers = spec.at("containers").as_array();
  EXPECT_EQ(containers[0].at("imagePullPolicy"), "Always");  // untagged means :latest
  EXPECT_EQ(containers[1].at("imagePullPolicy"), "IfNotPresent");
  EXPECT_EQ(containers[0].at("terminationMessagePath"), "/dev/termination-log");
  EXPECT_EQ(containers[1].at("resources").at("requests").at("memory"), "1Gi");
  const json::array& tolerations = spec.at("tolerations").as_array();
  ASSERT_EQ(tolerations.size(), 2u);
  EXPECT_EQ(tolerations[0].at("key"), "node.kubernetes.io/not-ready");
  EXPECT_EQ(tolerations[1].at("tolerationSeconds"), 300);
  EXPECT_EQ(pod["status"].at("phase"), "Pending");
  EXPECT_EQ(pod["status"].at("qosClass"), "Burstable");
}

TEST_F(AdmissionTest, PodQosClasses) {
  json::object guaranteed = Created(Pods(), Pod(R"({"containers":[{"name":"a","image":"i",
      "resources":{"limits":{"cpu":"1","memory":"1Gi"}}}]})"));
  EXPECT_EQ(guaranteed["status"].at("qosClass"), "Guaranteed");
  json::object best_effort = Created(Pods(), Pod());
  EXPECT_EQ(best_effort["status"].at("qosClass"), "BestEffort");
}

TEST_F(AdmissionTest, PodContainersAreRequired) {
  json::object pod = Pod(R"({})");
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 422);
  EXPECT_EQ(err->message, "Pod \"p\" is invalid: spec.containers: Required value");
  ASSERT_EQ(err->causes.size(), 1u);
  EXPECT_EQ(err->causes[0].reason, "FieldValueRequired");
  EXPECT_EQ(err->causes[0].message, "Required value");
  EXPECT_EQ(err->causes[0].field, "spec.containers");
}

TEST_F(AdmissionTest, PodContainerNamesImagesAndDuplicates) {
  json::object pod = Pod(R"({"containers":[{"name":"c","image":"i"},{"name":"c"},{"image":"i"}]})");
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Pod \"p\" is invalid: [spec.containers[1].image: Required value, "
            "spec.containers[1].name: Duplicate value: \"c\", spec.containers[2].name: Required "
            "value]");
  ASSERT_EQ(err->causes.size(), 3u);
  EXPECT_EQ(err->causes[1].reason, "FieldValueDuplicate");
}

TEST_F(AdmissionTest, PodRestartPolicyMustBeSupported) {
  json::object pod =
      Pod(R"({"restartPolicy":"Sometimes","containers":[{"name":"c","image":"i"}]})");
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Pod \"p\" is invalid: spec.restartPolicy: Unsupported value: \"Sometimes\": "
            "supported values: \"Always\", \"OnFailure\", \"Never\"");
  EXPECT_EQ(err->causes[0].reason, "FieldValueNotSupported");
}

TEST_F(AdmissionTest, PodQuantitiesMustParse) {
  json::object pod = Pod(R"({"containers":[{"name":"c","image":"i",
      "resources":{"requests":{"cpu":"2x"}}}]})");
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 400);
  EXPECT_EQ(err->reason, "BadRequest");
  EXPECT_EQ(err->message,
            "Pod in version \"v1\" cannot be handled as a Pod: quantities must match the regular "
            "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
}

TEST_F(AdmissionTest, PodRequestsWithinLimits) {
  json::object pod = Pod(R"({"containers":[{"name":"c","image":"i",
      "resources":{"requests":{"cpu":"2","memory":"-1"},"limits":{"cpu":"1"}}}]})");
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Pod \"p\" is invalid: [spec.containers[0].resources.requests: Invalid value: "
            "\"2\": must be less than or equal to cpu limit of 1, "
            "spec.containers[0].resources.requests[memory]: Invalid value: \"-1\": must be "
            "greater than or equal to 0]");
}

TEST_F(AdmissionTest, PodExtendedResourcesAreWholeAndNotOvercommitted) {
  json::object unequal = Pod(R"({"containers":[{"name":"c","image":"i",
      "resources":{"requests":{"nvidia.com/gpu":"1"},"limits":{"nvidia.com/gpu":"2"}}}]})");
  auto err = Create(Pods(), unequal);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Pod \"p\" is invalid: spec.containers[0].resources.requests: Invalid value: \"1\": "
            "must be equal to nvidia.com/gpu limit of 2");

  json::object no_limit = Pod(R"({"containers":[{"name":"c","image":"i",
      "resources":{"requests":{"nvidia.com/gpu":"500m"}}}]})");
  err = Create(Pods(), no_limit);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Pod \"p\" is invalid: [spec.containers[0].resources.limits[nvidia.com/gpu]: "
            "Invalid value: \"500m\": must be an integer, "
            "spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: \"500m\": "
            "must be an integer]");

  // Beyond upstream: a whole GPU requested without a limit (the seed's blocker pod) gets the
  // request as its limit.
  json::object request_only = Created(Pods(), Pod(R"({"containers":[{"name":"c","image":"i",
      "resources":{"requests":{"nvidia.com/gpu":"1"}}}]})"));
  EXPECT_EQ(
      request_only["spec"].at("containers").at(0).at("resources").at("limits").at("nvidia.com/gpu"),
      "1");

  // A limit alone is fine: the request defaults to it.
  json::object limit_only = Created(Pods(), Pod(R"({"containers":[{"name":"c","image":"i",
      "resources":{"limits":{"nvidia.com/gpu":8}}}]})"));
  EXPECT_EQ(
      limit_only["spec"].at("containers").at(0).at("resources").at("requests").at("nvidia.com/gpu"),
      8);
}

TEST_F(AdmissionTest, PodTolerationsAreChecked) {
  json::object pod = Pod(R"({"containers":[{"name":"c","image":"i"}],"tolerations":[
      {"key":"k","operator":"In","value":"v"},{"operator":"Equal","effect":"NoSchedule"}]})");
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Pod \"p\" is invalid: [spec.tolerations[0].operator: Unsupported value: \"In\": "
            "supported values: \"Equal\", \"Exists\", spec.tolerations[1].operator: Invalid "
            "value: \"Equal\": operator must be Exists when `key` is empty, which means \"match "
            "all values and all keys\"]");
}

TEST_F(AdmissionTest, PodPriorityFromPriorityClass) {
  store_.Put(PriorityClasses(), Obj(R"({"apiVersion":"scheduling.k8s.io/v1",
      "kind":"PriorityClass","metadata":{"name":"high"},"value":1000,
      "preemptionPolicy":"Never"})"));
  json::object pod = Created(Pods(), Pod(R"({"priorityClassName":"high",
      "containers":[{"name":"c","image":"i"}]})"));
  EXPECT_EQ(pod["spec"].at("priority"), 1000);
  EXPECT_EQ(pod["spec"].at("preemptionPolicy"), "Never");
}

TEST_F(AdmissionTest, PodPriorityFromGlobalDefault) {
  store_.Put(PriorityClasses(), Obj(R"({"apiVersion":"scheduling.k8s.io/v1",
      "kind":"PriorityClass","metadata":{"name":"normal"},"value":7,"globalDefault":true})"));
  json::object pod = Created(Pods(), Pod());
  EXPECT_EQ(pod["spec"].at("priorityClassName"), "normal");
  EXPECT_EQ(pod["spec"].at("priority"), 7);
}

TEST_F(AdmissionTest, PodWithUnknownPriorityClassIsForbidden) {
  json::object pod = Pod(R"({"priorityClassName":"nope","containers":[{"name":"c","image":"i"}]})");
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 403);
  EXPECT_EQ(err->reason, "Forbidden");
  EXPECT_EQ(err->message, "pods \"p\" is forbidden: no PriorityClass with name nope was found");
}

TEST_F(AdmissionTest, PodMayNotNameItsOwnPriority) {
  json::object pod = Pod(R"({"priority":5,"containers":[{"name":"c","image":"i"}]})");
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 403);
  EXPECT_EQ(err->message,
            "pods \"p\" is forbidden: the integer value of priority (5) must not be provided in "
            "pod spec; priority admission controller computed 0 from the given PriorityClass "
            "name");
}

TEST_F(AdmissionTest, PodUpdateMayChangeImagesAndAddTolerations) {
  json::object old = Created(Pods(), Pod());
  json::object next = old;
  json::object& spec = next["spec"].as_object();
  spec["containers"].as_array()[0].as_object()["image"] = "nginx:1.26";
  spec["tolerations"].as_array().push_back(
      Obj(R"({"key":"gpu","operator":"Exists","effect":"NoSchedule"})"));
  spec["activeDeadlineSeconds"] = 60;
  EXPECT_FALSE(Update(Pods(), old, next));
}

TEST_F(AdmissionTest, PodUpdateMayNotChangeOtherFields) {
  json::object old = Created(Pods(), Pod());
  json::object next = old;
  next["spec"].as_object()["nodeName"] = "n1";
  auto err = Update(Pods(), old, next);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 422);
  EXPECT_THAT(err->message,
              StartsWith("Pod \"p\" is invalid: spec: Forbidden: pod updates may not change "
                         "fields other than `spec.containers[*].image`,"
                         "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
                         "`spec.tolerations` (only additions to existing tolerations),"
                         "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
                         "previously negative)\n"));
  EXPECT_THAT(err->message, HasSubstr("+\tnodeName: \"n1\""));
  EXPECT_EQ(err->causes[0].reason, "FieldValueForbidden");

  json::object fewer = old;
  fewer["spec"].as_object()["tolerations"].as_array().pop_back();
  err = Update(Pods(), old, fewer);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message,
              HasSubstr("spec.tolerations: Forbidden: existing toleration can not be modified "
                        "except its tolerationSeconds"));
}

TEST_F(AdmissionTest, PodStatusUpdatesSkipSpecRules) {
  json::object old = Created(Pods(), Pod());
  json::object next = old;
  next["spec"].as_object()["nodeName"] = "n1";  // the handler keeps the live spec anyway
  next["status"].as_object()["phase"] = "Running";
  EXPECT_FALSE(Update(Pods(), old, next, "status"));
}

}  // namespace
}  // namespace muster::apiserver::admission_test
