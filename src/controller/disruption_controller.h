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

namespace muster::controller {

struct DisruptionControllerOptions {
  int workers = 2;
  std::chrono::milliseconds backoff_base{5};
  std::chrono::milliseconds backoff_max{30000};
  // Seconds since the epoch; the wall clock when unset (tests may fix it).
  std::function<int64_t()> now_unix;
};

class DisruptionController {
 public:
  explicit DisruptionController(client::Client& client, DisruptionControllerOptions options = {});
  ~DisruptionController();  // Stop()

  DisruptionController(const DisruptionController&) = delete;
  DisruptionController& operator=(const DisruptionController&) = delete;

  // Starts the watches, waits until their first lists are in (DeadlineExceeded after
  // `sync_timeout`, the controller then stopped) and starts the workers; every budget present is
  // synced once.
  absl::Status Start(std::chrono::milliseconds sync_timeout = std::chrono::seconds(30));
  // Stops the watches and workers; a budget being synced finishes first. Idempotent.
  void Stop();
  // Waits until no budget is queued or being synced (rechecks scheduled for later do not count);
  // false on timeout.
  bool WaitIdle(std::chrono::milliseconds timeout);

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace muster::controller
