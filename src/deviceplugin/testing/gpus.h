#pragma once

// Builders of discovered GPUs (gpu::GpuDevice) for the device plugin's unit tests.

#include <string>
#include <vector>

#include "fmt/format.h"
#include "gpu/device.h"

namespace muster::deviceplugin::testing {

inline constexpr uint64_t kMiB = 1024ULL * 1024;

inline gpu::GpuDevice MakeGpu(int index, std::string name = "NVIDIA H100 80GB HBM3",
                              uint64_t memory_mib = 81559) {
  gpu::GpuDevice g;
  g.index = index;
  g.uuid = fmt::format("GPU-{}", index);
  g.name = std::move(name);
  g.memory_bytes = memory_mib * kMiB;
  g.compute_major = 9;
  g.pci_bus_id = fmt::format("0000:{:02x}:00.0", 0x18 + 0x10 * index);
  g.minor_number = static_cast<unsigned>(index);
  g.numa_node = index % 2;
  g.mig_capable = true;
  return g;
}

inline gpu::MigDevice MakeMig(int gpu, int slot, const std::string& profile, unsigned gi,
                              uint64_t memory_mib = 9856) {
  gpu::MigDevice m;
  m.index = slot;
  m.uuid = fmt::format("MIG-{}-{}", gpu, slot);
  m.profile = profile;
  m.gpu_instance_id = gi;
  m.compute_instance_id = 0;
  m.memory_bytes = memory_mib * kMiB;
  m.multiprocessors = 16;
  m.gpu_instance_slices = 1;
  m.compute_instance_slices = 1;
  m.copy_engines = 1;
  m.decoders = 1;
  m.jpeg_engines = 1;
  return m;
}

inline gpu::GpuSystem MakeSystem(std::vector<gpu::GpuDevice> gpus) {
  gpu::GpuSystem system;
  system.driver_version = "550.107.02";
  system.cuda_driver_version = 12040;
  system.devices = std::move(gpus);
  return system;
}

// The DGX-1 hybrid cube-mesh of gpu/fake/fake_machine.h's Dgx1Machine(): NVLinks, PCIe switches
// {0,1} {2,3} {4,5} {6,7}, sockets {0-3} {4-7}.
inline std::vector<gpu::GpuDevice> Dgx1Gpus() {
  const int links[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2}, {1, 3, 1},
                          {1, 5, 2}, {2, 3, 2}, {2, 6, 1}, {3, 7, 1}, {4, 5, 1}, {4, 6, 1},
                          {4, 7, 2}, {5, 6, 2}, {5, 7, 1}, {6, 7, 2}};
  std::vector<gpu::GpuDevice> gpus;
  for (int i = 0; i < 8; ++i) {
    gpu::GpuDevice g = MakeGpu(i, "Tesla V100-SXM2-32GB", 32768);
    g.mig_capable = false;
    for (int j = 0; j < 8; ++j) {
      if (j == i) continue;
      gpu::PeerLink link;
      link.peer_index = j;
      link.level = i / 2 == j / 2   ? gpu::TopologyLevel::kSingle
                   : i / 4 == j / 4 ? gpu::TopologyLevel::kNode
                                    : gpu::TopologyLevel::kSystem;
      for (const auto& l : links) {
        if ((l[0] == i && l[1] == j) || (l[0] == j && l[1] == i)) link.nvlinks = l[2];
      }
      g.peers.push_back(link);
    }
    gpus.push_back(std::move(g));
  }
  return gpus;
}

}  // namespace muster::deviceplugin::testing
