#include "core/plugins/gpuplacement/plugin.h"
#include "core/plugins/plugins.h"

namespace muster::core {

// The one place plugin names map to implementations. "capacity" is accepted by the
// configuration parser and shares proportion's hooks here (muster has one queue-share
// implementation). The gpu-* names are the GPU placement policies (gpuplacement/plugin.h).
std::unique_ptr<Plugin> NewPlugin(const PluginOption& opt) {
  const std::string& n = opt.name;
  if (n == "gang") return NewGangPlugin(opt);
  if (n == "priority") return NewPriorityPlugin(opt);
  if (n == "conformance") return NewConformancePlugin(opt);
  if (n == "drf") return NewDrfPlugin(opt);
  if (n == "proportion") return NewProportionPlugin(opt);
  if (n == "predicates") return NewPredicatesPlugin(opt);
  if (n == "nodeorder") return NewNodeOrderPlugin(opt);
  if (n == "binpack") return NewBinpackPlugin(opt);
  if (n == "overcommit") return NewOvercommitPlugin(opt);
  if (n == "sla") return NewSlaPlugin(opt);
  if (n.rfind("gpu-", 0) == 0) return NewGpuPlacementPlugin(opt);
  return nullptr;
}

}  // namespace muster::core
