#pragma once

// The answers to Allocate and GetPreferredAllocation for one resource, as plain values (the gRPC
// server copies them into the v1beta1 messages). Behaviour follows NVIDIA's plugin
// (internal/plugin/server.go, internal/rm/allocate.go, go-gpuallocator):
//
// Allocate: every ID must be one this resource advertises (else InvalidArgument "invalid
// allocation request for 'nvidia.com/gpu': unknown device: X"); replicas of one device collapse
// to that device; then, per the device list strategies:
//   envvar           NVIDIA_VISIBLE_DEVICES=<uuid|index,...>
//   volume-mounts    NVIDIA_VISIBLE_DEVICES=/var/run/nvidia-container-devices and a mount of
//                    /dev/null at /var/run/nvidia-container-devices/<id> per device
//   cdi-annotations  annotation <prefix>nvidia-device-plugin_<resource>=nvidia.com/gpu=<id>,...
//   cdi-cri          cdi_devices nvidia.com/gpu=<id>
// passDeviceSpecs adds rw device nodes: /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools,
// /dev/nvidia-modeset (those present under the dev root), /dev/nvidia<minor> per GPU, and for
// MIG devices the GPU and compute instance capability nodes /dev/nvidia-caps/nvidia-cap<N>
// (from /proc/driver/nvidia-caps/mig-minors). NVIDIA_GDRCOPY/_GDS/_MOFED=enabled when set.
//
// GetPreferredAllocation: for whole GPUs without replicas on a machine whose GPUs share NVLinks,
// the scheduler's nvlink choice (api/gpu_sets.h, BestGpuSet over the NVLink counts this plugin
// publishes as muster.dev/gpu-topology): the set with the most NVLinks, then the most linked
// pairs, then the lowest GPU numbers, holding every must-include GPU; so the kubelet's devices are
// the ones the scheduler named in muster.dev/gpu-indices. Without NVLinks (PCIe only, where the
// scheduler has no topology) go-gpuallocator's best-effort policy:
// among all partitions of the available GPUs into sets of the requested size, the one with the
// highest total pair score that has a set holding every must-include GPU; from it, the best such
// set. Pair score: 100 per NVLink plus the PCIe path (same board 60, one switch 50, several
// switches 40, host bridge 30, same NUMA node 20, across sockets 10). Past ~1e6 partitions a
// greedy choice stands in (grow the must-include set by the best-connected GPU). For replicas
// and MIG devices: the `distributed` policy picks replicas of the least used devices first,
// `packed` of the most used.

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "deviceplugin/config.h"
#include "deviceplugin/resources.h"
#include "gpu/device.h"

namespace muster::deviceplugin {

struct MountSpec {
  std::string container_path;
  std::string host_path;
  bool read_only = false;
};

struct DeviceNodeSpec {
  std::string container_path;
  std::string host_path;
  std::string permissions;
};

struct ContainerAllocation {
  std::map<std::string, std::string> envs;
  std::vector<MountSpec> mounts;
  std::vector<DeviceNodeSpec> devices;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> cdi_devices;
};

struct AllocateEnvironment {
  std::string proc_root = "/proc";  // where mig-minors is read
};

absl::StatusOr<ContainerAllocation> Allocate(const ResourceDevices& resource,
                                             const PluginConfig& config,
                                             const std::vector<std::string>& ids,
                                             const AllocateEnvironment& environment = {});

// Pair score between two GPUs of `gpus` (by index), as go-gpuallocator computes it.
int PairScore(const std::vector<gpu::GpuDevice>& gpus, int a, int b);

absl::StatusOr<std::vector<std::string>> PreferredAllocation(
    const ResourceDevices& resource, const std::vector<gpu::GpuDevice>& gpus,
    const PluginConfig& config, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size);

}  // namespace muster::deviceplugin
