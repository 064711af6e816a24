// The plugin registry: every plugin name volcano-scheduler.conf may use, with its builder
// (framework/registry.h). Volcano's pkg/scheduler/plugins/factory.go, as one table.

#include "core/framework/registry.h"

#include <array>
#include <cstddef>

#include "core/plugins/gpuplacement/plugin.h"
#include "core/framework/conf.h"
#include "core/framework/session.h"

namespace muster::core {

// Each plugin's builder, defined in the file of its name (gang.cc, binpack.cc, ...): a new plugin is
// a file pair plus its line here and its row in kPlugins.
std::unique_ptr<Plugin> NewGangPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewPriorityPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewConformancePlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewDrfPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewProportionPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewCapacityPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewPredicatesPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewNodeOrderPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewBinpackPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewOvercommitPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewSlaPlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewNetworkTopologyAwarePlugin(const PluginOption& opt);
std::unique_ptr<Plugin> NewNvLinkPlugin(const PluginOption& opt);

namespace {

struct PluginRegistration {
  std::string_view name;
  std::unique_ptr<Plugin> (*build)(const PluginOption&);
};

// In the order the conf parser's errors list the names.
constexpr PluginRegistration kPlugins[] = {
    {"priority", NewPriorityPlugin},
    {"gang", NewGangPlugin},
    {"conformance", NewConformancePlugin},
    {"drf", NewDrfPlugin},
    {"proportion", NewProportionPlugin},
    {"capacity", NewCapacityPlugin},
    {"sla", NewSlaPlugin},
    {"overcommit", NewOvercommitPlugin},
    {"predicates", NewPredicatesPlugin},
    {"nodeorder", NewNodeOrderPlugin},
    {"binpack", NewBinpackPlugin},
    {"network-topology-aware", NewNetworkTopologyAwarePlugin},
    {"nvlink", NewNvLinkPlugin},
    // The GPU placement policies (gpuplacement/plugin.h).
    {"gpu-fgd", NewGpuPlacementPlugin},
    {"gpu-bestfit", NewGpuPlacementPlugin},
    {"gpu-dotproduct", NewGpuPlacementPlugin},
    {"gpu-packing", NewGpuPlacementPlugin},
    {"gpu-clustering", NewGpuPlacementPlugin},
    {"gpu-random", NewGpuPlacementPlugin},
    {"gpu-muster", NewGpuPlacementPlugin},
};

// A name the conf parser accepts is a plugin the session builds: a row without a builder would
// be a plugin skipped silently, so none may be without one.
static_assert([] {
  for (const PluginRegistration& r : kPlugins) {
    if (r.build == nullptr) return false;
  }
  return true;
}());

constexpr auto kPluginNames = [] {
  std::array<std::string_view, std::size(kPlugins)> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kPlugins[i].name;
  return names;
}();

}  // namespace

std::span<const std::string_view> PluginNames() { return kPluginNames; }

std::unique_ptr<Plugin> NewPlugin(const PluginOption& opt) {
  for (const PluginRegistration& r : kPlugins) {
    if (r.name == opt.name) return r.build(opt);
  }
  // A conf built in code rather than parsed may name a GPU policy another way: the simulator
  // writes "gpu-" + its placement, which NewGpuPlacementPolicy also takes capitalised or as an
  // alias ("dotprod"). Every gpu-* name goes to the GPU placement plugin, as the listed ones do.
  if (opt.name.rfind("gpu-", 0) == 0) return NewGpuPlacementPlugin(opt);
  return nullptr;
}

}  // namespace muster::core
