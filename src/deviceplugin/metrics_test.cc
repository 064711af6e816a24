// DevicePluginMetrics as Prometheus' text format shows them: counts per health with both series
// present, a gauge per device, and the series of what is no longer served removed.

#include "deviceplugin/metrics.h"

#include <string>

#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace muster::deviceplugin {
namespace {

AdvertisedDevice Device(const std::string& id, bool healthy) {
  AdvertisedDevice device;
  device.id = id;
  device.uuid = id;
  device.healthy = healthy;
  return device;
}

ResourceDevices Resource(const std::string& name, std::vector<AdvertisedDevice> devices) {
  ResourceDevices resource;
  resource.name = name;
  resource.devices = std::move(devices);
  return resource;
}

std::string Text(prometheus::Registry& registry) {
  return prometheus::TextSerializer().Serialize(registry.Collect());
}

TEST(DevicePluginMetricsTest, CountsByHealthAndDropsWhatIsNoLongerServed) {
  prometheus::Registry registry;
  DevicePluginMetrics metrics(registry);
  metrics.Update({Resource("nvidia.com/gpu", {Device("GPU-a", true), Device("GPU-b", false)}),
                  Resource("nvidia.com/mig-1g.10gb", {Device("MIG-c", true)})},
                 true);
  std::string text = Text(registry);
  for (const char* line :
       {"muster_device_plugin_devices{health=\"Healthy\",resource=\"nvidia.com/gpu\"} 1\n",
        "muster_device_plugin_devices{health=\"Unhealthy\",resource=\"nvidia.com/gpu\"} 1\n",
        "muster_device_plugin_devices{health=\"Healthy\",resource=\"nvidia.com/mig-1g.10gb\"} "
        "1\n",
        "muster_device_plugin_devices{health=\"Unhealthy\",resource=\"nvidia.com/mig-1g.10gb\"} "
        "0\n",
        "muster_device_plugin_device_healthy{device=\"GPU-a\",resource=\"nvidia.com/gpu\"} 1\n",
        "muster_device_plugin_device_healthy{device=\"GPU-b\",resource=\"nvidia.com/gpu\"} 0\n",
        "muster_device_plugin_device_healthy{device=\"MIG-c\",resource=\"nvidia.com/"
        "mig-1g.10gb\"} 1\n",
        "muster_device_plugin_registered 1\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in:\n" << text;
  }

  // After a rediscovery without the MIG device and with GPU-b recovered.
  metrics.Update({Resource("nvidia.com/gpu", {Device("GPU-a", true), Device("GPU-b", true)})},
                 false);
  text = Text(registry);
  for (const char* line :
       {"muster_device_plugin_devices{health=\"Healthy\",resource=\"nvidia.com/gpu\"} 2\n",
        "muster_device_plugin_devices{health=\"Unhealthy\",resource=\"nvidia.com/gpu\"} 0\n",
        "muster_device_plugin_device_healthy{device=\"GPU-b\",resource=\"nvidia.com/gpu\"} 1\n",
        "muster_device_plugin_registered 0\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " not in:\n" << text;
  }
  EXPECT_EQ(text.find("mig-1g.10gb"), std::string::npos) << text;
}

}  // namespace
}  // namespace muster::deviceplugin
