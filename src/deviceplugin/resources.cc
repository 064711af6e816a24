#include "deviceplugin/resources.h"

#include <algorithm>
#include <map>
#include <set>

#include "fmt/format.h"

namespace muster::deviceplugin {

const AdvertisedDevice* ResourceDevices::Find(const std::string& id) const {
  for (const AdvertisedDevice& device : devices) {
    if (device.id == id) return &device;
  }
  return nullptr;
}

namespace {

AdvertisedDevice FullGpu(const gpu::GpuDevice& gpu) {
  AdvertisedDevice device;
  device.id = gpu.uuid;
  device.uuid = gpu.uuid;
  device.index = std::to_string(gpu.index);
  device.gpu_index = gpu.index;
  device.minor = gpu.minor_number;
  device.numa_node = gpu.numa_node;
  return device;
}

AdvertisedDevice Mig(const gpu::GpuDevice& gpu, const gpu::MigDevice& mig) {
  AdvertisedDevice device;
  device.id = mig.uuid;
  device.uuid = mig.uuid;
  device.index = fmt::format("{}:{}", gpu.index, mig.index);
  device.gpu_index = gpu.index;
  device.is_mig = true;
  device.minor = gpu.minor_number;
  device.gpu_instance_id = mig.gpu_instance_id;
  device.compute_instance_id = mig.compute_instance_id;
  device.numa_node = gpu.numa_node;
  return device;
}

std::string MigResourceName(const std::string& profile) {
  std::string name = "nvidia.com/mig-" + profile;
  std::replace(name.begin(), name.end(), '+', '.');
  return name;
}

absl::Status CheckSingleStrategy(const gpu::GpuSystem& system, bool& use_mig) {
  size_t enabled = 0;
  for (const gpu::GpuDevice& gpu : system.devices) enabled += gpu.mig_enabled ? 1 : 0;
  use_mig = enabled > 0;
  if (enabled == 0) return absl::OkStatus();
  if (enabled != system.devices.size()) {
    return absl::InvalidArgumentError(
        "invalid MIG configuration for migStrategy single: every GPU must have MIG enabled, or "
        "none (use mixed for a mix)");
  }
  std::set<std::string> profiles;
  for (const gpu::GpuDevice& gpu : system.devices) {
    if (gpu.mig_devices.empty()) {
      return absl::InvalidArgumentError(fmt::format(
          "invalid MIG configuration for migStrategy single: GPU {} has MIG enabled but no MIG "
          "devices",
          gpu.index));
    }
    for (const gpu::MigDevice& mig : gpu.mig_devices) profiles.insert(mig.profile);
  }
  if (profiles.size() > 1) {
    std::string list;
    for (const std::string& p : profiles) list += (list.empty() ? "" : ", ") + p;
    return absl::InvalidArgumentError(fmt::format(
        "invalid MIG configuration for migStrategy single: more than one MIG profile ({}); "
        "use mixed",
        list));
  }
  return absl::OkStatus();
}

std::string SocketName(const std::string& resource) {
  std::string suffix = resource.substr(resource.find('/') + 1);
  return "nvidia-" + suffix + ".sock";
}

}  // namespace

absl::StatusOr<std::vector<ResourceDevices>> BuildResources(const gpu::GpuSystem& system,
                                                            const PluginConfig& config) {
  // Resource name -> devices, before sharing.
  std::map<std::string, ResourceDevices> by_name;
  auto add = [&](const std::string& name, AdvertisedDevice device, bool full_gpu) {
    ResourceDevices& resource = by_name[name];
    resource.name = name;
    resource.full_gpus = resource.devices.empty() ? full_gpu : resource.full_gpus && full_gpu;
    resource.devices.push_back(std::move(device));
  };
  switch (config.mig_strategy) {
    case MigStrategy::kNone:
      for (const gpu::GpuDevice& gpu : system.devices) add("nvidia.com/gpu", FullGpu(gpu), true);
      break;
    case MigStrategy::kSingle: {
      bool use_mig = false;
      if (auto s = CheckSingleStrategy(system, use_mig); !s.ok()) return s;
      for (const gpu::GpuDevice& gpu : system.devices) {
        if (!use_mig) {
          add("nvidia.com/gpu", FullGpu(gpu), true);
          continue;
        }
        for (const gpu::MigDevice& mig : gpu.mig_devices) {
          add("nvidia.com/gpu", Mig(gpu, mig), false);
        }
      }
      break;
    }
    case MigStrategy::kMixed:
      for (const gpu::GpuDevice& gpu : system.devices) {
        if (!gpu.mig_enabled) {
          add("nvidia.com/gpu", FullGpu(gpu), true);
          continue;
        }
        for (const gpu::MigDevice& mig : gpu.mig_devices) {
          add(MigResourceName(mig.profile), Mig(gpu, mig), false);
        }
      }
      break;
  }

  // A shared resource that this node lacks is not an error: one config serves many nodes.
  std::vector<ResourceDevices> resources;
  for (auto& [name, resource] : by_name) {
    int replicas = config.ReplicasOf(name);
    if (replicas > 1) {
      std::vector<AdvertisedDevice> replicated;
      for (const AdvertisedDevice& device : resource.devices) {
        for (int n = 0; n < replicas; ++n) {
          AdvertisedDevice copy = device;
          copy.id = fmt::format("{}::{}", device.uuid, n);
          copy.replica = n;
          replicated.push_back(std::move(copy));
        }
      }
      resource.devices = std::move(replicated);
      resource.replicas = replicas;
      if (config.time_slicing.rename_by_default) resource.name += ".shared";
    }
    resource.socket_name = SocketName(resource.name);
    resources.push_back(std::move(resource));
  }
  std::stable_sort(resources.begin(), resources.end(),
                   [](const ResourceDevices& a, const ResourceDevices& b) {
                     bool a_gpu = a.name.rfind("nvidia.com/gpu", 0) == 0;
                     bool b_gpu = b.name.rfind("nvidia.com/gpu", 0) == 0;
                     if (a_gpu != b_gpu) return a_gpu;
                     return a.name < b.name;
                   });
  return resources;
}

}  // namespace muster::deviceplugin
