// `muster device-plugin`: the kubelet device plugin for NVIDIA GPUs (docs/device-plugin.md).

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "client/client.h"
#include "client/http_transport.h"
#include "cmd/commands.h"
#include "cmd/component_ops.h"
#include "cmd/process.h"
#include "deviceplugin/config.h"
#include "deviceplugin/daemon.h"
#include "deviceplugin/labels.h"
#include "deviceplugin/log.h"
#include "deviceplugin/metrics.h"
#include "deviceplugin/resources.h"
#include "fmt/format.h"
#include "gpu/discover.h"
#include "gpu/health.h"
#include "ops/ops_server.h"
#include "prometheus/registry.h"

namespace muster::cmd {
namespace {

namespace dp = muster::deviceplugin;

struct DevicePluginFlags {
  std::string config_file;
  std::optional<std::string> mig_strategy;
  bool fail_on_init_error = true;
  CLI::Option* fail_on_init_error_option = nullptr;
  std::optional<std::string> driver_root;
  std::optional<std::string> dev_root;
  bool pass_device_specs = false;
  CLI::Option* pass_device_specs_option = nullptr;
  std::optional<std::string> device_list_strategy;
  std::optional<std::string> device_id_strategy;
  std::optional<std::string> cdi_annotation_prefix;
  std::optional<std::string> shared_allocation_policy;
  bool gdrcopy = false, gds = false, mofed = false;
  CLI::Option* gdrcopy_option = nullptr;
  CLI::Option* gds_option = nullptr;
  CLI::Option* mofed_option = nullptr;

  std::string device_plugin_dir = std::string(dp::kDefaultDevicePluginDir);
  std::string nvml_library = std::string(gpu::kDefaultNvmlLibrary);
  std::string sysfs_root = "/sys";
  std::string ignored_xids = "13,31,43,45,68,109";
  std::string reprobe_interval = "30s";
  std::optional<std::string> labels_file;
  std::string kubeconfig;
  std::string node_name;
  std::string listen_address;
  bool discover = false;
};

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

absl::StatusOr<std::set<uint64_t>> ParseXids(const std::string& text, std::string_view what) {
  std::set<uint64_t> xids;
  for (const std::string& item : SplitList(text)) {
    char* end = nullptr;
    unsigned long long value = std::strtoull(item.c_str(), &end, 10);
    if (end == item.c_str() || *end != '\0') {
      return absl::InvalidArgumentError(
          fmt::format("{}: \"{}\" is not an XID (a list of numbers, e.g. 13,31,43)", what, item));
    }
    xids.insert(value);
  }
  return xids;
}

absl::StatusOr<dp::PluginConfig> LoadPluginConfig(const DevicePluginFlags& flags) {
  dp::ConfigOverrides overrides;
  overrides.mig_strategy = flags.mig_strategy;
  if (flags.fail_on_init_error_option->count() > 0) {
    overrides.fail_on_init_error = flags.fail_on_init_error;
  }
  overrides.nvidia_driver_root = flags.driver_root;
  overrides.nvidia_dev_root = flags.dev_root;
  if (flags.pass_device_specs_option->count() > 0) {
    overrides.pass_device_specs = flags.pass_device_specs;
  }
  if (flags.device_list_strategy) {
    overrides.device_list_strategy = SplitList(*flags.device_list_strategy);
  }
  overrides.device_id_strategy = flags.device_id_strategy;
  overrides.cdi_annotation_prefix = flags.cdi_annotation_prefix;
  overrides.shared_allocation_policy = flags.shared_allocation_policy;
  if (flags.gdrcopy_option->count() > 0) overrides.gdrcopy_enabled = flags.gdrcopy;
  if (flags.gds_option->count() > 0) overrides.gds_enabled = flags.gds;
  if (flags.mofed_option->count() > 0) overrides.mofed_enabled = flags.mofed;
  auto config = dp::LoadConfig(flags.config_file, overrides);
  if (!config.ok()) return config.status();
  if (flags.labels_file) config->gfd.output_file = *flags.labels_file;
  return config;
}

// Health options from flags and NVIDIA's environment variables: DP_DISABLE_HEALTHCHECKS ("all",
// "xids", or more XIDs to ignore) and DP_ENABLE_HEALTHCHECKS ("all", or XIDs to watch after all).
absl::StatusOr<dp::DaemonOptions> BuildDaemonOptions(const DevicePluginFlags& flags) {
  dp::DaemonOptions options;
  options.device_plugin_dir = flags.device_plugin_dir;
  options.nvml_library = flags.nvml_library;
  options.sysfs_root = flags.sysfs_root;
  auto ignored = ParseXids(flags.ignored_xids, "--ignored-xids");
  if (!ignored.ok()) return ignored.status();
  options.health.ignored_xids = *ignored;
  absl::Duration interval;
  if (!absl::ParseDuration(flags.reprobe_interval, &interval) || interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(fmt::format(
        "--health-reprobe-interval: \"{}\" is not a duration (30s, 2m, 0 to disable)",
        flags.reprobe_interval));
  }
  options.health.reprobe_interval = std::chrono::milliseconds(absl::ToInt64Milliseconds(interval));
  if (const char* disable = std::getenv("DP_DISABLE_HEALTHCHECKS"); disable && *disable) {
    std::string value = disable;
    if (value == "all" || value == "xids") {
      options.health_checks = false;
    } else {
      auto more = ParseXids(value, "DP_DISABLE_HEALTHCHECKS");
      if (!more.ok()) return more.status();
      options.health.ignored_xids.insert(more->begin(), more->end());
    }
  }
  if (const char* enable = std::getenv("DP_ENABLE_HEALTHCHECKS"); enable && *enable) {
    std::string value = enable;
    if (value == "all") {
      options.health.ignored_xids.clear();
    } else {
      auto watched = ParseXids(value, "DP_ENABLE_HEALTHCHECKS");
      if (!watched.ok()) return watched.status();
      for (uint64_t xid : *watched) options.health.ignored_xids.erase(xid);
    }
  }
  return options;
}

// Patches the labels and annotations (muster.dev/gpu-topology) onto --node-name through
// --kubeconfig's API server (a merge patch: labels and annotations set elsewhere stay).
absl::StatusOr<std::function<absl::Status(const dp::Labels&, const dp::Labels&)>> NodeLabeller(
    const DevicePluginFlags& flags) {
  if (flags.node_name.empty()) {
    return absl::InvalidArgumentError("--kubeconfig needs --node-name (or NODE_NAME)");
  }
  auto transport_config = client::LoadKubeconfig(flags.kubeconfig);
  if (!transport_config.ok()) {
    return absl::InvalidArgumentError(fmt::format(
        "--kubeconfig {}: {}", flags.kubeconfig, std::string(transport_config.status().message())));
  }
  auto transport = client::MakeHttpTransport(*transport_config);
  if (!transport.ok()) return transport.status();
  auto api = std::make_shared<client::Client>(*transport);
  std::string node = flags.node_name;
  return [api, node](const dp::Labels& labels, const dp::Labels& annotations) -> absl::Status {
    return api->Patch(client::Nodes(), "", node, client::PatchType::kMerge,
                      dp::NodeLabelsPatch(labels, annotations))
        .status();
  };
}

int Discover(const DevicePluginFlags& flags, const dp::PluginConfig& config) {
  gpu::DiscoverOptions options;
  options.nvml_library = flags.nvml_library;
  options.driver_root = config.nvidia_driver_root;
  options.sysfs_root = flags.sysfs_root;
  auto system = gpu::DiscoverSystem(options);
  if (!system.ok()) {
    fmt::print(stderr, "muster device-plugin: {}\n", std::string(system.status().message()));
    return 1;
  }
  fmt::print("{}", gpu::FormatInventory(*system));
  auto resources = dp::BuildResources(*system, config);
  if (!resources.ok()) {
    fmt::print(stderr, "muster device-plugin: {}\n", std::string(resources.status().message()));
    return 1;
  }
  fmt::print("Resources (migStrategy {}):\n", dp::MigStrategyName(config.mig_strategy));
  for (const dp::ResourceDevices& resource : *resources) {
    fmt::print("  {}: {} device{}", resource.name, resource.devices.size(),
               resource.devices.size() == 1 ? "" : "s");
    if (resource.replicas > 1) fmt::print(" ({} replicas each)", resource.replicas);
    fmt::print("\n");
  }
  return 0;
}

int RunDevicePlugin(const DevicePluginFlags& flags) {
  auto config = LoadPluginConfig(flags);
  if (!config.ok()) {
    fmt::print(stderr, "muster device-plugin: {}\n", std::string(config.status().message()));
    return 1;
  }
  if (flags.discover) return Discover(flags, *config);
  auto options = BuildDaemonOptions(flags);
  if (!options.ok()) {
    fmt::print(stderr, "muster device-plugin: {}\n", std::string(options.status().message()));
    return 1;
  }
  if (!flags.kubeconfig.empty()) {
    auto publish = NodeLabeller(flags);
    if (!publish.ok()) {
      fmt::print(stderr, "muster device-plugin: {}\n", std::string(publish.status().message()));
      return 1;
    }
    options->publish_labels = std::move(*publish);
  }
  dp::LogFn log = dp::StderrLog();
  options->log = log;

  const sigset_t signals = BlockSignals({SIGINT, SIGTERM, SIGQUIT, SIGHUP});

  // The ops server's threads read `daemon`, so it changes only under daemon_mu (and the server,
  // declared after it, goes first on every return).
  auto registry = std::make_shared<prometheus::Registry>();
  dp::DevicePluginMetrics metrics(*registry);
  std::mutex daemon_mu;
  std::unique_ptr<dp::Daemon> daemon;
  std::string no_daemon = "starting";  // why there is no daemon; guarded by daemon_mu
  std::unique_ptr<ops::OpsServer> ops_server;
  if (!flags.listen_address.empty()) {
    auto served = ServeOps(
        "muster device-plugin", flags.listen_address, registry, [&](ops::OpsServer& server) {
          server.AddReadyCheck("plugins", [&] {
            std::lock_guard<std::mutex> lock(daemon_mu);
            return daemon != nullptr ? daemon->RegistrationProblem() : no_daemon;
          });
          server.AddCollectHook([&] {
            std::lock_guard<std::mutex> lock(daemon_mu);
            if (daemon == nullptr) {
              metrics.Update({}, false);
            } else {
              metrics.Update(daemon->Resources(), daemon->RegistrationProblem().empty());
            }
          });
        });
    if (!served.ok()) {
      fmt::print(stderr, "muster device-plugin: {}\n", std::string(served.status().message()));
      return 1;
    }
    ops_server = std::move(*served);
  }

  dp::PluginConfig current = *config;
  auto start = [&]() -> bool {
    auto started = dp::Daemon::Start(*options, current);
    if (started.ok()) {
      std::lock_guard<std::mutex> lock(daemon_mu);
      daemon = std::move(*started);
      return true;
    }
    std::string why(started.status().message());
    if (absl::IsFailedPrecondition(started.status()) && !current.fail_on_init_error) {
      log(fmt::format("{}; failOnInitError is false: waiting (SIGHUP retries, SIGTERM stops)",
                      why));
      std::lock_guard<std::mutex> lock(daemon_mu);
      no_daemon = fmt::format("no GPUs served: {}; failOnInitError is false: waiting", why);
      return true;
    }
    fmt::print(stderr, "muster device-plugin: {}\n", why);
    return false;
  };
  if (!start()) return 1;

  while (true) {
    const int received = WaitForSignal(signals);
    if (received != SIGHUP) {
      log(fmt::format("{}: stopping", SignalName(received)));
      std::lock_guard<std::mutex> lock(daemon_mu);
      no_daemon = "stopping";
      daemon.reset();
      return 0;
    }
    auto reloaded = LoadPluginConfig(flags);
    if (!reloaded.ok()) {
      log(fmt::format("SIGHUP: the configuration is invalid, keeping the previous one: {}",
                      std::string(reloaded.status().message())));
    } else {
      current = *reloaded;
    }
    log("SIGHUP: restarting");
    if (daemon != nullptr) {
      absl::Status restarted = daemon->Restart(current);
      if (!restarted.ok()) {
        fmt::print(stderr, "muster device-plugin: {}\n", std::string(restarted.message()));
        return 1;
      }
    } else if (!start()) {
      return 1;
    }
  }
}

}  // namespace

Subcommand AddDevicePluginCommand(CLI::App& parent) {
  auto flags = std::make_shared<DevicePluginFlags>();
  auto* app = parent.add_subcommand(
      "device-plugin",
      "Run the kubelet device plugin for NVIDIA GPUs: discovers GPUs with NVML, serves "
      "nvidia.com/gpu (and MIG or time-sliced resources) to the kubelet over "
      "<device-plugin-dir>/nvidia-<resource>.sock, watches GPU health (XID events) and writes "
      "GPU Feature Discovery labels. Compatible with NVIDIA's config file (version: v1); flags "
      "override environment variables, which override the file. SIGHUP re-reads the config and "
      "rediscovers; SIGINT or SIGTERM stop and remove the sockets. See docs/device-plugin.md.");
  // NVIDIA's flags, with NVIDIA's environment variables.
  app->add_option("--config-file", flags->config_file,
                  "NVIDIA device plugin config file (version: v1)")
      ->envname("CONFIG_FILE");
  app->add_option("--mig-strategy", flags->mig_strategy,
                  "how MIG devices are advertised: none (whole GPUs), single (every MIG device "
                  "as nvidia.com/gpu) or mixed (nvidia.com/mig-<profile>); default none")
      ->envname("MIG_STRATEGY");
  flags->fail_on_init_error_option =
      app->add_flag("--fail-on-init-error{true}", flags->fail_on_init_error,
                    "exit with an error when NVML cannot be loaded or finds no GPU; "
                    "--fail-on-init-error=false logs it and waits instead (for DaemonSets on "
                    "nodes without GPUs); default true")
          ->envname("FAIL_ON_INIT_ERROR");
  app->add_option("--nvidia-driver-root", flags->driver_root,
                  "root of the NVIDIA driver installation (libnvidia-ml.so.1 is looked for "
                  "under it); default /")
      ->envname("NVIDIA_DRIVER_ROOT");
  app->add_option("--dev-root", flags->dev_root,
                  "root under which /dev/nvidia* are found for device specs; default the "
                  "driver root")
      ->envname("NVIDIA_DEV_ROOT");
  flags->pass_device_specs_option =
      app->add_flag("--pass-device-specs{true}", flags->pass_device_specs,
                    "return the GPUs' device nodes in Allocate (needed with the CPU manager's "
                    "static policy); default false")
          ->envname("PASS_DEVICE_SPECS");
  app->add_option("--device-list-strategy", flags->device_list_strategy,
                  "how devices reach the container, comma-separated: envvar "
                  "(NVIDIA_VISIBLE_DEVICES), volume-mounts, cdi-annotations, cdi-cri; "
                  "default envvar")
      ->envname("DEVICE_LIST_STRATEGY");
  app->add_option("--device-id-strategy", flags->device_id_strategy,
                  "how devices are named to the container runtime: uuid or index; default uuid")
      ->envname("DEVICE_ID_STRATEGY");
  app->add_option("--cdi-annotation-prefix", flags->cdi_annotation_prefix,
                  "prefix of the CDI annotation keys; default cdi.k8s.io/")
      ->envname("CDI_ANNOTATION_PREFIX");
  app->add_option("--shared-devices-allocation-policy", flags->shared_allocation_policy,
                  "which replicas GetPreferredAllocation prefers for time-sliced devices: "
                  "distributed (least used GPUs first) or packed; default distributed")
      ->envname("SHARED_DEVICES_ALLOCATION_POLICY");
  flags->gdrcopy_option = app->add_flag("--gdrcopy-enabled{true}", flags->gdrcopy,
                                        "set NVIDIA_GDRCOPY=enabled in containers")
                              ->envname("GDRCOPY_ENABLED");
  flags->gds_option = app->add_flag("--gds-enabled{true}", flags->gds,
                                    "set NVIDIA_GDS=enabled in containers (nvidia.com/gds=all "
                                    "with CDI)")
                          ->envname("GDS_ENABLED");
  flags->mofed_option = app->add_flag("--mofed-enabled{true}", flags->mofed,
                                      "set NVIDIA_MOFED=enabled in containers "
                                      "(nvidia.com/mofed=all with CDI)")
                            ->envname("MOFED_ENABLED");
  // muster's own.
  app->add_option("--device-plugin-dir", flags->device_plugin_dir,
                  "the kubelet's device plugin folder (kubelet.sock and the plugins' sockets)")
      ->capture_default_str();
  app->add_option("--nvml-library", flags->nvml_library,
                  "the NVML library to load: a soname found by the loader, or a path")
      ->capture_default_str();
  app->add_option("--sysfs-root", flags->sysfs_root,
                  "where sysfs is mounted (GPU NUMA nodes are read from "
                  "<root>/bus/pci/devices/<bus id>/numa_node)")
      ->capture_default_str();
  app->add_option("--ignored-xids", flags->ignored_xids,
                  "XIDs that do not make a GPU unhealthy (application errors); "
                  "DP_DISABLE_HEALTHCHECKS adds to them ('all' turns health checks off) and "
                  "DP_ENABLE_HEALTHCHECKS removes from them")
      ->capture_default_str();
  app->add_option("--health-reprobe-interval", flags->reprobe_interval,
                  "how long after an XID an unhealthy GPU is probed again, and how often after "
                  "that, until NVML answers for it and it is Healthy again; 0 keeps it unhealthy "
                  "until restart (NVIDIA's behaviour)")
      ->capture_default_str();
  app->add_option("--labels-file", flags->labels_file,
                  "write GPU Feature Discovery labels to this NFD features file (overrides "
                  "flags.gfd.outputFile), e.g. "
                  "/etc/kubernetes/node-feature-discovery/features.d/gfd");
  app->add_option("--kubeconfig", flags->kubeconfig,
                  "patch the labels onto this node (--node-name) through the API server of "
                  "this kubeconfig");
  app->add_option("--node-name", flags->node_name, "the Node to label with --kubeconfig")
      ->envname("NODE_NAME");
  app->add_option("--listen-address", flags->listen_address,
                  "where /healthz, /livez, /readyz (the plugins serving and registered with the "
                  "kubelet) and /metrics are served (host:port, port 0 picks one); \"\" serves "
                  "nothing");
  app->add_flag("--discover", flags->discover,
                "print the GPUs (name, UUID, memory, MIG devices, topology) and the resources "
                "the config gives, then exit");
  return {app, [flags] { return RunDevicePlugin(*flags); }};
}

}  // namespace muster::cmd
