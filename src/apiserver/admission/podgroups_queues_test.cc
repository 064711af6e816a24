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
