#pragma once

// From one cycle's decisions (core::CycleResult) to the API writes that carry them out, as
// Volcano's scheduler cache and job updater make them, but writing only what changed:
//   - binds: one Binding per pod, grouped by gang (posted together, all or none in-process),
//     carrying the pod's UID and, for pods given GPUs, annotation muster.dev/gpu-indices;
//   - evictions: Volcano's Evict event, the pod's Ready=False condition (reason Evict), then a
//     graceful delete;
//   - pod PodScheduled=False conditions (reason Unschedulable or Schedulable, the core's
//     message), only where the pod does not already say so;
//   - PodGroup status (phase, conditions by type, running/succeeded/failed) and Queue status
//     (PodGroup counts by phase, allocated resources), only where they differ from the object;
//     a waiting gang's estimated start (estimates.h) as a condition of muster's own type,
//     `Estimated`, beside Volcano's Unschedulable one, whose message stays Volcano's;
//   - Events with Volcano's reasons and texts (source "volcano"), or kube-scheduler's texts and
//     source for default-scheduler pods; an event identical to the last one recorded for the
//     same object is not repeated (kube's event correlator would only bump its count).
// What was just written is remembered (WriteMemo) until the object's next version arrives, so a
// write is not repeated while the watch catches up.
//
// Pure functions over the cluster view (which they only read); the scheduler executes the plan.

#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/model.h"
#include "client/client.h"
#include "core/cluster.h"
#include "core/framework/cycle_result.h"

namespace muster::scheduler {

// --- binds -------------------------------------------------------------------------------------

struct GangBinding {
  std::string job;  // the core job's key, ns/name
  std::vector<client::Binding> bindings;
};

// The cycle's binds grouped by job, jobs in the order of their first bind.
std::vector<GangBinding> PlanBinds(const core::CycleResult& result, core::Cluster& cluster);

// kube-scheduler's wording of the core's fit error: "0/2 nodes are available: 2 Insufficient
// nvidia.com/gpu." where Volcano says "unavailable". Other texts are returned unchanged.
std::string KubeSchedulerMessage(const std::string& message);

// --- what objects say, for comparison (times and transition IDs aside) -------------------------

struct ConditionView {
  std::string type, status, reason, message;
  bool operator==(const ConditionView&) const = default;
};

struct PodGroupStatusView {
  std::string phase;
  int32_t running = 0, succeeded = 0, failed = 0;
  std::vector<ConditionView> conditions;
  bool operator==(const PodGroupStatusView&) const = default;
};
PodGroupStatusView ViewOf(const api::PodGroupStatus& status);

struct PodScheduledView {
  std::string status, reason, message, nominated_node;
  bool operator==(const PodScheduledView&) const = default;
};
// The pod's PodScheduled condition and nominated node; nullopt when it has no such condition.
std::optional<PodScheduledView> PodScheduledOf(const api::Pod& pod);

struct QueueStatusView {
  int32_t pending = 0, running = 0, inqueue = 0, unknown = 0, completed = 0;
  std::map<std::string, int64_t> allocated;  // resource -> milli units, zeros left out
  bool operator==(const QueueStatusView&) const = default;
};
QueueStatusView ViewOf(const api::QueueStatus& status);

// --- memo of what was written ------------------------------------------------------------------

template <typename View>
struct Written {
  View view;
  std::string resource_version;  // of the object the write returned
};

struct WriteMemo {
  std::unordered_map<std::string, Written<PodScheduledView>> pods;          // ns/name
  std::unordered_map<std::string, Written<PodGroupStatusView>> pod_groups;  // ns/name
  std::unordered_map<std::string, Written<QueueStatusView>> queues;         // name
  // "Pod ns/name" or "PodGroup ns/name" -> reason + '\n' + message of the last event recorded.
  std::unordered_map<std::string, std::string> last_event;

  // A version of the object newer than the one written arrived: from now on the object itself
  // says what is there.
  void SawPod(const std::string& key, const std::string& resource_version);
  void SawPodGroup(const std::string& key, const std::string& resource_version);
  void SawQueue(const std::string& name, const std::string& resource_version);
  void ForgetPod(const std::string& key);
  void ForgetPodGroup(const std::string& key);
};

// True when resource version `a` is newer than `b`. Versions are opaque to clients, but every
// API server muster talks to (its own, etcd's) issues increasing integers; anything else counts
// as newer.
bool NewerVersion(const std::string& a, const std::string& b);

// --- status, evictions and events --------------------------------------------------------------

struct PodConditionWrite {
  std::string ns, name;
  std::string patch;  // strategic merge patch of the status subresource
  PodScheduledView view;
};

struct PodGroupStatusWrite {
  std::string ns, name;
  std::string patch;  // merge patch of the status subresource
  PodGroupStatusView view;
};

struct QueueStatusWrite {
  std::string name;
  std::string patch;  // merge patch of the status subresource
  QueueStatusView view;
};

struct Eviction {
  std::string ns, name, uid;
  std::string reason;
  std::string status_patch;  // Ready=False, reason Evict (strategic merge, status subresource)
};

struct CycleWrites {
  std::vector<Eviction> evictions;
  std::vector<PodConditionWrite> pod_conditions;
  std::vector<PodGroupStatusWrite> pod_groups;
  std::vector<client::EventRecord> events;
};

// What the scheduler last said about a waiting gang (estimates.h): its reason, and its estimated
// start (unix seconds) where there is one.
struct GangEstimate {
  std::optional<int64_t> start;
  std::string reason;
};

// The PodGroup condition type that carries a GangEstimate; reason StartEstimated or NoEstimate.
inline constexpr char kEstimatedCondition[] = "Estimated";

// A GangEstimate as that condition (lastTransitionTime left to the caller).
api::Condition EstimateCondition(const GangEstimate& e);

struct PlanContext {
  std::string source = "volcano";     // the component Volcano's events name
  std::string now;                    // RFC 3339, for lastTransitionTime
  std::set<std::string> bound;        // pods the API bound this cycle
  std::set<std::string> failed_jobs;  // jobs whose binds the API refused this cycle
  std::set<std::string> dirty_jobs;   // jobs whose pods changed since the last cycle
  // The waiting gangs' estimates by job key: a PodGroup planned here gets its Estimated
  // condition from it, or loses it where the gang has none. Null: conditions of that type are
  // left as they are.
  const std::map<std::string, GangEstimate>* estimates = nullptr;
};

// Everything but the binds, once the binds' outcome is known. Records the events it plans in
// memo.last_event; reads the rest of the memo.
CycleWrites PlanWrites(const core::CycleResult& result, core::Cluster& cluster,
                       const PlanContext& context, WriteMemo& memo);

// Queue status for every queue the API knows, where it changed.
std::vector<QueueStatusWrite> PlanQueueStatus(const core::Cluster& cluster, const WriteMemo& memo);

}  // namespace muster::scheduler
