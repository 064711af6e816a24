// proportion: queue fair share. Each queue's deserved resources are water-filled by weight over
// the cluster total, clipped to its capability and its request and raised to its guarantee
// (Volcano's proportion plugin). Queues are ordered by priority then share; a queue at its
// deserved share is overused; admission (enqueue) checks a job's minResources against the
// queue's capability. Follows Volcano's pkg/scheduler/plugins/proportion/proportion.go.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>

#include "core/framework/conf.h"
#include "core/framework/session.h"

namespace muster::core {
namespace {

constexpr int64_t kInfinity = std::numeric_limits<int64_t>::max() / 4;

struct QueueAttr {
  int32_t weight = 1;
  Resources deserved, allocated, request, inqueue, elastic, guarantee;
  bool has_capability = false;
  Resources capability;  // kInfinity where the queue sets no limit
  Resources real_capability;
  double share = 0;
};

class ProportionPlugin : public Plugin {
 public:
  void OnSessionOpen(Session& ssn) override {
    Cluster& c = ssn.cluster();
    total_ = ssn.total_resource();
    const int dims = ResourceNames::Count();
    Resources total_guarantee;
    ssn.ForEachCountedJob([&](const JobInfo& job) {
      const JobInfo* j = &job;
      auto [it, inserted] = attrs_.try_emplace(j->queue);
      QueueAttr& a = it->second;
      if (inserted) {
        const QueueInfo& q = c.queue(j->queue);
        a.weight = q.weight;
        if (q.queue) {
          if (!q.queue->spec.capability.empty()) {
            a.has_capability = true;
            a.capability = Resources::FromList(q.queue->spec.capability);
            for (ResourceId r = 0; r < dims; ++r) {
              if (a.capability.Get(r) <= 0) a.capability.Set(r, kInfinity);
            }
          }
          a.guarantee = Resources::FromList(q.queue->spec.guarantee);
          total_guarantee.Add(a.guarantee);
        }
      }
      const Resources& job_allocated = j->allocated;
      a.allocated.Add(job_allocated);
      a.request.Add(job_allocated);
      if (j->Count(TaskStatus::kPending) > 0) {
        for (int tid : j->tasks) {
          const TaskInfo& t = c.task(tid);
          if (t.status == TaskStatus::kPending) a.request.Add(t.resreq);
        }
      }
      // What an admitted job still reserves: its minResources less what it already holds
      // (Volcano's GetInqueueResource), so that pods placed but not yet running count once, in
      // allocated. A Running job reserves the rest while it has its min member placed.
      if (j->min_resources && (j->phase == PodGroupPhase::kInqueue ||
                               (j->phase == PodGroupPhase::kRunning &&
                                AllocatedTaskNum(*j) >= j->min_available))) {
        Resources reserved = *j->min_resources;
        reserved.Sub(job_allocated);
        for (ResourceId r = 0; r < reserved.Size(); ++r) {
          if (reserved.Get(r) < 0) reserved.Set(r, 0);
        }
        a.inqueue.Add(reserved);
      }
      // Elastic: what a job holds beyond its minResources, which admission does not count
      // against the queue twice (Volcano's JobInfo.GetElasticResources).
      if (j->min_resources && !job_allocated.IsEmpty()) {
        Resources elastic = job_allocated;
        elastic.Sub(*j->min_resources);
        for (ResourceId r = 0; r < elastic.Size(); ++r) {
          if (elastic.Get(r) < 0) elastic.Set(r, 0);
        }
        a.elastic.Add(elastic);
      }
    });
    for (auto& [qid, a] : attrs_) {
      Resources real = total_;
      real.Sub(total_guarantee);
      for (ResourceId r = 0; r < dims; ++r) {
        if (real.Get(r) < 0) real.Set(r, 0);
      }
      real.Add(a.guarantee);
      if (a.has_capability) real.Min(a.capability);
      a.real_capability = real;
    }
    WaterFill(dims);
    for (int qid : c.QueueIds()) {  // a queue without jobs deserves nothing
      if (!c.queue(qid).queue) continue;
      auto a = attrs_.find(qid);
      ssn.result().queue_deserved[c.queue(qid).name] =
          a != attrs_.end() ? a->second.deserved : Resources();
    }

    ssn.AddQueueOrderFn("proportion", [this](const QueueInfo& l, const QueueInfo& r) {
      if (l.priority != r.priority) return l.priority > r.priority ? -1 : 1;
      double ls = attrs_[l.id].share, rs = attrs_[r.id].share;
      if (ls == rs) return 0;
      return ls < rs ? -1 : 1;
    });
    ssn.AddVictimQueueOrderFn("proportion", [this](const QueueInfo& l, const QueueInfo& r,
                                                   const QueueInfo&) {
      if (l.priority != r.priority) return l.priority < r.priority ? -1 : 1;
      double ls = attrs_[l.id].share, rs = attrs_[r.id].share;
      if (ls == rs) return 0;
      return ls > rs ? -1 : 1;
    });
    Session* s = &ssn;
    ssn.AddReclaimableFn("proportion", [this, s](const TaskInfo&,
                                                 const std::vector<const TaskInfo*>& reclaimees) {
      std::map<int, Resources> allocations;
      std::vector<const TaskInfo*> out;
      for (const TaskInfo* t : reclaimees) {
        const JobInfo* j = s->JobOf(*t);
        if (!j) continue;
        QueueAttr& a = attrs_[j->queue];
        auto [it, inserted] = allocations.try_emplace(j->queue, a.allocated);
        Resources& allocated = it->second;
        // A queue within its deserved share keeps its pods, and so does one that would fall
        // below its guarantee.
        if (allocated.LessEqual(a.deserved)) continue;
        Resources after = allocated;
        after.Sub(t->resreq);
        if (!a.guarantee.LessEqual(after)) continue;
        allocated = after;
        out.push_back(t);
      }
      return std::make_pair(out, kPermit);
    });
    ssn.AddOverusedFn("proportion", [this](const QueueInfo& q) {
      auto it = attrs_.find(q.id);
      return it != attrs_.end() && it->second.deserved.LessEqual(it->second.allocated);
    });
    auto within_deserved = [this](const QueueInfo& q, const TaskInfo& t) {
      QueueAttr& a = attrs_[q.id];
      Resources future = a.allocated;
      future.Add(t.resreq);
      return future.LessEqualIn(a.deserved, t.resreq);
    };
    // Volcano's queueAllocatable, used for both votes: a queue that is not Open neither
    // allocates nor reclaims for its jobs.
    auto queue_allocatable = [within_deserved](const QueueInfo& q, const TaskInfo& t) {
      return q.open && within_deserved(q, t);
    };
    ssn.AddAllocatableFn("proportion", queue_allocatable);
    ssn.AddPreemptiveFn("proportion", queue_allocatable);
    ssn.AddJobEnqueueableFn("proportion", [this, s](const JobInfo& j) {
      const QueueInfo* q = s->QueueOf(j);
      if (!q || !q->open) return kReject;
      QueueAttr& a = attrs_[j.queue];
      if (!j.min_resources) return kPermit;
      // minResources + allocated + inqueue - elastic within the capability, in the dimensions
      // the job asks for; summed per dimension, as every Pending job is checked every cycle.
      const Resources& want = *j.min_resources;
      for (ResourceId r = 0; r < want.Size(); ++r) {
        if (want.Get(r) <= 0) continue;
        int64_t total = want.Get(r) + a.allocated.Get(r) + a.inqueue.Get(r) - a.elastic.Get(r);
        if (total > a.real_capability.Get(r)) {
          if (s->options().diagnostics) {
            s->enqueue_rejections()[j.id] = "queue resource quota insufficient";
          }
          return kReject;
        }
      }
      return kPermit;
    });
    ssn.AddJobEnqueuedFn("proportion", [this](const JobInfo& j) {
      if (j.min_resources) attrs_[j.queue].inqueue.Add(*j.min_resources);
    });
    ssn.AddEventHandler({[this, s](const TaskInfo& t) { Update(*s, t, +1); },
                         [this, s](const TaskInfo& t) { Update(*s, t, -1); }});
  }

 private:
  // Volcano's CalculateAllocatedTaskNum: tasks allocated, binding, bound or running.
  static int AllocatedTaskNum(const JobInfo& j) {
    return j.Count(TaskStatus::kAllocated) + j.Count(TaskStatus::kBinding) +
           j.Count(TaskStatus::kBound) + j.Count(TaskStatus::kRunning);
  }

  void Update(Session& ssn, const TaskInfo& t, int sign) {
    const JobInfo* j = ssn.JobOf(t);
    if (!j) return;
    auto it = attrs_.find(j->queue);
    if (it == attrs_.end()) return;
    if (sign > 0) it->second.allocated.Add(t.resreq); else it->second.allocated.Sub(t.resreq);
    UpdateShare(it->second);
  }

  void UpdateShare(QueueAttr& a) const {
    double share = 0;
    for (ResourceId r = 0; r < a.deserved.Size(); ++r) {
      double d = static_cast<double>(a.deserved.Get(r));
      double used = static_cast<double>(a.allocated.Get(r));
      double s = d == 0 ? (used == 0 ? 0 : 1) : used / d;
      share = std::max(share, s);
    }
    a.share = share;
  }

  void WaterFill(int dims) {
    Resources remaining = total_;
    std::map<int, bool> met;
    for (int round = 0; round < 64; ++round) {
      int64_t total_weight = 0;
      for (auto& [qid, a] : attrs_) {
        if (!met[qid]) total_weight += a.weight;
      }
      if (total_weight == 0) break;
      Resources old_remaining = remaining;
      Resources increased, decreased;
      for (auto& [qid, a] : attrs_) {
        if (met[qid]) continue;
        Resources old = a.deserved;
        Resources portion;
        for (ResourceId r = 0; r < dims; ++r) {
          portion.Set(r, static_cast<int64_t>(static_cast<double>(remaining.Get(r)) *
                                              a.weight / static_cast<double>(total_weight)));
        }
        a.deserved.Add(portion);
        a.deserved.Min(a.real_capability);
        // Clip to the request, dimension by dimension.
        for (ResourceId r = 0; r < dims; ++r) {
          if (a.deserved.Get(r) > a.request.Get(r)) a.deserved.Set(r, a.request.Get(r));
        }
        a.deserved.Max(a.guarantee);
        UpdateShare(a);
        if (a.request.LessEqual(a.deserved) || a.deserved == old) met[qid] = true;
        for (ResourceId r = 0; r < dims; ++r) {
          int64_t delta = a.deserved.Get(r) - old.Get(r);
          if (delta > 0) increased.Set(r, increased.Get(r) + delta);
          else decreased.Set(r, decreased.Get(r) - delta);
        }
      }
      remaining.Sub(increased).Add(decreased);
      if (remaining.IsEmpty() || remaining == old_remaining) break;
    }
  }

  Resources total_;
  std::map<int, QueueAttr> attrs_;
};

}  // namespace

std::unique_ptr<Plugin> NewProportionPlugin(const PluginOption&) {
  return std::make_unique<ProportionPlugin>();
}

}  // namespace muster::core
