#pragma once

// GPU health from NVML events, as NVIDIA's device plugin watches it (internal/rm/health.go), plus
// recovery: an NVML event set registered for XidCriticalError (and ECC events where supported) on
// every GPU; an XID outside the ignore list makes the GPU (or, when the event names a GPU and
// compute instance, that one MIG device) Unhealthy. Unlike NVIDIA's plugin, which needs a restart
// to clear it, an unhealthy device is re-probed every `reprobe_interval` after the event: when
// NVML finds it again by UUID and answers its memory and PCI queries, it is Healthy again.
//
// Health units are UUIDs: full GPUs ("GPU-...") and MIG devices ("MIG-..."); a whole-GPU event
// also marks the GPU's MIG devices. A GPU whose events NVML does not support is not watched and
// stays Healthy (likewise one whose events cannot be registered, e.g. not permitted: it is
// logged as not watched). When the event wait itself fails, or an event's device cannot be identified,
// every device is marked Unhealthy (NVIDIA's rule) and none recovers until waiting works again.
//
// Thread-safety: one watch thread calls `on_change`; Snapshot may be called from any thread.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "gpu/device.h"
#include "gpu/nvml.h"

namespace muster::gpu {

// XIDs caused by applications rather than the GPU (NVIDIA's list): 13 Graphics Engine Exception,
// 31 GPU memory page fault, 43 GPU stopped processing, 45 Preemptive cleanup, 68 Video processor
// exception, 109 Context Switch Timeout.
std::set<uint64_t> DefaultIgnoredXids();

struct HealthOptions {
  std::set<uint64_t> ignored_xids = DefaultIgnoredXids();
  // 0 disables recovery (NVIDIA's behaviour: unhealthy until restart).
  std::chrono::milliseconds reprobe_interval{std::chrono::seconds(30)};
  // How long one nvmlEventSetWait_v2 blocks; bounds how long Stop takes.
  unsigned wait_timeout_ms = 500;
  std::function<void(const std::string&)> log;  // default: stderr
};

struct HealthChange {
  std::string uuid;
  bool healthy = true;
  std::string reason;  // "XID 79", "recovered", ...
};

class HealthMonitor {
 public:
  using Callback = std::function<void(const std::vector<HealthChange>&)>;

  // Registers the event set and starts the watch thread. `on_change` gets every change of state
  // (never a repeat of the current one), from the watch thread.
  static absl::StatusOr<std::unique_ptr<HealthMonitor>> Start(std::shared_ptr<const Nvml> nvml,
                                                              const std::vector<GpuDevice>& gpus,
                                                              HealthOptions options,
                                                              Callback on_change);
  ~HealthMonitor();
  HealthMonitor(const HealthMonitor&) = delete;
  HealthMonitor& operator=(const HealthMonitor&) = delete;

  // Stops the watch thread (idempotent); no callback runs after it returns.
  void Stop();
  // UUID -> healthy, for every unit.
  std::map<std::string, bool> Snapshot() const;

 private:
  struct Unit {
    std::string uuid;
    int gpu = 0;
    bool is_mig = false;
    unsigned gi = 0, ci = 0;
    bool healthy = true;
    std::chrono::steady_clock::time_point probe_at;
  };

  HealthMonitor(std::shared_ptr<const Nvml> nvml, HealthOptions options, Callback on_change);
  void Run();
  void MarkUnhealthy(const std::vector<size_t>& units, const std::string& reason,
                     std::vector<HealthChange>& changes);
  void Reprobe(std::vector<HealthChange>& changes);
  bool Probe(const Unit& unit) const;
  void Log(const std::string& message) const;

  std::shared_ptr<const Nvml> nvml_;
  HealthOptions options_;
  Callback on_change_;
  nvmlEventSet_t set_ = nullptr;
  std::map<nvmlDevice_t, int> gpu_by_handle_;
  std::vector<std::string> gpu_uuids_;
  std::vector<bool> watched_;  // by GPU index

  mutable std::mutex mu_;
  std::vector<Unit> units_;  // guarded by mu_ for Snapshot; written only by the watch thread
  bool stop_ = false;        // guarded by mu_
  bool events_broken_ = false;
  std::thread thread_;
};

}  // namespace muster::gpu
