// overcommit: admits a job only while the minResources of admitted-but-unplaced jobs fit in the
// cluster's idle resources times overcommit-factor (default 1.2).
// sla: jobs waiting longer than sla-waiting-time go first and are admitted and pipelined.

#include <optional>
#include <unordered_map>

#include "api/time.h"
#include "core/plugins/plugins.h"

namespace muster::core {
namespace {

class OvercommitPlugin : public Plugin {
 public:
  explicit OvercommitPlugin(const PluginOption& opt)
      : factor_(opt.Number("overcommit-factor", 1.2).value_or(1.2)) {}

  void OnSessionOpen(Session& ssn) override {
    Cluster& c = ssn.cluster();
    Resources total = ssn.total_resource();
    const Resources& used = c.TotalUsed();
    for (ResourceId r = 0; r < total.Size(); ++r) {
      idle_.Set(r, static_cast<int64_t>(static_cast<double>(total.Get(r)) * factor_) - used.Get(r));
    }
    ssn.ForEachCountedJob([this](const JobInfo& j) {
      if (j.phase == "Inqueue" && j.min_resources) inqueue_.Add(*j.min_resources);
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
  double factor_;
  Resources idle_, inqueue_;
};

class SlaPlugin : public Plugin {
 public:
  explicit SlaPlugin(const PluginOption& opt) {
    auto d = opt.DurationSeconds("sla-waiting-time");
    if (d.ok() && d->has_value()) waiting_ = **d;
  }

  void OnSessionOpen(Session& ssn) override {
    int64_t now = ssn.options().now_unix;
    auto deadline = [this](const JobInfo& j) -> double {
      double wait = waiting_;
      if (j.pg) {
        auto it = j.pg->meta.annotations.find("sla-waiting-time");
        if (it != j.pg->meta.annotations.end()) {
          auto d = ParseGoDurationSeconds(it->second);
          if (d.ok()) wait = *d;
        }
      }
      if (wait < 0) return -1;
      std::optional<int64_t> created = api::ParseUnixTime(j.creation);
      return created ? static_cast<double>(*created) + wait : -1;
    };
    ssn.AddJobOrderFn("sla", [deadline](const JobInfo& l, const JobInfo& r) {
      double ld = deadline(l), rd = deadline(r);
      if (ld < 0 && rd < 0) return 0;
      if (ld < 0) return 1;
      if (rd < 0) return -1;
      return ld == rd ? 0 : (ld < rd ? -1 : 1);
    });
    auto vote = [deadline, now](const JobInfo& j) {
      double d = deadline(j);
      if (d < 0 || now == 0) return kAbstain;
      return static_cast<double>(now) >= d ? kPermit : kAbstain;
    };
    ssn.AddJobEnqueueableFn("sla", vote);
    ssn.AddJobPipelinedFn("sla", vote);
  }

 private:
  double waiting_ = -1;
};

}  // namespace

std::unique_ptr<Plugin> NewOvercommitPlugin(const PluginOption& opt) {
  return std::make_unique<OvercommitPlugin>(opt);
}
std::unique_ptr<Plugin> NewSlaPlugin(const PluginOption& opt) {
  return std::make_unique<SlaPlugin>(opt);
}

}  // namespace muster::core
