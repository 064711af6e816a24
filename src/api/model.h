#pragma once

// The Kubernetes and Volcano object model: plain typed structs for the fields muster reads and
// writes. Codecs (json_codec.h) convert between these and JSON/YAML; the scheduling core builds
// its own indexed view from them. Field names follow the Kubernetes API in snake_case.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/quantity.h"

namespace muster::api {

using common::Quantity;
using StringMap = std::map<std::string, std::string>;
// A ResourceList: resource name ("cpu", "memory", "nvidia.com/gpu") to quantity.
using ResourceList = std::map<std::string, Quantity>;

inline constexpr char kGpuResource[] = "nvidia.com/gpu";
// A share of one GPU device in thousandths (1-999), an extended resource (core/cluster.h).
inline constexpr char kGpuShareResource[] = "muster.dev/gpu-milli";
inline constexpr char kGroupNameAnnotation[] = "scheduling.k8s.io/group-name";
inline constexpr char kTaskSpecKey[] = "volcano.sh/task-spec";
inline constexpr char kPreemptableKey[] = "volcano.sh/preemptable";

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
  bool block_owner_deletion = false;
};

struct ObjectMeta {
  std::string name;
  std::string generate_name;
  std::string namespace_;  // empty for cluster-scoped kinds
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  // RFC 3339 text as Kubernetes writes it ("2026-01-02T03:04:05Z"); empty when unset.
  std::string creation_timestamp;
  std::string deletion_timestamp;
  StringMap labels;
  StringMap annotations;
  std::vector<OwnerReference> owner_references;
  std::vector<std::string> finalizers;
};

// --- Scheduling constraints ---------------------------------------------------------------------

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute

  bool operator==(const Taint&) const = default;
};

struct Toleration {
  std::string key;
  std::string op = "Equal";  // Equal or Exists
  std::string value;
  std::string effect;  // empty matches every effect
  std::optional<int64_t> toleration_seconds;

  bool operator==(const Toleration&) const = default;
};

struct LabelSelectorRequirement {
  std::string key;
  std::string op;  // In, NotIn, Exists, DoesNotExist
  std::vector<std::string> values;

  bool operator==(const LabelSelectorRequirement&) const = default;
};

struct LabelSelector {
  StringMap match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;

  bool operator==(const LabelSelector&) const = default;
};

struct NodeSelectorRequirement {
  std::string key;
  std::string op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;

  bool operator==(const NodeSelectorRequirement&) const = default;
};

struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  std::vector<NodeSelectorRequirement> match_fields;  // only metadata.name is defined

  bool operator==(const NodeSelectorTerm&) const = default;
};

struct PreferredSchedulingTerm {
  int32_t weight = 0;
  NodeSelectorTerm preference;

  bool operator==(const PreferredSchedulingTerm&) const = default;
};

struct NodeAffinity {
  // requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms (ORed); nullopt when absent.
  std::optional<std::vector<NodeSelectorTerm>> required;
  std::vector<PreferredSchedulingTerm> preferred;

  bool operator==(const NodeAffinity&) const = default;
};

struct PodAffinityTerm {
  std::optional<LabelSelector> label_selector;
  std::vector<std::string> namespaces;
  std::optional<LabelSelector> namespace_selector;
  std::string topology_key;

  bool operator==(const PodAffinityTerm&) const = default;
};

struct WeightedPodAffinityTerm {
  int32_t weight = 0;
  PodAffinityTerm term;

  bool operator==(const WeightedPodAffinityTerm&) const = default;
};

struct PodAffinity {
  std::vector<PodAffinityTerm> required;
  std::vector<WeightedPodAffinityTerm> preferred;

  bool operator==(const PodAffinity&) const = default;
};

struct Affinity {
  std::optional<NodeAffinity> node_affinity;
  std::optional<PodAffinity> pod_affinity;
  std::optional<PodAffinity> pod_anti_affinity;

  bool operator==(const Affinity&) const = default;
};

struct TopologySpreadConstraint {
  int32_t max_skew = 1;
  std::string topology_key;
  std::string when_unsatisfiable = "DoNotSchedule";  // or ScheduleAnyway
  std::optional<LabelSelector> label_selector;
  std::optional<int32_t> min_domains;

  bool operator==(const TopologySpreadConstraint&) const = default;
};

// --- Pods ---------------------------------------------------------------------------------------

struct EnvVar {
  std::string name;
  std::string value;
};

struct ResourceRequirements {
  ResourceList requests;
  ResourceList limits;
};

struct Container {
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<EnvVar> env;
  std::string working_dir;
  ResourceRequirements resources;
};

struct PodSpec {
  std::string node_name;
  std::string scheduler_name;  // empty means default-scheduler
  std::optional<int32_t> priority;
  std::string priority_class_name;
  std::string preemption_policy;  // PreemptLowerPriority (default) or Never
  StringMap node_selector;
  std::optional<Affinity> affinity;
  std::vector<Toleration> tolerations;
  std::vector<TopologySpreadConstraint> topology_spread_constraints;
  std::vector<Container> init_containers;
  std::vector<Container> containers;
  ResourceList overhead;
  std::string restart_policy;  // Always (default), OnFailure, Never
  std::optional<int64_t> termination_grace_period_seconds;
  std::string hostname;
  std::string subdomain;
};

struct Condition {
  std::string type;
  std::string status;  // True, False, Unknown
  std::string reason;
  std::string message;
  std::string last_transition_time;
  std::string transition_id;  // Volcano PodGroup conditions
};

struct PodStatus {
  std::string phase;  // Pending, Running, Succeeded, Failed, Unknown
  std::vector<Condition> conditions;
  std::string nominated_node_name;
  std::string message;
  std::string reason;
  std::string host_ip;
  std::string pod_ip;
  std::string start_time;
};

struct Pod {
  ObjectMeta meta;
  PodSpec spec;
  PodStatus status;
};

// --- Nodes --------------------------------------------------------------------------------------

struct NodeSpec {
  std::vector<Taint> taints;
  bool unschedulable = false;
};

struct NodeStatus {
  ResourceList capacity;
  ResourceList allocatable;
  std::vector<Condition> conditions;
};

struct Node {
  ObjectMeta meta;
  NodeSpec spec;
  NodeStatus status;
};

// --- Scheduling kinds ---------------------------------------------------------------------------

struct PriorityClass {
  ObjectMeta meta;
  int32_t value = 0;
  bool global_default = false;
  std::string preemption_policy;
  std::string description;
};

// spec.networkTopology of a PodGroup (and of a Volcano Job): how far apart on the network its
// pods may land. mode: "hard" (the default) or "soft"; highestTierAllowed: the highest HyperNode
// tier the gang may span; highestTierName: the same by a HyperNode's spec.tierName.
struct NetworkTopologySpec {
  std::string mode;
  std::optional<int32_t> highest_tier_allowed;
  std::string highest_tier_name;
};

struct PodGroupSpec {
  int32_t min_member = 0;
  std::map<std::string, int32_t> min_task_member;
  std::string queue;  // empty is defaulted to "default"
  std::string priority_class_name;
  std::optional<ResourceList> min_resources;
  std::optional<NetworkTopologySpec> network_topology;
};

struct PodGroupStatus {
  std::string phase;  // Pending, Inqueue, Running, Unknown, Completed
  std::vector<Condition> conditions;
  int32_t running = 0;
  int32_t succeeded = 0;
  int32_t failed = 0;
};

struct PodGroup {
  ObjectMeta meta;
  PodGroupSpec spec;
  PodGroupStatus status;
};

struct QueueSpec {
  int32_t weight = 1;
  ResourceList capability;
  std::optional<bool> reclaimable;
  ResourceList guarantee;  // spec.guarantee.resource
  ResourceList deserved;
  std::string parent;
  int32_t priority = 0;
};

struct QueueStatus {
  std::string state;  // Open, Closing, Closed, Unknown; empty counts as Open
  ResourceList allocated;
  int32_t pending = 0;
  int32_t running = 0;
  int32_t inqueue = 0;
  int32_t unknown = 0;
  int32_t completed = 0;
};

struct Queue {
  ObjectMeta meta;
  QueueSpec spec;
  QueueStatus status;
};

// --- Network topology (topology.volcano.sh/v1alpha1) -------------------------------------------

// A HyperNode member's selector: exactly one of an exact name, a regular expression over names
// (RE2, anchored as Go's regexp.MatchString is not: a match anywhere in the name counts), or a
// label selector over Node labels.
struct HyperNodeExactMatch {
  std::string name;
};
struct HyperNodeRegexMatch {
  std::string pattern;
};
struct HyperNodeMemberSelector {
  std::optional<HyperNodeExactMatch> exact_match;
  std::optional<HyperNodeRegexMatch> regex_match;
  std::optional<LabelSelector> label_match;
};
struct HyperNodeMember {
  std::string type;  // Node or HyperNode
  HyperNodeMemberSelector selector;
};
struct HyperNodeSpec {
  int32_t tier = 0;
  std::string tier_name;
  std::vector<HyperNodeMember> members;
};
struct HyperNodeStatus {
  int64_t node_count = 0;
  std::vector<Condition> conditions;
};
// A group of nodes close on the network (a rack, a spine), cluster-scoped; lower tiers are
// closer. Members are nodes or other HyperNodes of a lower tier.
struct HyperNode {
  ObjectMeta meta;
  HyperNodeSpec spec;
  HyperNodeStatus status;
};

}  // namespace muster::api
