#pragma once

// The Volcano Job state machine, as a pure function: given a Job, its pods, its PodGroup and what
// happened (a Request), decide the action (lifecycle policies) and then what to do about it (a
// Plan: pods to create and delete, the PodGroup and plugin objects to keep or remove, the status
// to write, events to record). The JobController carries plans out against the API.
//
// Rationale. This follows vc-controller-manager (pkg/controllers/job: applyPolicies, state/*.go,
// syncJob, killJob) so that Jobs move through the same phases with the same counters:
//   - Pending   --running+succeeded+failed >= minAvailable--> Running
//   - Pending, Running --RestartJob/RestartTask/RestartPod--> Restarting (retryCount+1)
//   - Pending, Running --AbortJob/TerminateJob/CompleteJob--> Aborting/Terminating/Completing
//   - Running   --succeeded >= minSuccess, or every pod finished--> Completed or Failed
//   - Restarting --retryCount >= maxRetry--> Failed; --replicas-terminating >= minAvailable-->
//     Pending
//   - Aborting/Completing/Terminating --no pending, running or terminating pods-->
//     Aborted/Completed/Terminated; Aborting, Aborted --ResumeJob--> Restarting
//   - Completed, Failed, Terminated, Aborted: final; pods still pending or running are killed,
//     finished ones kept.
// "Sync" creates a Job's missing pods only once its PodGroup has left Pending (the scheduler's
// enqueue admitted it), so no pod exists before the gang can be placed. "Kill" deletes pods (all,
// or all but finished ones; at the last retry finished ones are always kept), bumps
// status.version (so events from the killed pods are recognised as stale) and, for the whole
// Job, removes the PodGroup and the plugins' objects so that a restart starts from scratch.
// Where Volcano counts pods before its creates and deletes land, the plan counts them as if they
// succeeded (created pods as Pending, deleted ones as terminating), exactly as syncJob does.
//
// Determinism: the same inputs (including `now`) give the same plan; pods are visited in name
// order.

#include <string>
#include <vector>

#include "controller/job.h"

namespace muster::controller {

// Events (bus/v1alpha1 Event).
inline constexpr char kAnyEvent[] = "*";
inline constexpr char kPodFailedEvent[] = "PodFailed";
inline constexpr char kPodEvictedEvent[] = "PodEvicted";
inline constexpr char kPodPendingEvent[] = "PodPending";
inline constexpr char kJobUnknownEvent[] = "Unknown";
inline constexpr char kTaskCompletedEvent[] = "TaskCompleted";
inline constexpr char kTaskFailedEvent[] = "TaskFailed";
inline constexpr char kOutOfSyncEvent[] = "OutOfSync";
inline constexpr char kCommandIssuedEvent[] = "CommandIssued";
inline constexpr char kJobUpdatedEvent[] = "JobUpdated";

// Actions (bus/v1alpha1 Action).
inline constexpr char kAbortJobAction[] = "AbortJob";
inline constexpr char kRestartJobAction[] = "RestartJob";
inline constexpr char kRestartTaskAction[] = "RestartTask";
inline constexpr char kRestartPodAction[] = "RestartPod";
inline constexpr char kTerminateJobAction[] = "TerminateJob";
inline constexpr char kCompleteJobAction[] = "CompleteJob";
inline constexpr char kResumeJobAction[] = "ResumeJob";
inline constexpr char kSyncJobAction[] = "SyncJob";

// Something that happened to a Job (apis.Request).
struct Request {
  std::string event;  // one of the events above; "" for a PodGroup phase change
  std::string task;   // the task of the pod concerned
  std::string pod;    // the pod concerned (RestartPod's target)
  int32_t exit_code = 0;
  int32_t job_version = 0;  // the pod's volcano.sh/job-version
  std::string action;       // an explicit action (a command), overriding the policies

  bool operator==(const Request&) const = default;
};

struct Action {
  std::string name;  // kSyncJobAction, kRestartJobAction, ...
  std::string task;  // RestartTask's target task
  std::string pod;   // RestartPod's target pod

  bool operator==(const Action&) const = default;
};

// applyPolicies: an explicit action wins; OutOfSync and requests from an older job version sync;
// otherwise the first policy of the request's task, then of the Job, whose events include the
// request's event (or "*"), or whose exitCode equals the request's, gives the action; else sync.
Action ApplyPolicies(const Job& job, const Request& request);

// The PodGroup the controller keeps for the Job, as last seen.
struct PodGroupState {
  bool exists = false;
  std::string phase;  // "", Pending, Inqueue, Running, Unknown, Completed
  // Messages of its Unschedulable conditions.
  std::vector<std::string> unschedulable_messages;
};

// Everything the state machine looks at.
struct JobSnapshot {
  Job job;
  std::vector<PodInfo> pods;  // the pods the Job controls
  PodGroupState pod_group;
  Clock::time_point now;
};

struct PodToCreate {
  int task = 0;   // index into spec.tasks
  int index = 0;  // replica index: the pod is <job>-<task>-<index>
  std::string name;

  bool operator==(const PodToCreate&) const = default;
};

struct PlannedEvent {
  std::string type;  // Normal or Warning
  std::string reason;
  std::string message;

  bool operator==(const PlannedEvent&) const = default;
};

// What one action does. The controller carries it out in this order: plugin objects (create /
// update), the PodGroup, pod creates, pod deletes, plugin objects (delete), the status, the
// PodGroup delete. A failed step stops the rest (the request is retried); the status is written
// only when every earlier step succeeded.
struct Plan {
  bool skip = false;  // the Job is being deleted: nothing to do
  // Sync: create or update the plugins' objects (initiate: as on job add, before the Job
  // has started; otherwise as on job update) and create or update the PodGroup.
  bool sync_job_objects = false;
  bool initiate = false;
  std::vector<PodToCreate> create_pods;
  std::vector<std::string> delete_pods;
  // KillJob: remove the plugins' objects and the PodGroup.
  bool delete_job_objects = false;
  JobStatus status;
  std::vector<PlannedEvent> events;
};

// The plan for `action` on the Job in its current phase.
Plan PlanAction(const JobSnapshot& snapshot, const Action& action);

// The time the Job is to be deleted (status.state.lastTransitionTime + ttlSecondsAfterFinished)
// when it has finished (Completed, Failed, Terminated) and sets a TTL; nullopt otherwise.
std::optional<Clock::time_point> TtlDeadline(const Job& job);

// Whether the phase is final for TTL purposes (Volcano's garbage collector).
bool IsFinished(std::string_view phase);

// The PodGroup's name for a Job: "<job>-<job uid>" (Volcano >= 1.9).
std::string PodGroupName(const Job& job);
// jobhelpers.MakePodName: "<job>-<task>-<index>".
std::string PodName(std::string_view job, std::string_view task, int index);

}  // namespace muster::controller
