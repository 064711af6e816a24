#include "deviceplugin/metrics.h"

#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace muster::deviceplugin {

DevicePluginMetrics::DevicePluginMetrics(prometheus::Registry& registry)
    : devices_(prometheus::BuildGauge()
                   .Name("muster_device_plugin_devices")
                   .Help("Devices advertised to the kubelet, per resource and health (Healthy or "
                         "Unhealthy); each time-slicing replica counts.")
                   .Register(registry)),
      device_healthy_(prometheus::BuildGauge()
                          .Name("muster_device_plugin_device_healthy")
                          .Help("1 while the device (the ID advertised to the kubelet) is "
                                "Healthy, 0 while Unhealthy.")
                          .Register(registry)),
      registered_(prometheus::BuildGauge()
                      .Name("muster_device_plugin_registered")
                      .Help("1 while every resource's plugin serves its socket and is registered "
                            "with the kubelet, else 0.")
                      .Register(registry)
                      .Add({})) {}

void DevicePluginMetrics::Replace(prometheus::Family<prometheus::Gauge>& family, const char* first,
                                  const char* second, std::map<Labels, double> values,
                                  std::map<Labels, prometheus::Gauge*>& gauges) {
  for (auto it = gauges.begin(); it != gauges.end();) {
    if (values.contains(it->first)) {
      ++it;
    } else {
      family.Remove(it->second);
      it = gauges.erase(it);
    }
  }
  for (const auto& [labels, value] : values) {
    prometheus::Gauge*& gauge = gauges[labels];
    if (gauge == nullptr) gauge = &family.Add({{first, labels.first}, {second, labels.second}});
    gauge->Set(value);
  }
}

void DevicePluginMetrics::Update(const std::vector<ResourceDevices>& resources, bool registered) {
  std::map<Labels, double> counts, healthy;
  for (const ResourceDevices& resource : resources) {
    double& up = counts[{resource.name, "Healthy"}];
    double& down = counts[{resource.name, "Unhealthy"}];
    for (const AdvertisedDevice& device : resource.devices) {
      (device.healthy ? up : down) += 1;
      healthy[{resource.name, device.id}] = device.healthy ? 1 : 0;
    }
  }
  Replace(devices_, "resource", "health", std::move(counts), counts_);
  Replace(device_healthy_, "resource", "device", std::move(healthy), healthy_);
  registered_.Set(registered ? 1 : 0);
}

}  // namespace muster::deviceplugin
