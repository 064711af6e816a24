#include "gpu/device.h"

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

}  // namespace muster::gpu
