// reclaim: a queue below its deserved share takes resources back from queues above theirs.
// Victims are running tasks of other reclaimable queues that the plugins' Reclaimable votes
// allow; evictions on a node are kept only where the reclaiming task then fits there
// (make_room.h), and a node with nothing to reclaim is passed over, even when the task would fit
// its idle resources: placing is allocate's. Follows Volcano's
// pkg/scheduler/actions/reclaim/reclaim.go.

#include <algorithm>
#include <map>
#include <vector>

#include "core/actions/make_room.h"
#include "core/actions/ordered_queue.h"
#include "core/framework/plugin.h"

namespace muster::core {
namespace {

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
      auto& tasks =
          preemptor_tasks
              .try_emplace(j->id, [&ssn](TaskInfo* const& l,
                                         TaskInfo* const& r) { return ssn.TaskOrderLess(*l, *r); })
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
      if (!tasks.Empty() && ssn.JobStarving(*job)) {
        TaskInfo* task = tasks.Pop();
        // A task that may not reclaim (preemptionPolicy Never, or its queue votes no) is passed
        // over, not its whole job: Volcano goes on to the job's next pending task, which may.
        if (!task->preempt_never && ssn.Preemptive(*q, *task)) ReclaimForTask(ssn, *q, *job, *task);
        pit->second.Push(job);
      }
      if (!pit->second.Empty()) queues.Push(q);
    }
  }

 private:
  // Evicts on the first node where the task then fits, and holds the task there.
  static void ReclaimForTask(Session& ssn, QueueInfo& q, const JobInfo& job, TaskInfo& task) {
    Cluster& c = ssn.cluster();
    for (NodeInfo* n : ssn.nodes()) {
      PredicateStatus st = ssn.Predicate(task, *n);
      if (!st.ok && st.unresolvable) continue;
      Statement node_stmt(ssn);
      std::vector<const TaskInfo*> reclaimees;
      for (int tid : n->tasks) {
        const TaskInfo& t = c.task(tid);
        if (t.status != TaskStatus::kRunning || t.resreq.IsEmpty() || !t.preemptable) continue;
        const JobInfo* j = ssn.JobOf(t);
        if (!j || j->queue < 0 || j->queue == job.queue || !c.queue(j->queue).reclaimable) {
          continue;
        }
        reclaimees.push_back(&t);
      }
      if (reclaimees.empty()) continue;
      std::vector<const TaskInfo*> victims = ssn.Reclaimable(task, reclaimees);
      if (victims.empty()) continue;
      Resources future = n->FutureIdle();
      for (const TaskInfo* v : victims) future.Add(v->resreq);
      if (!task.resreq.LessEqual(future)) continue;
      if (!MakeRoom(ssn, q, task, *n, victims, false, false, node_stmt, "reclaim")) continue;
      node_stmt.Pipeline(task, n->id);
      node_stmt.Commit();
      return;
    }
  }
};

}  // namespace

std::unique_ptr<Action> NewReclaimAction() { return std::make_unique<ReclaimAction>(); }

}  // namespace muster::core
