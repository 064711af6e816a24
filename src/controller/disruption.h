#pragma once

// What kube's disruption controller (k8s.io/kubernetes pkg/controller/disruption/disruption.go)
// computes for a policy/v1 PodDisruptionBudget, as a pure function of the budget, the pods of
// its namespace and the time, so that it can be tested without a cluster; the runner that keeps
// budgets current is disruption_controller.h.
//
//   - The budget's pods: those of its namespace its selector matches (no selector: none; an
//     empty one: all).
//   - expectedPods and desiredHealthy: with an integer minAvailable, the number of pods and
//     minAvailable; with a percentage minAvailable or with maxUnavailable, the sum of the scales
//     of the pods' controllers (getExpectedScale), each found through `scale_of`, and the
//     percentage of it rounded up (minAvailable) or what maxUnavailable leaves of it (never below
//     0). Pods without a controller are left out of the sum ("UnmanagedPods"); a controller
//     without a scale fails the sync, which then allows no disruption (failSafe: condition
//     DisruptionAllowed False, reason SyncFailed, the error as its message).
//   - disruptedPods: those the eviction subresource recorded that still exist, are not being
//     deleted and were recorded less than 2 minutes ago (DeletionTimeout); the others are
//     dropped, with a NotDeleted event for those that outstayed the timeout.
//   - currentHealthy: pods not being deleted, not in disruptedPods and Ready.
//   - disruptionsAllowed: currentHealthy - desiredHealthy, but 0 when that is negative or no pod
//     is expected; the DisruptionAllowed condition True (SufficientPods) when it is positive,
//     else False (InsufficientPods); observedGeneration the budget's generation.
//
// Thread-safety: pure functions.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "boost/json/object.hpp"

namespace muster::controller {

// A pod's controller, as its controller ownerReference names it.
struct ControllerRef {
  std::string api_version;  // "batch.volcano.sh/v1alpha1"
  std::string kind;         // "Job"
  std::string name;
  std::string uid;
};

// The scale (desired replicas) of a controller in `ns`; an error when it has none (kube: "<kind
// resource> does not implement the scale subresource").
using ScaleLookup =
    std::function<absl::StatusOr<int32_t>(const ControllerRef& controller, const std::string& ns)>;

// An Event the controller records with the sync.
struct BudgetEvent {
  bool about_pod = false;  // else about the budget
  std::string pod;         // the pod's name, when about_pod
  std::string type;        // "Normal", "Warning"
  std::string reason;      // "NoPods", "UnmanagedPods", "CalculateExpectedPodCountFailed", ...
  std::string message;
};

struct BudgetSync {
  // The status the budget should have (a copy of its own, with what changed).
  boost::json::object status;
  // Whether `status` differs from the budget's: only then is it written.
  bool changed = false;
  // When to look again though nothing changes: the earliest time a disrupted pod's record runs
  // out (seconds since the epoch).
  std::optional<int64_t> recheck_unix;
  std::vector<BudgetEvent> events;
};

// disruption.go DeletionTimeout: how long an eviction's record keeps its pod out of the healthy
// count while the pod is not yet being deleted.
inline constexpr int64_t kDisruptedPodTimeoutSeconds = 120;

// The pods of `pods` (one namespace's) that the budget selects.
std::vector<const boost::json::object*> BudgetPods(const boost::json::object& budget,
                                                   const std::vector<boost::json::object>& pods);

// One sync of `budget` (trySync, and failSafe on error) over `pods` (those of other namespaces
// are passed over), at `now_unix` (seconds since the epoch).
BudgetSync SyncBudget(const boost::json::object& budget,
                      const std::vector<boost::json::object>& pods, const ScaleLookup& scale_of,
                      int64_t now_unix);

}  // namespace muster::controller
