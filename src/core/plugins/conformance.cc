// conformance: never evicts kube-system or system-*-critical pods (TaskInfo::critical), as
// preemption or reclaim victims alike. Follows Volcano's
// pkg/scheduler/plugins/conformance/conformance.go.

#include "core/framework/conf.h"
#include "core/framework/session.h"

namespace muster::core {
namespace {

class ConformancePlugin : public Plugin {
 public:
  void OnSessionOpen(Session& ssn) override {
    VictimsFn victims = [](const TaskInfo&, const std::vector<const TaskInfo*>& preemptees) {
      std::vector<const TaskInfo*> out;
      for (const TaskInfo* t : preemptees) {
        if (!t->critical) out.push_back(t);
      }
      return std::make_pair(out, kPermit);
    };
    ssn.AddPreemptableFn("conformance", victims);
    ssn.AddReclaimableFn("conformance", victims);
  }
};

}  // namespace

std::unique_ptr<Plugin> NewConformancePlugin(const PluginOption&) {
  return std::make_unique<ConformancePlugin>();
}

}  // namespace muster::core
