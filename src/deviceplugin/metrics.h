#pragma once

// The device plugin's Prometheus metrics (muster's own names), served on `muster device-plugin
// --listen-address` and set from Daemon::Resources() at each scrape:
//
//   muster_device_plugin_devices{resource,health}         gauge  devices advertised to the
//                                                               kubelet per resource (replicas
//                                                               count one each), health Healthy
//                                                               or Unhealthy (both series, 0
//                                                               when none)
//   muster_device_plugin_device_healthy{resource,device}  gauge  1 Healthy, 0 Unhealthy; device
//                                                               is the ID the kubelet sees (a
//                                                               UUID, or <UUID>::<n>)
//   muster_device_plugin_registered                       gauge  1 while every resource is
//                                                               registered with the kubelet
//
// A resource or device no longer served (after SIGHUP rediscovers) loses its series.
//
// Thread-safety: Update from one thread at a time (OpsServer's collect hooks are); the registry
// may be scraped meanwhile.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "deviceplugin/resources.h"

namespace prometheus {
class Gauge;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace muster::deviceplugin {

class DevicePluginMetrics {
 public:
  // Registers the families in `registry`, which must outlive this object.
  explicit DevicePluginMetrics(prometheus::Registry& registry);

  // Every series from what is served now.
  void Update(const std::vector<ResourceDevices>& resources, bool registered);

 private:
  using Labels = std::pair<std::string, std::string>;
  // Makes `family`'s series, kept in `gauges` by their two label values, exactly `values`.
  static void Replace(prometheus::Family<prometheus::Gauge>& family, const char* first,
                      const char* second, std::map<Labels, double> values,
                      std::map<Labels, prometheus::Gauge*>& gauges);

  prometheus::Family<prometheus::Gauge>& devices_;
  prometheus::Family<prometheus::Gauge>& device_healthy_;
  prometheus::Gauge& registered_;
  std::map<Labels, prometheus::Gauge*> counts_;   // (resource, health)
  std::map<Labels, prometheus::Gauge*> healthy_;  // (resource, device)
};

}  // namespace muster::deviceplugin
