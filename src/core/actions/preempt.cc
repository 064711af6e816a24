// preempt: a starving job takes resources from lower-priority running tasks of its own queue
// (between jobs, then between tasks of one job). reclaim: a queue below its deserved share takes
// resources back from queues above theirs. Victims come from the plugins' Preemptable /
// Reclaimable votes; evictions on a node are kept only where the preemptor then fits there.
//
// Two victim choices, as Volcano's preempt has: the default evicts the lowest-ordered victims one
// by one until the preemptor fits; enableTopologyAwarePreemption (kube-scheduler's way) evicts
// every candidate, then reprieves the most important ones while the preemptor still fits, which
// also frees pods whose removal the preemptor's inter-pod rules need.

#include <algorithm>
#include <map>

#include "core/actions/actions.h"

namespace muster::core {
namespace {

using TaskFilter = std::function<bool(const TaskInfo&)>;

bool FitsNow(Session& ssn, const QueueInfo& q, const TaskInfo& t, const NodeInfo& n,
             bool check_queue) {
  if (check_queue && !ssn.Allocatable(q, t)) return false;
  if (!t.resreq.LessEqual(n.FutureIdle())) return false;
  // A GPU share needs one device with room once the victims are gone, not only the node's total.
  if (!ssn.cluster().GpuDevicesFitOnceReleased(t, n)) return false;
  // The pod slot counts like a resource: pods leaving free theirs (best-effort preemption).
  if (n.pod_count - n.releasing_pods >= n.max_pods) return false;
  return ssn.Predicate(t, n).ok;
}

// Tries to make room for `t` on `n` by evicting from `candidates`; on success the evictions are
// in `node_stmt` and true is returned, else nothing is changed.
bool MakeRoom(Session& ssn, const QueueInfo& q, TaskInfo& t, NodeInfo& n,
              std::vector<const TaskInfo*> victims, bool topology_aware, bool check_queue,
              Statement& node_stmt, const char* reason) {
  Cluster& c = ssn.cluster();
  victims = ssn.OrderVictims(std::move(victims), t);
  if (!topology_aware) {
    for (const TaskInfo* v : victims) {
      if (FitsNow(ssn, q, t, n, check_queue)) break;
      node_stmt.Evict(c.task(v->id), reason);
    }
    if (FitsNow(ssn, q, t, n, check_queue)) return true;
    node_stmt.Discard();
    return false;
  }
  std::vector<std::pair<TaskInfo*, TaskStatus>> evicted;
  for (const TaskInfo* v : victims) {
    TaskInfo& vt = c.task(v->id);
    evicted.emplace_back(&vt, vt.status);
    ssn.DoEvict(vt);
  }
  bool fits = FitsNow(ssn, q, t, n, check_queue);
  std::vector<TaskInfo*> chosen;
  if (fits) {
    // Reprieve the most important victims first.
    for (auto it = evicted.rbegin(); it != evicted.rend(); ++it) {
      ssn.UndoEvict(*it->first, it->second);
      if (!FitsNow(ssn, q, t, n, check_queue)) {
        ssn.DoEvict(*it->first);
        chosen.push_back(it->first);
      }
    }
  }
  // Restore everything, then replay the chosen evictions through the statement.
  for (auto it = evicted.rbegin(); it != evicted.rend(); ++it) {
    if (it->first->status == TaskStatus::kReleasing) ssn.UndoEvict(*it->first, it->second);
  }
  if (!fits) return false;
  std::reverse(chosen.begin(), chosen.end());
  for (TaskInfo* v : chosen) node_stmt.Evict(*v, reason);
  return true;
}

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

class ReclaimAction : public Action {
 public:
  void Execute(Session& ssn) override {
    Cluster& c = ssn.cluster();
    OrderedQueue<QueueInfo*> queues(
        [&ssn](QueueInfo* const& l, QueueInfo* const& r) { return ssn.QueueOrderLess(*l, *r); });
    std::map<int, OrderedQueue<JobInfo*>> preemptors;
    std::map<int, OrderedQueue<TaskInfo*>> preemptor_tasks;
    std::vector<int> seen;
    for (JobInfo* j : ssn.jobs()) {
      if (j->IsPending()) continue;
      QueueInfo* q = ssn.QueueOf(*j);
      if (std::find(seen.begin(), seen.end(), q->id) == seen.end()) {
        seen.push_back(q->id);
        queues.Push(q);
      }
      if (ssn.HeldBack(*j) || !ssn.JobStarving(*j)) continue;
      preemptors
          .try_emplace(q->id, [&ssn](JobInfo* const& l,
                                     JobInfo* const& r) { return ssn.JobOrderLess(*l, *r); })
          .first->second.Push(j);
      auto& tasks = preemptor_tasks
                        .try_emplace(j->id, [&ssn](TaskInfo* const& l, TaskInfo* const& r) {
                          return ssn.TaskOrderLess(*l, *r);
                        })
                        .first->second;
      for (int tid : j->tasks) {
        if (c.task(tid).status == TaskStatus::kPending) tasks.Push(&c.task(tid));
      }
    }
    while (!queues.Empty()) {
      QueueInfo* q = queues.Pop();
      if (ssn.Overused(*q)) continue;
      auto pit = preemptors.find(q->id);
      if (pit == preemptors.end() || pit->second.Empty()) continue;
      JobInfo* job = pit->second.Pop();
      auto& tasks = preemptor_tasks.at(job->id);
      if (tasks.Empty() || !ssn.JobStarving(*job)) continue;
      TaskInfo* task = tasks.Pop();
      if (task->preempt_never || !ssn.Preemptive(*q, *task)) continue;
      bool assigned = false;
      for (NodeInfo* n : ssn.nodes()) {
        PredicateStatus st = ssn.Predicate(*task, *n);
        if (!st.ok && st.unresolvable) continue;
        Statement node_stmt(ssn);
        if (FitsNow(ssn, *q, *task, *n, false)) {
          node_stmt.Pipeline(*task, n->id);
          node_stmt.Commit();
          assigned = true;
          break;
        }
        std::vector<const TaskInfo*> reclaimees;
        for (int tid : n->tasks) {
          const TaskInfo& t = c.task(tid);
          if (t.status != TaskStatus::kRunning || t.resreq.IsEmpty() || !t.preemptable) continue;
          const JobInfo* j = ssn.JobOf(t);
          if (!j || j->queue < 0 || j->queue == job->queue || !c.queue(j->queue).reclaimable) {
            continue;
          }
          reclaimees.push_back(&t);
        }
        if (reclaimees.empty()) continue;
        std::vector<const TaskInfo*> victims = ssn.Reclaimable(*task, reclaimees);
        if (victims.empty()) continue;
        Resources future = n->FutureIdle();
        for (const TaskInfo* v : victims) future.Add(v->resreq);
        if (!task->resreq.LessEqual(future)) continue;
        if (!MakeRoom(ssn, *q, *task, *n, victims, false, false, node_stmt, "reclaim")) continue;
        node_stmt.Pipeline(*task, n->id);
        node_stmt.Commit();
        assigned = true;
        break;
      }
      if (assigned) pit->second.Push(job);
      queues.Push(q);
    }
  }
};

}  // namespace

std::unique_ptr<Action> NewPreemptAction() { return std::make_unique<PreemptAction>(); }
std::unique_ptr<Action> NewReclaimAction() { return std::make_unique<ReclaimAction>(); }

}  // namespace muster::core
