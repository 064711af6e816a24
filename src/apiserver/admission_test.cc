#include "apiserver/admission.h"

#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/patch.h"
#include "boost/json.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/store.h"

namespace muster::apiserver {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

json::object Obj(std::string_view text) { return json::parse(text).as_object(); }

// A real store in a fresh temporary directory, removed afterwards.
class TempStore {
 public:
  TempStore() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "admission-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    auto opened = store::Store::Open(dir_ + "/db");
    EXPECT_TRUE(opened.ok()) << opened.status();
    if (opened.ok()) store_ = std::move(*opened);
  }
  ~TempStore() {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  store::Store& get() { return *store_; }

  void Put(const ResourceInfo& res, json::object obj) {
    const json::object& meta = obj.at("metadata").as_object();
    std::string ns =
        meta.contains("namespace") ? std::string(meta.at("namespace").as_string()) : "";
    store::Op op;
    op.kind = store::OpKind::kCreate;
    op.key = {res.StoreResource(), ns, std::string(meta.at("name").as_string())};
    op.object = std::move(obj);
    auto stored = store_->Commit({std::move(op)});
    ASSERT_TRUE(stored.ok()) << stored.status();
  }

 private:
  std::string dir_;
  std::unique_ptr<store::Store> store_;
};

const ResourceInfo& Res(std::string_view group, std::string_view version,
                        std::string_view resource) {
  const ResourceInfo* info = FindResource(group, version, resource);
  EXPECT_NE(info, nullptr) << resource;
  return *info;
}
const ResourceInfo& Pods() { return Res("", "v1", "pods"); }
const ResourceInfo& Nodes() { return Res("", "v1", "nodes"); }
const ResourceInfo& Namespaces() { return Res("", "v1", "namespaces"); }
const ResourceInfo& Events() { return Res("", "v1", "events"); }
const ResourceInfo& PriorityClasses() { return Res("scheduling.k8s.io", "v1", "priorityclasses"); }
const ResourceInfo& Jobs() { return Res("batch.volcano.sh", "v1alpha1", "jobs"); }
const ResourceInfo& PodGroups() { return Res("scheduling.volcano.sh", "v1beta1", "podgroups"); }
const ResourceInfo& Queues() { return Res("scheduling.volcano.sh", "v1beta1", "queues"); }

class AdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_.Put(Queues(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",
        "metadata":{"name":"default"},"spec":{"weight":1},"status":{"state":"Open"}})"));
    store_.Put(Queues(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",
        "metadata":{"name":"closed"},"spec":{"weight":1},"status":{"state":"Closed"}})"));
    store_.Put(Namespaces(), Obj(R"({"apiVersion":"v1","kind":"Namespace",
        "metadata":{"name":"default"},"status":{"phase":"Active"}})"));
  }

  std::optional<AdmissionError> Create(const ResourceInfo& res, json::object& obj) {
    AdmissionRequest req;
    req.resource = &res;
    req.store = &store_.get();
    req.now_unix = 1700000000;
    return Admit(req, obj);
  }
  std::optional<AdmissionError> Update(const ResourceInfo& res, const json::object& old,
                                       json::object& obj, std::string subresource = "") {
    AdmissionRequest req;
    req.resource = &res;
    req.subresource = std::move(subresource);
    req.old = &old;
    req.store = &store_.get();
    req.now_unix = 1700000000;
    return Admit(req, obj);
  }
  // Admits `obj` as a create and fails the test on refusal.
  json::object Created(const ResourceInfo& res, json::object obj) {
    std::optional<AdmissionError> err = Create(res, obj);
    EXPECT_FALSE(err.has_value()) << err->message;
    return obj;
  }

  TempStore store_;
};

json::object Pod(std::string_view spec = R"({"containers":[{"name":"c","image":"nginx:1.25"}]})") {
  json::object pod = Obj(R"({"apiVersion":"v1","kind":"Pod",
      "metadata":{"name":"p","namespace":"default"}})");
  pod["spec"] = json::parse(spec);
  return pod;
}

json::object Job(std::string_view spec) {
  json::object job = Obj(R"({"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job",
      "metadata":{"name":"j","namespace":"default"}})");
  job["spec"] = json::parse(spec);
  return job;
}

constexpr std::string_view kTwoTasks = R"({"tasks":[
    {"replicas":1,"template":{"spec":{"containers":[{"name":"m","image":"img"}]}}},
    {"replicas":2,"template":{"spec":{"containers":[{"name":"w","image":"img"}]}}}]})";

std::string JobDenied(std::string_view msg) {
  return std::string("admission webhook \"validatejob.volcano.sh\" denied the request: ") +
         std::string(msg);
}

// --- Metadata ------------------------------------------------------------------------------------

TEST_F(AdmissionTest, NameIsRequired) {
  json::object pod = Pod();
  pod["metadata"].as_object().erase("name");
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 422);
  EXPECT_EQ(err->reason, "Invalid");
  EXPECT_EQ(err->message,
            "Pod \"\" is invalid: metadata.name: Required value: name or generateName is required");
  ASSERT_EQ(err->causes.size(), 1u);
  EXPECT_EQ(err->causes[0].reason, "FieldValueRequired");
  EXPECT_EQ(err->causes[0].message, "Required value: name or generateName is required");
  EXPECT_EQ(err->causes[0].field, "metadata.name");
}

TEST_F(AdmissionTest, NameMustBeDns1123Subdomain) {
  json::object pod = Pod();
  pod["metadata"].as_object()["name"] = "Web_1";
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(
      err->message,
      "Pod \"Web_1\" is invalid: metadata.name: Invalid value: \"Web_1\": a lowercase RFC "
      "1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
      "must start and end with an alphanumeric character (e.g. 'example.com', regex used "
      "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
  EXPECT_EQ(err->causes[0].reason, "FieldValueInvalid");
}

TEST_F(AdmissionTest, NamespaceNamesAreDns1123Labels) {
  json::object ns = Obj(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team.a"}})");
  auto err = Create(Namespaces(), ns);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Namespace \"team.a\" is invalid: metadata.name: Invalid value: \"team.a\": must not "
            "contain dots");
}

TEST_F(AdmissionTest, NamespacedKindsNeedANamespaceClusterScopedOnesLoseIt) {
  json::object pod = Pod();
  pod["metadata"].as_object().erase("namespace");
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, "Pod \"p\" is invalid: metadata.namespace: Required value");

  json::object node = Created(Nodes(), Obj(R"({"apiVersion":"v1","kind":"Node",
      "metadata":{"name":"n1","namespace":"default"}})"));
  EXPECT_FALSE(node["metadata"].as_object().contains("namespace"));
}

TEST_F(AdmissionTest, LabelKeysAndValuesAreChecked) {
  json::object pod = Pod();
  pod["metadata"].as_object()["labels"] = Obj(R"({"bad key":"ok","app":"-x"})");
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(
      err->message,
      "Pod \"p\" is invalid: [metadata.labels: Invalid value: \"-x\": a valid label must be an "
      "empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and "
      "end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex "
      "used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'), metadata.labels: "
      "Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' "
      "or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
      "'my.name',  or '123-abc', regex used for validation is "
      "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')]");
  ASSERT_EQ(err->causes.size(), 2u);
  EXPECT_EQ(err->causes[1].field, "metadata.labels");
}

TEST_F(AdmissionTest, OwnerReferencesNeedUid) {
  json::object pod = Pod();
  pod["metadata"].as_object()["ownerReferences"] =
      json::parse(R"([{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job","name":"j"}])");
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Pod \"p\" is invalid: metadata.ownerReferences.uid: Invalid value: \"\": uid must "
            "not be empty");
}

TEST_F(AdmissionTest, CreateInTerminatingNamespaceIsForbidden) {
  store_.Put(Namespaces(), Obj(R"({"apiVersion":"v1","kind":"Namespace",
      "metadata":{"name":"old"},"status":{"phase":"Terminating"}})"));
  json::object pod = Pod();
  pod["metadata"].as_object()["namespace"] = "old";
  auto err = Create(Pods(), pod);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 403);
  EXPECT_EQ(err->reason, "Forbidden");
  EXPECT_EQ(err->message,
            "pods \"p\" is forbidden: unable to create new content in namespace old because it "
            "is being terminated");
  ASSERT_EQ(err->causes.size(), 1u);
  EXPECT_EQ(err->causes[0].reason, "NamespaceTerminating");
}

TEST_F(AdmissionTest, UpdateKeepsSystemFieldsAndNames) {
  json::object old = Created(Pods(), Pod());
  old["metadata"].as_object()["uid"] = "u-1";
  old["metadata"].as_object()["creationTimestamp"] = "2024-01-01T00:00:00Z";

  json::object next = old;
  next["metadata"].as_object().erase("uid");
  next["metadata"].as_object()["creationTimestamp"] = "2030-01-01T00:00:00Z";
  ASSERT_FALSE(Update(Pods(), old, next));
  EXPECT_EQ(next["metadata"].as_object()["uid"], "u-1");
  EXPECT_EQ(next["metadata"].as_object()["creationTimestamp"], "2024-01-01T00:00:00Z");

  json::object renamed = old;
  renamed["metadata"].as_object()["name"] = "q";
  auto err = Update(Pods(), old, renamed);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Pod \"q\" is invalid: metadata.name: Invalid value: \"q\": field is "
            "immutable");
}

TEST_F(AdmissionTest, NoNewFinalizersWhileDeleting) {
  json::object old = Created(Pods(), Pod());
  old["metadata"].as_object()["deletionTimestamp"] = "2024-01-01T00:00:00Z";
  json::object next = old;
  next["metadata"].as_object()["finalizers"] = json::array{"example.com/x"};
  auto err = Update(Pods(), old, next);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Pod \"p\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be "
            "added if the object is being deleted, found new finalizers "
            "[]string{\"example.com/x\"}");
}

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

// --- Other core kinds ----------------------------------------------------------------------------

TEST_F(AdmissionTest, NamespaceDefaults) {
  json::object ns = Created(Namespaces(), Obj(R"({"apiVersion":"v1","kind":"Namespace",
      "metadata":{"name":"team-a"}})"));
  EXPECT_EQ(ns["status"].at("phase"), "Active");
  EXPECT_EQ(ns["spec"].at("finalizers").at(0), "kubernetes");
  EXPECT_EQ(ns["metadata"].at("labels").at("kubernetes.io/metadata.name"), "team-a");
}

TEST_F(AdmissionTest, EventsNeedAnInvolvedObjectInTheirNamespace) {
  json::object bare = Obj(R"({"apiVersion":"v1","kind":"Event",
      "metadata":{"name":"e","namespace":"default"}})");
  auto err = Create(Events(), bare);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, "Event \"e\" is invalid: involvedObject: Required value");

  json::object elsewhere = Obj(R"({"apiVersion":"v1","kind":"Event",
      "metadata":{"name":"e","namespace":"default"},
      "involvedObject":{"kind":"Pod","name":"p","namespace":"other"}})");
  err = Create(Events(), elsewhere);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "Event \"e\" is invalid: involvedObject.namespace: Invalid value: \"other\": does "
            "not match event.namespace");

  Created(Events(), Obj(R"({"apiVersion":"v1","kind":"Event",
      "metadata":{"name":"e","namespace":"default"},
      "involvedObject":{"kind":"Node","name":"n"}})"));
}

TEST_F(AdmissionTest, PriorityClassRules) {
  json::object pc = Created(PriorityClasses(), Obj(R"({"apiVersion":"scheduling.k8s.io/v1",
      "kind":"PriorityClass","metadata":{"name":"high"},"value":1000})"));
  EXPECT_EQ(pc.at("preemptionPolicy"), "PreemptLowerPriority");

  json::object missing = Obj(R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",
      "metadata":{"name":"x"}})");
  auto err = Create(PriorityClasses(), missing);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "PriorityClass.scheduling.k8s.io \"x\" is invalid: value: Required value");

  json::object huge = Obj(R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",
      "metadata":{"name":"x"},"value":1000000001})");
  err = Create(PriorityClasses(), huge);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "PriorityClass.scheduling.k8s.io \"x\" is invalid: value: Forbidden: maximum allowed "
            "value of a user defined priority is 1000000000");

  json::object system = Obj(R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",
      "metadata":{"name":"system-x"},"value":1})");
  err = Create(PriorityClasses(), system);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "PriorityClass.scheduling.k8s.io \"system-x\" is invalid: metadata.name: Forbidden: "
            "priority class names with 'system-' prefix are reserved for system use only. error: "
            "system-x is not a known system priority class");

  json::object changed = pc;
  changed["value"] = 2000;
  err = Update(PriorityClasses(), pc, changed);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "PriorityClass.scheduling.k8s.io \"high\" is invalid: value: Forbidden: may not be "
            "changed in an update.");
}

TEST_F(AdmissionTest, OnlyOneGlobalDefaultPriorityClass) {
  store_.Put(PriorityClasses(), Obj(R"({"apiVersion":"scheduling.k8s.io/v1",
      "kind":"PriorityClass","metadata":{"name":"first"},"value":1,"globalDefault":true})"));
  json::object second = Obj(R"({"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass",
      "metadata":{"name":"second"},"value":2,"globalDefault":true})");
  auto err = Create(PriorityClasses(), second);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 403);
  EXPECT_EQ(err->message,
            "priorityclasses.scheduling.k8s.io \"second\" is forbidden: PriorityClass first is "
            "already marked as default. Only one default can exist");
}

// --- Volcano Jobs --------------------------------------------------------------------------------

TEST_F(AdmissionTest, JobDefaults) {
  json::object job = Job(kTwoTasks);
  job["status"] = Obj(R"({"state":{"phase":"Running"}})");
  job = Created(Jobs(), job);
  const json::object& spec = job["spec"].as_object();
  EXPECT_EQ(spec.at("queue"), "default");
  EXPECT_EQ(spec.at("schedulerName"), "volcano");
  EXPECT_EQ(spec.at("maxRetry"), 3);
  EXPECT_EQ(spec.at("minAvailable"), 3);
  const json::array& tasks = spec.at("tasks").as_array();
  EXPECT_EQ(tasks[0].at("name"), "default0");
  EXPECT_EQ(tasks[1].at("name"), "default1");
  EXPECT_EQ(tasks[0].at("minAvailable"), 1);
  EXPECT_EQ(tasks[1].at("minAvailable"), 2);
  EXPECT_EQ(tasks[1].at("template").at("spec").at("schedulerName"), "volcano");
  EXPECT_FALSE(job.contains("status"));
}

TEST_F(AdmissionTest, JobMinAvailableFromTaskMinimums) {
  json::object job = Created(Jobs(), Job(R"({"schedulerName":"other","tasks":[
      {"name":"w","replicas":4,"minAvailable":2,
       "template":{"spec":{"schedulerName":"mine","containers":[{"name":"w","image":"i"}]}}}]})"));
  EXPECT_EQ(job["spec"].at("minAvailable"), 2);
  EXPECT_EQ(job["spec"].at("tasks").at(0).at("template").at("spec").at("schedulerName"), "mine");
}

TEST_F(AdmissionTest, JobNegativeMinAvailable) {
  json::object job = Job(R"({"minAvailable":-1,"tasks":[{"name":"a","replicas":1,
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 400);
  EXPECT_EQ(err->reason, "");
  EXPECT_EQ(err->message, JobDenied("job 'minAvailable' must be >= 0."));
}

TEST_F(AdmissionTest, JobMinAvailableAboveReplicas) {
  json::object job = Job(R"({"minAvailable":5,"tasks":[{"name":"a","replicas":2,
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            JobDenied("job 'minAvailable' should not be greater than total replicas in tasks;"));
}

TEST_F(AdmissionTest, JobNegativeReplicas) {
  json::object job = Job(R"({"minAvailable":1,"tasks":[
      {"name":"a","replicas":-1,"minAvailable":-1,
       "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}},
      {"name":"b","replicas":2,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, JobDenied("'replicas' < 0 in task: a;"));
}

TEST_F(AdmissionTest, JobTaskMinAvailableAboveReplicas) {
  json::object job = Job(R"({"minAvailable":1,"tasks":[{"name":"a","replicas":1,"minAvailable":3,
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            JobDenied("'minAvailable' is greater than 'replicas' in task: a, job: j"));
}

TEST_F(AdmissionTest, JobDuplicatedTaskName) {
  json::object job = Job(R"({"tasks":[
      {"name":"a","replicas":1,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}},
      {"name":"a","replicas":1,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, JobDenied("duplicated task name a;"));
}

TEST_F(AdmissionTest, JobTaskNamesAreDns1123Labels) {
  json::object job = Job(R"({"tasks":[{"name":"Master","replicas":1,
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message,
              HasSubstr("denied the request: [a lowercase RFC 1123 label must consist of lower "
                        "case alphanumeric characters or '-', and must start and end with an "
                        "alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                        "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')];"));
}

TEST_F(AdmissionTest, JobWithoutTasks) {
  json::object job = Job(R"({"tasks":[]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, JobDenied("No task specified in job spec"));
}

TEST_F(AdmissionTest, JobPolicyEventsAndActions) {
  json::object job = Job(R"({"policies":[{"event":"PodExploded","action":"RestartJob"}],
      "tasks":[{"name":"a","replicas":1,
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            JobDenied("1 error occurred:\n\t* spec.policies: Invalid value: \"PodExploded\": "
                      "invalid policy event\n\n valid events are [* PodPending PodFailed "
                      "PodEvicted Unknown TaskCompleted TaskFailed JobUpdated], valid actions "
                      "are [AbortJob RestartJob RestartTask RestartPod RestartPartition "
                      "TerminateJob CompleteJob ResumeJob];"));

  json::object bad_action = Job(R"({"tasks":[{"name":"a","replicas":1,
      "policies":[{"event":"PodFailed","action":"Explode"}],
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  err = Create(Jobs(), bad_action);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message, HasSubstr("spec.tasks.policies: Invalid value: \"Explode\": invalid "
                                      "policy action"));
}

TEST_F(AdmissionTest, JobQueueMustExistAndBeOpen) {
  json::object missing = Job(R"({"queue":"q","tasks":[{"name":"a","replicas":1,
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), missing);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            JobDenied("unable to find job queue: queues.scheduling.volcano.sh \"q\" not found"));

  json::object closed = Job(R"({"queue":"closed","tasks":[{"name":"a","replicas":1,
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  err = Create(Jobs(), closed);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, JobDenied("can only submit job to queue with state `Open`, queue "
                                    "`closed` status is `Closed`"));
}

TEST_F(AdmissionTest, JobTaskTemplatesAreValidatedAsPodTemplates) {
  json::object job = Job(R"({"tasks":[{"name":"a","replicas":1,
      "template":{"spec":{"containers":[{"name":"c"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            JobDenied("spec.task[0].template.spec.containers[0].image: Required value."));
}

TEST_F(AdmissionTest, JobFieldTypesFollowTheCrdSchema) {
  json::object job = Job(R"({"tasks":[{"name":"a","replicas":"3",
      "template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}]})");
  auto err = Create(Jobs(), job);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 422);
  EXPECT_EQ(err->message,
            "Job.batch.volcano.sh \"j\" is invalid: spec.tasks[0].replicas: Invalid value: "
            "\"string\": spec.tasks[0].replicas in body must be of type integer: \"string\"");
}

TEST_F(AdmissionTest, JobUpdatesMayScaleOnly) {
  json::object old = Created(Jobs(), Job(kTwoTasks));
  json::object scaled = old;
  json::object& spec = scaled["spec"].as_object();
  spec["minAvailable"] = 2;
  spec["priorityClassName"] = "high";
  spec["tasks"].as_array()[1].as_object()["replicas"] = 5;
  EXPECT_FALSE(Update(Jobs(), old, scaled));

  json::object moved = old;
  moved["spec"].as_object()["queue"] = "closed";
  auto err = Update(Jobs(), old, moved);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, JobDenied("job updates may not change fields other than "
                                    "`minAvailable`, `tasks[*].replicas under spec`"));

  json::object shrunk = old;
  shrunk["spec"].as_object()["minAvailable"] = 1;
  shrunk["spec"].as_object()["tasks"].as_array().pop_back();
  err = Update(Jobs(), old, shrunk);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, JobDenied("job updates may not add or remove tasks"));

  json::object negative = old;
  negative["spec"].as_object()["tasks"].as_array()[0].as_object()["replicas"] = -1;
  err = Update(Jobs(), old, negative);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, JobDenied("'replicas' must be >= 0 in task: default0"));

  // The status subresource is not the webhook's.
  json::object status = old;
  status["spec"].as_object()["queue"] = "elsewhere";
  EXPECT_FALSE(Update(Jobs(), old, status, "status"));
}

// `kubectl apply` of an unchanged manifest sends a custom resource a JSON merge patch whose
// `tasks` list is the manifest's, without what creation defaulted into it (task minAvailable,
// template.spec.schedulerName). The update must be allowed and store the same spec again, while a
// real change of a template field is still refused.
TEST_F(AdmissionTest, JobReapplyOfUnchangedManifestIsAllowed) {
  constexpr std::string_view kManifestSpec = R"({"minAvailable":2,"schedulerName":"volcano",
      "tasks":[{"replicas":2,"name":"trainer","template":{"spec":{"containers":[
        {"name":"trainer","image":"tf:v1"}]}}},
       {"replicas":1,"template":{"spec":{"hostNetwork":true,"containers":[
        {"name":"ps","image":"tf:v1"}]}}}]})";
  const json::object created = Created(Jobs(), Job(kManifestSpec));
  const json::object& created_spec = created.at("spec").as_object();
  ASSERT_EQ(created_spec.at("tasks").at(0).at("template").at("spec").at("schedulerName"),
            "volcano");

  auto apply = [&](std::string_view tasks) {
    absl::StatusOr<json::value> patched = api::ApplyMergePatch(
        created, json::parse(std::string(R"({"spec":{"tasks":)") + std::string(tasks) + "}}"));
    EXPECT_TRUE(patched.ok()) << patched.status();
    return patched->as_object();
  };
  const std::string manifest_tasks =
      json::serialize(json::parse(kManifestSpec).as_object().at("tasks"));

  json::object reapplied = apply(manifest_tasks);
  auto err = Update(Jobs(), created, reapplied);
  EXPECT_FALSE(err) << err->message;
  EXPECT_EQ(reapplied.at("spec"), json::value(created_spec));

  json::object new_image = apply(R"([{"replicas":2,"name":"trainer","template":{"spec":{
      "containers":[{"name":"trainer","image":"tf:v2"}]}}},{"replicas":1,"template":{"spec":{
      "hostNetwork":true,"containers":[{"name":"ps","image":"tf:v1"}]}}}])");
  err = Update(Jobs(), created, new_image);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, JobDenied("job updates may not change fields other than "
                                    "`minAvailable`, `tasks[*].replicas under spec`"));

  json::object other_scheduler = apply(R"([{"replicas":2,"name":"trainer","template":{"spec":{
      "schedulerName":"default-scheduler","containers":[{"name":"trainer","image":"tf:v1"}]}}},
      {"replicas":1,"template":{"spec":{"hostNetwork":true,"containers":[
      {"name":"ps","image":"tf:v1"}]}}}])");
  err = Update(Jobs(), created, other_scheduler);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message, HasSubstr("job updates may not change fields other than"));

  // Scaling through a re-apply is still allowed, and the task minimum follows the replicas as it
  // did at creation.
  json::object scaled = apply(R"([{"replicas":3,"name":"trainer","template":{"spec":{
      "containers":[{"name":"trainer","image":"tf:v1"}]}}},{"replicas":1,"template":{"spec":{
      "hostNetwork":true,"containers":[{"name":"ps","image":"tf:v1"}]}}}])");
  err = Update(Jobs(), created, scaled);
  EXPECT_FALSE(err) << err->message;
  EXPECT_EQ(scaled.at("spec").at("tasks").at(0).at("minAvailable"), 3);
}

// --- PodGroups and Queues ------------------------------------------------------------------------

TEST_F(AdmissionTest, PodGroupDefaults) {
  json::object pg = Created(PodGroups(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1",
      "kind":"PodGroup","metadata":{"name":"pg","namespace":"default"},"spec":{"minMember":2}})"));
  EXPECT_EQ(pg["spec"].at("queue"), "default");
  EXPECT_EQ(pg["status"].at("phase"), "Pending");
}

TEST_F(AdmissionTest, PodGroupQueueFromNamespaceAnnotation) {
  store_.Put(Queues(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",
      "metadata":{"name":"team"},"spec":{"weight":1},"status":{"state":"Open"}})"));
  store_.Put(Namespaces(), Obj(R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ns1",
      "annotations":{"scheduling.volcano.sh/queue-name":"team"}}})"));
  json::object pg = Created(PodGroups(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1",
      "kind":"PodGroup","metadata":{"name":"pg","namespace":"ns1"},"spec":{}})"));
  EXPECT_EQ(pg["spec"].at("queue"), "team");
}

TEST_F(AdmissionTest, PodGroupRefusals) {
  json::object negative = Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"PodGroup",
      "metadata":{"name":"pg","namespace":"default"},"spec":{"minMember":-1}})");
  auto err = Create(PodGroups(), negative);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 422);
  EXPECT_EQ(err->message,
            "PodGroup.scheduling.volcano.sh \"pg\" is invalid: spec.minMember: Invalid value: "
            "-1: spec.minMember in body should be greater than or equal to 0");

  json::object closed = Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"PodGroup",
      "metadata":{"name":"pg","namespace":"default"},"spec":{"queue":"closed"}})");
  err = Create(PodGroups(), closed);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 400);
  EXPECT_EQ(err->message,
            "admission webhook \"validatepodgroup.volcano.sh\" denied the request: can only "
            "submit PodGroup to queue with state `Open`, queue `closed` status is `Closed`.");

  json::object missing = Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"PodGroup",
      "metadata":{"name":"pg","namespace":"default"},"spec":{"queue":"q"}})");
  err = Create(PodGroups(), missing);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "admission webhook \"validatepodgroup.volcano.sh\" denied the request: unable to "
            "find queue: queues.scheduling.volcano.sh \"q\" not found");
}

TEST_F(AdmissionTest, QueueDefaults) {
  json::object q = Created(Queues(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1",
      "kind":"Queue","metadata":{"name":"team-a"},"spec":{},"status":{"state":"Closed"}})"));
  EXPECT_EQ(q["spec"].at("weight"), 1);
  EXPECT_EQ(q["spec"].at("reclaimable"), true);
  EXPECT_EQ(q["status"].at("state"), "Open");
}

TEST_F(AdmissionTest, QueueWeightAndState) {
  json::object negative = Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",
      "metadata":{"name":"q"},"spec":{"weight":-2}})");
  auto err = Create(Queues(), negative);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 400);
  EXPECT_EQ(err->message,
            "admission webhook \"validatequeue.volcano.sh\" denied the request: "
            "requestBody.spec.weight: Invalid value: -2: queue weight must be a positive "
            "integer");

  json::object huge = Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",
      "metadata":{"name":"q"},"spec":{"weight":70000}})");
  err = Create(Queues(), huge);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 422);
  EXPECT_EQ(err->message,
            "Queue.scheduling.volcano.sh \"q\" is invalid: spec.weight: Invalid value: 70000: "
            "spec.weight in body should be less than or equal to 65535");

  json::object old = Created(Queues(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1",
      "kind":"Queue","metadata":{"name":"q"},"spec":{"weight":2}})"));
  json::object zero = old;
  zero["spec"].as_object()["weight"] = 0;
  err = Update(Queues(), old, zero);
  ASSERT_TRUE(err);
  EXPECT_THAT(err->message, HasSubstr("requestBody.spec.weight: Invalid value: 0: queue weight "
                                      "must be a positive integer"));

  json::object odd_state = old;
  odd_state["status"].as_object()["state"] = "Paused";
  err = Update(Queues(), old, odd_state);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            "admission webhook \"validatequeue.volcano.sh\" denied the request: "
            "requestBody.spec.state: Invalid value: \"Paused\": queue state must be in [Open "
            "Closed]");
  // The controller moves the state through the status subresource.
  EXPECT_FALSE(Update(Queues(), old, odd_state, "status"));
}

}  // namespace
}  // namespace muster::apiserver
