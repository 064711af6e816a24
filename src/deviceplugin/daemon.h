#pragma once

// `muster device-plugin` as a long-running daemon: NVML and discovery, one DevicePluginServer per
// resource, health events fed into their ListAndWatch streams, registration with the kubelet and
// re-registration whenever the kubelet restarts, and the GFD node labels.
//
// Lifecycle, as NVIDIA's plugin (cmd/nvidia-device-plugin/main.go):
//   Start    load NVML, discover, build the resources, serve each on <dir>/nvidia-<name>.sock,
//            register each with <dir>/kubelet.sock (when it is not there yet, registration waits
//            for it), write the labels;
//   kubelet.sock created (a kubelet restart deletes every socket in <dir> and then creates its
//            own): the plugins are started again and register again;
//   Restart  (SIGHUP, a new config) everything again from discovery, so a MIG re-partition is
//            picked up without restarting the process;
//   Stop     stop serving and remove the sockets.
//
// Thread-safety: Start/Restart/Stop from one thread (the signal loop); a watcher thread handles
// the kubelet socket and label refreshes; the health monitor's thread updates the plugins.

#include <atomic>
#include <chrono>
#include <map>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "deviceplugin/config.h"
#include "deviceplugin/labels.h"
#include "deviceplugin/log.h"
#include "deviceplugin/plugin.h"
#include "deviceplugin/resources.h"
#include "gpu/device.h"
#include "gpu/health.h"
#include "gpu/nvml.h"

namespace muster::deviceplugin {

inline constexpr std::string_view kDefaultDevicePluginDir = "/var/lib/kubelet/device-plugins";

struct DaemonOptions {
  std::string device_plugin_dir = std::string(kDefaultDevicePluginDir);
  std::string nvml_library = std::string(gpu::kDefaultNvmlLibrary);
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  bool health_checks = true;
  gpu::HealthOptions health;
  // Where labels go besides config.gfd.output_file (e.g. a Node patch), with the Node's
  // annotations: muster.dev/gpu-topology (api/gpu_topology.h) on a machine whose GPUs share
  // NVLinks, else none. May be empty.
  std::function<absl::Status(const Labels& labels, const Labels& annotations)> publish_labels;
  LogFn log;  // default: stderr
};

class Daemon {
 public:
  // FailedPrecondition when NVML cannot be loaded or no GPU is found (the caller applies
  // failOnInitError); other errors for a config the GPUs do not allow or sockets that cannot be
  // served.
  static absl::StatusOr<std::unique_ptr<Daemon>> Start(DaemonOptions options,
                                                       PluginConfig config);
  ~Daemon();  // Stop()
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Everything again with `config`, from NVML initialisation on.
  absl::Status Restart(PluginConfig config);
  void Stop();

  // The resources being served, with health.
  std::vector<ResourceDevices> Resources() const;
  // "" while every resource's plugin serves its socket and is registered with the kubelet, else
  // why not (one line). It does not wait for a registration in progress.
  std::string RegistrationProblem() const;
  const gpu::GpuSystem& system() const { return system_; }

 private:
  explicit Daemon(DaemonOptions options);
  absl::Status StartAll(PluginConfig config);
  void StopAll();
  absl::Status StartPlugins();
  void StopPlugins();
  void RegisterAll();
  void PublishLabels();
  void Watch();
  void OnHealth(const std::vector<gpu::HealthChange>& changes);
  std::string KubeletSocket() const;
  void SetRegistrationProblem(std::string problem);

  DaemonOptions options_;
  PluginConfig config_;
  std::shared_ptr<gpu::Nvml> nvml_;
  gpu::GpuSystem system_;
  std::vector<ResourceDevices> resources_;
  std::unique_ptr<gpu::HealthMonitor> health_;

  // Guards health_state_, and plugins_ with lifecycle_mu_: plugins_ changes only under both, so
  // either suffices to read it.
  mutable std::mutex plugins_mu_;
  std::vector<std::unique_ptr<DevicePluginServer>> plugins_;
  std::map<std::string, bool> health_state_;  // survives plugin restarts

  std::mutex lifecycle_mu_;  // serialises Restart, Stop and the watcher's plugin restarts
  bool registration_pending_ = false;                     // guarded by lifecycle_mu_
  std::chrono::steady_clock::time_point next_registration_;  // guarded by lifecycle_mu_
  std::chrono::seconds registration_backoff_{1};             // guarded by lifecycle_mu_
  std::chrono::steady_clock::time_point next_labels_;        // guarded by lifecycle_mu_

  // Apart from lifecycle_mu_, which a registration holds for seconds when the kubelet is slow.
  mutable std::mutex registration_mu_;
  std::string registration_problem_ = "starting";  // guarded by registration_mu_

  std::atomic<bool> stop_watch_{false};
  std::thread watcher_;
  int inotify_fd_ = -1;
};

}  // namespace muster::deviceplugin
