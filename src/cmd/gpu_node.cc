#include "cmd/gpu_node.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "common/quantity.h"
#include "deviceplugin/resources.h"

namespace muster::cmd {
namespace {

namespace dp = muster::deviceplugin;

// The devices of `resource` in the order the node numbers them.
std::vector<const dp::AdvertisedDevice*> NumberingOrder(const dp::ResourceDevices& resource,
                                                        dp::SharedAllocationPolicy policy) {
  std::vector<const dp::AdvertisedDevice*> order;
  for (const dp::AdvertisedDevice& d : resource.devices) order.push_back(&d);
  if (resource.replicas > 1 && policy == dp::SharedAllocationPolicy::kDistributed) {
    // BuildResources lists device by device; replica 0 of each first.
    std::stable_sort(order.begin(), order.end(),
                     [](const auto* a, const auto* b) { return a->replica < b->replica; });
  }
  return order;
}

}  // namespace

absl::Status AddConfiguredGpus(node::NodeConfig& node, const gpu::GpuSystem& system,
                               const dp::PluginConfig& config,
                               const dp::LabelInputs& label_inputs) {
  absl::StatusOr<std::vector<dp::ResourceDevices>> resources = dp::BuildResources(system, config);
  if (!resources.ok()) return resources.status();
  for (const dp::ResourceDevices& resource : *resources) {
    if (resource.devices.empty()) continue;
    node::DeviceResource out{resource.name, {}};
    for (const dp::AdvertisedDevice* d :
         NumberingOrder(resource, config.shared_allocation_policy)) {
      out.devices.push_back(
          {d->id, config.device_id_strategy == dp::DeviceIdStrategy::kIndex ? d->index : d->uuid,
           d->is_mig ? d->uuid : std::to_string(d->gpu_index)});
    }
    const auto count = common::Quantity::FromUnits(static_cast<int64_t>(out.devices.size()));
    node.allocatable[resource.name] = count;
    node.capacity[resource.name] = count;
    node.device_resources.push_back(std::move(out));
  }
  for (const auto& [key, value] : dp::GfdLabels(system, config, label_inputs)) {
    node.labels[key] = value;
  }
  if (!node.device_resources.empty()) node.gpus = system.devices;
  return absl::OkStatus();
}

dp::LabelInputs CurrentLabelInputs(const dp::PluginConfig& config) {
  dp::LabelInputs inputs;
  std::ifstream in(config.gfd.machine_type_file);
  std::getline(in, inputs.machine_type);
  while (!inputs.machine_type.empty() &&
         (inputs.machine_type.back() == ' ' || inputs.machine_type.back() == '\r')) {
    inputs.machine_type.pop_back();
  }
  if (!config.gfd.no_timestamp) {
    inputs.timestamp = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  }
  return inputs;
}

}  // namespace muster::cmd
