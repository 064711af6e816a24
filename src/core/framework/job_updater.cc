#include "core/framework/job_updater.h"

#include <string>
#include <unordered_map>
#include <utility>

#include "core/framework/session.h"
#include "core/podgroup_phase.h"
#include "fmt/format.h"

namespace muster::core {

namespace {

// Pods terminating on the node they were placed on (not those deleted before placement).
int ScheduledReleasing(const Cluster& c, const JobInfo& j) {
  if (j.Count(TaskStatus::kReleasing) == 0) return 0;
  int n = 0;
  for (int tid : j.tasks) {
    const TaskInfo& t = c.task(tid);
    if (t.status == TaskStatus::kReleasing && t.pod && !t.pod->spec.node_name.empty()) ++n;
  }
  return n;
}

}  // namespace

bool ShortOnlyByReleasing(const Cluster& c, const JobInfo& j) {
  int releasing = ScheduledReleasing(c, j);
  if (releasing == 0) return false;
  if (j.Count(TaskStatus::kPending) > 0 || j.Count(TaskStatus::kPipelined) > 0) return false;
  int scheduled = j.Count(TaskStatus::kRunning) + j.Count(TaskStatus::kBound) +
                  j.Count(TaskStatus::kFailed) + j.Count(TaskStatus::kSucceeded);
  return scheduled + releasing >= j.min_available;
}

PodGroupPhase PhaseAtClose(const Cluster& c, const JobInfo& j, bool unschedulable) {
  if (j.Count(TaskStatus::kRunning) != 0 && unschedulable) return PodGroupPhase::kUnknown;
  int allocated = 0;
  for (int s = 0; s < kNumTaskStatus; ++s) {
    TaskStatus st = static_cast<TaskStatus>(s);
    if (IsAllocatedStatus(st) || st == TaskStatus::kSucceeded) allocated += j.count[s];
  }
  // A pod terminating on its node still holds its place in the gang; one deleted before it
  // was ever placed does not.
  int scheduled = allocated + ScheduledReleasing(c, j);
  if (scheduled >= j.min_available) {
    return j.Count(TaskStatus::kSucceeded) == scheduled ? PodGroupPhase::kCompleted
                                                        : PodGroupPhase::kRunning;
  }
  return j.phase == PodGroupPhase::kInqueue ? PodGroupPhase::kInqueue : PodGroupPhase::kPending;
}

void UpdateJobStatuses(Session& ssn) {
  const std::unordered_map<int, api::Condition>& conds = ssn.pod_group_conditions();
  for (JobInfo* j : ssn.jobs()) {
    auto cond = conds.find(j->id);
    bool unschedulable = cond != conds.end() && cond->second.type == "Unschedulable";
    // Always one of the five named phases: a text the engine has no name for is replaced.
    PodGroupPhase phase = PhaseAtClose(ssn.cluster(), *j, unschedulable);
    bool phase_changed = phase != j->phase;
    if (!phase_changed && !ssn.Touched(*j)) continue;
    j->phase = phase;
    CycleResult::PodGroupStatus st;
    st.pod_group = j->key;
    st.phase = PodGroupPhaseName(phase);
    if (cond != conds.end()) st.condition = cond->second;
    st.running = j->Count(TaskStatus::kRunning);
    st.succeeded = j->Count(TaskStatus::kSucceeded);
    st.failed = j->Count(TaskStatus::kFailed);
    ssn.result().pod_groups.push_back(std::move(st));
    if (!ssn.options().diagnostics) continue;

    bool pg_unschedulable = phase == PodGroupPhase::kUnknown || phase == PodGroupPhase::kPending ||
                            phase == PodGroupPhase::kInqueue;
    std::string job_msg;
    if (pg_unschedulable && !j->tasks.empty()) {
      job_msg = ssn.JobFitError(*j);
      ssn.result().events.push_back(
          {"PodGroup", j->key, "Warning", "Unschedulable",
           fmt::format("{}/{} tasks in gang unschedulable: {}", j->Count(TaskStatus::kPending),
                       j->tasks.size(), job_msg)});
    } else if (phase_changed && !pg_unschedulable) {
      ssn.result().events.push_back(
          {"PodGroup", j->key, "Normal", "Scheduled", "pod group is ready"});
    }
    std::string base = "all nodes are unavailable";
    if (cond != conds.end() && cond->second.type == "Unschedulable") {
      base = cond->second.message;
    }
    if (j->Count(TaskStatus::kPending) + j->Count(TaskStatus::kAllocated) +
            j->Count(TaskStatus::kPipelined) ==
        0) {
      continue;
    }
    for (int tid : j->tasks) {
      TaskInfo& t = ssn.cluster().task(tid);
      TaskStatus last = ssn.LastStatus(t);
      if (t.status != TaskStatus::kPending && t.status != TaskStatus::kAllocated &&
          t.status != TaskStatus::kPipelined) {
        continue;
      }
      CycleResult::PodCondition pc;
      pc.pod = t.key;
      const int last_node = ssn.LastNode(t);
      std::string node = last_node >= 0 ? ssn.cluster().node(last_node).name : "";
      if (last == TaskStatus::kAllocated) {
        pc.reason = "Schedulable";
        pc.message =
            fmt::format("Pod {}/{} can possibly be assigned to {}, once minAvailable is satisfied",
                        t.ns, t.name, node);
      } else if (last == TaskStatus::kPipelined) {
        pc.reason = "Unschedulable";
        pc.message = fmt::format(
            "Pod {}/{} can possibly be assigned to {}, once resource is released and "
            "minAvailable is satisfied",
            t.ns, t.name, node);
        pc.nominated_node = node;
      } else if (auto fe = ssn.task_fit_errors().find(t.id); fe != ssn.task_fit_errors().end()) {
        pc.reason = "Unschedulable";
        pc.message = fe->second.Error();
      } else {
        pc.reason = "Unschedulable";
        pc.message = base;
      }
      ssn.result().events.push_back({"Pod", t.key, "Warning", "FailedScheduling", pc.message});
      ssn.result().pod_conditions.push_back(std::move(pc));
    }
  }
}

}  // namespace muster::core
