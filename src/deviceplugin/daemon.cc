#include "deviceplugin/daemon.h"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <utility>

#include "api/gpu_topology.h"
#include "common/thread.h"
#include "fmt/format.h"
#include "gpu/discover.h"

namespace muster::deviceplugin {

using namespace std::chrono_literals;

namespace {

std::string ReadFirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
  return line;
}

}  // namespace

Daemon::Daemon(DaemonOptions options) : options_(std::move(options)) {
  if (!options_.log) options_.log = StderrLog();
  if (!options_.health.log) {
    LogFn log = options_.log;
    options_.health.log = [log](const std::string& m) { log("health: " + m); };
  }
}

Daemon::~Daemon() { Stop(); }

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(DaemonOptions options, PluginConfig config) {
  std::unique_ptr<Daemon> daemon(new Daemon(std::move(options)));
  // Watch before the first registration, so that a kubelet starting meanwhile is not missed.
  daemon->inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (daemon->inotify_fd_ < 0 ||
      inotify_add_watch(daemon->inotify_fd_, daemon->options_.device_plugin_dir.c_str(),
                        IN_CREATE | IN_MOVED_TO) < 0) {
    return absl::InvalidArgumentError(
        fmt::format("cannot watch the device plugin folder {}: {}",
                    daemon->options_.device_plugin_dir, std::strerror(errno)));
  }
  {
    std::lock_guard<std::mutex> lock(daemon->lifecycle_mu_);
    if (auto s = daemon->StartAll(std::move(config)); !s.ok()) {
      daemon->StopAll();
      return s;
    }
  }
  if (auto s = common::StartThread(daemon->watcher_, "the device plugin's watcher",
                                  [d = daemon.get()] { d->Watch(); });
      !s.ok()) {
    std::lock_guard<std::mutex> lock(daemon->lifecycle_mu_);
    daemon->StopAll();
    return s;
  }
  return daemon;
}

std::string Daemon::KubeletSocket() const { return options_.device_plugin_dir + "/kubelet.sock"; }

void Daemon::SetRegistrationProblem(std::string problem) {
  std::lock_guard<std::mutex> lock(registration_mu_);
  registration_problem_ = std::move(problem);
}

std::string Daemon::RegistrationProblem() const {
  {
    std::lock_guard<std::mutex> lock(registration_mu_);
    if (!registration_problem_.empty()) return registration_problem_;
  }
  // A restarting kubelet deletes the plugins' sockets before it creates its own; until then the
  // registrations are gone with it.
  std::lock_guard<std::mutex> lock(plugins_mu_);
  for (const auto& plugin : plugins_) {
    if (access(plugin->socket_path().c_str(), F_OK) != 0) {
      return fmt::format("{} is not served: {} was removed (by a kubelet restart?)",
                         plugin->resource_name(), plugin->socket_path());
    }
  }
  return "";
}

absl::Status Daemon::StartAll(PluginConfig config) {
  config_ = std::move(config);
  std::string library = gpu::ResolveNvmlLibrary(options_.nvml_library, config_.nvidia_driver_root);
  auto nvml = gpu::Nvml::Load(library);
  if (!nvml.ok()) return nvml.status();
  nvml_ = *nvml;
  auto system = gpu::DiscoverSystem(*nvml_, options_.sysfs_root);
  if (!system.ok()) return system.status();
  system_ = std::move(*system);
  if (system_.devices.empty()) {
    return absl::FailedPreconditionError(
        fmt::format("no NVIDIA GPUs found: NVML ({}) reports none", library));
  }
  options_.log(fmt::format("NVML {}: driver {}, {} GPU{}", library, system_.driver_version,
                           system_.devices.size(), system_.devices.size() == 1 ? "" : "s"));
  auto resources = BuildResources(system_, config_);
  if (!resources.ok()) return resources.status();
  resources_ = std::move(*resources);
  {
    std::lock_guard<std::mutex> lock(plugins_mu_);
    health_state_.clear();
  }
  if (options_.health_checks) {
    auto health = gpu::HealthMonitor::Start(
        nvml_, system_.devices, options_.health,
        [this](const std::vector<gpu::HealthChange>& changes) { OnHealth(changes); });
    if (!health.ok()) return health.status();
    health_ = std::move(*health);
  } else {
    options_.log("health checks are disabled");
  }
  if (auto s = StartPlugins(); !s.ok()) return s;
  RegisterAll();
  PublishLabels();
  return absl::OkStatus();
}

void Daemon::StopAll() {
  if (health_ != nullptr) health_->Stop();
  health_.reset();
  StopPlugins();
  nvml_.reset();
}

absl::Status Daemon::StartPlugins() {
  std::lock_guard<std::mutex> lock(plugins_mu_);
  for (const ResourceDevices& resource : resources_) {
    PluginOptions plugin_options;
    plugin_options.dir = options_.device_plugin_dir;
    plugin_options.environment.proc_root = options_.proc_root;
    plugin_options.log = options_.log;
    auto plugin = DevicePluginServer::Start(resource, system_.devices, config_, plugin_options);
    if (!plugin.ok()) {
      for (auto& p : plugins_) p->Stop();
      plugins_.clear();
      SetRegistrationProblem(std::string(plugin.status().message()));
      return plugin.status();
    }
    (*plugin)->SetHealth(health_state_);
    plugins_.push_back(std::move(*plugin));
  }
  return absl::OkStatus();
}

void Daemon::StopPlugins() {
  SetRegistrationProblem("the plugins are restarting");
  std::lock_guard<std::mutex> lock(plugins_mu_);
  for (auto& plugin : plugins_) plugin->Stop();
  plugins_.clear();
}

void Daemon::RegisterAll() {
  std::string socket = KubeletSocket();
  if (access(socket.c_str(), F_OK) != 0) {
    options_.log(fmt::format("waiting for the kubelet: {} is not there yet", socket));
    SetRegistrationProblem(
        fmt::format("not registered with the kubelet: {} is not there yet", socket));
    registration_pending_ = false;  // its creation restarts the plugins
    return;
  }
  // Without plugins_mu_ (the caller's lifecycle_mu_ keeps plugins_ as it is), so that health
  // updates and Resources() do not wait for a slow kubelet.
  std::vector<std::string> failures;
  for (auto& plugin : plugins_) {
    if (absl::Status s = plugin->Register(socket); !s.ok()) {
      options_.log(std::string(s.message()));
      failures.emplace_back(s.message());
    }
  }
  SetRegistrationProblem(fmt::format("{}", fmt::join(failures, "; ")));
  if (!failures.empty()) {
    // Retried with back-off; the kubelet may have created its socket before listening on it.
    registration_pending_ = true;
    next_registration_ = std::chrono::steady_clock::now() + registration_backoff_;
    registration_backoff_ = std::min<std::chrono::seconds>(registration_backoff_ * 2, 30s);
  } else {
    registration_pending_ = false;
    registration_backoff_ = 1s;
  }
}

void Daemon::PublishLabels() {
  bool to_file = !config_.gfd.output_file.empty();
  if (!to_file && !options_.publish_labels) return;
  LabelInputs inputs;
  inputs.machine_type = ReadFirstLine(config_.gfd.machine_type_file);
  if (!config_.gfd.no_timestamp) {
    inputs.timestamp = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  }
  Labels labels = GfdLabels(system_, config_, inputs);
  if (to_file) {
    if (absl::Status s = WriteFeaturesFile(config_.gfd.output_file, labels); !s.ok()) {
      options_.log(std::string(s.message()));
    }
  }
  if (options_.publish_labels) {
    Labels annotations;
    if (std::string topology = api::GpuTopologyValue(gpu::NvLinkMatrix(system_.devices));
        !topology.empty()) {
      annotations[api::kGpuTopologyAnnotation] = topology;
    }
    if (absl::Status s = options_.publish_labels(labels, annotations); !s.ok()) {
      options_.log(fmt::format("labelling the node failed: {}", std::string(s.message())));
    }
  }
  next_labels_ = std::chrono::steady_clock::now() + config_.gfd.sleep_interval;
}

void Daemon::OnHealth(const std::vector<gpu::HealthChange>& changes) {
  std::lock_guard<std::mutex> lock(plugins_mu_);
  std::map<std::string, bool> update;
  for (const gpu::HealthChange& change : changes) {
    health_state_[change.uuid] = change.healthy;
    update[change.uuid] = change.healthy;
  }
  for (auto& plugin : plugins_) plugin->SetHealth(update);
}

absl::Status Daemon::Restart(PluginConfig config) {
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  options_.log("restarting: discovering GPUs and starting the plugins again");
  StopAll();
  absl::Status status = StartAll(std::move(config));
  if (!status.ok()) StopAll();
  return status;
}

void Daemon::Watch() {
  alignas(inotify_event) char buffer[4096];
  while (!stop_watch_) {
    pollfd fd{inotify_fd_, POLLIN, 0};
    int ready = poll(&fd, 1, 250);
    bool kubelet_created = false;
    if (ready > 0) {
      ssize_t length;
      while ((length = read(inotify_fd_, buffer, sizeof buffer)) > 0) {
        for (char* p = buffer; p < buffer + length;) {
          auto* event = reinterpret_cast<inotify_event*>(p);
          if (event->len > 0 && std::string(event->name) == "kubelet.sock") kubelet_created = true;
          p += sizeof(inotify_event) + event->len;
        }
      }
    }
    std::lock_guard<std::mutex> lock(lifecycle_mu_);
    if (stop_watch_) return;
    if (kubelet_created && !resources_.empty() && nvml_ != nullptr) {
      options_.log(fmt::format("{} was created (kubelet restart): restarting the plugins",
                               KubeletSocket()));
      StopPlugins();
      if (absl::Status s = StartPlugins(); !s.ok()) {
        options_.log(std::string(s.message()));
        continue;
      }
      registration_backoff_ = 1s;
      RegisterAll();
      continue;
    }
    auto now = std::chrono::steady_clock::now();
    if (registration_pending_ && now >= next_registration_) RegisterAll();
    if (!config_.gfd.oneshot && nvml_ != nullptr && now >= next_labels_) PublishLabels();
  }
}

void Daemon::Stop() {
  stop_watch_ = true;
  if (watcher_.joinable()) watcher_.join();
  if (inotify_fd_ >= 0) {
    close(inotify_fd_);
    inotify_fd_ = -1;
  }
  std::lock_guard<std::mutex> lock(lifecycle_mu_);
  StopAll();
}

std::vector<ResourceDevices> Daemon::Resources() const {
  std::lock_guard<std::mutex> lock(plugins_mu_);
  std::vector<ResourceDevices> out;
  for (const auto& plugin : plugins_) out.push_back(plugin->Snapshot());
  return out;
}

}  // namespace muster::deviceplugin
