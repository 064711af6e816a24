#include "api/json_codec.h"

#include <array>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "api/json_parse.h"
#include "api/testing/json.h"
#include "api/yaml.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::api {
namespace {

using boost::json::value;
using ::testing::ElementsAre;
using ::testing::Pair;

Quantity Q(std::string_view text) {
  absl::StatusOr<Quantity> quantity = Quantity::Parse(text);
  EXPECT_TRUE(quantity.ok()) << quantity.status();
  return quantity.value_or(Quantity());
}

using test::Json;

// The objects of a scenario's `objects:` list, as YAML.
std::vector<value> ObjectsIn(std::string_view yaml) {
  absl::StatusOr<std::vector<value>> documents = ParseYamlDocuments(yaml);
  EXPECT_TRUE(documents.ok()) << documents.status();
  if (!documents.ok() || documents->size() != 1 || !documents->front().is_array()) {
    ADD_FAILURE() << "expected one YAML list";
    return {};
  }
  const boost::json::array& list = documents->front().get_array();
  return std::vector<value>(list.begin(), list.end());
}

// Shapes from the seed scenarios (conformance/seed/*.yaml, conformance/volcano/*.yaml).
constexpr std::string_view kSeedObjects = R"(
- {apiVersion: v1, kind: Node,
   metadata: {name: gpu-node-a, labels: {node.kubernetes.io/instance-type: g4dn.xlarge,
                                         topology.kubernetes.io/zone: ap-southeast-1c}},
   spec: {taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]},
   status: {allocatable: {cpu: "4", memory: 15Gi, pods: "29", nvidia.com/gpu: "1"}}}
- {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, metadata: {name: ml-queue},
   spec: {weight: 1}, status: {state: Open}}
- {apiVersion: scheduling.volcano.sh/v1beta1, kind: PodGroup,
   metadata: {name: gang-tf-job, namespace: default},
   spec: {minMember: 2, queue: ml-queue,
          minResources: {cpu: "4", memory: 8Gi, nvidia.com/gpu: "2"}},
   status: {phase: Inqueue}}
- {apiVersion: v1, kind: Pod,
   metadata: {name: gang-tf-job-trainer-0, namespace: default,
              annotations: {scheduling.k8s.io/group-name: gang-tf-job,
                            volcano.sh/task-spec: trainer}},
   spec: {schedulerName: volcano,
          tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}],
          affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{matchExpressions: [{key: node.kubernetes.io/instance-type,
              operator: In, values: [g4dn.xlarge, g4dn.2xlarge, g5.xlarge]}]}]}}},
          containers: [{name: trainer, image: akash202k/tf-volcano-demo:v1,
                        resources: {requests: {cpu: "2", memory: 4Gi, nvidia.com/gpu: "1"},
                                    limits: {cpu: "2", memory: 4Gi, nvidia.com/gpu: "1"}}}]},
   status: {phase: Pending}}
- {apiVersion: v1, kind: Pod, metadata: {name: blocker, namespace: default},
   spec: {nodeName: gpu-node-a,
          tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}],
          containers: [{name: stress, image: nvidia/cuda:11.0-base, command: [/bin/sh],
                        args: [-c, sleep 60], resources: {requests: {nvidia.com/gpu: "1"}}}]},
   status: {phase: Running}}
- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: high}, value: 100}
- {apiVersion: scheduling.volcano.sh/v1beta1, kind: PodGroup, metadata: {name: pg1, namespace: c1},
   spec: {minMember: 2, queue: c1, minTaskMember: {master: 1, worker: 1}},
   status: {phase: Inqueue}}
- {apiVersion: v1, kind: Pod,
   metadata: {name: preemptee2, namespace: c1,
              labels: {volcano.sh/preemptable: "true", test: test},
              annotations: {scheduling.k8s.io/group-name: pg1}},
   spec: {schedulerName: volcano, nodeName: n1, priority: 100,
          affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [
            {labelSelector: {matchLabels: {volcano.sh/preemptable: "true", test: test}},
             topologyKey: kubernetes.io/hostname}]}},
          containers: [{name: c, resources: {requests: {cpu: "1", memory: "1G"}}}]},
   status: {phase: Running}}
)";

TEST(JsonCodecTest, DecodesTheSeedObjects) {
  const std::vector<value> objects = ObjectsIn(kSeedObjects);
  ASSERT_EQ(objects.size(), 8u);
  std::vector<Object> decoded;
  for (const value& json : objects) {
    absl::StatusOr<Object> object = DecodeObject(json);
    ASSERT_TRUE(object.ok()) << object.status() << " in " << boost::json::serialize(json);
    decoded.push_back(*std::move(object));
  }

  const Node& node = std::get<Node>(decoded[0]);
  EXPECT_EQ(node.meta.name, "gpu-node-a");
  EXPECT_EQ(node.meta.labels.at("topology.kubernetes.io/zone"), "ap-southeast-1c");
  ASSERT_EQ(node.spec.taints.size(), 1u);
  EXPECT_EQ(node.spec.taints[0].key, "nvidia.com/gpu");
  EXPECT_EQ(node.spec.taints[0].value, "present");
  EXPECT_EQ(node.spec.taints[0].effect, "NoSchedule");
  EXPECT_THAT(node.status.allocatable,
              ElementsAre(Pair("cpu", Q("4")), Pair("memory", Q("15Gi")),
                          Pair("nvidia.com/gpu", Q("1")), Pair("pods", Q("29"))));
  EXPECT_TRUE(node.status.capacity.empty());

  const Queue& queue = std::get<Queue>(decoded[1]);
  EXPECT_EQ(queue.meta.name, "ml-queue");
  EXPECT_EQ(queue.spec.weight, 1);
  EXPECT_EQ(queue.status.state, "Open");

  const PodGroup& gang = std::get<PodGroup>(decoded[2]);
  EXPECT_EQ(gang.meta.namespace_, "default");
  EXPECT_EQ(gang.spec.min_member, 2);
  EXPECT_EQ(gang.spec.queue, "ml-queue");
  ASSERT_TRUE(gang.spec.min_resources.has_value());
  EXPECT_EQ(gang.spec.min_resources->at(kGpuResource), Q("2"));
  EXPECT_EQ(gang.spec.min_resources->at("memory"), Q("8Gi"));
  EXPECT_EQ(gang.status.phase, "Inqueue");

  const Pod& trainer = std::get<Pod>(decoded[3]);
  EXPECT_EQ(trainer.meta.annotations.at(kGroupNameAnnotation), "gang-tf-job");
  EXPECT_EQ(trainer.meta.annotations.at(kTaskSpecKey), "trainer");
  EXPECT_EQ(trainer.spec.scheduler_name, "volcano");
  ASSERT_EQ(trainer.spec.tolerations.size(), 1u);
  EXPECT_EQ(trainer.spec.tolerations[0].op, "Exists");
  EXPECT_EQ(trainer.spec.tolerations[0].effect, "NoSchedule");
  EXPECT_FALSE(trainer.spec.tolerations[0].toleration_seconds.has_value());
  ASSERT_TRUE(trainer.spec.affinity.has_value());
  ASSERT_TRUE(trainer.spec.affinity->node_affinity.has_value());
  EXPECT_FALSE(trainer.spec.affinity->pod_affinity.has_value());
  const auto& required = trainer.spec.affinity->node_affinity->required;
  ASSERT_TRUE(required.has_value());
  ASSERT_EQ(required->size(), 1u);
  ASSERT_EQ((*required)[0].match_expressions.size(), 1u);
  EXPECT_EQ((*required)[0].match_expressions[0].key, "node.kubernetes.io/instance-type");
  EXPECT_EQ((*required)[0].match_expressions[0].op, "In");
  EXPECT_THAT((*required)[0].match_expressions[0].values,
              ElementsAre("g4dn.xlarge", "g4dn.2xlarge", "g5.xlarge"));
  ASSERT_EQ(trainer.spec.containers.size(), 1u);
  const Container& container = trainer.spec.containers[0];
  EXPECT_EQ(container.image, "akash202k/tf-volcano-demo:v1");
  EXPECT_EQ(container.resources.requests.at("cpu"), Q("2"));
  EXPECT_EQ(container.resources.requests.at("memory").Value(), int64_t{4} << 30);
  EXPECT_EQ(container.resources.limits.at(kGpuResource), Q("1"));
  EXPECT_EQ(trainer.status.phase, "Pending");
  EXPECT_TRUE(trainer.spec.node_name.empty());
  EXPECT_FALSE(trainer.spec.priority.has_value());

  const Pod& blocker = std::get<Pod>(decoded[4]);
  EXPECT_EQ(blocker.spec.node_name, "gpu-node-a");
  EXPECT_THAT(blocker.spec.containers[0].command, ElementsAre("/bin/sh"));
  EXPECT_THAT(blocker.spec.containers[0].args, ElementsAre("-c", "sleep 60"));
  EXPECT_EQ(blocker.status.phase, "Running");

  const PriorityClass& high = std::get<PriorityClass>(decoded[5]);
  EXPECT_EQ(high.meta.name, "high");
  EXPECT_EQ(high.value, 100);
  EXPECT_FALSE(high.global_default);

  const PodGroup& roles = std::get<PodGroup>(decoded[6]);
  EXPECT_THAT(roles.spec.min_task_member, ElementsAre(Pair("master", 1), Pair("worker", 1)));
  EXPECT_FALSE(roles.spec.min_resources.has_value());

  const Pod& preemptee = std::get<Pod>(decoded[7]);
  EXPECT_EQ(preemptee.meta.labels.at(kPreemptableKey), "true");
  EXPECT_EQ(preemptee.spec.priority, 100);
  const PodAffinity& anti = *preemptee.spec.affinity->pod_anti_affinity;
  ASSERT_EQ(anti.required.size(), 1u);
  EXPECT_EQ(anti.required[0].topology_key, "kubernetes.io/hostname");
  ASSERT_TRUE(anti.required[0].label_selector.has_value());
  EXPECT_THAT(anti.required[0].label_selector->match_labels,
              ElementsAre(Pair("test", "test"), Pair("volcano.sh/preemptable", "true")));
  EXPECT_FALSE(anti.required[0].namespace_selector.has_value());
  EXPECT_EQ(preemptee.spec.containers[0].resources.requests.at("memory").Value(), 1'000'000'000);

  // Encoding and decoding again changes nothing.
  for (const Object& object : decoded) {
    const value encoded = EncodeObject(object);
    absl::StatusOr<Object> again = DecodeObject(encoded);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(again->index(), object.index());
    EXPECT_EQ(EncodeObject(*again), encoded);
  }
}

// Every field of every kind, in canonical form: decoding then encoding gives the same JSON back,
// so each field survives the trip into the model and out again under the same name.
constexpr std::array kEveryField = {
    R"({"apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "trainer-0", "generateName": "trainer-", "namespace": "ml", "uid": "u-1",
    "resourceVersion": "42", "generation": 3, "creationTimestamp": "2026-01-02T03:04:05Z",
    "deletionTimestamp": "2026-01-02T04:04:05Z",
    "labels": {"app": "tf", "volcano.sh/task-spec": "trainer"},
    "annotations": {"scheduling.k8s.io/group-name": "gang"},
    "ownerReferences": [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "gang",
      "uid": "u-0", "controller": true, "blockOwnerDeletion": true}],
    "finalizers": ["muster.io/cleanup"]},
  "spec": {
    "initContainers": [{"name": "init", "image": "busybox", "command": ["sh", "-c"],
      "args": ["true"], "resources": {"requests": {"cpu": "4"}}}],
    "containers": [{"name": "trainer", "image": "tf:v1", "command": ["python"],
      "args": ["train.py", "--epochs=3"], "workingDir": "/app",
      "env": [{"name": "RANK", "value": "0"}, {"name": "EMPTY"}],
      "resources": {"limits": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"},
                    "requests": {"cpu": "1500m", "memory": "4Gi", "nvidia.com/gpu": "1"}}}],
    "restartPolicy": "OnFailure", "terminationGracePeriodSeconds": 30,
    "nodeSelector": {"gpu": "a100"}, "nodeName": "node-1", "hostname": "trainer-0",
    "subdomain": "gang",
    "affinity": {
      "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
          {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                 "values": ["g4dn.xlarge", "g5.xlarge"]}],
           "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["bad"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10,
          "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}]},
      "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector":
          {"matchLabels": {"app": "tf"}}, "namespaces": ["ml"],
          "topologyKey": "topology.kubernetes.io/zone"}],
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": {
          "labelSelector": {"matchExpressions": [{"key": "tier", "operator": "In",
                                                  "values": ["cache"]}]},
          "topologyKey": "kubernetes.io/hostname", "namespaceSelector": {}}}]},
      "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector":
          {"matchLabels": {"role": "worker"}}, "topologyKey": "kubernetes.io/hostname",
          "namespaceSelector": {"matchLabels": {"team": "ml"}}}]}},
    "schedulerName": "volcano",
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
      {"key": "node.kubernetes.io/unreachable", "operator": "Equal", "value": "x",
       "effect": "NoExecute", "tolerationSeconds": 300}],
    "priorityClassName": "high", "priority": 100, "preemptionPolicy": "Never",
    "overhead": {"cpu": "250m"},
    "topologySpreadConstraints": [{"maxSkew": 2, "topologyKey": "zone",
      "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "tf"}},
      "minDomains": 3}]},
  "status": {"phase": "Running",
    "conditions": [{"type": "PodScheduled", "status": "True",
      "lastTransitionTime": "2026-01-02T03:04:06Z", "reason": "Scheduled", "message": "ok"}],
    "message": "m", "reason": "r", "nominatedNodeName": "node-2", "hostIP": "10.0.0.1",
    "podIP": "10.1.0.5", "startTime": "2026-01-02T03:04:07Z"}})",
    R"({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "gpu-node-a"},
  "spec": {"unschedulable": true,
    "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
  "status": {"capacity": {"cpu": "4", "memory": "15Gi", "nvidia.com/gpu": "1", "pods": "29"},
    "allocatable": {"cpu": "3800m", "memory": "14Gi", "nvidia.com/gpu": "1", "pods": "29"},
    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}})",
    R"({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
  "metadata": {"name": "gang", "namespace": "ml"},
  "spec": {"minMember": 2, "minTaskMember": {"ps": 1, "worker": 2}, "queue": "ml-queue",
    "priorityClassName": "high",
    "minResources": {"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"},
    "networkTopology": {"mode": "hard", "highestTierAllowed": 1, "highestTierName": "rack"}},
  "status": {"phase": "Running",
    "conditions": [{"type": "Scheduled", "status": "True", "transitionID": "t-1",
      "lastTransitionTime": "2026-01-02T03:04:05Z", "reason": "tasks in gang are ready",
      "message": "m"}],
    "running": 2, "succeeded": 1, "failed": 1}})",
    R"({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
  "metadata": {"name": "ml-queue"},
  "spec": {"weight": 3, "capability": {"cpu": "8", "nvidia.com/gpu": "4"}, "reclaimable": false,
    "guarantee": {"resource": {"cpu": "2"}}, "deserved": {"cpu": "4"}, "parent": "root",
    "priority": 5},
  "status": {"state": "Open", "unknown": 1, "pending": 2, "running": 3, "inqueue": 4,
    "completed": 5, "allocated": {"cpu": "2", "memory": "1Gi"}}})",
    R"({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
  "metadata": {"name": "high"}, "value": 1000, "globalDefault": true, "description": "d",
  "preemptionPolicy": "Never"})",
    R"({"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode",
  "metadata": {"name": "spine-0"},
  "spec": {"tier": 2, "tierName": "spine", "members": [
    {"type": "HyperNode", "selector": {"exactMatch": {"name": "rack-0"}}},
    {"type": "Node", "selector": {"regexMatch": {"pattern": "^gpu-[0-9]+$"}}},
    {"type": "Node", "selector": {"labelMatch": {"matchLabels": {"rack": "r9"},
      "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}}]},
  "status": {"nodeCount": 5}})",
};

TEST(JsonCodecTest, EveryFieldRoundTrips) {
  for (const char* text : kEveryField) {
    const value golden = Json(text);
    absl::StatusOr<Object> object = DecodeObject(golden);
    ASSERT_TRUE(object.ok()) << object.status();
    EXPECT_EQ(EncodeObject(*object), golden)
        << "got:  " << boost::json::serialize(EncodeObject(*object))
        << "\nwant: " << boost::json::serialize(golden);
  }
}

TEST(JsonCodecTest, DecodesEveryPodFieldIntoTheModel) {
  absl::StatusOr<Pod> pod = DecodePod(Json(kEveryField[0]));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->meta.generation, 3);
  EXPECT_EQ(pod->meta.owner_references[0].kind, "Job");
  EXPECT_TRUE(pod->meta.owner_references[0].controller);
  EXPECT_EQ(pod->spec.termination_grace_period_seconds, 30);
  EXPECT_EQ(pod->spec.containers[0].resources.requests.at("cpu").MilliValue(), 1500);
  EXPECT_EQ(pod->spec.containers[0].env[1].name, "EMPTY");
  EXPECT_EQ(pod->spec.containers[0].working_dir, "/app");
  EXPECT_EQ(pod->spec.init_containers[0].resources.requests.at("cpu"), Q("4"));
  EXPECT_EQ(pod->spec.overhead.at("cpu").MilliValue(), 250);
  const NodeAffinity& node_affinity = *pod->spec.affinity->node_affinity;
  EXPECT_EQ((*node_affinity.required)[0].match_fields[0].values[0], "bad");
  EXPECT_EQ(node_affinity.preferred[0].weight, 10);
  EXPECT_EQ(node_affinity.preferred[0].preference.match_expressions[0].op, "Exists");
  const PodAffinity& affinity = *pod->spec.affinity->pod_affinity;
  EXPECT_EQ(affinity.preferred[0].weight, 5);
  EXPECT_EQ(affinity.preferred[0].term.topology_key, "kubernetes.io/hostname");
  EXPECT_TRUE(affinity.preferred[0].term.namespace_selector.has_value());
  EXPECT_THAT(affinity.required[0].namespaces, ElementsAre("ml"));
  EXPECT_EQ(pod->spec.tolerations[1].toleration_seconds, 300);
  EXPECT_EQ(pod->spec.topology_spread_constraints[0].max_skew, 2);
  EXPECT_EQ(pod->spec.topology_spread_constraints[0].min_domains, 3);
  EXPECT_EQ(pod->status.conditions[0].reason, "Scheduled");
  EXPECT_EQ(pod->status.host_ip, "10.0.0.1");

  absl::StatusOr<Queue> queue = DecodeQueue(Json(kEveryField[3]));
  ASSERT_TRUE(queue.ok()) << queue.status();
  EXPECT_EQ(queue->spec.guarantee.at("cpu"), Q("2"));
  EXPECT_EQ(queue->spec.reclaimable, false);
  EXPECT_EQ(queue->status.inqueue, 4);
}

TEST(JsonCodecTest, QuantitiesAndIntegersMayBeNumbers) {
  absl::StatusOr<Pod> pod = DecodePod(Json(R"({"spec": {
      "priority": 7.0, "terminationGracePeriodSeconds": 9007199254740993,
      "containers": [{"resources": {"requests": {"cpu": 0.5, "nvidia.com/gpu": 1, "memory": 1e3},
                                    "limits": {"cpu": "2"}}}]}})"));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->spec.priority, 7);
  EXPECT_EQ(pod->spec.termination_grace_period_seconds, 9007199254740993);
  const ResourceList& requests = pod->spec.containers[0].resources.requests;
  EXPECT_EQ(requests.at("cpu").MilliValue(), 500);
  EXPECT_EQ(requests.at(kGpuResource), Q("1"));
  EXPECT_EQ(requests.at("memory"), Q("1k"));
}

TEST(JsonCodecTest, AbsentAndNullFieldsKeepTheModelDefaults) {
  absl::StatusOr<Pod> pod = DecodePod(Json(R"({"metadata": {"name": "p", "labels": null,
      "creationTimestamp": null},
      "spec": {"tolerations": [{"key": "k"}, null], "containers": [null],
               "topologySpreadConstraints": [{"topologyKey": "zone"}],
               "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}},
                            "podAffinity": null}},
      "unknownField": {"ignored": true}})"));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_TRUE(pod->meta.labels.empty());
  ASSERT_EQ(pod->spec.tolerations.size(), 2u);
  EXPECT_EQ(pod->spec.tolerations[0].op, "Equal");
  EXPECT_EQ(pod->spec.tolerations[1].op, "Equal");
  ASSERT_EQ(pod->spec.containers.size(), 1u);
  EXPECT_TRUE(pod->spec.containers[0].name.empty());
  EXPECT_EQ(pod->spec.topology_spread_constraints[0].max_skew, 1);
  EXPECT_EQ(pod->spec.topology_spread_constraints[0].when_unsatisfiable, "DoNotSchedule");
  // A required node affinity with no terms is present (and matches no node), unlike an absent one.
  ASSERT_TRUE(pod->spec.affinity->node_affinity->required.has_value());
  EXPECT_TRUE(pod->spec.affinity->node_affinity->required->empty());
  EXPECT_FALSE(pod->spec.affinity->pod_affinity.has_value());

  absl::StatusOr<Queue> queue = DecodeQueue(Json(R"({"metadata": {"name": "q"}})"));
  ASSERT_TRUE(queue.ok()) << queue.status();
  EXPECT_EQ(queue->spec.weight, 1);
}

TEST(JsonCodecTest, EncodingOmitsEmptyFieldsButKeepsNonZeroDefaults) {
  Pod pod;
  pod.meta.name = "p";
  EXPECT_EQ(EncodePod(pod), Json(R"({"apiVersion": "v1", "kind": "Pod",
                                     "metadata": {"name": "p"}})"));

  Queue queue;
  queue.meta.name = "q";
  EXPECT_EQ(EncodeQueue(queue), Json(R"({"apiVersion": "scheduling.volcano.sh/v1beta1",
      "kind": "Queue", "metadata": {"name": "q"}, "spec": {"weight": 1}})"));
  queue.spec.weight = 0;  // a zero weight is allowed, and differs from the default
  const value encoded = EncodeQueue(queue);
  EXPECT_EQ(encoded.at("spec"), Json(R"({"weight": 0})"));
  absl::StatusOr<Queue> decoded = DecodeQueue(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->spec.weight, 0);

  PriorityClass zero;
  zero.meta.name = "zero";
  EXPECT_EQ(EncodePriorityClass(zero), Json(R"({"apiVersion": "scheduling.k8s.io/v1",
      "kind": "PriorityClass", "metadata": {"name": "zero"}, "value": 0})"));

  Pod constrained;
  constrained.spec.tolerations.emplace_back();
  constrained.spec.affinity.emplace().node_affinity.emplace().required.emplace();
  constrained.spec.topology_spread_constraints.emplace_back();
  EXPECT_EQ(EncodePod(constrained).at("spec"), Json(R"({
      "affinity": {"nodeAffinity": {
          "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}},
      "tolerations": [{"operator": "Equal"}],
      "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "",
                                     "whenUnsatisfiable": "DoNotSchedule"}]})"));
}

TEST(JsonCodecTest, DecodeObjectDispatchesOnApiVersionAndKind) {
  absl::StatusOr<Object> object = DecodeObject(Json(R"({"apiVersion": "scheduling.k8s.io/v1",
      "kind": "PriorityClass", "metadata": {"name": "p"}, "value": 5})"));
  ASSERT_TRUE(object.ok()) << object.status();
  ASSERT_TRUE(std::holds_alternative<PriorityClass>(*object));
  EXPECT_EQ(std::get<PriorityClass>(*object).value, 5);
}

struct ErrorCase {
  std::string name;
  std::string json;
  std::string want;

  friend std::ostream& operator<<(std::ostream& out, const ErrorCase& c) { return out << c.json; }
};

class DecodeErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(DecodeErrorTest, NamesTheFieldPath) {
  absl::StatusOr<Object> object = DecodeObject(Json(GetParam().json));
  ASSERT_FALSE(object.ok());
  EXPECT_EQ(object.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(object.status().message(), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Errors, DecodeErrorTest,
    ::testing::Values(
        ErrorCase{
            "BadQuantity",
            R"({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [
                      {"resources": {"requests": {"cpu": "2x"}}}]}})",
            R"(spec.containers[0].resources.requests.cpu: quantity "2x": unknown suffix "x")"},
        ErrorCase{
            "QuantityOfWrongType",
            R"({"apiVersion": "v1", "kind": "Node", "status": {"allocatable": {"cpu": true}}})",
            "status.allocatable.cpu: expected a quantity (string or number), got bool"},
        ErrorCase{"IntegerAsString",
                  R"({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                      "spec": {"minMember": "2"}})",
                  "spec.minMember: expected an integer, got string"},
        ErrorCase{"FractionalInteger",
                  R"({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                      "spec": {"minMember": 2.5}})",
                  "spec.minMember: expected an integer, got number 2.5"},
        ErrorCase{"IntegerOutOfRange",
                  R"({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                      "spec": {"minTaskMember": {"worker": 3000000000}}})",
                  "spec.minTaskMember.worker: value 3000000000 is out of range for int32"},
        ErrorCase{"LabelValueNotString",
                  R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"labels": {"tier": 1}}})",
                  "metadata.labels.tier: expected a string, got integer"},
        ErrorCase{"ListNotArray",
                  R"({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": {}}})",
                  "spec.containers: expected an array, got object"},
        ErrorCase{"TolerationSeconds",
                  R"({"apiVersion": "v1", "kind": "Pod", "spec": {"tolerations": [{},
                      {"tolerationSeconds": "300"}]}})",
                  "spec.tolerations[1].tolerationSeconds: expected an integer, got string"},
        ErrorCase{"NestedObjectOfWrongType",
                  R"({"apiVersion": "v1", "kind": "Pod", "spec": {"affinity": {"nodeAffinity": {
                      "requiredDuringSchedulingIgnoredDuringExecution": "all"}}}})",
                  "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: "
                  "expected an object, got string"},
        ErrorCase{"DeepSelectorValue",
                  R"({"apiVersion": "v1", "kind": "Pod", "spec": {"affinity": {"nodeAffinity": {
                      "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                      {"matchExpressions": [{"key": "k", "values": ["a", 2]}]}]}}}}})",
                  "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
                  "nodeSelectorTerms[0].matchExpressions[0].values[1]: expected a string, got "
                  "integer"},
        ErrorCase{"QueueGuarantee",
                  R"({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                      "spec": {"guarantee": {"resource": {"memory": "1Qi"}}}})",
                  R"(spec.guarantee.resource.memory: quantity "1Qi": unknown suffix "Qi")"},
        ErrorCase{"BoolAsString",
                  R"({"apiVersion": "v1", "kind": "Node", "spec": {"unschedulable": "true"}})",
                  "spec.unschedulable: expected a bool, got string"},
        ErrorCase{"SpecNotObject", R"({"apiVersion": "v1", "kind": "Pod", "spec": []})",
                  "spec: expected an object, got array"},
        ErrorCase{"UnknownKind", R"({"apiVersion": "apps/v1", "kind": "Deployment"})",
                  R"(no kind "Deployment" is registered for version "apps/v1")"},
        ErrorCase{
            "KnownKindWrongVersion",
            R"({"apiVersion": "scheduling.volcano.sh/v1alpha1", "kind": "PodGroup"})",
            R"(no kind "PodGroup" is registered for version "scheduling.volcano.sh/v1alpha1")"},
        ErrorCase{"MissingKind", R"({"apiVersion": "v1", "metadata": {"name": "p"}})",
                  "kind: required to tell the object's type, but missing"},
        ErrorCase{"KindNotString", R"({"apiVersion": "v1", "kind": 3})",
                  "kind: expected a string, got integer"},
        ErrorCase{"NotAnObject", R"(["Pod"])", "expected an object, got array"}),
    [](const ::testing::TestParamInfo<ErrorCase>& info) { return info.param.name; });

TEST(JsonCodecTest, TypedDecodersCheckTheKind) {
  absl::StatusOr<Pod> pod = DecodePod(Json(R"({"apiVersion": "v1", "kind": "Node"})"));
  ASSERT_FALSE(pod.ok());
  EXPECT_EQ(pod.status().message(), R"(kind: expected "Pod", got "Node")");

  absl::StatusOr<Queue> queue = DecodeQueue(Json(R"({"apiVersion": "v1", "kind": "Queue"})"));
  ASSERT_FALSE(queue.ok());
  EXPECT_EQ(queue.status().message(),
            R"(apiVersion: expected "scheduling.volcano.sh/v1beta1", got "v1")");

  // Without apiVersion and kind the caller's choice of decoder stands.
  absl::StatusOr<Node> node = DecodeNode(Json(R"({"metadata": {"name": "n"}})"));
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->meta.name, "n");
}

// --- ParseJson ---------------------------------------------------------------------------------

std::string ParseJsonError(std::string_view text) {
  absl::StatusOr<value> parsed = ParseJson(text);
  EXPECT_FALSE(parsed.ok()) << text;
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(parsed.status().message());
}

TEST(ParseJsonTest, NumbersBeyondADoubleAreRefusedAsWrittenWithTheirPath) {
  EXPECT_EQ(ParseJsonError(R"({"x": 1e400})"),
            "json: cannot unmarshal number 1e400 into Go struct field x of type float64");
  EXPECT_EQ(ParseJsonError(R"({"spec": {"containers": [{"name": "a"}, {"x": [true, -1e999]}]}})"),
            "json: cannot unmarshal number -1e999 into Go struct field spec.containers[1].x[1] "
            "of type float64");
  // A JSON patch: the path is the patch document's.
  EXPECT_EQ(
      ParseJsonError(R"([{"op": "add", "path": "/x", "value": {"y": 2E+308}}])"),
      "json: cannot unmarshal number 2E+308 into Go struct field [0].value.y of type float64");
  EXPECT_EQ(ParseJsonError("1e400"),
            "json: cannot unmarshal number 1e400 into Go value of type float64");
}

TEST(ParseJsonTest, NumbersWithinRangeAreKeptAsBoostJsonParsesThem) {
  absl::StatusOr<value> parsed = ParseJson(
      R"({"big": 99999999999999999999999, "tiny": 1e-400, "max": 1.7976931348623157e308,
          "int": -9223372036854775808, "uint": 18446744073709551615})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const boost::json::object& o = parsed->get_object();
  // Beyond uint64, as kube's unstructured decoding: a float64.
  EXPECT_EQ(o.at("big"), value(1e23));
  EXPECT_EQ(o.at("tiny"), value(0.0));
  EXPECT_EQ(o.at("max"), value(1.7976931348623157e308));
  EXPECT_EQ(o.at("int"), value(INT64_MIN));
  EXPECT_EQ(o.at("uint"), value(UINT64_MAX));
}

TEST(ParseJsonTest, SyntaxErrorsAreBoostJsonsWords) {
  EXPECT_EQ(ParseJsonError(R"({"x": Infinity})"), "syntax error");
  EXPECT_EQ(ParseJsonError(R"({"x": 1)"), "incomplete JSON");
}

}  // namespace
}  // namespace muster::api
