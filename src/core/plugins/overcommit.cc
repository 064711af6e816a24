// overcommit: admits a job only while what admitted jobs still reserve, plus its own
// minResources, fits in the cluster's idle resources times overcommit-factor (default 1.2).
// Follows Volcano's pkg/scheduler/plugins/overcommit/overcommit.go (OnSessionOpen) and
// pkg/scheduler/plugins/util/util.go (CalculateAllocatedTaskNum, GetInqueueResource,
// FormatResourceNames).
//
// What is reserved at the session's start, as Volcano 1.16 counts it:
//   - an Inqueue job: its whole minResources;
//   - a Running job that has at least minMember tasks allocated (Allocated, Binding, Bound,
//     Running): the part of its minResources it does not hold yet, per resource, never below
//     zero. A Running job with fewer tasks allocated (a finished Spark driver, a pod being
//     replaced) reserves nothing, so that what it held is not counted again;
//   - jobs admitted during the session: their whole minResources.
// Not modelled: Volcano deducts the requests of scheduling-gated pods from a job's reservation;
// the engine has no scheduling gates.

#include <string>
#include <vector>

#include "core/framework/conf.h"
#include "core/framework/session.h"

namespace muster::core {
namespace {

// Volcano's CalculateAllocatedTaskNum: the job's tasks in allocated statuses.
int OvercommitAllocatedTasks(const JobInfo& j) {
  return j.Count(TaskStatus::kAllocated) + j.Count(TaskStatus::kBinding) +
         j.Count(TaskStatus::kBound) + j.Count(TaskStatus::kRunning);
}

// Volcano's GetInqueueResource: minResources less what the job holds, per resource, at least 0.
Resources OvercommitStillReserved(const JobInfo& j) {
  Resources reserved = *j.min_resources;
  for (ResourceId r = 0; r < reserved.Size(); ++r) {
    const int64_t rest = reserved.Get(r) - j.allocated.Get(r);
    reserved.Set(r, rest > 0 ? rest : 0);
  }
  return reserved;
}

class OvercommitPlugin : public Plugin {
 public:
  // A factor below 1 is taken as the default 1.2, as Volcano does (with a warning there).
  explicit OvercommitPlugin(const PluginOption& opt)
      : factor_(opt.Number("overcommit-factor", kDefaultFactor).value_or(kDefaultFactor)) {
    if (factor_ < 1.0) factor_ = kDefaultFactor;
  }

  void OnSessionOpen(Session& ssn) override {
    Cluster& c = ssn.cluster();
    Resources total = ssn.total_resource();
    const Resources& used = c.TotalUsed();
    for (ResourceId r = 0; r < total.Size(); ++r) {
      idle_.Set(r, static_cast<int64_t>(static_cast<double>(total.Get(r)) * factor_) - used.Get(r));
    }
    ssn.ForEachCountedJob([this](const JobInfo& j) {
      if (!j.min_resources) return;
      if (j.phase == PodGroupPhase::kInqueue) {
        inqueue_.Add(*j.min_resources);
      } else if (j.phase == PodGroupPhase::kRunning &&
                 OvercommitAllocatedTasks(j) >= j.min_available) {
        inqueue_.Add(OvercommitStillReserved(j));
      }
    });
    Session* s = &ssn;
    ssn.AddJobEnqueueableFn("overcommit", [this, s](const JobInfo& j) {
      if (!j.min_resources) return kPermit;
      // inqueue + minResources within the idle, in the dimensions the job asks for (Volcano's
      // LessEqualWithDimensionAndResourcesName): each one that is not is named.
      const Resources& need = *j.min_resources;
      std::vector<std::string> overused;
      for (ResourceId r = 0; r < need.Size(); ++r) {
        if (need.Get(r) <= 0) continue;
        if (inqueue_.Get(r) + need.Get(r) > idle_.Get(r)) {
          overused.push_back(ResourceNames::Name(r));
        }
      }
      if (overused.empty()) return kPermit;
      if (s->options().diagnostics) {
        // FormatResourceNames("resource in cluster is overused", "overused", names).
        std::string why = "resource in cluster is overused";
        for (size_t i = 0; i < overused.size(); ++i) {
          why += (i == 0 ? ": overused " : ", overused ") + overused[i];
        }
        s->enqueue_rejections()[j.id] = std::move(why);
      }
      return kReject;
    });
    ssn.AddJobEnqueuedFn("overcommit", [this](const JobInfo& j) {
      if (j.min_resources) inqueue_.Add(*j.min_resources);
    });
  }

 private:
  static constexpr double kDefaultFactor = 1.2;
  double factor_;
  Resources idle_, inqueue_;
};

}  // namespace

std::unique_ptr<Plugin> NewOvercommitPlugin(const PluginOption& opt) {
  return std::make_unique<OvercommitPlugin>(opt);
}

}  // namespace muster::core
