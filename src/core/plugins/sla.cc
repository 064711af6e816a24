// sla: jobs waiting longer than sla-waiting-time (the plugin's argument, or the PodGroup's
// annotation of that name) go first and are admitted and pipelined. Follows Volcano's
// pkg/scheduler/plugins/sla/sla.go.

#include <optional>

#include "api/time.h"
#include "common/go_duration.h"
#include "core/framework/conf.h"
#include "core/framework/session.h"

namespace muster::core {
namespace {

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
          auto d = common::ParseGoDurationSeconds(it->second);
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

std::unique_ptr<Plugin> NewSlaPlugin(const PluginOption& opt) {
  return std::make_unique<SlaPlugin>(opt);
}

}  // namespace muster::core
