#pragma once

// The resource weights of a binpack score, read from a plugin's arguments under a prefix:
// PREFIX.cpu and PREFIX.memory (default 1 each), nvidia.com/gpu 1, and every resource named in
// the comma-separated PREFIX.resources with its weight PREFIX.resources.<name> (default 1). The
// binpack plugin reads them under "binpack", network-topology-aware under "hypernode.binpack",
// as Volcano's binpack and network-topology-aware plugins do.

#include <string_view>

#include "core/framework/conf.h"
#include "core/resources.h"

namespace muster::core {

Resources BinpackWeights(const PluginOption& opt, std::string_view prefix);

}  // namespace muster::core
