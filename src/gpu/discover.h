#pragma once

// GPU discovery: everything muster needs to know about this machine's NVIDIA GPUs, read once
// through NVML (gpu/nvml.h) into plain values (gpu/device.h).
//
//   auto gpus = muster::gpu::Discover({});          // default libnvidia-ml.so.1, /sys
//   if (!gpus.ok()) ...  // FailedPrecondition "no NVIDIA driver found: ..." without a driver
//
// Per GPU: index, UUID, name, memory, compute capability, PCI bus id, minor number, NUMA node
// (from sysfs: /sys/bus/pci/devices/<busid>/numa_node), MIG mode and MIG devices with NVIDIA's
// profile names, and for every other GPU the PCIe topology level and the number of NVLinks
// between them. Queries a driver does not support leave their fields at the defaults; failures
// of the basic queries (UUID, name, memory) are errors.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gpu/device.h"
#include "gpu/nvml.h"

namespace muster::gpu {

struct DiscoverOptions {
  // Path or soname of the NVML library; see ResolveNvmlLibrary for how driver_root is used.
  std::string nvml_library = std::string(kDefaultNvmlLibrary);
  std::string driver_root = "/";
  std::string sysfs_root = "/sys";
};

// Discovery through an already initialised NVML (the device plugin keeps one for health events).
absl::StatusOr<GpuSystem> DiscoverSystem(const Nvml& nvml, std::string_view sysfs_root = "/sys");
// Loads NVML, discovers, unloads.
absl::StatusOr<GpuSystem> DiscoverSystem(const DiscoverOptions& options);
absl::StatusOr<std::vector<GpuDevice>> Discover(const DiscoverOptions& options);

// "00000000:18:00.0" (NVML) -> "0000:18:00.0" (sysfs, lower case).
std::string NormalizeBusId(std::string_view nvml_bus_id);

// A human-readable report: driver, each GPU (name, UUID, memory, compute capability, PCI, NUMA,
// MIG mode and devices) and the topology matrix as `nvidia-smi topo -m` prints it (NV<n> for
// NVLinks, else the PCIe level).
std::string FormatInventory(const GpuSystem& system);

}  // namespace muster::gpu
