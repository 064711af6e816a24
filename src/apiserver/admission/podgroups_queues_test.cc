#include "apiserver/admission/admission_test_util.h"

// Volcano PodGroup and Queue admission (podgroups.cc, queues.cc).

#include <optional>
#include <string>
#include <string_view>

#include "boost/json.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::apiserver::admission_test {
namespace {

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

TEST_F(AdmissionTest, PodGroupNetworkTopology) {
  json::object pg = Created(PodGroups(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1",
      "kind":"PodGroup","metadata":{"name":"pg","namespace":"default"},
      "spec":{"minMember":2,"networkTopology":{"highestTierAllowed":1}}})"));
  EXPECT_EQ(json::serialize(pg["spec"].at("networkTopology")),
            R"({"highestTierAllowed":1,"mode":"hard"})");

  json::object bad = Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1",
      "kind":"PodGroup","metadata":{"name":"pg","namespace":"default"},
      "spec":{"networkTopology":{"mode":"strict","highestTierAllowed":-1}}})");
  auto err = Create(PodGroups(), bad);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 422);
  EXPECT_EQ(err->message,
            "PodGroup.scheduling.volcano.sh \"pg\" is invalid: [spec.networkTopology.mode: "
            "Unsupported value: \"strict\": supported values: \"hard\", \"soft\", "
            "spec.networkTopology.highestTierAllowed: Invalid value: -1: "
            "spec.networkTopology.highestTierAllowed in body should be greater than or equal to "
            "0]");
}

TEST_F(AdmissionTest, QueueDefaults) {
  json::object q = Created(Queues(), Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1",
      "kind":"Queue","metadata":{"name":"team-a"},"spec":{},"status":{"state":"Closed"}})"));
  EXPECT_EQ(q["spec"].at("weight"), 1);
  EXPECT_EQ(q["spec"].at("reclaimable"), true);
  EXPECT_EQ(q["status"].at("state"), "Open");
}

json::object TreeQueue(const std::string& name, const std::string& spec) {
  return Obj(R"({"apiVersion":"scheduling.volcano.sh/v1beta1","kind":"Queue",)"
             R"("metadata":{"name":")" +
             name + R"("},"spec":)" + spec + R"(,"status":{"state":"Open"}})");
}

constexpr char kQueueDenied[] =
    "admission webhook \"validatequeue.volcano.sh\" denied the request: ";

TEST_F(AdmissionTest, QueueTreeRefusesCycles) {
  json::object self = TreeQueue("a", R"({"parent":"a"})");
  auto err = Create(Queues(), self);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 400);
  EXPECT_EQ(err->message, std::string(kQueueDenied) +
                              "requestBody.spec.parent: Invalid value: \"a\": queue a cannot "
                              "use itself as parent");

  store_.Put(Queues(), TreeQueue("a", R"({"weight":1,"parent":"b"})"));
  store_.Put(Queues(), TreeQueue("b", R"({"weight":1})"));
  // b under a would close the loop b -> a -> b.
  json::object old_b = TreeQueue("b", R"({"weight":1})");
  json::object b = TreeQueue("b", R"({"weight":1,"parent":"a"})");
  err = Update(Queues(), old_b, b);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, std::string(kQueueDenied) +
                              "requestBody.spec.parent: Invalid value: \"a\": queue b cannot "
                              "have parent a: the parents form a cycle (b -> a -> b)");

  json::object orphan = TreeQueue("c", R"({"parent":"nope"})");
  err = Create(Queues(), orphan);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, std::string(kQueueDenied) +
                              "requestBody.spec.parent: Invalid value: \"nope\": failed to get "
                              "parent queue of queue c: queues.scheduling.volcano.sh \"nope\" "
                              "not found");
}

TEST_F(AdmissionTest, QueueTreeKeepsChildrenWithinTheirParentsGuarantee) {
  store_.Put(Queues(), TreeQueue("org", R"({"weight":1,"guarantee":{"resource":
      {"nvidia.com/gpu":"4"}},"deserved":{"nvidia.com/gpu":"8"}})"));
  Created(Queues(), TreeQueue("team-a", R"({"parent":"org","guarantee":{"resource":
      {"nvidia.com/gpu":"3"}},"deserved":{"nvidia.com/gpu":"4"}})"));
  json::object over = TreeQueue("team-x", R"({"parent":"org","guarantee":{"resource":
      {"nvidia.com/gpu":"5"}},"deserved":{"nvidia.com/gpu":"5"}})");
  auto err = Create(Queues(), over);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 400);
  EXPECT_EQ(err->message,
            std::string(kQueueDenied) +
                "requestBody.spec.guarantee.resource: Invalid value: \"{nvidia.com/gpu: 5}\": "
                "parent queue org validation failed: sum of children's guarantee "
                "({nvidia.com/gpu: 5}) exceeds parent's guarantee limit ({nvidia.com/gpu: 4})");
}

// validateResourceQuantityOfQueue: on any queue, guarantee <= deserved <= capability per
// resource, and GPU counts whole and not negative.
TEST_F(AdmissionTest, QueueTreeKeepsDeservedBetweenGuaranteeAndCapability) {
  json::object below = TreeQueue("q", R"({"guarantee":{"resource":{"nvidia.com/gpu":"2"}},
      "deserved":{"nvidia.com/gpu":"1"}})");
  auto err = Create(Queues(), below);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 400);
  EXPECT_EQ(err->message, std::string(kQueueDenied) +
                              "requestBody.spec.deserved.nvidia.com/gpu: Invalid value: \"1\": "
                              "deserved[nvidia.com/gpu]=1 must be >= guarantee[nvidia.com/gpu]=2");

  json::object undeserved = TreeQueue("q", R"({"guarantee":{"resource":{"cpu":"500m"}}})");
  err = Create(Queues(), undeserved);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, std::string(kQueueDenied) +
                              "requestBody.spec.deserved.cpu: Invalid value: \"<nil>\": "
                              "deserved[cpu] must be >= guarantee[cpu]=500m");

  json::object above = TreeQueue("q", R"({"capability":{"memory":"4Gi"},
      "deserved":{"memory":"8Gi"}})");
  err = Create(Queues(), above);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, std::string(kQueueDenied) +
                              "requestBody.spec.deserved.memory: Invalid value: \"8Gi\": "
                              "deserved[memory]=8Gi must be <= capability[memory]=4Gi");

  json::object odd = TreeQueue("q", R"({"capability":{"nvidia.com/gpu":"-1"},
      "deserved":{"nvidia.com/gpu":"500m"}})");
  err = Create(Queues(), odd);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message,
            std::string(kQueueDenied) +
                "[requestBody.spec.capability.nvidia.com/gpu: Invalid value: \"-1\": must be "
                "greater than or equal to 0, requestBody.spec.deserved.nvidia.com/gpu: Invalid "
                "value: \"500m\": must be an integer, requestBody.spec.deserved.nvidia.com/gpu: "
                "Invalid value: \"500m\": deserved[nvidia.com/gpu]=500m must be <= "
                "capability[nvidia.com/gpu]=-1]");

  // Within those bounds, and with a resource only capped, the queue is admitted.
  Created(Queues(), TreeQueue("q", R"({"guarantee":{"resource":{"nvidia.com/gpu":2}},
      "deserved":{"nvidia.com/gpu":2,"cpu":"8"},"capability":{"nvidia.com/gpu":4}})"));
}

// validateChildAgainstAncestor and validateChildrenConstraints: a capability within the nearest
// ancestor's that caps the resource, and a parent never capped below one of its descendants.
TEST_F(AdmissionTest, QueueTreeKeepsACapabilityWithinItsAncestors) {
  store_.Put(Queues(), TreeQueue("lab", R"({"weight":1,"capability":{"nvidia.com/gpu":"2"}})"));
  store_.Put(Queues(), TreeQueue("group", R"({"weight":1,"parent":"lab"})"));
  json::object over = TreeQueue("team-c", R"({"parent":"group",
      "capability":{"nvidia.com/gpu":"4","cpu":"64"}})");
  auto err = Create(Queues(), over);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 400);
  EXPECT_EQ(err->message, std::string(kQueueDenied) +
                              "requestBody.spec.capability.nvidia.com/gpu: Invalid value: \"4\": "
                              "queue team-c capability[nvidia.com/gpu]=4 exceeds its ancestor's "
                              "capability=2 (queue lab)");

  json::object within = TreeQueue("team-c", R"({"parent":"group",
      "capability":{"nvidia.com/gpu":"2","cpu":"64"}})");
  EXPECT_FALSE(Create(Queues(), within));
  store_.Put(Queues(), within);

  // Nor may the parent's capability shrink below what a descendant may use.
  json::object old_lab = TreeQueue("lab", R"({"weight":1,"capability":{"nvidia.com/gpu":"2"}})");
  json::object shrunk = TreeQueue("lab", R"({"weight":1,"capability":{"nvidia.com/gpu":"1"}})");
  err = Update(Queues(), old_lab, shrunk);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, std::string(kQueueDenied) +
                              "requestBody.spec.capability.nvidia.com/gpu: Invalid value: \"1\": "
                              "queue lab capability[nvidia.com/gpu]=1 is smaller than its "
                              "descendants' max capability=2");
  json::object grown = TreeQueue("lab", R"({"weight":1,"capability":{"nvidia.com/gpu":"3"}})");
  EXPECT_FALSE(Update(Queues(), old_lab, grown));
}

// validateQueueDepth: at most five levels below root.
TEST_F(AdmissionTest, QueueTreeRefusesTreesDeeperThanFiveLevels) {
  std::string parent = "root";
  for (const char* name : {"l1", "l2", "l3", "l4", "l5"}) {
    json::object q = TreeQueue(name, R"({"weight":1,"parent":")" + parent + R"("})");
    EXPECT_FALSE(Create(Queues(), q)) << name;
    store_.Put(Queues(), q);
    parent = name;
  }
  json::object deep = TreeQueue("l6", R"({"parent":"l5"})");
  auto err = Create(Queues(), deep);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 400);
  EXPECT_EQ(err->message, std::string(kQueueDenied) +
                              "requestBody.spec.parent: Invalid value: \"l5\": queue l6 exceeds "
                              "the maximum allowed depth of 5");
}

// validateHierarchicalQueue: a leaf queue whose jobs hold pods (status.allocated.pods, as the
// scheduler writes it) does not become a parent, since its jobs would then sit in an inner queue.
TEST_F(AdmissionTest, QueueTreeKeepsALeafWithRunningPodsALeaf) {
  json::object busy = TreeQueue("team-a", R"({"weight":1})");
  busy["status"].as_object()["allocated"] = json::object{{"nvidia.com/gpu", "4"}, {"pods", "4"}};
  store_.Put(Queues(), busy);
  store_.Put(Queues(), TreeQueue("idle", R"({"weight":1})"));
  json::object sub = TreeQueue("sub", R"({"parent":"team-a"})");
  auto err = Create(Queues(), sub);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 400);
  EXPECT_EQ(err->message, std::string(kQueueDenied) +
                              "requestBody.spec.parent: Invalid value: \"team-a\": queue team-a "
                              "cannot be the parent queue of queue sub because it has allocated "
                              "Pods: 4");
  json::object under_idle = TreeQueue("sub", R"({"parent":"idle"})");
  EXPECT_FALSE(Create(Queues(), under_idle));
}

// --enable-root-queue-protection, on by default: root's shares cannot change once it exists.
TEST_F(AdmissionTest, QueueTreeKeepsTheRootQueuesResources) {
  json::object old_root = TreeQueue("root", R"({"weight":1,"reclaimable":false})");
  json::object capped = TreeQueue("root", R"({"weight":1,"reclaimable":false,
      "capability":{"nvidia.com/gpu":"8"}})");
  auto err = Update(Queues(), old_root, capped);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 400);
  EXPECT_EQ(err->message, std::string(kQueueDenied) +
                              "requestBody.spec.capability: Forbidden: root queue's resource "
                              "attributes (capability, deserved, guarantee) cannot be modified");
  json::object heavier = TreeQueue("root", R"({"weight":3,"reclaimable":false})");
  EXPECT_FALSE(Update(Queues(), old_root, heavier));
}

// validateQueueDeleting: a queue other queues hang from stays.
TEST_F(AdmissionTest, QueueTreeRefusesDeletingAQueueWithChildren) {
  store_.Put(Queues(), TreeQueue("org", R"({"weight":1})"));
  store_.Put(Queues(), TreeQueue("team-b", R"({"weight":1,"parent":"org"})"));
  store_.Put(Queues(), TreeQueue("team-a", R"({"weight":1,"parent":"org"})"));
  auto err = AdmitQueueDelete(&store_.get(), "org");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->code, 400);
  EXPECT_EQ(err->message, std::string(kQueueDenied) +
                              "queue org can not be deleted because it has 2 child queues: "
                              "team-a, team-b");
  EXPECT_FALSE(AdmitQueueDelete(&store_.get(), "team-a"));
  err = AdmitQueueDelete(&store_.get(), "root");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->message, std::string(kQueueDenied) + "`root` queue can not be deleted");
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
}  // namespace muster::apiserver::admission_test
