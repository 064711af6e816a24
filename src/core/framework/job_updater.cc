#include "core/framework/job_updater.h"

#include <string>
#include <unordered_map>
#include <utility>

#include "core/framework/session.h"
#include "core/podgroup_phase.h"
#include "fmt/format.h"

namespace muster::core {

void UpdateJobStatuses(Session& ssn) {
  const std::unordered_map<int, api::Condition>& conds = ssn.pod_group_conditions();
  for (JobInfo* j : ssn.jobs()) {
    int allocated = 0;
    for (int s = 0; s < kNumTaskStatus; ++s) {
      TaskStatus st = static_cast<TaskStatus>(s);
      if (IsAllocatedStatus(st) || st == TaskStatus::kSucceeded) allocated += j->count[s];
    }
    auto cond = conds.find(j->id);
    bool unschedulable = cond != conds.end() && cond->second.type == "Unschedulable";
    // Always one of the five named phases: a text the engine has no name for is replaced.
    PodGroupPhase phase = j->phase;
    if (j->Count(TaskStatus::kRunning) != 0 && unschedulable) {
      phase = PodGroupPhase::kUnknown;
    } else if (allocated >= j->min_available) {
      phase = j->Count(TaskStatus::kSucceeded) == allocated ? PodGroupPhase::kCompleted
                                                            : PodGroupPhase::kRunning;
    } else if (phase != PodGroupPhase::kInqueue) {
      phase = PodGroupPhase::kPending;
    }
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
