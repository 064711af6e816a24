#include "core/plugins/plugins.h"

namespace muster::core {

// The one place plugin names map to implementations. "capacity" and "gpu-fgd" are accepted by
// the configuration parser; capacity shares proportion's hooks here (muster has one queue-share
// implementation), gpu-fgd arrives with the simulator's placement policies.
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
  return nullptr;
}

}  // namespace muster::core
