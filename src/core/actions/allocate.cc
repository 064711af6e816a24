// allocate: queue by queue (fair-share order), job by job (job order), task by task (task
// order), each job's placements a statement committed only when the gang is ready. Nodes where
// the task fits in idle resources are preferred; nodes where it fits only once releasing pods
// are gone get a pipelined (held) placement. Volcano's actions/allocate/allocate.go.

#include <map>
#include <set>

#include "core/actions/actions.h"

namespace muster::core {
namespace {

class AllocateAction : public Action {
 public:
  void Execute(Session& ssn) override {
    Cluster& c = ssn.cluster();
    bool has_enqueue = ssn.conf().HasAction("enqueue");
    OrderedQueue<QueueInfo*> queues(
        [&ssn](QueueInfo* const& l, QueueInfo* const& r) { return ssn.QueueOrderLess(*l, *r); });
    std::map<int, OrderedQueue<JobInfo*>> jobs;
    for (JobInfo* j : ssn.jobs()) {
      if (j->IsPending()) {
        if (has_enqueue) continue;
        if (j->min_resources && !ssn.JobEnqueueable(*j)) continue;
        ssn.JobEnqueued(*j);
        j->phase = "Inqueue";
      }
      // A job with nothing pending has nothing to allocate; leaving it out changes no decision.
      if (j->Count(TaskStatus::kPending) == 0) continue;
      QueueInfo* q = ssn.QueueOf(*j);
      auto [it, inserted] = jobs.try_emplace(
          q->id, [&ssn](JobInfo* const& l, JobInfo* const& r) { return ssn.JobOrderLess(*l, *r); });
      if (inserted) queues.Push(q);
      it->second.Push(j);
    }

    std::map<int, OrderedQueue<TaskInfo*>> pending_tasks;
    ShapeCache shapes;
    while (!queues.Empty()) {
      QueueInfo* q = queues.Pop();
      if (ssn.Overused(*q)) continue;
      auto& queue_jobs = jobs.at(q->id);
      if (queue_jobs.Empty()) continue;
      JobInfo* j = queue_jobs.Pop();
      auto [it, inserted] = pending_tasks.try_emplace(
          j->id, [&ssn](TaskInfo* const& l, TaskInfo* const& r) { return ssn.TaskOrderLess(*l, *r); });
      if (inserted) {
        for (int tid : j->tasks) {
          TaskInfo& t = c.task(tid);
          if (t.status == TaskStatus::kPending && !t.best_effort) it->second.Push(&t);
        }
      }
      AllocateJob(ssn, *q, *j, it->second, queue_jobs, shapes);
      queues.Push(q);
    }
  }

 private:
  static bool NeedContinueAllocating(Session& ssn, const JobInfo& j) {
    Cluster& c = ssn.cluster();
    if (j.min_available == static_cast<int>(j.tasks.size())) return false;
    std::set<std::string> failed_roles;
    std::map<std::string, int> pending, allocated;
    for (int tid : j.tasks) {
      const TaskInfo& t = c.task(tid);
      if (ssn.task_fit_errors().count(tid)) failed_roles.insert(t.role);
      if (t.status == TaskStatus::kPending) pending[t.role]++;
      if (IsAllocatedStatus(t.status) || t.status == TaskStatus::kSucceeded) allocated[t.role]++;
    }
    if (j.min_available < j.task_min_total) {
      int left = 0;
      for (const auto& [role, n] : pending) {
        if (!failed_roles.count(role)) left += n;
      }
      return j.ReadyTaskNum() + left >= j.min_available;
    }
    for (const std::string& role : failed_roles) {
      auto it = j.min_task_member.find(role);
      if (it == j.min_task_member.end() || it->second == 0) continue;
      if (allocated[role] < it->second) return false;
    }
    return true;
  }

  static bool RoleHasFitErrors(Session& ssn, const JobInfo& j, const TaskInfo& t) {
    if (t.role.empty()) return false;
    for (const auto& [tid, fe] : ssn.task_fit_errors()) {
      const TaskInfo& other = ssn.cluster().task(tid);
      if (other.job == j.id && other.role == t.role) return true;
    }
    return false;
  }

  static void AllocateJob(Session& ssn, QueueInfo& q, JobInfo& j, OrderedQueue<TaskInfo*>& tasks,
                          OrderedQueue<JobInfo*>& queue_jobs, ShapeCache& shapes) {
    auto stmt = std::make_unique<Statement>(ssn);
    while (!tasks.Empty()) {
      TaskInfo* t = tasks.Pop();
      if (!ssn.Allocatable(q, *t)) continue;
      if (RoleHasFitErrors(ssn, j, *t)) continue;
      // Identical pods are searched for once: a pod re-checks only the nodes the last pod of its
      // shape found feasible, and searches afresh when none of them is left. Sound because
      // within allocate a node's resources only shrink between searches: a statement is
      // committed or undone before the next job starts, and what it undoes it had taken from
      // nodes its own searches had found.
      FeasibleNodes feasible;
      const std::vector<NodeInfo*>* known = shapes.Find(*t);
      if (known) feasible = RecheckFeasibleNodes(ssn, *t, *known);
      if (!known || feasible.nodes.empty()) feasible = FindFeasibleNodes(ssn, *t);
      shapes.Remember(*t, feasible.nodes);
      if (feasible.nodes.empty()) {
        ssn.task_fit_errors()[t->id] = std::move(feasible.errors);
        if (NeedContinueAllocating(ssn, j)) continue;
        break;
      }
      std::vector<NodeInfo*> idle, future;
      for (NodeInfo* n : feasible.nodes) {
        (t->resreq.LessEqual(n->idle) ? idle : future).push_back(n);
      }
      NodeInfo* best = BestNode(ssn, *t, idle);
      if (!best) best = BestNode(ssn, *t, future);
      if (t->resreq.LessEqual(best->idle)) {
        stmt->Allocate(*t, best->id);
      } else {
        stmt->Pipeline(*t, best->id);
      }
      if (ssn.JobReady(j) && !tasks.Empty()) {
        queue_jobs.Push(&j);
        break;
      }
    }
    if (ssn.JobReady(j)) {
      stmt->Commit();
    } else if (!ssn.JobPipelined(j)) {
      stmt->Discard();
    } else if (!stmt->empty()) {
      ssn.KeepOpen(std::move(stmt));
    }
  }
};

// backfill: places best-effort (request-less) pods, which allocate skips.
class BackfillAction : public Action {
 public:
  void Execute(Session& ssn) override {
    Cluster& c = ssn.cluster();
    std::vector<TaskInfo*> tasks;
    for (JobInfo* j : ssn.jobs()) {
      if (j->IsPending() || j->Count(TaskStatus::kPending) == 0) continue;
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

std::unique_ptr<Action> NewAllocateAction() { return std::make_unique<AllocateAction>(); }
std::unique_ptr<Action> NewBackfillAction() { return std::make_unique<BackfillAction>(); }

}  // namespace muster::core
