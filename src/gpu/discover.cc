#include "gpu/discover.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <utility>

#include "fmt/format.h"
#include "gpu/mig_profile.h"

namespace muster::gpu {
namespace {

// Reads /sys/bus/pci/devices/<busid>/numa_node; -1 when absent or negative.
int ReadNumaNode(std::string_view sysfs_root, const std::string& bus_id) {
  std::ifstream in(fmt::format("{}/bus/pci/devices/{}/numa_node", sysfs_root, bus_id));
  int node = -1;
  if (!(in >> node) || node < 0) return -1;
  return node;
}

absl::Status Annotate(const absl::Status& status, int index) {
  return absl::Status(status.code(), fmt::format("GPU {}: {}", index, std::string(status.message())));
}

absl::StatusOr<MigDevice> DiscoverMigDevice(const Nvml& nvml, nvmlDevice_t parent,
                                            uint64_t parent_memory, nvmlDevice_t mig,
                                            int slot) {
  MigDevice device;
  device.index = slot;
  auto uuid = nvml.Uuid(mig);
  if (!uuid.ok()) return uuid.status();
  device.uuid = *uuid;
  auto gi = nvml.GpuInstanceId(mig);
  if (!gi.ok()) return gi.status();
  device.gpu_instance_id = *gi;
  auto ci = nvml.ComputeInstanceId(mig);
  if (!ci.ok()) return ci.status();
  device.compute_instance_id = *ci;
  auto attributes = nvml.Attributes(mig);
  if (!attributes.ok()) return attributes.status();
  device.memory_bytes = attributes->memorySizeMB * kMiB;
  device.multiprocessors = attributes->multiprocessorCount;
  device.gpu_instance_slices = attributes->gpuInstanceSliceCount;
  device.compute_instance_slices = attributes->computeInstanceSliceCount;
  device.copy_engines = attributes->sharedCopyEngineCount;
  device.decoders = attributes->sharedDecoderCount;
  device.encoders = attributes->sharedEncoderCount;
  device.jpeg_engines = attributes->sharedJpegCount;
  device.ofa_engines = attributes->sharedOfaCount;
  // The GPU instance's profile id says whether the name carries a suffix (+me); reading it needs
  // more privileges than the rest, so without it the name has none.
  auto profile_id = nvml.GpuInstanceProfileId(parent, device.gpu_instance_id);
  device.profile = MigProfileName(device.gpu_instance_slices, device.compute_instance_slices,
                                  attributes->memorySizeMB, parent_memory,
                                  profile_id.ok() ? *profile_id : kUnknownGpuInstanceProfile);
  return device;
}

absl::StatusOr<GpuDevice> DiscoverDevice(const Nvml& nvml, nvmlDevice_t handle, int index,
                                         std::string_view sysfs_root) {
  GpuDevice gpu;
  gpu.index = index;
  auto uuid = nvml.Uuid(handle);
  if (!uuid.ok()) return uuid.status();
  gpu.uuid = *uuid;
  auto name = nvml.Name(handle);
  if (!name.ok()) return name.status();
  gpu.name = *name;
  auto memory = nvml.MemoryTotal(handle);
  if (!memory.ok()) return memory.status();
  gpu.memory_bytes = *memory;
  if (auto cc = nvml.ComputeCapability(handle); cc.ok()) {
    gpu.compute_major = cc->first;
    gpu.compute_minor = cc->second;
  } else if (!absl::IsUnimplemented(cc.status())) {
    return cc.status();
  }
  if (auto pci = nvml.Pci(handle); pci.ok()) {
    gpu.pci_bus_id = NormalizeBusId(pci->bus_id);
    gpu.numa_node = ReadNumaNode(sysfs_root, gpu.pci_bus_id);
  } else if (!absl::IsUnimplemented(pci.status())) {
    return pci.status();
  }
  if (auto minor = nvml.MinorNumber(handle); minor.ok()) {
    gpu.minor_number = *minor;
  } else if (!absl::IsUnimplemented(minor.status())) {
    return minor.status();
  }
  auto mig = nvml.MigEnabled(handle);
  if (mig.ok()) {
    gpu.mig_capable = true;
    gpu.mig_enabled = *mig;
  } else if (!absl::IsUnimplemented(mig.status())) {
    return mig.status();
  }
  if (gpu.mig_enabled) {
    auto slots = nvml.MaxMigDeviceCount(handle);
    if (!slots.ok()) return slots.status();
    for (unsigned slot = 0; slot < *slots; ++slot) {
      auto mig_handle = nvml.MigDeviceByIndex(handle, slot);
      if (absl::IsNotFound(mig_handle.status())) continue;  // an empty slot
      if (!mig_handle.ok()) return mig_handle.status();
      auto device = DiscoverMigDevice(nvml, handle, gpu.memory_bytes, *mig_handle,
                                      static_cast<int>(slot));
      if (!device.ok()) return device.status();
      gpu.mig_devices.push_back(std::move(*device));
    }
  }
  return gpu;
}

// The key under which NvLinksByPeer counts links whose remote end is no GPU of this machine.
constexpr int kNotAGpu = -1;

// Counts the active NVLinks of `handle` by the GPU at their remote end (kNotAGpu: an NVSwitch or
// a bridge).
absl::StatusOr<std::map<int, int>> NvLinksByPeer(const Nvml& nvml, nvmlDevice_t handle,
                                                 const std::map<std::string, int>& by_bus_id) {
  std::map<int, int> links;
  for (unsigned link = 0; link < kNvmlNvLinkMaxLinks; ++link) {
    auto active = nvml.NvLinkActive(handle, link);
    if (absl::IsInvalidArgument(active.status()) || absl::IsUnimplemented(active.status()) ||
        absl::IsNotFound(active.status())) {
      continue;  // no such link, or no NVLink at all
    }
    if (!active.ok()) return active.status();
    if (!*active) continue;
    auto remote = nvml.NvLinkRemotePci(handle, link);
    if (absl::IsUnimplemented(remote.status()) || absl::IsInvalidArgument(remote.status())) {
      continue;
    }
    if (!remote.ok()) return remote.status();
    auto peer = by_bus_id.find(NormalizeBusId(remote->bus_id));
    ++links[peer != by_bus_id.end() ? peer->second : kNotAGpu];
  }
  return links;
}

}  // namespace

std::string NormalizeBusId(std::string_view nvml_bus_id) {
  std::string id(nvml_bus_id);
  std::transform(id.begin(), id.end(), id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  size_t colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id.erase(0, colon - 4);
  return id;
}

absl::StatusOr<GpuSystem> DiscoverSystem(const Nvml& nvml, std::string_view sysfs_root) {
  GpuSystem system;
  system.nvml_library = nvml.library();
  if (auto version = nvml.SystemDriverVersion(); version.ok()) {
    system.driver_version = *version;
  } else if (!absl::IsUnimplemented(version.status())) {
    return version.status();
  }
  if (auto cuda = nvml.SystemCudaDriverVersion(); cuda.ok()) {
    system.cuda_driver_version = *cuda;
  } else if (!absl::IsUnimplemented(cuda.status())) {
    return cuda.status();
  }
  auto count = nvml.DeviceCount();
  if (!count.ok()) return count.status();
  std::vector<nvmlDevice_t> handles;
  for (unsigned i = 0; i < *count; ++i) {
    int index = static_cast<int>(i);
    auto handle = nvml.DeviceByIndex(i);
    if (!handle.ok()) return Annotate(handle.status(), index);
    auto gpu = DiscoverDevice(nvml, *handle, index, sysfs_root);
    if (!gpu.ok()) return Annotate(gpu.status(), index);
    handles.push_back(*handle);
    system.devices.push_back(std::move(*gpu));
  }

  std::map<std::string, int> by_bus_id;
  for (const GpuDevice& gpu : system.devices) {
    if (!gpu.pci_bus_id.empty()) by_bus_id[gpu.pci_bus_id] = gpu.index;
  }
  for (GpuDevice& gpu : system.devices) {
    auto links = NvLinksByPeer(nvml, handles[gpu.index], by_bus_id);
    if (!links.ok()) return Annotate(links.status(), gpu.index);
    if (auto it = links->find(kNotAGpu); it != links->end()) gpu.nvswitch_links = it->second;
    for (const GpuDevice& other : system.devices) {
      if (other.index == gpu.index) continue;
      PeerLink link;
      link.peer_index = other.index;
      auto level = nvml.CommonAncestor(handles[gpu.index], handles[other.index]);
      if (level.ok()) {
        link.level = static_cast<TopologyLevel>(*level);
      } else if (!absl::IsUnimplemented(level.status())) {
        return Annotate(level.status(), gpu.index);
      }
      auto count_it = links->find(other.index);
      link.nvlinks = count_it == links->end() ? 0 : count_it->second;
      gpu.peers.push_back(link);
    }
  }
  return system;
}

absl::StatusOr<GpuSystem> DiscoverSystem(const DiscoverOptions& options) {
  auto nvml = Nvml::Load(ResolveNvmlLibrary(options.nvml_library, options.driver_root));
  if (!nvml.ok()) return nvml.status();
  return DiscoverSystem(**nvml, options.sysfs_root);
}

absl::StatusOr<std::vector<GpuDevice>> Discover(const DiscoverOptions& options) {
  auto system = DiscoverSystem(options);
  if (!system.ok()) return system.status();
  return std::move(system->devices);
}

std::string FormatInventory(const GpuSystem& system) {
  std::string out = fmt::format("NVML {}: driver {}, CUDA {}.{}, {} GPU{}\n", system.nvml_library,
                                system.driver_version.empty() ? "unknown" : system.driver_version,
                                system.cuda_driver_version / 1000,
                                (system.cuda_driver_version % 1000) / 10, system.devices.size(),
                                system.devices.size() == 1 ? "" : "s");
  for (const GpuDevice& gpu : system.devices) {
    out += fmt::format("GPU {}: {} ({})\n", gpu.index, gpu.name, gpu.uuid);
    out += fmt::format("  memory {} MiB, compute capability {}.{}, PCI {}, minor {}, NUMA {}\n",
                       gpu.memory_bytes / kMiB, gpu.compute_major, gpu.compute_minor,
                       gpu.pci_bus_id.empty() ? "unknown" : gpu.pci_bus_id, gpu.minor_number,
                       gpu.numa_node < 0 ? std::string("unknown") : std::to_string(gpu.numa_node));
    if (!gpu.mig_capable) {
      out += "  MIG not supported\n";
    } else if (!gpu.mig_enabled) {
      out += "  MIG disabled\n";
    } else {
      out += fmt::format("  MIG enabled, {} MIG device{}\n", gpu.mig_devices.size(),
                         gpu.mig_devices.size() == 1 ? "" : "s");
      for (const MigDevice& mig : gpu.mig_devices) {
        out += fmt::format("    MIG {}: {} ({}) GI {} CI {}, {} MiB, {} SMs\n", mig.index,
                           mig.profile, mig.uuid, mig.gpu_instance_id, mig.compute_instance_id,
                           mig.memory_bytes / kMiB, mig.multiprocessors);
      }
    }
  }
  if (system.devices.size() > 1) {
    out += "Topology (NV<n>: n NVLinks; else the PCIe path: SAME-BOARD, PIX, PXB, PHB, NODE, "
           "SYS):\n      ";
    for (const GpuDevice& gpu : system.devices) out += fmt::format("{:>11}", "GPU" + std::to_string(gpu.index));
    out += "\n";
    const std::vector<std::vector<int>> nvlinks = NvLinkMatrix(system.devices);
    for (size_t a = 0; a < system.devices.size(); ++a) {
      const GpuDevice& gpu = system.devices[a];
      out += fmt::format("{:>6}", "GPU" + std::to_string(gpu.index));
      for (size_t b = 0; b < system.devices.size(); ++b) {
        std::string cell = "X";
        if (const PeerLink* link = gpu.Peer(system.devices[b].index); link != nullptr) {
          cell = nvlinks[a][b] > 0 ? fmt::format("NV{}", nvlinks[a][b])
                                   : std::string(TopologyLevelName(link->level));
        }
        out += fmt::format("{:>11}", cell);
      }
      out += "\n";
    }
  }
  return out;
}

}  // namespace muster::gpu
