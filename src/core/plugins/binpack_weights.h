#pragma once

// Volcano's binpack score and the resource weights it is taken with. The weights are read from a plugin's arguments under a prefix:
// PREFIX.cpu and PREFIX.memory (default 1 each), nvidia.com/gpu 1, and every resource named in
// the comma-separated PREFIX.resources with its weight PREFIX.resources.<name> (default 1). The
// binpack plugin reads them under "binpack", network-topology-aware under "hypernode.binpack",
// as Volcano's binpack and network-topology-aware plugins do.

#include <string_view>

#include "core/framework/conf.h"
#include "core/resources.h"

namespace muster::core {

Resources BinpackWeights(const PluginOption& opt, std::string_view prefix);

// The weighted mean, over the resources `request` asks for that have a weight, of the used
// fraction of `allocatable` once `request` is added to `used`: 0 to 1, or 0 when the request does
// not fit or asks for no weighted resource. binpack scores a node with it, network-topology-aware
// a HyperNode (its nodes' sums).
double BinpackFraction(const Resources& weights, const Resources& request,
                       const Resources& allocatable, const Resources& used);

}  // namespace muster::core
