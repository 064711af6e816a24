#pragma once

// The gpu-* scheduler plugins (plugin.cc). The registry (plugins/registry.cc) builds them by
// name: gpu-fgd, gpu-bestfit, gpu-dotproduct, gpu-packing, gpu-clustering, gpu-random,
// gpu-muster. Arguments: <name>.weight (default 1), and for gpu-random <name>.seed (default 42).

#include <memory>

#include "core/framework/conf.h"
#include "core/framework/session.h"

namespace muster::core {

std::unique_ptr<Plugin> NewGpuPlacementPlugin(const PluginOption& opt);

}  // namespace muster::core
