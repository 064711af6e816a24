// enqueue: admits Pending pod groups (Pending -> Inqueue) queue by queue, one job per queue per
// round, when every plugin's JobEnqueueable vote allows it. Only admitted groups get pods
// created by the job controller and placed by allocate.

#include <map>

#include "core/actions/actions.h"

namespace muster::core {
namespace {

class EnqueueAction : public Action {
 public:
  void Execute(Session& ssn) override {
    OrderedQueue<QueueInfo*> queues(
        [&ssn](QueueInfo* const& l, QueueInfo* const& r) { return ssn.QueueOrderLess(*l, *r); });
    std::map<int, OrderedQueue<JobInfo*>> jobs;
    for (JobInfo* j : ssn.jobs()) {
      QueueInfo* q = ssn.QueueOf(*j);
      if (!q) continue;
      auto [it, inserted] = jobs.try_emplace(
          q->id, [&ssn](JobInfo* const& l, JobInfo* const& r) { return ssn.JobOrderLess(*l, *r); });
      if (inserted) queues.Push(q);
      if (j->IsPending()) it->second.Push(j);
    }
    while (!queues.Empty()) {
      QueueInfo* q = queues.Pop();
      auto& pending = jobs.at(q->id);
      if (pending.Empty()) continue;
      JobInfo* j = pending.Pop();
      if (q->open && (!j->min_resources || ssn.JobEnqueueable(*j))) {
        ssn.JobEnqueued(*j);
        j->phase = "Inqueue";
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
