#pragma once

// The Volcano Job controller (vc-controller-manager's job controller and the TTL part of its
// garbage collector), running against any API server through a client::Client: muster's own,
// in-process in `muster up` or over HTTP with `muster controller`, or a real kube-apiserver with
// Volcano's CRDs.
//
// It watches Volcano Jobs, the pods they control (label volcano.sh/job-name), PodGroups,
// PriorityClasses and Commands for Jobs (`vcctl job suspend|resume`, command_watch.h), turns what
// happens into requests (a pod failed with an exit code, was evicted or deleted, a task
// completed, a PodGroup changed phase, a Job was added or changed, a Command was issued: recorded
// on the Job as CommandIssued, its action overriding the lifecycle policies), and runs
// each request through the Job state machine (job_state.h): lifecycle policies pick the action,
// the plan it gives is carried out against the API (plugin objects, the PodGroup, pods, the Job's
// status), and Events are recorded on the Job as Volcano records them (ExecuteAction,
// PodGroupPending, FailedCreatePod, FailedDeletePod, PluginError, PodGroupError). A request that
// fails is retried with backoff; after `max_requeues` failures the Job is terminated, as Volcano
// does. Finished Jobs with ttlSecondsAfterFinished are deleted (Foreground propagation, UID
// precondition) once the TTL has passed since they finished.
//
// Lifecycle: construct, Start(), Stop() (or destroy). The Client must outlive the controller.
// Thread-safety: Start, Stop and WaitIdle may be called from any thread.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "client/client.h"
#include "controller/controller.h"
#include "controller/job.h"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace muster::controller {

struct JobControllerOptions {
  // Worker threads; a Job's requests always run on the same one, in order. A sync mostly waits
  // on the API server, so workers beyond the cores still help: on 2 cores, 16 against 4 took
  // bench/up_benchmark from about 1,800 to 2,300-2,500 pods bound/s (docs/benchmarks.md).
  int workers = 16;
  // Failures of one request before the Job is terminated (Volcano's --max-requeue-num).
  int max_requeues = 15;
  std::chrono::milliseconds backoff_base{5};
  std::chrono::milliseconds backoff_max{30000};
  // The wall clock for timestamps, running durations and TTLs; tests may fix it.
  std::function<Clock::time_point()> now = [] { return Clock::now(); };
  // Events' source.component, as vc-controller-manager's recorder names itself.
  std::string component = "vc-controller-manager";
  // When set, the controller records its metrics here (controller/metrics.h): Jobs by phase,
  // work queue depth, syncs and sync errors.
  std::shared_ptr<prometheus::Registry> metrics;
};

// The Volcano Job controller. Start watches Commands last, once the Jobs are known, so that none
// is taken for a Job not seen yet.
std::unique_ptr<Controller> NewJobController(client::Client& client,
                                             JobControllerOptions options = {});

}  // namespace muster::controller
