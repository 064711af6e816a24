#include "common/go_duration.h"
#include "controller/job_state.h"

#include <algorithm>
#include <functional>
#include <map>
#include <utility>

#include "api/time.h"
#include "fmt/format.h"

namespace muster::controller {

namespace {

// Volcano's webhook defaults maxRetry to 3; a Job written past the webhook may carry 0.
int32_t MaxRetry(const JobSpec& spec) { return spec.max_retry > 0 ? spec.max_retry : 3; }

// A policy matches when one of its events is the request's (or "*"), or its exit code is.
bool Matches(const LifecyclePolicy& policy, const Request& request) {
  if (!policy.events.empty() && !request.event.empty()) {
    for (const std::string& e : policy.events) {
      if (e == request.event || e == kAnyEvent) return true;
    }
  }
  return policy.exit_code.has_value() && *policy.exit_code == request.exit_code;
}

// Returns whether the phase changed; the caller then stamps the transition.
using UpdateStatusFn = std::function<bool(JobStatus&)>;

void StampTransition(JobStatus& status, Clock::time_point now) {
  status.last_transition_time = api::FormatTime(now);
  status.conditions.push_back({status.phase, status.last_transition_time});
}

// classifyAndAddUpPodBaseOnPhase + calcPodStatus.
void Count(const PodInfo& pod, JobStatus& status) {
  const std::string& phase = pod.phase;
  std::string bucket = phase;
  if (phase == "Pending") {
    ++status.pending;
  } else if (phase == "Running") {
    ++status.running;
  } else if (phase == "Succeeded") {
    ++status.succeeded;
  } else if (phase == "Failed") {
    ++status.failed;
  } else {
    ++status.unknown;
    bucket = "Unknown";
  }
  if (!pod.task.empty()) ++status.task_status_count[pod.task][bucket];
}

void ResetCounters(JobStatus& status) {
  status.pending = status.running = status.succeeded = status.failed = 0;
  status.terminating = status.unknown = 0;
  status.task_status_count.clear();
}

std::string RunningDuration(const Job& job, Clock::time_point now) {
  std::optional<Clock::time_point> created = api::ParseTime(job.creation_timestamp);
  if (!created) return {};
  return common::FormatGoDuration(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now - *created).count());
}

std::vector<const PodInfo*> SortedPods(const std::vector<PodInfo>& pods) {
  std::vector<const PodInfo*> sorted;
  sorted.reserve(pods.size());
  for (const PodInfo& p : pods) sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(),
            [](const PodInfo* a, const PodInfo* b) { return a->name < b->name; });
  return sorted;
}

// A task whose dependsOn tasks have not started yet gets no pods (waitDependsOnTaskMeetCondition):
// a dependency is met when its Running and Succeeded pods reach its minAvailable.
bool DependenciesMet(const JobSpec& spec, const TaskSpec& task,
                     const std::map<std::string, const PodInfo*>& by_name,
                     const std::string& job_name) {
  if (task.depends_on.empty()) return true;
  const bool any = task.depends_on_iteration == "any";
  for (const std::string& dep : task.depends_on) {
    const int index = spec.FindTask(dep);
    bool met = true;
    if (index >= 0) {
      const TaskSpec& d = spec.tasks[static_cast<size_t>(index)];
      int32_t ready = 0;
      for (int i = 0; i < d.replicas; ++i) {
        auto it = by_name.find(PodName(job_name, d.name, i));
        if (it != by_name.end() && !it->second->terminating &&
            (it->second->phase == "Running" || it->second->phase == "Succeeded")) {
          ++ready;
        }
      }
      met = ready >= d.MinAvailableOrReplicas();
    }
    if (any && met) return true;
    if (!any && !met) return false;
  }
  return !any;
}

// syncJob: initiate the Job if needed, keep its objects, create missing pods once the PodGroup
// is admitted, delete pods beyond the replicas, recount, then apply `update`.
Plan Sync(const JobSnapshot& s, const UpdateStatusFn& update) {
  Plan plan;
  const Job& job = s.job;
  if (job.deleting) {
    plan.skip = true;
    return plan;
  }
  JobStatus status = job.status;
  const bool initiated = !(status.phase.empty() || status.phase == kPending);
  if (status.phase.empty()) {
    // initJobStatus
    status.phase = kPending;
    status.min_available = job.spec.min_available;
    StampTransition(status, s.now);
  }
  plan.sync_job_objects = true;
  plan.initiate = !initiated;

  const bool sync_tasks =
      s.pod_group.exists && !s.pod_group.phase.empty() && s.pod_group.phase != "Pending";
  if (s.pod_group.exists) {
    for (const std::string& message : s.pod_group.unschedulable_messages) {
      plan.events.push_back(
          {"Warning", "PodGroupPending",
           fmt::format("PodGroup {}:{} unschedulable, reason: {}", job.ns, job.name, message)});
    }
  }

  std::map<std::string, const PodInfo*> by_name;
  for (const PodInfo& p : s.pods) by_name.emplace(p.name, &p);

  ResetCounters(status);
  std::map<std::string, bool> expected;  // pod names the spec asks for
  for (size_t t = 0; t < job.spec.tasks.size(); ++t) {
    const TaskSpec& task = job.spec.tasks[t];
    const bool deps_met = DependenciesMet(job.spec, task, by_name, job.name);
    for (int i = 0; i < task.replicas; ++i) {
      std::string name = PodName(job.name, task.name, i);
      expected[name] = true;
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        if (!sync_tasks || !deps_met) continue;
        plan.create_pods.push_back({static_cast<int>(t), i, name});
        PodInfo created;
        created.name = name;
        created.task = task.name;
        created.phase = "Pending";
        Count(created, status);
        continue;
      }
      if (it->second->terminating) {
        ++status.terminating;
        continue;
      }
      Count(*it->second, status);
    }
  }
  // Pods of a task beyond its replicas (scale down).
  for (const PodInfo* pod : SortedPods(s.pods)) {
    if (expected.contains(pod->name) || job.spec.FindTask(pod->task) < 0) continue;
    if (pod->terminating) {
      ++status.terminating;
    } else if (sync_tasks) {
      plan.delete_pods.push_back(pod->name);
      ++status.terminating;
    } else {
      Count(*pod, status);
    }
  }

  status.min_available = job.spec.min_available;
  status.running_duration = RunningDuration(job, s.now);
  if (plan.initiate) {
    for (const auto& [name, args] : job.spec.plugins) {
      status.controlled_resources["plugin-" + name] = name;
    }
  }
  if (update && update(status)) StampTransition(status, s.now);
  plan.status = std::move(status);
  return plan;
}

// What KillJob / KillTarget remove.
struct KillTarget {
  bool whole_job = true;
  std::string task;  // kill only this task's pods
  std::string pod;   // kill only this pod
};

// killJob: delete the Job's pods except those `retain_finished` keeps (and, at the last retry,
// always keep finished ones), bump the version, recount, apply `update`; for the whole Job also
// remove the PodGroup and the plugins' objects.
Plan Kill(const JobSnapshot& s, bool retain_finished, const KillTarget& target,
          const UpdateStatusFn& update) {
  Plan plan;
  const Job& job = s.job;
  if (job.deleting) {
    plan.skip = true;
    return plan;
  }
  JobStatus status = job.status;
  ResetCounters(status);
  const bool last_retry = job.status.retry_count >= MaxRetry(job.spec) - 1;
  for (const PodInfo* pod : SortedPods(s.pods)) {
    if (pod->terminating) {
      ++status.terminating;
      continue;
    }
    const bool finished = pod->phase == "Succeeded" || pod->phase == "Failed";
    const bool retain = (retain_finished || last_retry) && finished;
    const bool targeted = target.whole_job || (!target.pod.empty() && pod->name == target.pod) ||
                          (target.pod.empty() && !target.task.empty() && pod->task == target.task);
    if (!retain && targeted) {
      plan.delete_pods.push_back(pod->name);
      ++status.terminating;
      continue;
    }
    Count(*pod, status);
  }
  ++status.version;
  status.running_duration = RunningDuration(job, s.now);
  if (update && update(status)) StampTransition(status, s.now);
  if (target.whole_job) {
    plan.delete_job_objects = true;
    for (const auto& [name, args] : job.spec.plugins) {
      status.controlled_resources.erase("plugin-" + name);
    }
  }
  plan.status = std::move(status);
  return plan;
}

UpdateStatusFn EnterPhase(std::string phase, bool count_retry) {
  return [phase = std::move(phase), count_retry](JobStatus& status) {
    if (count_retry) ++status.retry_count;
    status.phase = phase;
    return true;
  };
}

// Aborting, Completing, Terminating: the final phase once no pod is alive.
UpdateStatusFn WhenDrained(std::string phase) {
  return [phase = std::move(phase)](JobStatus& status) {
    if (status.terminating != 0 || status.pending != 0 || status.running != 0) return false;
    status.phase = phase;
    return true;
  };
}

bool IsRestartOfPart(const std::string& action) {
  return action == kRestartTaskAction || action == kRestartPodAction;
}

KillTarget TargetOf(const Action& action) {
  KillTarget target;
  target.whole_job = false;
  if (action.name == kRestartPodAction) {
    target.pod = action.pod;
  } else {
    target.task = action.task;
  }
  // Without a target (a command naming none) the whole Job restarts.
  if (target.pod.empty() && target.task.empty()) target.whole_job = true;
  return target;
}

// pendingState and runningState share their kill actions.
std::optional<Plan> StartedJobKills(const JobSnapshot& s, const Action& action) {
  if (action.name == kRestartJobAction) {
    return Kill(s, false, {}, EnterPhase(kRestarting, true));
  }
  if (IsRestartOfPart(action.name)) {
    return Kill(s, false, TargetOf(action), EnterPhase(kRestarting, true));
  }
  if (action.name == kAbortJobAction) return Kill(s, true, {}, EnterPhase(kAborting, false));
  if (action.name == kCompleteJobAction) {
    return Kill(s, true, {}, EnterPhase(kCompleting, false));
  }
  if (action.name == kTerminateJobAction) {
    return Kill(s, true, {}, EnterPhase(kTerminating, false));
  }
  return std::nullopt;
}

Plan PendingState(const JobSnapshot& s, const Action& action) {
  if (std::optional<Plan> plan = StartedJobKills(s, action)) return *std::move(plan);
  const int32_t min_available = s.job.spec.min_available;
  return Sync(s, [min_available](JobStatus& status) {
    if (min_available <= status.running + status.succeeded + status.failed) {
      status.phase = kRunning;
      return true;
    }
    return false;
  });
}

Plan RunningState(const JobSnapshot& s, const Action& action) {
  if (std::optional<Plan> plan = StartedJobKills(s, action)) return *std::move(plan);
  const JobSpec& spec = s.job.spec;
  return Sync(s, [&spec](JobStatus& status) {
    const int32_t replicas = spec.TotalReplicas();
    if (replicas == 0) return false;  // scaled down to zero: keep the phase
    if (spec.min_success && status.succeeded >= *spec.min_success) {
      status.phase = kCompleted;
      return true;
    }
    if (status.succeeded + status.failed != replicas) return false;
    if (spec.min_available >= spec.TotalTaskMinAvailable()) {
      for (const TaskSpec& task : spec.tasks) {
        if (!task.min_available) continue;
        auto it = status.task_status_count.find(task.name);
        if (it == status.task_status_count.end()) continue;
        auto succeeded = it->second.find("Succeeded");
        const int32_t n = succeeded == it->second.end() ? 0 : succeeded->second;
        if (n < *task.min_available) {
          status.phase = kFailed;
          return true;
        }
      }
    }
    if (spec.min_success && status.succeeded < *spec.min_success) {
      status.phase = kFailed;
    } else if (status.succeeded >= spec.min_available) {
      status.phase = kCompleted;
    } else {
      status.phase = kFailed;
    }
    return true;
  });
}

Plan RestartingState(const JobSnapshot& s, const Action& action) {
  const JobSpec& spec = s.job.spec;
  UpdateStatusFn update = [&spec](JobStatus& status) {
    if (status.retry_count >= MaxRetry(spec)) {
      status.phase = kFailed;
      return true;
    }
    if (spec.TotalReplicas() - status.terminating >= status.min_available) {
      status.phase = kPending;
      return true;
    }
    return false;
  };
  if (action.name == kSyncJobAction) return Sync(s, update);
  if (IsRestartOfPart(action.name)) return Kill(s, false, TargetOf(action), update);
  // A late RestartJob once every pod is gone only syncs: killing again would remove the
  // PodGroup the restart has just recreated.
  const bool live_pods =
      std::any_of(s.pods.begin(), s.pods.end(), [](const PodInfo& p) { return !p.terminating; });
  if (!live_pods) return Sync(s, update);
  return Kill(s, false, {}, update);
}

}  // namespace

Action ApplyPolicies(const Job& job, const Request& request) {
  if (!request.action.empty()) return {request.action, request.task, request.pod};
  if (request.event == kOutOfSyncEvent) return {kSyncJobAction, "", ""};
  if (request.job_version < job.status.version) return {kSyncJobAction, "", ""};
  auto act = [&request](const LifecyclePolicy& policy) {
    return Action{policy.action, request.task, request.pod};
  };
  if (!request.task.empty()) {
    const int t = job.spec.FindTask(request.task);
    if (t >= 0) {
      for (const LifecyclePolicy& policy : job.spec.tasks[static_cast<size_t>(t)].policies) {
        if (Matches(policy, request)) return act(policy);
      }
    }
  }
  for (const LifecyclePolicy& policy : job.spec.policies) {
    if (Matches(policy, request)) return act(policy);
  }
  return {kSyncJobAction, "", ""};
}

Plan PlanAction(const JobSnapshot& s, const Action& action) {
  const std::string& phase = s.job.status.phase;
  if (phase == kRunning) return RunningState(s, action);
  if (phase == kRestarting) return RestartingState(s, action);
  if (phase == kAborting) {
    if (action.name == kResumeJobAction) return Kill(s, true, {}, EnterPhase(kRestarting, true));
    return Kill(s, true, {}, WhenDrained(kAborted));
  }
  if (phase == kAborted) {
    if (action.name == kResumeJobAction) return Kill(s, true, {}, EnterPhase(kRestarting, true));
    return Kill(s, true, {}, nullptr);
  }
  if (phase == kCompleting) return Kill(s, true, {}, WhenDrained(kCompleted));
  if (phase == kTerminating) return Kill(s, true, {}, WhenDrained(kTerminated));
  if (phase == kCompleted || phase == kFailed || phase == kTerminated) {
    return Kill(s, true, {}, nullptr);
  }
  return PendingState(s, action);  // Pending, and a Job the controller has not seen yet
}

bool IsFinished(std::string_view phase) {
  return phase == kCompleted || phase == kFailed || phase == kTerminated;
}

std::optional<Clock::time_point> TtlDeadline(const Job& job) {
  if (!job.spec.ttl_seconds_after_finished || !IsFinished(job.status.phase)) return std::nullopt;
  std::optional<Clock::time_point> finished = api::ParseTime(job.status.last_transition_time);
  if (!finished) return std::nullopt;
  return *finished + std::chrono::seconds(*job.spec.ttl_seconds_after_finished);
}

std::string PodGroupName(const Job& job) { return fmt::format("{}-{}", job.name, job.uid); }

std::string PodName(std::string_view job, std::string_view task, int index) {
  return fmt::format("{}-{}-{}", job, task, index);
}

}  // namespace muster::controller
