// drf: dominant resource fairness between jobs. A job's share is its largest fraction of any
// cluster resource; lower shares go first, and a preemptor may take from jobs whose share after
// the eviction stays at least its own. Follows Volcano's pkg/scheduler/plugins/drf/drf.go
// (without its hierarchical mode).

#include <cmath>
#include <unordered_map>

#include "core/framework/conf.h"
#include "core/framework/session.h"

namespace muster::core {
namespace {

constexpr double kShareDelta = 0.000001;

class DrfPlugin : public Plugin {
 public:
  void OnSessionOpen(Session& ssn) override {
    total_ = ssn.total_resource();
    // A job that holds nothing needs no entry: a missing one reads as an empty allocation.
    ssn.ForEachCountedJob([this](const JobInfo& j) {
      if (!j.allocated.IsEmpty()) Set(j.id, j.allocated);
    });
    ssn.AddJobOrderFn("drf", [this](const JobInfo& l, const JobInfo& r) {
      double ls = ShareOf(l.id), rs = ShareOf(r.id);
      if (ls == rs) return 0;
      return ls < rs ? -1 : 1;
    });
    ssn.AddPreemptableFn("drf", [this](const TaskInfo& preemptor,
                                       const std::vector<const TaskInfo*>& preemptees) {
      Resources lalloc = AllocatedOf(preemptor.job);
      lalloc.Add(preemptor.resreq);
      double ls = Share(lalloc);
      std::unordered_map<int, Resources> allocations;
      std::vector<const TaskInfo*> out;
      for (const TaskInfo* t : preemptees) {
        auto [it, inserted] = allocations.try_emplace(t->job, AllocatedOf(t->job));
        it->second.Sub(t->resreq);
        double rs = Share(it->second);
        if (ls < rs || std::abs(ls - rs) <= kShareDelta) out.push_back(t);
      }
      return std::make_pair(out, kPermit);
    });
    ssn.AddEventHandler({[this](const TaskInfo& t) { Change(t.job, t.resreq, +1); },
                         [this](const TaskInfo& t) { Change(t.job, t.resreq, -1); }});
  }

 private:
  // A job's allocation and its share of the cluster, kept together: job order compares shares
  // many times per allocation change.
  struct Held {
    Resources allocated;
    double share = 0;
  };

  double Share(const Resources& alloc) const {
    double share = 0;
    for (ResourceId r = 0; r < total_.Size(); ++r) {
      double total = static_cast<double>(total_.Get(r));
      double used = static_cast<double>(alloc.Get(r));
      double s = total == 0 ? (used == 0 ? 0 : 1) : used / total;
      share = std::max(share, s);
    }
    return share;
  }
  double ShareOf(int job) const {
    auto it = held_.find(job);
    return it == held_.end() ? 0 : it->second.share;
  }
  Resources AllocatedOf(int job) const {
    auto it = held_.find(job);
    return it == held_.end() ? Resources() : it->second.allocated;
  }
  void Set(int job, const Resources& allocated) {
    Held& h = held_[job];
    h.allocated = allocated;
    h.share = Share(h.allocated);
  }
  void Change(int job, const Resources& r, int sign) {
    Held& h = held_[job];
    if (sign > 0) h.allocated.Add(r); else h.allocated.Sub(r);
    h.share = Share(h.allocated);
  }

  Resources total_;
  std::unordered_map<int, Held> held_;
};

}  // namespace

std::unique_ptr<Plugin> NewDrfPlugin(const PluginOption&) { return std::make_unique<DrfPlugin>(); }

}  // namespace muster::core
