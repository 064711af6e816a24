#pragma once

// The best-connected set of GPUs on one node (api/gpu_topology.h): what the scheduler's nvlink
// plugin gives a multi-GPU pod (core/plugins/nvlink.cc) and what the device plugin prefers when
// the kubelet asks (deviceplugin/allocate.h, GetPreferredAllocation), one function for both so
// that on a real cluster the kubelet's choice agrees with the scheduler's muster.dev/gpu-indices.
//
// A set is better than another when it has more NVLinks among its GPUs (the bandwidth its
// collectives can use), then when more of its pairs are linked at all (fewer hops through PCIe),
// then when its GPU numbers, ascending, come first (lowest indices: deterministic). Every set of
// the asked size is weighed while there are at most kExhaustiveGpuSets of them; past that (more
// than 16 free GPUs, say 24 choose 8) a greedy search stands in: from each free GPU (or from the
// must-include ones), add the GPU with the most NVLinks into the set so far, then its most linked
// pairs, then the lowest number; the best of those sets wins.

#include <compare>
#include <cstdint>
#include <vector>

#include "api/gpu_topology.h"

namespace muster::api {

inline constexpr int64_t kExhaustiveGpuSets = 20000;

struct GpuSetScore {
  int nvlinks = 0;       // NVLinks between GPUs of the set, each pair counted once
  int linked_pairs = 0;  // pairs of the set with at least one NVLink

  auto operator<=>(const GpuSetScore&) const = default;
};

GpuSetScore ScoreGpuSet(const GpuTopology& topology, const std::vector<int>& gpus);

// The best `size` GPUs among `free` that include every GPU of `must_include`, ascending. Numbers
// outside the topology are never chosen. Empty when no such set exists (fewer usable GPUs than
// `size`, more must-include GPUs than `size`, a must-include GPU that is not free, size < 1).
std::vector<int> BestGpuSet(const GpuTopology& topology, const std::vector<int>& free, int size,
                            const std::vector<int>& must_include = {});

}  // namespace muster::api
