#pragma once

// Why a gang waits and when it will start: `muster explain`, the scheduler's estimated-start
// annotation and the replay report's longest wait all ask this one function.
//
// Rationale. Volcano answers "why pending" with a count of unschedulable tasks and nobody gives a
// start time. The engine already knows what a user wants to hear: whether enqueue admits the
// gang (which queue or cluster resource is short, by how much), which running pods stand in its
// way on the nodes it may use, and when those pods are expected to end
// (muster.dev/expected-runtime, as allocate's reservations plan with, reserve.h). So:
//
//   - admission: the gang's PodGroup still Pending is a refusal by enqueue; the shortfall is its
//     minResources (or its pods' requests) against the cluster's free resources and the queue's
//     capability less what the queue has allocated;
//   - placement: the minimal blocking set, the fewest running pods on nodes the gang may use
//     (node affinity, node selector, taints; other predicates are not considered) whose end would
//     let the gang's waiting pods fit now, found greedily: each step removes the pod whose end
//     lets most more of the gang fit (then the one freeing most of what is short, the earliest
//     to end, the first by key), so it is minimal for gangs of one pod shape on nodes that each
//     take whole pods, and small otherwise;
//   - estimate: a forward simulation through the engine with the live configuration on a copy of
//     the cluster (Cluster::Clone): one session now, then one at each expected end of a running
//     pod (those pods leave first; after the first 32 sessions, one a minute or a twentieth of
//     the time simulated so far, whichever is longer, with the ends within it together), binds applied as the API server and kubelet would, pods
//     started in the simulation ending at their own expected runtime. Gangs that cannot be
//     placed whatever the nodes (the cluster's free resources fall short of what they still
//     need) sit a session out, so that a session costs what the gangs it might start cost. Queued jobs ahead start in
//     the order the engine gives them. A pod with no expected end is expected to run for ever;
//     when only such pods stand in the way there is no estimate, and the answer says so.
//
// Pure: no I/O, threads or clock (the caller gives the time).

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/model.h"
#include "boost/json/value.hpp"
#include "core/cluster.h"
#include "core/framework/conf.h"

namespace muster::core {

// A resource the gang asks more of than there is: quantities in Kubernetes text.
struct Shortfall {
  std::string resource;
  std::string need;
  std::string free;
  std::string short_by;
};

// A node the gang's pods may use, as it is now.
struct NodeVerdict {
  std::string node;
  std::string free;    // of `Explanation::resource`, Kubernetes text
  int fits = 0;        // how many of the gang's waiting pods fit on it now, alone
  std::vector<std::string> holders;  // pods (ns/name) holding `resource` on it
};

// Everything an explanation says, as data: text and JSON are two renderings of it (below), and a
// dashboard a third.
struct Explanation {
  std::string pod_group;  // ns/name
  std::string queue;
  // "Running" (minAvailable pods placed), "Pending" (enqueue has not admitted it), "Inqueue"
  // (admitted, its pods not yet placed), or the PodGroup's phase otherwise.
  std::string phase;
  bool started = false;
  int position = 0;  // in its queue among the gangs waiting there, 1 = first; 0 when not waiting
  int waiting_in_queue = 0;

  // Admission.
  bool admitted = false;
  std::vector<Shortfall> admission_shortfalls;
  std::string admission;  // one sentence

  // Placement.
  int pods_waiting = 0;       // pods still to place for minAvailable
  std::string pod_request;    // one pod's request, "cpu 2, memory 4Gi, nvidia.com/gpu 1"
  std::string resource;       // what the nodes are compared by: nvidia.com/gpu when asked
  std::string node_filter;    // "nodes matching ... and tolerating ..."
  int matching_nodes = 0;
  int fitting_pods = 0;       // how many of pods_waiting fit now, first fit
  std::vector<NodeVerdict> nodes;      // matching nodes, by name (at most kMaxNodesListed)
  std::vector<std::string> blocking;   // the minimal blocking set, ns/name
  bool blocked_for_ever = false;       // some blocker has no expected end
  std::string placement;  // one sentence

  // Estimate.
  std::optional<int64_t> estimated_start;  // Unix seconds
  std::string estimate;                    // one sentence

  // One line without times, for the PodGroup's condition: what a user must know and what
  // changes only when the situation does.
  std::string reason;
};

inline constexpr int kMaxNodesListed = 32;

struct ExplainOptions {
  int64_t now_unix = 0;
  // Pods the gang's controller creates once it is admitted (a Volcano Job's pods, made from its
  // tasks), for a PodGroup that has none yet; ignored when it has pods.
  std::vector<api::Pod> planned_pods;
  // Whether Explain runs the simulation; without, it leaves the estimate out (a caller that
  // estimates many gangs at once with EstimateStarts).
  bool estimate = true;
  // The simulation's bounds: sessions, and how far ahead it looks.
  int max_sessions = 400;
  int64_t horizon_seconds = 30 * 86400;
  // A running pod's expected runtime, seconds, when its own annotation gives none: the history
  // of the same job's earlier runs, as the caller knows it; -1 for none. Empty: none.
  std::function<double(const TaskInfo&)> runtime_history;
};

// Explains the gang of PodGroup `pod_group` (ns/name). NotFound when the cluster has no such
// PodGroup.
absl::StatusOr<Explanation> Explain(const Cluster& cluster, const SchedulerConf& conf,
                                    const std::string& pod_group, const ExplainOptions& options);

// The forward simulation alone, for many gangs at once (the live scheduler's annotations): the
// Unix second each of `pod_groups` is expected to start, absent for those with no estimate
// within the options' bounds. A gang counts as started once minAvailable of its pods are bound,
// or, having no pods and no planned ones, once enqueue admits it (its controller then makes them).
std::map<std::string, int64_t> EstimateStarts(const Cluster& cluster, const SchedulerConf& conf,
                                              const std::vector<std::string>& pod_groups,
                                              const ExplainOptions& options);

// Renderings: the text `muster explain` prints, and the JSON of -o json (and yaml).
std::string ExplanationText(const Explanation& e);
boost::json::value ExplanationJson(const Explanation& e);

}  // namespace muster::core
