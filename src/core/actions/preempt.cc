// preempt: a starving job takes resources from lower-priority running tasks of its own queue
// (between jobs, then between tasks of one job). Victims come from the plugins' Preemptable
// votes; evictions on a node are kept only where the preemptor then fits there (make_room.h).
//
// Two victim choices, as Volcano's preempt has: the default evicts the lowest-ordered victims one
// by one until the preemptor fits; enableTopologyAwarePreemption (kube-scheduler's way) evicts
// every candidate, then reprieves the most important ones while the preemptor still fits, which
// also frees pods whose removal the preemptor's inter-pod rules need. Follows Volcano's
// pkg/scheduler/actions/preempt/preempt.go.

#include <algorithm>
#include <functional>
#include <map>
#include <vector>

#include "core/actions/make_room.h"
#include "core/actions/ordered_queue.h"
#include "core/framework/plugin.h"

namespace muster::core {
namespace {

using TaskFilter = std::function<bool(const TaskInfo&)>;

bool Preempt(Session& ssn, Statement& stmt, TaskInfo& preemptor, const TaskFilter& filter,
             bool topology_aware) {
  if (preemptor.preempt_never) return false;
  JobInfo* job = ssn.JobOf(preemptor);
  QueueInfo* q = job ? ssn.QueueOf(*job) : nullptr;
  if (!q) return false;
  Cluster& c = ssn.cluster();
  std::vector<NodeInfo*> candidates;
  for (NodeInfo* n : ssn.nodes()) {
    PredicateStatus st = ssn.Predicate(preemptor, *n);
    if (!st.ok && st.unresolvable) continue;
    candidates.push_back(n);
  }
  std::vector<const NodeInfo*> cn(candidates.begin(), candidates.end());
  std::vector<double> scores;
  ssn.NodeScores(preemptor, cn, scores);
  std::vector<size_t> order(candidates.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  for (size_t idx : order) {
    NodeInfo& n = *candidates[idx];
    std::vector<const TaskInfo*> preemptees;
    for (int tid : n.tasks) {
      const TaskInfo& t = c.task(tid);
      if (t.status == TaskStatus::kRunning && t.preemptable && filter(t)) preemptees.push_back(&t);
    }
    std::vector<const TaskInfo*> victims = ssn.Preemptable(preemptor, preemptees);
    if (victims.empty()) continue;
    Resources future = n.FutureIdle();
    for (const TaskInfo* v : victims) future.Add(v->resreq);
    if (!preemptor.resreq.LessEqual(future)) continue;
    Statement node_stmt(ssn);
    if (!MakeRoom(ssn, *q, preemptor, n, victims, topology_aware, true, node_stmt, "preempt")) {
      continue;
    }
    stmt.Merge(node_stmt);
    stmt.Pipeline(preemptor, n.id);
    return true;
  }
  return false;
}

class PreemptAction : public Action {
 public:
  void Execute(Session& ssn) override {
    Cluster& c = ssn.cluster();
    bool topology_aware =
        ssn.conf().ActionArgument("preempt", "enableTopologyAwarePreemption", "false") == "true";
    auto task_less = [&ssn](TaskInfo* const& l, TaskInfo* const& r) {
      return ssn.TaskOrderLess(*l, *r);
    };
    std::map<int, OrderedQueue<JobInfo*>> preemptors;
    std::map<int, OrderedQueue<TaskInfo*>> preemptor_tasks;
    std::vector<JobInfo*> under_request;
    std::vector<int> queue_ids;
    for (JobInfo* j : ssn.jobs()) {
      if (j->IsPending()) continue;
      QueueInfo* q = ssn.QueueOf(*j);
      if (std::find(queue_ids.begin(), queue_ids.end(), q->id) == queue_ids.end()) {
        queue_ids.push_back(q->id);
      }
      if (ssn.HeldBack(*j) || !ssn.JobStarving(*j)) continue;
      auto [it, inserted] = preemptors.try_emplace(
          q->id, [&ssn](JobInfo* const& l, JobInfo* const& r) { return ssn.JobOrderLess(*l, *r); });
      it->second.Push(j);
      under_request.push_back(j);
      auto& tasks = preemptor_tasks.try_emplace(j->id, task_less).first->second;
      for (int tid : j->tasks) {
        if (c.task(tid).status == TaskStatus::kPending) tasks.Push(&c.task(tid));
      }
    }
    for (int qid : queue_ids) {
      auto pit = preemptors.find(qid);
      while (pit != preemptors.end() && !pit->second.Empty()) {
        JobInfo* pj = pit->second.Pop();
        Statement stmt(ssn);
        auto& tasks = preemptor_tasks.at(pj->id);
        while (ssn.JobStarving(*pj) && !tasks.Empty()) {
          TaskInfo* preemptor = tasks.Pop();
          int pjob = pj->id;
          TaskFilter filter = [&ssn, pjob, qid](const TaskInfo& t) {
            const JobInfo* j = ssn.JobOf(t);
            return j && j->queue == qid && t.job != pjob;
          };
          if (!Preempt(ssn, stmt, *preemptor, filter, topology_aware)) break;
        }
        if (ssn.JobPipelined(*pj)) {
          stmt.Commit();
        } else {
          stmt.Discard();
        }
      }
      // Between tasks of one job.
      for (JobInfo* j : under_request) {
        if (j->queue != qid) continue;
        OrderedQueue<TaskInfo*> tasks(task_less);
        for (int tid : j->tasks) {
          if (c.task(tid).status == TaskStatus::kPending) tasks.Push(&c.task(tid));
        }
        while (!tasks.Empty()) {
          TaskInfo* preemptor = tasks.Pop();
          Statement stmt(ssn);
          int jid = j->id;
          TaskFilter filter = [jid](const TaskInfo& t) { return t.job == jid; };
          bool assigned = Preempt(ssn, stmt, *preemptor, filter, topology_aware);
          stmt.Commit();
          if (!assigned) break;
        }
      }
    }
  }
};

}  // namespace

std::unique_ptr<Action> NewPreemptAction() { return std::make_unique<PreemptAction>(); }

}  // namespace muster::core
