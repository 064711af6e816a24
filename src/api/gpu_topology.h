#pragma once

// muster.dev/gpu-topology: the annotation in which a node states how its GPUs are linked to each
// other by NVLink, so that the scheduler can give a multi-GPU pod GPUs that talk over NVLink
// rather than PCIe. Written by the device plugin (from NVML, deviceplugin/daemon.h) and by
// `muster up`'s node agents (from the cluster file or NVML, node/agent.h); read by the scheduling
// core's nvlink plugin (core/plugins/nvlink.cc). One key and one codec, so that the writers and
// the reader never disagree on what a value means. The numbers are those of
// muster.dev/gpu-indices (api/gpu_indices.h): node-local device numbers, 0 the first, as NVML
// and CUDA_VISIBLE_DEVICES number whole GPUs.
//
// A value is versioned and compact, `v1;gpus=<n>;nvlink=<a>-<b>:<links>,...`:
//
//   v1;gpus=8;nvlink=0-1:1,0-2:1,0-3:2,0-4:2,1-2:2,1-3:1,1-5:2,2-3:2,
//                    2-6:1,3-7:1,4-5:1,4-6:1,4-7:2,5-6:2,5-7:1,6-7:2      (one line)
//
// is a DGX-1's hybrid cube-mesh: `gpus` devices, and for each pair of GPUs joined by NVLink the
// number of links between them (as `nvidia-smi topo -m` prints NV<links>); a pair left out has
// none (PCIe only). GPUs on NVSwitches reach each other over as many links as the less connected
// of the two has to the switches: an HGX H100 lists every pair with 18. `nvlink=` may be empty.
// FormatGpuTopology writes pairs with a < b in ascending order; ParseGpuTopology also takes a
// pair written b-a. What is not carried: the PCIe path between GPUs that share no NVLink.
//
// Malformed values (another version, a missing or unknown part, a GPU number outside 0..gpus-1,
// a GPU linked to itself, a pair given twice, links outside 1..1000) are InvalidArgument errors
// whose message names the part that is wrong.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace muster::api {

inline constexpr char kGpuTopologyAnnotation[] = "muster.dev/gpu-topology";

// The most GPUs a topology may describe (a cluster file's limit per node) and the most NVLinks
// between two of them.
inline constexpr int kMaxTopologyGpus = 1024;
inline constexpr int kMaxNvLinksPerPair = 1000;

// NVLink counts between the GPUs of one node: symmetric, none from a GPU to itself.
class GpuTopology {
 public:
  GpuTopology() = default;
  // `gpus` GPUs without NVLinks.
  explicit GpuTopology(int gpus);

  // The square matrix `links` (row a, column b: the NVLinks between GPUs a and b), refused when
  // it is not square, not symmetric, has links on its diagonal or counts outside 0..1000; the
  // message names the cell, "[1][0]: 2 NVLinks, but [0][1] says 1 (links are the same both ways)".
  static absl::StatusOr<GpuTopology> FromMatrix(const std::vector<std::vector<int>>& links);

  int gpus() const { return gpus_; }
  // NVLinks between GPUs a and b; 0 for a == b or a number outside 0..gpus-1.
  int NvLinks(int a, int b) const {
    if (a < 0 || b < 0 || a >= gpus_ || b >= gpus_) return 0;
    return links_[static_cast<size_t>(a) * gpus_ + b];
  }
  // Sets both directions; a and b must be distinct GPUs of this topology.
  void SetNvLinks(int a, int b, int links);
  // Whether any two GPUs share an NVLink.
  bool HasNvLinks() const;

  bool operator==(const GpuTopology&) const = default;

 private:
  int gpus_ = 0;
  std::vector<int> links_;  // gpus_ x gpus_, row-major
};

std::string FormatGpuTopology(const GpuTopology& topology);
// The annotation's value for an NVLink matrix (GpuTopology::FromMatrix), as the device plugin and
// the node agents publish it: "" when no two GPUs share an NVLink, or when the matrix is refused
// (NVML's counts not the same both ways), so that nothing wrong is published.
std::string GpuTopologyValue(const std::vector<std::vector<int>>& nvlinks);
absl::StatusOr<GpuTopology> ParseGpuTopology(std::string_view text);

}  // namespace muster::api
