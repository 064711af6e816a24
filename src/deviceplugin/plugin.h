#pragma once

// One kubelet device plugin: the v1beta1 DevicePlugin gRPC service for one resource, served on
// <dir>/<socket name> over a unix socket, and its registration with the kubelet.
//
// ListAndWatch sends the full device list when a stream opens and again after every change
// (SetHealth); Allocate and GetPreferredAllocation answer from deviceplugin/allocate.h;
// PreStartContainer is a no-op (pre_start_required is false); GetDevicePluginOptions says
// GetPreferredAllocation is available.
//
// Thread-safety: every method may be called from any thread.

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "deviceplugin/allocate.h"
#include "deviceplugin/config.h"
#include "deviceplugin/log.h"
#include "deviceplugin/resources.h"
#include "gpu/device.h"

namespace muster::deviceplugin {

struct PluginOptions {
  std::string dir;  // the kubelet's device plugin folder
  AllocateEnvironment environment;
  LogFn log;
};

class DevicePluginServer {
 public:
  // Removes a stale socket, serves, and checks the socket answers (dialling it, as NVIDIA's
  // plugin does). `gpus` gives the topology for preferred allocations.
  static absl::StatusOr<std::unique_ptr<DevicePluginServer>> Start(
      ResourceDevices resource, std::vector<gpu::GpuDevice> gpus, PluginConfig config,
      PluginOptions options);
  ~DevicePluginServer();  // Stop()
  DevicePluginServer(const DevicePluginServer&) = delete;
  DevicePluginServer& operator=(const DevicePluginServer&) = delete;

  // Register(version v1beta1, endpoint = socket name, resource name, options) with the kubelet
  // serving `kubelet_socket`; Unavailable with the kubelet's answer when it fails.
  absl::Status Register(const std::string& kubelet_socket);

  // Sets each device whose health unit (GPU or MIG UUID) is in `healthy_by_uuid`; open
  // ListAndWatch streams get the new list when anything changed.
  void SetHealth(const std::map<std::string, bool>& healthy_by_uuid);

  // Ends the streams, stops serving and removes the socket. Idempotent.
  void Stop();

  const std::string& resource_name() const;
  const std::string& socket_path() const;
  // The current device list (with health).
  ResourceDevices Snapshot() const;

 private:
  class Service;
  explicit DevicePluginServer(std::unique_ptr<Service> service);
  std::unique_ptr<Service> service_;
};

}  // namespace muster::deviceplugin
