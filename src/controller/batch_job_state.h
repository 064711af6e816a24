#pragma once

// The batch/v1 Job state machine, as a pure function: given a Job, the pods it controls and the
// time, what to do (a BatchJobPlan: pods to create and delete, finalizers to take off, the status
// to write, events to record, when to look again). The BatchJobController carries plans out.
//
// Rationale. This follows kube-controller-manager's pkg/controller/job (syncJob, manageJob,
// trackJobStatusAndRemoveFinalizers, the pod failure and success policies, backoff) so that Jobs
// move through kube's conditions with its counters, reasons and messages:
//   - Pods: at most `parallelism` active; NonIndexed Jobs make pods until `completions` succeeded
//     (without completions, until one succeeded and the rest finished); Indexed Jobs make one pod
//     per index 0..completions-1 not yet succeeded (lowest first), each with its index.
//   - Counting: a finished pod carrying the batch.kubernetes.io/job-tracking finalizer is counted
//     exactly once: first recorded in status.uncountedTerminatedPods (written before anything
//     else), then its finalizer is removed, then the counters take it (the final status). A pod
//     without the finalizer is never counted again, so a pod deleted after it finished still
//     counts, and a controller that stops between the steps counts it once on the next sync.
//     A pod being deleted that has not succeeded counts as failed (with podReplacementPolicy
//     TerminatingOrFailed, the default, its replacement comes at once; with Failed, only once it
//     is gone). Pods the controller deletes itself (excess, suspension, a finished Job) lose
//     their finalizer first and are not counted.
//   - Failure: a pod failure policy rule (FailJob, FailIndex, Ignore, Count on exit codes or pod
//     conditions), backoffLimit (failed pods, plus container restarts under OnFailure),
//     backoffLimitPerIndex and maxFailedIndexes, activeDeadlineSeconds since startTime. The Job
//     gets FailureTarget, its active pods are deleted, and once none is left it gets Failed with
//     the same reason and message, and a Warning event of that reason.
//   - Success: completions reached (CompletionsReached) or a successPolicy rule (SuccessPolicy):
//     SuccessCriteriaMet, lingering pods deleted, then Complete with completionTime, and the
//     event Completed "Job completed".
//   - Suspend: active pods deleted, Suspended=True (JobSuspended, event Suspended); resumed,
//     Suspended=False (JobResumed, event Resumed) and startTime reset to now.
//   - A pod that failed is replaced after a backoff of backoff_base * 2^(n-1) (n: failures since
//     the last success, at most 10 minutes), kube's DefaultJobPodFailureBackOff.
//
// Determinism: the same inputs give the same plan; pods are visited in name order.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "controller/batch_job.h"

namespace muster::controller {

struct BatchJobSnapshot {
  BatchJob job;
  std::vector<BatchPod> pods;  // the pods the Job controls (controller ref with its uid)
  int64_t now = 0;             // seconds since the epoch
  int64_t backoff_base_seconds = 10;
};

struct BatchPodToCreate {
  std::optional<int32_t> index;  // Indexed Jobs
  int32_t index_failures = 0;    // with backoffLimitPerIndex

  bool operator==(const BatchPodToCreate&) const = default;
};

struct BatchJobEvent {
  std::string type;  // Normal, Warning
  std::string reason;
  std::string message;

  bool operator==(const BatchJobEvent&) const = default;
};

// Carried out in this order: the interim status (uncounted pods recorded), finalizers off,
// pod deletes (finalizer off first), pod creates, the final status, events. A failed step stops
// the rest; the Job is synced again.
struct BatchJobPlan {
  // Written first when it differs from the Job's: status.uncountedTerminatedPods with the pods
  // that just finished.
  std::optional<BatchJobStatus> interim_status;
  std::vector<std::string> remove_finalizers;  // pod names
  std::vector<std::string> delete_pods;        // pod names
  std::vector<BatchPodToCreate> create_pods;
  BatchJobStatus status;  // the final status
  bool status_changed = false;
  std::vector<BatchJobEvent> events;
  // When to sync again though nothing changes (a backoff, activeDeadlineSeconds, the TTL).
  std::optional<int64_t> requeue_at;
  // ttlSecondsAfterFinished: the time the finished Job is to be deleted.
  std::optional<int64_t> delete_job_at;
};

BatchJobPlan PlanBatchJob(const BatchJobSnapshot& snapshot);

// The pod failure policy's verdict on a failed pod: the first rule whose requirement matches
// (its index in `rules`), nullopt when none does.
std::optional<size_t> MatchPodFailureRule(const std::vector<PodFailureRule>& rules,
                                          const BatchPod& pod);

}  // namespace muster::controller
