// overcommit: admits a job only while the minResources of admitted-but-unplaced jobs fit in the
// cluster's idle resources times overcommit-factor (default 1.2). Follows Volcano's
// pkg/scheduler/plugins/overcommit/overcommit.go.

#include "core/framework/conf.h"
#include "core/framework/session.h"

namespace muster::core {
namespace {

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
      if (j.phase == PodGroupPhase::kInqueue && j.min_resources) inqueue_.Add(*j.min_resources);
    });
    (void)c;
    Session* s = &ssn;
    ssn.AddJobEnqueueableFn("overcommit", [this, s](const JobInfo& j) {
      if (!j.min_resources) return kPermit;
      // inqueue + minResources within the idle, in the dimensions the job asks for (per
      // dimension: every Pending job is checked every cycle).
      const Resources& need = *j.min_resources;
      for (ResourceId r = 0; r < need.Size(); ++r) {
        if (need.Get(r) <= 0) continue;
        if (inqueue_.Get(r) + need.Get(r) > idle_.Get(r)) {
          if (s->options().diagnostics) {
            s->enqueue_rejections()[j.id] = "resource in cluster is overused";
          }
          return kReject;
        }
      }
      return kPermit;
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
