// backfill: places best-effort (request-less) pods, which allocate skips, in queue, job and task
// order, each on the best-scoring feasible node. Follows Volcano's
// pkg/scheduler/actions/backfill/backfill.go.

#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "core/actions/feasible_nodes.h"
#include "core/framework/plugin.h"

namespace muster::core {
namespace {

class BackfillAction : public Action {
 public:
  void Execute(Session& ssn) override {
    Cluster& c = ssn.cluster();
    std::vector<TaskInfo*> tasks;
    for (JobInfo* j : ssn.jobs()) {
      if (j->IsPending() || j->Count(TaskStatus::kPending) == 0 || ssn.HeldBack(*j)) continue;
      for (int tid : j->tasks) {
        TaskInfo& t = c.task(tid);
        if (t.status == TaskStatus::kPending && t.best_effort) tasks.push_back(&t);
      }
    }
    std::stable_sort(tasks.begin(), tasks.end(), [&](TaskInfo* l, TaskInfo* r) {
      JobInfo& lj = c.job(l->job);
      JobInfo& rj = c.job(r->job);
      if (lj.id != rj.id) {
        if (lj.queue != rj.queue) {
          return ssn.QueueOrderLess(c.queue(lj.queue), c.queue(rj.queue));
        }
        return ssn.JobOrderLess(lj, rj);
      }
      return ssn.TaskOrderLess(*l, *r);
    });
    std::map<int, std::unique_ptr<Statement>> stmts;
    for (TaskInfo* t : tasks) {
      JobInfo& j = c.job(t->job);
      FeasibleNodes feasible = FindFeasibleNodes(ssn, *t);
      if (feasible.nodes.empty()) {
        ssn.task_fit_errors()[t->id] = std::move(feasible.errors);
        continue;
      }
      NodeInfo* best = BestNode(ssn, *t, feasible.nodes);
      auto& stmt = stmts[j.id];
      if (!stmt) stmt = std::make_unique<Statement>(ssn);
      stmt->Allocate(*t, best->id);
      if (ssn.JobReady(j)) stmt->Commit();
    }
    for (auto& [jid, stmt] : stmts) {
      if (!stmt->empty()) ssn.KeepOpen(std::move(stmt));
    }
  }
};

}  // namespace

std::unique_ptr<Action> NewBackfillAction() { return std::make_unique<BackfillAction>(); }

}  // namespace muster::core
