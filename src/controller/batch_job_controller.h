#pragma once

// The batch/v1 Job controller: kube-controller-manager's Job controller (pkg/controller/job) and
// TTL-after-finished controller for Kubernetes' own Jobs, running through a client::Client beside
// the Volcano job controller (job_controller.h), whose Jobs are another kind.
//
// Informers on Jobs and pods trigger syncs keyed by Job; a sync reads the Job and the pods it
// controls (controller ownerReference with its uid, never by name) fresh from the API server, runs
// the state machine (batch_job_state.h) and carries the plan out: the interim status
// (uncountedTerminatedPods), the job-tracking finalizers removed, pods deleted and created (with
// SuccessfulCreate "Created pod: x" and SuccessfulDelete "Deleted pod: x" on the Job), the final
// status, the Job's events (Completed, BackoffLimitExceeded, DeadlineExceeded, Suspended,
// Resumed, ...), all as component "job-controller". A Job whose pods form a gang (batch_job_pods.h)
// gets its PodGroup before its first pod, built as the PodGroup controller builds one for a
// controller's pods (podgroup_controller.h) with the gang's minMember. A refused write syncs the
// Job again with backoff. Finished Jobs with ttlSecondsAfterFinished are deleted (Foreground,
// uid precondition) once it has passed. Pods that still carry the finalizer after their Job is
// gone (or was replaced by another of its name) lose it, so that they can go.
//
// `muster up` runs it (cmd/cluster.h). On a Kubernetes cluster kube-controller-manager runs
// Kubernetes' Job controller, so `muster controller` does not.
//
// Lifecycle: construct, Start(), Stop() (or destroy). The Client must outlive the controller.
// Thread-safety: Start, Stop and WaitIdle may be called from any thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/client.h"
#include "controller/controller.h"

namespace muster::controller {

struct BatchJobControllerOptions {
  int workers = 4;
  std::chrono::milliseconds backoff_base{5};
  std::chrono::milliseconds backoff_max{30000};
  // Seconds since the epoch; the wall clock when unset (tests may fix it).
  std::function<int64_t()> now_unix;
  // The delay before a failed pod is replaced, doubled with each failure in a row (kube's
  // DefaultJobPodFailureBackOff, 10 s).
  int64_t pod_failure_backoff_seconds = 10;
  // The scheduler names whose pods may form gangs (PodGroupControllerOptions::scheduler_names).
  std::vector<std::string> scheduler_names = {"volcano", "muster"};
  // Events' source.component, as kube-controller-manager's Job controller names its recorder.
  std::string component = "job-controller";
};

// The batch/v1 Job controller: every Job present is synced once at Start.
std::unique_ptr<Controller> NewBatchJobController(client::Client& client,
                                                  BatchJobControllerOptions options = {});

}  // namespace muster::controller
