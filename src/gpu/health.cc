#include "gpu/health.h"

#include <utility>

#include "common/thread.h"
#include "fmt/format.h"

namespace muster::gpu {

std::set<uint64_t> DefaultIgnoredXids() { return {13, 31, 43, 45, 68, 109}; }

HealthMonitor::HealthMonitor(std::shared_ptr<const Nvml> nvml, HealthOptions options,
                             Callback on_change)
    : nvml_(std::move(nvml)), options_(std::move(options)), on_change_(std::move(on_change)) {}

HealthMonitor::~HealthMonitor() {
  Stop();
  nvml_->EventSetFree(set_);
}

absl::StatusOr<std::unique_ptr<HealthMonitor>> HealthMonitor::Start(
    std::shared_ptr<const Nvml> nvml, const std::vector<GpuDevice>& gpus, HealthOptions options,
    Callback on_change) {
  std::unique_ptr<HealthMonitor> monitor(
      new HealthMonitor(std::move(nvml), std::move(options), std::move(on_change)));
  // Health that cannot be watched is not ill health: a GPU whose events cannot be registered
  // (too old, or not permitted) stays Healthy and is reported as unwatched. NVIDIA's plugin marks
  // such a GPU unhealthy for good.
  auto set = monitor->nvml_->EventSetCreate();
  if (set.ok()) {
    monitor->set_ = *set;
  } else {
    monitor->Log(fmt::format("no health checks: {}", std::string(set.status().message())));
  }
  constexpr uint64_t kWanted = kNvmlEventTypeXidCriticalError | kNvmlEventTypeDoubleBitEccError |
                               kNvmlEventTypeSingleBitEccError;
  for (const GpuDevice& gpu : gpus) {
    monitor->gpu_uuids_.push_back(gpu.uuid);
    auto handle = monitor->nvml_->DeviceByUuid(gpu.uuid);
    if (!handle.ok()) handle = monitor->nvml_->DeviceByIndex(static_cast<unsigned>(gpu.index));
    if (!handle.ok()) return handle.status();
    monitor->gpu_by_handle_[*handle] = gpu.index;
    absl::Status registered = absl::UnimplementedError("no event set");
    if (monitor->set_ != nullptr) {
      auto supported = monitor->nvml_->SupportedEventTypes(*handle);
      if (!supported.ok()) {
        registered = supported.status();
      } else if ((*supported & kWanted) == 0) {
        registered = absl::UnimplementedError("no XID or ECC events");
      } else {
        registered = monitor->nvml_->RegisterEvents(*handle, *supported & kWanted, monitor->set_);
      }
    }
    if (!registered.ok()) {
      monitor->Log(fmt::format("GPU {} ({}) is not watched: {}", gpu.index, gpu.uuid,
                               std::string(registered.message())));
    }
    monitor->watched_.push_back(registered.ok());
    monitor->units_.push_back(Unit{gpu.uuid, gpu.index, false, 0, 0, true, {}});
    for (const MigDevice& mig : gpu.mig_devices) {
      monitor->units_.push_back(Unit{mig.uuid, gpu.index, true, mig.gpu_instance_id,
                                     mig.compute_instance_id, true, {}});
    }
  }
  if (auto s = common::StartThread(monitor->thread_, "the GPU health monitor",
                                  [m = monitor.get()] { m->Run(); });
      !s.ok()) {
    return s;
  }
  return monitor;
}

void HealthMonitor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

std::map<std::string, bool> HealthMonitor::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, bool> health;
  for (const Unit& unit : units_) health[unit.uuid] = unit.healthy;
  return health;
}

void HealthMonitor::Log(const std::string& message) const {
  if (options_.log) {
    options_.log(message);
  } else {
    fmt::print(stderr, "health: {}\n", message);
  }
}

void HealthMonitor::MarkUnhealthy(const std::vector<size_t>& units, const std::string& reason,
                                  std::vector<HealthChange>& changes) {
  auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i : units) {
    Unit& unit = units_[i];
    unit.probe_at = now + options_.reprobe_interval;  // a new event restarts the quiet period
    if (!unit.healthy) continue;
    unit.healthy = false;
    changes.push_back({unit.uuid, false, reason});
  }
}

bool HealthMonitor::Probe(const Unit& unit) const {
  auto handle = nvml_->DeviceByUuid(unit.uuid);
  if (!handle.ok()) return false;
  if (!nvml_->MemoryTotal(*handle).ok()) return false;
  if (!unit.is_mig) {
    auto pci = nvml_->Pci(*handle);
    if (!pci.ok() && !absl::IsUnimplemented(pci.status())) return false;
  }
  return true;
}

void HealthMonitor::Reprobe(std::vector<HealthChange>& changes) {
  if (options_.reprobe_interval.count() <= 0 || events_broken_) return;
  auto now = std::chrono::steady_clock::now();
  std::vector<size_t> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < units_.size(); ++i) {
      if (!units_[i].healthy && units_[i].probe_at <= now) due.push_back(i);
    }
  }
  for (size_t i : due) {
    bool ok = Probe(units_[i]);
    std::lock_guard<std::mutex> lock(mu_);
    Unit& unit = units_[i];
    if (ok) {
      unit.healthy = true;
      changes.push_back({unit.uuid, true, "recovered: NVML answers again"});
    } else {
      unit.probe_at = now + options_.reprobe_interval;
    }
  }
}

void HealthMonitor::Run() {
  bool any_watched = false;
  for (bool watched : watched_) any_watched = any_watched || watched;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    std::vector<HealthChange> changes;
    if (!any_watched) {
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.wait_timeout_ms));
      continue;
    }
    auto event = nvml_->EventSetWait(set_, options_.wait_timeout_ms);
    std::vector<size_t> all(units_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    if (absl::IsDeadlineExceeded(event.status())) {
      events_broken_ = false;
    } else if (!event.ok()) {
      if (!events_broken_) {
        Log(fmt::format("waiting for NVML events failed: {}; marking all devices unhealthy",
                        std::string(event.status().message())));
      }
      events_broken_ = true;
      MarkUnhealthy(all, "NVML event wait failed", changes);
      std::this_thread::sleep_for(std::chrono::milliseconds(options_.wait_timeout_ms));
    } else {
      events_broken_ = false;
      if ((event->event_type & kNvmlEventTypeXidCriticalError) != 0) {
        uint64_t xid = event->xid;
        auto gpu_it = gpu_by_handle_.find(event->device);
        int gpu = -1;
        if (gpu_it != gpu_by_handle_.end()) {
          gpu = gpu_it->second;
        } else if (auto uuid = nvml_->Uuid(event->device); uuid.ok()) {
          for (size_t i = 0; i < gpu_uuids_.size(); ++i) {
            if (gpu_uuids_[i] == *uuid) gpu = static_cast<int>(i);
          }
        }
        if (options_.ignored_xids.count(xid) != 0) {
          Log(fmt::format("XID {} on GPU {} ignored (application error)", xid, gpu));
        } else if (gpu < 0) {
          Log(fmt::format("XID {} on an unknown device; marking all devices unhealthy", xid));
          MarkUnhealthy(all, fmt::format("XID {}", xid), changes);
        } else {
          bool whole_gpu = event->gpu_instance_id == kNvmlValueNotAvailable ||
                           event->compute_instance_id == kNvmlValueNotAvailable;
          std::vector<size_t> hit;
          for (size_t i = 0; i < units_.size(); ++i) {
            const Unit& unit = units_[i];
            if (unit.gpu != gpu) continue;
            if (whole_gpu || (unit.is_mig && unit.gi == event->gpu_instance_id &&
                              unit.ci == event->compute_instance_id)) {
              hit.push_back(i);
            }
          }
          if (hit.empty()) {  // a MIG device we do not know: the whole GPU
            for (size_t i = 0; i < units_.size(); ++i) {
              if (units_[i].gpu == gpu) hit.push_back(i);
            }
          }
          Log(fmt::format("XID {} on GPU {}{}: marking {} device{} unhealthy", xid, gpu,
                          whole_gpu ? "" : fmt::format(" (GI {} CI {})", event->gpu_instance_id,
                                                       event->compute_instance_id),
                          hit.size(), hit.size() == 1 ? "" : "s"));
          MarkUnhealthy(hit, fmt::format("XID {}", xid), changes);
        }
      }
    }
    Reprobe(changes);
    if (!changes.empty()) {
      for (const HealthChange& change : changes) {
        Log(fmt::format("{} is {} ({})", change.uuid, change.healthy ? "Healthy" : "Unhealthy",
                        change.reason));
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
      // Called under mu_ so that no callback runs after Stop returns; callbacks must not call
      // back into the monitor.
      on_change_(changes);
    }
  }
}

}  // namespace muster::gpu
