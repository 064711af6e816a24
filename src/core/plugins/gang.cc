// gang: all-or-nothing. A job is ready when minAvailable tasks (and, where the group sets them,
// each task role's minTaskMember) are placed; it is valid only when it has enough pods to ever
// become ready. At close it writes the PodGroup condition with Volcano's texts. Follows
// Volcano's pkg/scheduler/plugins/gang/gang.go.

#include <map>

#include "core/framework/conf.h"
#include "core/framework/job_updater.h"
#include "core/framework/session.h"
#include "fmt/format.h"

namespace muster::core {
namespace {

// Per-role count of tasks whose status satisfies `pred` (best-effort pending tasks count too when
// `count_best_effort_pending`), checked against minTaskMember.
template <typename Pred>
bool RolesMeetMinimum(const Cluster& c, const JobInfo& j, Pred pred, bool count_best_effort_pending) {
  if (j.min_task_member.empty() || j.min_available < j.task_min_total) return true;
  std::map<std::string, int> occupied;
  for (int tid : j.tasks) {
    const TaskInfo& t = c.task(tid);
    if (pred(t.status) ||
        (count_best_effort_pending && t.status == TaskStatus::kPending && t.best_effort)) {
      occupied[t.role]++;
    }
  }
  for (const auto& [role, min] : j.min_task_member) {
    if (occupied[role] < min) return false;
  }
  return true;
}

bool ReadyOrSucceeded(TaskStatus s) { return IsAllocatedStatus(s) || s == TaskStatus::kSucceeded; }

class GangPlugin : public Plugin {
 public:
  void OnSessionOpen(Session& ssn) override {
    const Cluster& c = ssn.cluster();
    ssn.AddJobValidFn("gang", [&c](const JobInfo& j) -> std::optional<ValidateResult> {
      auto valid = [](TaskStatus s) {
        return s == TaskStatus::kPending || s == TaskStatus::kPipelined || ReadyOrSucceeded(s);
      };
      if (!RolesMeetMinimum(c, j, valid, false)) {
        return ValidateResult{false, "NotEnoughPodsOfTask",
                              "Not enough valid pods of each task for gang-scheduling"};
      }
      int vtn = j.ValidTaskNum();
      if (vtn < j.min_available) {
        return ValidateResult{false, "NotEnoughTasks",
                              fmt::format("Not enough valid tasks for gang-scheduling, valid: {}, "
                                          "min: {}",
                                          vtn, j.min_available)};
      }
      return std::nullopt;
    });
    ssn.AddJobReadyFn("gang", [&c](const JobInfo& j) { return IsReady(c, j); });
    ssn.AddJobPipelinedFn("gang", [&c](const JobInfo& j) {
      auto pipelined = [](TaskStatus s) { return ReadyOrSucceeded(s) || s == TaskStatus::kPipelined; };
      int occupied = j.WaitingTaskNum() + j.ReadyTaskNum();
      return RolesMeetMinimum(c, j, pipelined, true) && occupied >= j.min_available ? kPermit
                                                                                     : kReject;
    });
    ssn.AddJobStarvingFn("gang", [](const JobInfo& j) {
      return j.WaitingTaskNum() + j.ReadyTaskNum() < j.min_available;
    });
    ssn.AddJobOrderFn("gang", [&c](const JobInfo& l, const JobInfo& r) {
      bool lr = IsReady(c, l), rr = IsReady(c, r);
      if (lr == rr) return 0;
      return lr ? 1 : -1;
    });
    Session* s = &ssn;
    VictimsFn victims = [s](const TaskInfo&, const std::vector<const TaskInfo*>& preemptees) {
      std::map<int, int> occupied;
      std::vector<const TaskInfo*> out;
      for (const TaskInfo* t : preemptees) {
        const JobInfo* j = s->JobOf(*t);
        if (!j) {
          out.push_back(t);
          continue;
        }
        auto [it, inserted] = occupied.try_emplace(j->id, j->ReadyTaskNum());
        if (it->second > j->min_available) {
          it->second--;
          out.push_back(t);
        }
      }
      return std::make_pair(out, kPermit);
    };
    ssn.AddPreemptableFn("gang", victims);
    ssn.AddReclaimableFn("gang", victims);
  }

  void OnSessionClose(Session& ssn) override {
    const Cluster& c = ssn.cluster();
    for (const JobInfo* j : ssn.jobs()) {
      if (!ssn.Touched(*j)) continue;
      api::Condition cond;
      cond.status = "True";
      if (!IsReady(c, *j)) {
        if (ShortOnlyByReleasing(c, *j)) continue;
        cond.type = "Unschedulable";
        // Without diagnostics the condition carries what close's phase reads: its type.
        if (ssn.options().diagnostics) {
          cond.transition_id = ssn.options().session_id;
          cond.reason = "NotEnoughResources";
          int schedulable = j->ReadyTaskNum();
          for (int tid : j->tasks) {
            const TaskInfo& t = c.task(tid);
            if (t.status == TaskStatus::kPending && IsAllocatedStatus(ssn.LastStatus(t))) {
              ++schedulable;
            }
          }
          cond.message = fmt::format("{}/{} tasks in gang unschedulable: {}",
                                     j->min_available - schedulable, j->tasks.size(),
                                     ssn.JobFitError(*j));
        }
      } else {
        cond.type = "Scheduled";
        if (ssn.options().diagnostics) {
          cond.transition_id = ssn.options().session_id;
          cond.reason = "tasks in gang are ready to be scheduled";
        }
      }
      ssn.SetPodGroupCondition(*j, std::move(cond));
    }
  }

  static bool IsReady(const Cluster& c, const JobInfo& j) {
    int ready = j.ReadyTaskNum();
    if (ready < j.min_available && ready + j.pending_best_effort < j.min_available) return false;
    return RolesMeetMinimum(c, j, ReadyOrSucceeded, true);
  }
};

}  // namespace

std::unique_ptr<Plugin> NewGangPlugin(const PluginOption&) { return std::make_unique<GangPlugin>(); }

}  // namespace muster::core
