#pragma once

// The GPU inventory of one machine as NVML reports it: plain values, no NVML handles, so that the
// device plugin, `muster up` and the labeller share one model and tests can build it by hand.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace muster::gpu {

// How two GPUs reach each other over PCIe (nvmlGpuTopologyLevel_t), closest first.
enum class TopologyLevel {
  kInternal = 0,     // same board (multi-GPU card)
  kSingle = 10,      // one PCIe switch
  kMultiple = 20,    // several PCIe switches, no host bridge
  kHostBridge = 30,  // the same host bridge
  kNode = 40,        // the same NUMA node (CPU socket)
  kSystem = 50,      // across CPU sockets (SMP interconnect)
};

// nvidia-smi topo's names: "SAME-BOARD", "PIX", "PXB", "PHB", "NODE", "SYS".
std::string_view TopologyLevelName(TopologyLevel level);

// One other GPU as seen from a GPU.
struct PeerLink {
  int peer_index = 0;
  TopologyLevel level = TopologyLevel::kSystem;
  int nvlinks = 0;  // active NVLinks whose remote end is the peer
};

// A MIG device (one compute instance of one GPU instance).
struct MigDevice {
  int index = 0;  // slot on the parent (nvmlDeviceGetMigDeviceHandleByIndex)
  std::string uuid;     // "MIG-..."
  std::string profile;  // "1g.10gb", "1c.2g.20gb", "1g.10gb+me" (as NVIDIA derives it)
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  uint64_t memory_bytes = 0;
  unsigned multiprocessors = 0;
  unsigned gpu_instance_slices = 0;
  unsigned compute_instance_slices = 0;
  unsigned copy_engines = 0;
  unsigned decoders = 0;
  unsigned encoders = 0;
  unsigned jpeg_engines = 0;
  unsigned ofa_engines = 0;
};

struct GpuDevice {
  int index = 0;
  std::string uuid;  // "GPU-..."
  std::string name;  // "NVIDIA H100 80GB HBM3"
  uint64_t memory_bytes = 0;
  int compute_major = 0;
  int compute_minor = 0;
  std::string pci_bus_id;  // sysfs form, lower case: "0000:18:00.0"
  unsigned minor_number = 0;  // /dev/nvidia<minor>
  int numa_node = -1;         // from sysfs; -1 when unknown
  bool mig_capable = false;
  bool mig_enabled = false;
  std::vector<MigDevice> mig_devices;  // empty unless mig_enabled
  std::vector<PeerLink> peers;         // every other GPU, by peer index
  // Active NVLinks whose remote end is no GPU of this machine: an NVSwitch (HGX A100/H100 boards
  // link each GPU to the switches only; a bridge to a CPU would count here too).
  int nvswitch_links = 0;

  // The link to `peer_index`, or nullptr.
  [[nodiscard]] const PeerLink* Peer(int peer_index) const;
};

// NVLinks between every two of `gpus` (by position; row a, column b), as `nvidia-smi topo -m`
// prints NV<n>: the direct links, plus, where both GPUs have links to NVSwitches, as many as the
// less connected of the two has (every GPU of an HGX H100 board reaches every other over 18).
// The diagonal is 0. What muster.dev/gpu-topology carries (api/gpu_topology.h).
std::vector<std::vector<int>> NvLinkMatrix(const std::vector<GpuDevice>& gpus);

struct GpuSystem {
  std::string driver_version;   // "550.107.02"
  int cuda_driver_version = 0;  // 12040 for CUDA 12.4
  std::string nvml_library;     // what was loaded
  std::vector<GpuDevice> devices;  // by index
};

}  // namespace muster::gpu
