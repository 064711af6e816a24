// drf: dominant resource fairness between jobs. A job's share is its largest fraction of any
// cluster resource; lower shares go first, and a preemptor may take from jobs whose share after
// the eviction stays at least its own.

#include <cmath>
#include <unordered_map>

#include "core/plugins/plugins.h"

namespace muster::core {
namespace {

constexpr double kShareDelta = 0.000001;

class DrfPlugin : public Plugin {
 public:
  void OnSessionOpen(Session& ssn) override {
    total_ = ssn.total_resource();
    Cluster& c = ssn.cluster();
    // A job that holds nothing needs no entry: a missing one reads as an empty allocation.
    ssn.ForEachCountedJob([this](const JobInfo& j) {
      if (!j.allocated.IsEmpty()) allocated_[j.id] = j.allocated;
    });
    (void)c;
    ssn.AddJobOrderFn("drf", [this](const JobInfo& l, const JobInfo& r) {
      double ls = Share(allocated_[l.id]), rs = Share(allocated_[r.id]);
      if (ls == rs) return 0;
      return ls < rs ? -1 : 1;
    });
    Session* s = &ssn;
    ssn.AddPreemptableFn("drf", [this, s](const TaskInfo& preemptor,
                                          const std::vector<const TaskInfo*>& preemptees) {
      Resources lalloc = allocated_[preemptor.job];
      lalloc.Add(preemptor.resreq);
      double ls = Share(lalloc);
      std::unordered_map<int, Resources> allocations;
      std::vector<const TaskInfo*> out;
      for (const TaskInfo* t : preemptees) {
        auto [it, inserted] = allocations.try_emplace(t->job, allocated_[t->job]);
        it->second.Sub(t->resreq);
        double rs = Share(it->second);
        if (ls < rs || std::abs(ls - rs) <= kShareDelta) out.push_back(t);
      }
      (void)s;
      return std::make_pair(out, kPermit);
    });
    ssn.AddEventHandler({[this](const TaskInfo& t) { allocated_[t.job].Add(t.resreq); },
                         [this](const TaskInfo& t) { allocated_[t.job].Sub(t.resreq); }});
  }

 private:
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

  Resources total_;
  std::unordered_map<int, Resources> allocated_;
};

}  // namespace

std::unique_ptr<Plugin> NewDrfPlugin(const PluginOption&) { return std::make_unique<DrfPlugin>(); }

}  // namespace muster::core
