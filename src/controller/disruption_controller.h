#pragma once

// The disruption controller: kube-controller-manager's (k8s.io/kubernetes
// pkg/controller/disruption), keeping every policy/v1 PodDisruptionBudget's status current so
// that the eviction subresource (apiserver/write_evict.cc) knows how many pods may go:
// currentHealthy, desiredHealthy, expectedPods, disruptionsAllowed, disruptedPods,
// observedGeneration and the DisruptionAllowed condition, as disruption.h computes them.
//
// Informers on pods and budgets feed a work queue keyed by budget: a budget is synced when it
// changes, when a pod of its namespace changes, and again when a disrupted pod's record runs out.
// A status write refused (a conflict with an eviction that just spent the budget) is retried with
// backoff from the informer's newer copy. Events are recorded on the budget (NoPods,
// UnmanagedPods, CalculateExpectedPodCountFailed) and on pods (NotDeleted) when a sync writes a
// status, as component "controllermanager".
//
// `muster up` runs it (cmd/cluster.h); on a real cluster kube-controller-manager does this, so
// `muster controller` does not. The kinds muster serves have no scale subresource, so a budget
// with maxUnavailable or a percentage minAvailable over pods with a controller fails its sync as
// kube's does ("<resource> does not implement the scale subresource") and allows no disruption:
// use an integer minAvailable.
//
// Lifecycle: construct, Start(), Stop() (or destroy). The Client must outlive the controller.
// Thread-safety: Start, Stop and WaitIdle may be called from any thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/status/status.h"
#include "client/client.h"
#include "controller/controller.h"

namespace muster::controller {

struct DisruptionControllerOptions {
  int workers = 2;
  std::chrono::milliseconds backoff_base{5};
  std::chrono::milliseconds backoff_max{30000};
  // Seconds since the epoch; the wall clock when unset (tests may fix it).
  std::function<int64_t()> now_unix;
};

// The disruption controller: every budget present is synced once at Start.
std::unique_ptr<Controller> NewDisruptionController(client::Client& client,
                                                    DisruptionControllerOptions options = {});

}  // namespace muster::controller
