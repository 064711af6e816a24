// enqueue: admits Pending pod groups (Pending -> Inqueue) queue by queue, one job per queue per
// round, when every plugin's JobEnqueueable vote allows it. Only admitted groups get pods
// created by the job controller and placed by allocate. Follows Volcano's
// pkg/scheduler/actions/enqueue/enqueue.go.

#include <algorithm>
#include <map>
#include <vector>

#include "core/actions/ordered_queue.h"
#include "core/framework/plugin.h"
#include "core/framework/session.h"

namespace muster::core {
namespace {

class EnqueueAction : public Action {
 public:
  void Execute(Session& ssn) override {
    OrderedQueue<QueueInfo*> queues(
        [&ssn](QueueInfo* const& l, QueueInfo* const& r) { return ssn.QueueOrderLess(*l, *r); });
    // Each queue's Pending jobs in job order. Admission changes only a job's phase and the
    // plugins' admitted totals, which no job order reads, so the order cannot change while
    // enqueue runs: one stable sort gives the order a heap would pop them in (equals in arrival
    // order), for a fraction of the comparisons when thousands wait.
    struct Pending {
      std::vector<JobInfo*> jobs;
      size_t next = 0;
    };
    std::map<int, Pending> jobs;
    for (JobInfo* j : ssn.jobs()) {
      QueueInfo* q = ssn.QueueOf(*j);
      if (!q) continue;
      auto [it, inserted] = jobs.try_emplace(q->id);
      if (inserted) queues.Push(q);
      if (j->IsPending()) it->second.jobs.push_back(j);
    }
    for (auto& [qid, pending] : jobs) {
      std::stable_sort(pending.jobs.begin(), pending.jobs.end(),
                       [&ssn](const JobInfo* l, const JobInfo* r) { return ssn.JobOrderLess(*l, *r); });
    }
    while (!queues.Empty()) {
      QueueInfo* q = queues.Pop();
      Pending& pending = jobs.at(q->id);
      if (pending.next == pending.jobs.size()) continue;
      JobInfo* j = pending.jobs[pending.next++];
      if (q->open && (!j->min_resources || ssn.JobEnqueueable(*j))) {
        ssn.JobEnqueued(*j);
        j->phase = PodGroupPhase::kInqueue;
      } else if (ssn.options().diagnostics) {
        std::string why = q->open ? ssn.enqueue_rejections()[j->id]
                                  : "queue " + q->name + " is not open";
        if (why.empty()) why = "job is not enqueueable";
        ssn.job_fit_errors()[j->id] = why;
        ssn.RecordEvent({"PodGroup", j->key, "Normal", "Unschedulable", why});
      }
      queues.Push(q);
    }
  }
};

}  // namespace

std::unique_ptr<Action> NewEnqueueAction() { return std::make_unique<EnqueueAction>(); }

}  // namespace muster::core
