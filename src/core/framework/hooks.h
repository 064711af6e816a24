#pragma once

// The callbacks plugins register with a session, one type per hook, and their results: Volcano's
// function types (pkg/scheduler/api/types.go: ValidateResult, Status; the *Fn types), its
// EventHandler (pkg/scheduler/framework/event.go) and the per-hook maps of session.go.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster.h"

namespace muster::core {

struct ValidateResult {
  bool pass = true;
  std::string reason;
  std::string message;
};

struct PredicateStatus {
  bool ok = true;
  // Unresolvable failures (affinity, taints) cannot be cured by evicting pods.
  bool unresolvable = false;
  int reason = -1;  // FitReasons id when !ok
};

using JobOrderFn = std::function<int(const JobInfo&, const JobInfo&)>;
using QueueOrderFn = std::function<int(const QueueInfo&, const QueueInfo&)>;
using VictimQueueOrderFn =
    std::function<int(const QueueInfo&, const QueueInfo&, const QueueInfo& preemptor)>;
using TaskOrderFn = std::function<int(const TaskInfo&, const TaskInfo&)>;
using PredicateFn = std::function<PredicateStatus(const TaskInfo&, const NodeInfo&)>;
using NodeOrderFn = std::function<double(const TaskInfo&, const NodeInfo&)>;
// Adds each node's score to `scores` (same order as `nodes`).
using BatchNodeOrderFn = std::function<void(const TaskInfo&, const std::vector<const NodeInfo*>&,
                                            std::vector<double>& scores)>;
// The devices of `node` that a task allocated there takes (indices), or empty to leave the choice
// to the engine (Cluster::ChooseGpus). Called only for a task that asks for GPUs and fits the
// node's idle resources and devices.
using GpuChoiceFn = std::function<std::vector<int>(const TaskInfo&, const NodeInfo&)>;
using JobBoolFn = std::function<bool(const JobInfo&)>;
using JobVoteFn = std::function<int(const JobInfo&)>;
using JobValidFn = std::function<std::optional<ValidateResult>(const JobInfo&)>;
using JobEnqueuedFn = std::function<void(const JobInfo&)>;
using QueueBoolFn = std::function<bool(const QueueInfo&)>;
using QueueTaskBoolFn = std::function<bool(const QueueInfo&, const TaskInfo&)>;
// Returns the acceptable victims and a vote (kAbstain means "no opinion").
using VictimsFn = std::function<std::pair<std::vector<const TaskInfo*>, int>(
    const TaskInfo& preemptor, const std::vector<const TaskInfo*>& preemptees)>;

// Where a gang with a network topology may land (allocate's hypernode-aware path): HyperNodes in
// gradients, lowest tier first. allocate tries each HyperNode of a gradient in turn, keeps the
// best-scoring one that takes the whole gang (HyperNodeOrderFn), and goes to the next gradient
// only when none did; when no gradient does, the job waits with `unfit_reason`. Volcano's
// HyperNodeGradientForJobFn (pkg/scheduler/framework/session_plugins.go).
struct HyperNodeGradient {
  std::vector<std::vector<const HyperNodeInfo*>> tiers;
  std::string unfit_reason;
  // Hard mode: the gang lands within one HyperNode of `allowed` or not at all. `allowed` holds
  // every HyperNode it may land in (tier and the nodes it already has pods on), whatever room
  // they have now: where a reservation for the gang is planned (reserve.h).
  bool hard = false;
  std::vector<const HyperNodeInfo*> allowed;
};
// nullopt for a job without a network topology: it is placed on any nodes.
using HyperNodeGradientFn = std::function<std::optional<HyperNodeGradient>(const JobInfo&)>;
// Adds each HyperNode's score for the job to `scores` (same order as `hypernodes`), all of which
// take the gang. Volcano's HyperNodeOrderFn.
using HyperNodeOrderFn = std::function<void(
    const JobInfo&, const std::vector<const HyperNodeInfo*>&, std::vector<double>& scores)>;

struct EventHandler {
  std::function<void(const TaskInfo&)> on_allocate;
  std::function<void(const TaskInfo&)> on_deallocate;
};

// A hook's callbacks by plugin name, resolved once per session into the tiers' order with the
// plugin's enable flag applied, so that combining them on a hot path does no lookups.
template <typename Fn>
struct Hook {
  const char* flag = nullptr;  // nullptr: always on
  std::map<std::string, Fn> fns;
  std::vector<std::vector<const Fn*>> tiers;
  bool resolved = false;
};

}  // namespace muster::core
