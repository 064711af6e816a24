#pragma once

// What the plugin advertises: the discovered GPUs turned into kubelet resources by the MIG
// strategy and time-slicing, as NVIDIA's plugin does (internal/rm):
//   none    every GPU, MIG-enabled or not, is one nvidia.com/gpu;
//   single  every GPU must have MIG enabled with MIG devices of one profile, each MIG device
//           being one nvidia.com/gpu (all GPUs with MIG disabled: as none);
//   mixed   GPUs without MIG are nvidia.com/gpu, MIG devices nvidia.com/mig-<profile> ("+" in
//           the profile becomes ".").
// Time-slicing repeats each device of a shared resource `replicas` times with IDs <id>::<n>, the
// resource renamed <name>.shared when renameByDefault is set.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "deviceplugin/config.h"
#include "gpu/device.h"

namespace muster::deviceplugin {

// One device in a ListAndWatch list.
struct AdvertisedDevice {
  std::string id;           // the kubelet's device ID: the UUID, or <UUID>::<n> for a replica
  std::string uuid;         // the GPU's or MIG device's UUID (the health unit)
  std::string index;        // "3", or "3:1" for MIG device 1 of GPU 3 (NVIDIA's index form)
  int gpu_index = 0;        // the physical GPU
  int replica = -1;         // -1 when not shared
  bool is_mig = false;
  unsigned minor = 0;       // /dev/nvidia<minor> of the (parent) GPU
  unsigned gpu_instance_id = 0;      // MIG only
  unsigned compute_instance_id = 0;  // MIG only
  int numa_node = -1;
  bool healthy = true;
};

struct ResourceDevices {
  std::string name;         // "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared"
  std::string socket_name;  // "nvidia-gpu.sock"
  int replicas = 1;
  bool full_gpus = true;    // whole GPUs (topology-aware preferred allocation applies)
  std::vector<AdvertisedDevice> devices;

  // The device with this kubelet ID, or nullptr.
  [[nodiscard]] const AdvertisedDevice* Find(const std::string& id) const;
};

// The resources in a fixed order (nvidia.com/gpu first, then by name). InvalidArgument when
// the MIG layout does not suit the single strategy.
absl::StatusOr<std::vector<ResourceDevices>> BuildResources(const gpu::GpuSystem& system,
                                                            const PluginConfig& config);

}  // namespace muster::deviceplugin
