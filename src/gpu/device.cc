// The GPU inventory's plain values (device.h): nvidia-smi's names for PCIe paths and the NVLink
// matrix `nvidia-smi topo -m` prints.

#include "gpu/device.h"

#include <algorithm>

namespace muster::gpu {

std::string_view TopologyLevelName(TopologyLevel level) {
  switch (level) {
    case TopologyLevel::kInternal:
      return "SAME-BOARD";
    case TopologyLevel::kSingle:
      return "PIX";
    case TopologyLevel::kMultiple:
      return "PXB";
    case TopologyLevel::kHostBridge:
      return "PHB";
    case TopologyLevel::kNode:
      return "NODE";
    case TopologyLevel::kSystem:
      return "SYS";
  }
  return "SYS";
}

const PeerLink* GpuDevice::Peer(int peer_index) const {
  for (const PeerLink& link : peers) {
    if (link.peer_index == peer_index) return &link;
  }
  return nullptr;
}

std::vector<std::vector<int>> NvLinkMatrix(const std::vector<GpuDevice>& gpus) {
  const size_t n = gpus.size();
  std::vector<std::vector<int>> links(n, std::vector<int>(n, 0));
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      if (a == b) continue;
      int direct = 0;
      for (const PeerLink& link : gpus[a].peers) {
        if (link.peer_index == gpus[b].index) direct = link.nvlinks;
      }
      links[a][b] = direct + std::min(gpus[a].nvswitch_links, gpus[b].nvswitch_links);
    }
  }
  return links;
}

}  // namespace muster::gpu
