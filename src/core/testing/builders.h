#pragma once

// Object builders for scheduling-core tests, in the style of kube-scheduler's st.MakePod():
//
//   api::Node n = MakeNode("n1").Cpu("4").Memory("8Gi").Gpus(8).Label("zone", "a").Obj();
//   api::Pod p = MakePod("ns", "p-1").Group("pg").Req("cpu", "1").Gpus(1).Obj();
//   api::PodGroup pg = MakePodGroup("ns", "pg").MinMember(2).Queue("q").Obj();
//   api::Queue q = MakeQueue("q").Weight(2).Capability("cpu", "8").Obj();
//
// Quantities are Kubernetes text ("500m", "4Gi") and must parse; a typo aborts the test binary
// at the builder, where it is easy to find. Builders only fill fields; they never default
// anything the API server would not (except where a comment says so).

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/model.h"
#include "common/quantity.h"
#include "core/cluster.h"
#include "core/resources.h"

namespace muster::core::test {

inline common::Quantity Q(std::string_view text) { return common::Quantity::Parse(text).value(); }

using ResourcePairs = std::initializer_list<std::pair<std::string_view, std::string_view>>;

inline api::ResourceList List(ResourcePairs pairs) {
  api::ResourceList out;
  for (const auto& [name, qty] : pairs) out[std::string(name)] = Q(qty);
  return out;
}

// Resources from Kubernetes text, e.g. R({{"cpu", "2"}, {"memory", "1Gi"}}).
inline Resources R(ResourcePairs pairs) { return Resources::FromList(List(pairs)); }

// --- Node -------------------------------------------------------------------------------------

class NodeBuilder {
 public:
  explicit NodeBuilder(std::string name) { node_.meta.name = std::move(name); }

  NodeBuilder& Cpu(std::string_view q) { return Resource("cpu", q); }
  NodeBuilder& Memory(std::string_view q) { return Resource("memory", q); }
  NodeBuilder& Gpus(int n) { return Resource(api::kGpuResource, std::to_string(n)); }
  NodeBuilder& Pods(int n) { return Resource("pods", std::to_string(n)); }
  NodeBuilder& Resource(std::string_view name, std::string_view q) {
    node_.status.allocatable[std::string(name)] = Q(q);
    return *this;
  }
  NodeBuilder& Label(std::string key, std::string value) {
    node_.meta.labels[std::move(key)] = std::move(value);
    return *this;
  }
  NodeBuilder& Annotation(std::string key, std::string value) {
    node_.meta.annotations[std::move(key)] = std::move(value);
    return *this;
  }
  NodeBuilder& Taint(std::string key, std::string value, std::string effect) {
    node_.spec.taints.push_back({std::move(key), std::move(value), std::move(effect)});
    return *this;
  }
  NodeBuilder& Unschedulable(bool on = true) {
    node_.spec.unschedulable = on;
    return *this;
  }
  // Ready condition with status "True" or "False".
  NodeBuilder& Ready(bool ready) {
    std::erase_if(node_.status.conditions,
                  [](const api::Condition& c) { return c.type == "Ready"; });
    node_.status.conditions.push_back({"Ready", ready ? "True" : "False", "", "", "", ""});
    return *this;
  }
  // Moves what was set as allocatable to status.capacity (a node that reports only capacity).
  NodeBuilder& CapacityOnly() {
    node_.status.capacity = std::move(node_.status.allocatable);
    node_.status.allocatable.clear();
    return *this;
  }
  api::Node Obj() const { return node_; }

 private:
  api::Node node_;
};

inline NodeBuilder MakeNode(std::string name) { return NodeBuilder(std::move(name)); }

// --- Pod --------------------------------------------------------------------------------------

class PodBuilder {
 public:
  // A Pending pod for the volcano scheduler with one container "c" and no requests.
  PodBuilder(std::string ns, std::string name) {
    pod_.meta.namespace_ = std::move(ns);
    pod_.meta.name = std::move(name);
    pod_.spec.scheduler_name = "volcano";
    pod_.spec.containers.push_back({});
    pod_.spec.containers.back().name = "c";
    pod_.status.phase = "Pending";
  }

  PodBuilder& Group(std::string pod_group) {
    return Annotation(api::kGroupNameAnnotation, std::move(pod_group));
  }
  PodBuilder& Role(std::string role) { return Annotation(api::kTaskSpecKey, std::move(role)); }
  PodBuilder& Preemptable(bool on) {
    return Annotation(api::kPreemptableKey, on ? "true" : "false");
  }
  PodBuilder& Label(std::string key, std::string value) {
    pod_.meta.labels[std::move(key)] = std::move(value);
    return *this;
  }
  PodBuilder& Annotation(std::string key, std::string value) {
    pod_.meta.annotations[std::move(key)] = std::move(value);
    return *this;
  }
  PodBuilder& Uid(std::string uid) {
    pod_.meta.uid = std::move(uid);
    return *this;
  }
  PodBuilder& Created(std::string rfc3339) {
    pod_.meta.creation_timestamp = std::move(rfc3339);
    return *this;
  }
  PodBuilder& Terminating() {
    pod_.meta.deletion_timestamp = "2026-01-01T00:00:00Z";
    return *this;
  }

  // Requests and limits of the first container.
  PodBuilder& Req(std::string_view name, std::string_view q) {
    pod_.spec.containers.front().resources.requests[std::string(name)] = Q(q);
    return *this;
  }
  PodBuilder& Limit(std::string_view name, std::string_view q) {
    pod_.spec.containers.front().resources.limits[std::string(name)] = Q(q);
    return *this;
  }
  // GPUs the way manifests ask for them: in limits only.
  PodBuilder& Gpus(int n) { return Limit(api::kGpuResource, std::to_string(n)); }
  // One more app container with these requests.
  PodBuilder& Container(ResourcePairs requests) {
    api::Container c;
    c.name = "c" + std::to_string(pod_.spec.containers.size());
    c.resources.requests = List(requests);
    pod_.spec.containers.push_back(std::move(c));
    return *this;
  }
  // One more init container, with a single request or several.
  PodBuilder& InitReq(std::string_view name, std::string_view q) { return InitReq({{name, q}}); }
  PodBuilder& InitReq(ResourcePairs requests) {
    api::Container c;
    c.name = "init" + std::to_string(pod_.spec.init_containers.size());
    c.resources.requests = List(requests);
    pod_.spec.init_containers.push_back(std::move(c));
    return *this;
  }
  PodBuilder& Overhead(std::string_view name, std::string_view q) {
    pod_.spec.overhead[std::string(name)] = Q(q);
    return *this;
  }

  PodBuilder& NodeName(std::string node) {
    pod_.spec.node_name = std::move(node);
    return *this;
  }
  PodBuilder& Phase(std::string phase) {
    pod_.status.phase = std::move(phase);
    return *this;
  }
  // Shorthand: placed on `node` and running.
  PodBuilder& RunningOn(std::string node) { return NodeName(std::move(node)).Phase("Running"); }
  PodBuilder& Started(std::string rfc3339) {
    pod_.status.start_time = std::move(rfc3339);
    return *this;
  }
  // The muster.dev/expected-runtime annotation (a Go duration) that reservations plan with.
  PodBuilder& ExpectedRuntime(std::string go_duration) {
    return Annotation(kExpectedRuntimeAnnotation, std::move(go_duration));
  }
  PodBuilder& Priority(int32_t p) {
    pod_.spec.priority = p;
    return *this;
  }
  PodBuilder& PriorityClass(std::string name) {
    pod_.spec.priority_class_name = std::move(name);
    return *this;
  }
  PodBuilder& PreemptionPolicy(std::string policy) {
    pod_.spec.preemption_policy = std::move(policy);
    return *this;
  }

  PodBuilder& Toleration(std::string key, std::string op, std::string value, std::string effect) {
    api::Toleration t;
    t.key = std::move(key);
    t.op = std::move(op);
    t.value = std::move(value);
    t.effect = std::move(effect);
    pod_.spec.tolerations.push_back(std::move(t));
    return *this;
  }
  PodBuilder& NodeSelector(std::string key, std::string value) {
    pod_.spec.node_selector[std::move(key)] = std::move(value);
    return *this;
  }
  // Adds a requirement to the first required node-selector term (requirements of a term AND).
  PodBuilder& RequiredNodeAffinity(std::string key, std::string op,
                                   std::vector<std::string> values = {}) {
    api::NodeAffinity& na = MutableNodeAffinity();
    if (!na.required) na.required.emplace();
    if (na.required->empty()) na.required->emplace_back();
    na.required->front().match_expressions.push_back(
        {std::move(key), std::move(op), std::move(values)});
    return *this;
  }
  PodBuilder& PreferredNodeAffinity(int32_t weight, std::string key, std::string op,
                                    std::vector<std::string> values = {}) {
    api::PreferredSchedulingTerm term;
    term.weight = weight;
    term.preference.match_expressions.push_back({std::move(key), std::move(op), std::move(values)});
    MutableNodeAffinity().preferred.push_back(std::move(term));
    return *this;
  }
  // Required inter-pod (anti-)affinity to pods labelled key=value, per topology domain.
  PodBuilder& AntiAffinity(std::string key, std::string value, std::string topology_key) {
    auto& anti = MutableAffinity().pod_anti_affinity;
    if (!anti) anti.emplace();
    anti->required.push_back(Term(std::move(key), std::move(value), std::move(topology_key)));
    return *this;
  }
  PodBuilder& PodAffinity(std::string key, std::string value, std::string topology_key) {
    auto& affinity = MutableAffinity().pod_affinity;
    if (!affinity) affinity.emplace();
    affinity->required.push_back(Term(std::move(key), std::move(value), std::move(topology_key)));
    return *this;
  }
  // Preferred inter-pod affinity (anti = false) or anti-affinity to pods labelled key=value.
  PodBuilder& PreferredPodAffinity(int32_t weight, std::string key, std::string value,
                                   std::string topology_key, bool anti = false) {
    auto& aff = anti ? MutableAffinity().pod_anti_affinity : MutableAffinity().pod_affinity;
    if (!aff) aff.emplace();
    aff->preferred.push_back(
        {weight, Term(std::move(key), std::move(value), std::move(topology_key))});
    return *this;
  }
  PodBuilder& SpreadConstraint(int32_t max_skew, std::string topology_key, std::string key,
                               std::string value, std::string when = "DoNotSchedule") {
    api::TopologySpreadConstraint c;
    c.max_skew = max_skew;
    c.topology_key = std::move(topology_key);
    c.when_unsatisfiable = std::move(when);
    c.label_selector.emplace().match_labels[std::move(key)] = std::move(value);
    pod_.spec.topology_spread_constraints.push_back(std::move(c));
    return *this;
  }

  api::Pod Obj() const { return pod_; }

 private:
  static api::PodAffinityTerm Term(std::string key, std::string value, std::string topology_key) {
    api::PodAffinityTerm term;
    term.label_selector.emplace().match_labels[std::move(key)] = std::move(value);
    term.topology_key = std::move(topology_key);
    return term;
  }
  api::Affinity& MutableAffinity() {
    if (!pod_.spec.affinity) pod_.spec.affinity.emplace();
    return *pod_.spec.affinity;
  }
  api::NodeAffinity& MutableNodeAffinity() {
    api::Affinity& a = MutableAffinity();
    if (!a.node_affinity) a.node_affinity.emplace();
    return *a.node_affinity;
  }

  api::Pod pod_;
};

inline PodBuilder MakePod(std::string ns, std::string name) {
  return PodBuilder(std::move(ns), std::move(name));
}

// --- PodGroup ---------------------------------------------------------------------------------

class PodGroupBuilder {
 public:
  // minMember 1, queue unset (the engine reads it as "default"), phase unset (Pending).
  PodGroupBuilder(std::string ns, std::string name) {
    pg_.meta.namespace_ = std::move(ns);
    pg_.meta.name = std::move(name);
    pg_.spec.min_member = 1;
  }
  PodGroupBuilder& MinMember(int32_t n) {
    pg_.spec.min_member = n;
    return *this;
  }
  PodGroupBuilder& Queue(std::string q) {
    pg_.spec.queue = std::move(q);
    return *this;
  }
  PodGroupBuilder& Phase(std::string phase) {
    pg_.status.phase = std::move(phase);
    return *this;
  }
  PodGroupBuilder& MinTaskMember(std::string role, int32_t n) {
    pg_.spec.min_task_member[std::move(role)] = n;
    return *this;
  }
  PodGroupBuilder& MinResources(std::string_view name, std::string_view q) {
    if (!pg_.spec.min_resources) pg_.spec.min_resources.emplace();
    (*pg_.spec.min_resources)[std::string(name)] = Q(q);
    return *this;
  }
  PodGroupBuilder& PriorityClass(std::string name) {
    pg_.spec.priority_class_name = std::move(name);
    return *this;
  }
  PodGroupBuilder& Created(std::string rfc3339) {
    pg_.meta.creation_timestamp = std::move(rfc3339);
    return *this;
  }
  // spec.networkTopology: mode "hard" or "soft", and highestTierAllowed when `tier` >= 0.
  PodGroupBuilder& Topology(std::string mode, int tier = -1) {
    pg_.spec.network_topology.emplace();
    pg_.spec.network_topology->mode = std::move(mode);
    if (tier >= 0) pg_.spec.network_topology->highest_tier_allowed = tier;
    return *this;
  }
  api::PodGroup Obj() const { return pg_; }

 private:
  api::PodGroup pg_;
};

inline PodGroupBuilder MakePodGroup(std::string ns, std::string name) {
  return PodGroupBuilder(std::move(ns), std::move(name));
}

// --- Queue ------------------------------------------------------------------------------------

class QueueBuilder {
 public:
  explicit QueueBuilder(std::string name) { q_.meta.name = std::move(name); }
  QueueBuilder& Weight(int32_t w) {
    q_.spec.weight = w;
    return *this;
  }
  QueueBuilder& Capability(std::string_view name, std::string_view q) {
    q_.spec.capability[std::string(name)] = Q(q);
    return *this;
  }
  QueueBuilder& Guarantee(std::string_view name, std::string_view q) {
    q_.spec.guarantee[std::string(name)] = Q(q);
    return *this;
  }
  QueueBuilder& Deserved(std::string_view name, std::string_view q) {
    q_.spec.deserved[std::string(name)] = Q(q);
    return *this;
  }
  QueueBuilder& Parent(std::string parent) {
    q_.spec.parent = std::move(parent);
    return *this;
  }
  QueueBuilder& Reclaimable(bool on) {
    q_.spec.reclaimable = on;
    return *this;
  }
  QueueBuilder& State(std::string state) {
    q_.status.state = std::move(state);
    return *this;
  }
  QueueBuilder& Priority(int32_t p) {
    q_.spec.priority = p;
    return *this;
  }
  api::Queue Obj() const { return q_; }

 private:
  api::Queue q_;
};

inline QueueBuilder MakeQueue(std::string name) { return QueueBuilder(std::move(name)); }

// --- HyperNode --------------------------------------------------------------------------------

class HyperNodeBuilder {
 public:
  HyperNodeBuilder(std::string name, int32_t tier) {
    hn_.meta.name = std::move(name);
    hn_.spec.tier = tier;
  }
  HyperNodeBuilder& Node(std::string name) { return Exact("Node", std::move(name)); }
  HyperNodeBuilder& Child(std::string name) { return Exact("HyperNode", std::move(name)); }
  HyperNodeBuilder& Exact(std::string type, std::string name) {
    api::HyperNodeMember m;
    m.type = std::move(type);
    m.selector.exact_match.emplace();
    m.selector.exact_match->name = std::move(name);
    hn_.spec.members.push_back(std::move(m));
    return *this;
  }
  HyperNodeBuilder& Regex(std::string type, std::string pattern) {
    api::HyperNodeMember m;
    m.type = std::move(type);
    m.selector.regex_match.emplace();
    m.selector.regex_match->pattern = std::move(pattern);
    hn_.spec.members.push_back(std::move(m));
    return *this;
  }
  HyperNodeBuilder& Labels(std::string key, std::string value) {
    api::HyperNodeMember m;
    m.type = "Node";
    m.selector.label_match.emplace();
    m.selector.label_match->match_labels[std::move(key)] = std::move(value);
    hn_.spec.members.push_back(std::move(m));
    return *this;
  }
  HyperNodeBuilder& TierName(std::string name) {
    hn_.spec.tier_name = std::move(name);
    return *this;
  }
  api::HyperNode Obj() const { return hn_; }

 private:
  api::HyperNode hn_;
};

inline HyperNodeBuilder MakeHyperNode(std::string name, int32_t tier) {
  return HyperNodeBuilder(std::move(name), tier);
}

inline api::PriorityClass MakePriorityClass(std::string name, int32_t value) {
  api::PriorityClass pc;
  pc.meta.name = std::move(name);
  pc.value = value;
  return pc;
}

}  // namespace muster::core::test

namespace muster::core {

// GoogleTest prints Resources in failure messages as "cpu 1, memory 2Gi", not as bytes.
inline void PrintTo(const Resources& r, std::ostream* os) { *os << r.ToString(); }

}  // namespace muster::core
