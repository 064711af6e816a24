#pragma once

// `muster up --gpu-config FILE`: the local node offers this machine's GPUs as NVIDIA's device
// plugin run with the same config file (`version: v1`, docs/device-plugin.md) would advertise
// them, with the labels GPU Feature Discovery writes for that config:
//   migStrategy none     nvidia.com/gpu = the GPUs;
//               single   nvidia.com/gpu = the MIG devices (every GPU with the same MIG layout);
//               mixed    nvidia.com/mig-<profile> per profile, nvidia.com/gpu = GPUs without MIG;
//   sharing.timeSlicing  each device of a listed resource `replicas` times, the resource named
//                        <name>.shared with renameByDefault.
// The resources are the plugin's own (deviceplugin::BuildResources), the labels its GfdLabels.
//
// Which device a pod gets (node/node_resources.h): nvidia.com/gpu's devices are numbered as the
// scheduler numbers them in muster.dev/gpu-indices; the node hands out the other resources'
// lowest-numbered free devices. Replicas are numbered so that lowest-first follows
// sharedDevicesAllocationPolicy: `distributed` (the default) numbers replica 0 of every device
// before replica 1 of any (pods spread over the GPUs), `packed` all replicas of a device before
// the next. A device's NVIDIA_VISIBLE_DEVICES entry is what the plugin's Allocate would send (the
// GPU's or MIG device's UUID, or its index "0" / "0:1" with deviceIDStrategy index; replicas name
// their device); its CUDA_VISIBLE_DEVICES entry is what confines a process on this machine to it
// (the GPU's index, or the MIG device's UUID).

#include "absl/status/status.h"
#include "deviceplugin/config.h"
#include "deviceplugin/labels.h"
#include "gpu/device.h"
#include "node/cluster_file.h"

namespace muster::cmd {

// Adds `system`'s GPUs to `node` under `config`: its device resources, allocatable and capacity
// per resource, GFD labels and `gpus` (left empty when no resource has a device, so that the
// node hands out none). InvalidArgument when the MIG layout does not suit the strategy.
absl::Status AddConfiguredGpus(node::NodeConfig& node, const gpu::GpuSystem& system,
                               const deviceplugin::PluginConfig& config,
                               const deviceplugin::LabelInputs& label_inputs);

// The label inputs GPU Feature Discovery would use now: the first line of
// config.gfd.machineTypeFile, and the time unless config.gfd.noTimestamp.
deviceplugin::LabelInputs CurrentLabelInputs(const deviceplugin::PluginConfig& config);

}  // namespace muster::cmd
