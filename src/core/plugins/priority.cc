// priority: job, task and victim order by PriorityClass value: higher first, and a preemptor
// takes only from lower-priority jobs (or, within its own job, lower-priority tasks). A job
// whose tasks are not all ready or waiting is starving. Follows Volcano's
// pkg/scheduler/plugins/priority/priority.go.

#include "core/framework/conf.h"
#include "core/framework/session.h"

namespace muster::core {
namespace {

int HigherFirst(int32_t l, int32_t r) { return l == r ? 0 : (l > r ? -1 : 1); }

class PriorityPlugin : public Plugin {
 public:
  void OnSessionOpen(Session& ssn) override {
    ssn.AddTaskOrderFn("priority", [](const TaskInfo& l, const TaskInfo& r) {
      return HigherFirst(l.priority, r.priority);
    });
    ssn.AddJobOrderFn("priority", [](const JobInfo& l, const JobInfo& r) {
      return HigherFirst(l.priority, r.priority);
    });
    Session* s = &ssn;
    VictimsFn victims = [s](const TaskInfo& preemptor,
                            const std::vector<const TaskInfo*>& preemptees) {
      const JobInfo* pj = s->JobOf(preemptor);
      std::vector<const TaskInfo*> out;
      for (const TaskInfo* t : preemptees) {
        const JobInfo* j = s->JobOf(*t);
        if (pj && j && j->id != pj->id) {
          if (j->priority >= pj->priority) continue;
        } else if (t->priority >= preemptor.priority) {
          continue;
        }
        out.push_back(t);
      }
      return std::make_pair(out, kPermit);
    };
    // Reclaim is between queues, where queue shares decide, not job priority: no Reclaimable vote.
    ssn.AddPreemptableFn("priority", victims);
    ssn.AddJobStarvingFn("priority", [](const JobInfo& j) {
      return j.ReadyTaskNum() + j.WaitingTaskNum() < static_cast<int>(j.tasks.size());
    });
  }
};

}  // namespace

std::unique_ptr<Plugin> NewPriorityPlugin(const PluginOption&) {
  return std::make_unique<PriorityPlugin>();
}

}  // namespace muster::core
