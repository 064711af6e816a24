// `muster up`: a whole GPU batch cluster in one process — the API server and its store, the
// scheduler, the Volcano job controller, kube-controller-manager's disruption and taint eviction
// controllers (cmd/cluster.h) and the node agents (simulated nodes from a cluster file,
// or this machine running pods as processes with its GPUs) — driven by the real kubectl through
// the kubeconfig it writes.

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "apiserver/apiserver.h"
#include "cmd/cluster.h"
#include "cmd/commands.h"
#include "cmd/component_ops.h"
#include "cmd/dashboard_server.h"
#include "cmd/gpu_node.h"
#include "cmd/process.h"
#include "common/files.h"
#include "deviceplugin/config.h"
#include "fmt/format.h"
#include "gpu/discover.h"
#include "node/agent.h"
#include "node/cluster_file.h"
#include "scheduler/scheduler.h"

namespace muster::cmd {
namespace {

struct UpFlags {
  std::string config;
  std::string data_dir;
  std::string listen = "127.0.0.1:6443";
  std::string scheduler_conf;
  bool reset = false;
  bool no_summary = false;
  std::string metrics_address = "127.0.0.1:0";
  std::string nvml_library = std::string(gpu::kDefaultNvmlLibrary);
  std::string gpu_config;
  apiserver::ServingLimits limits;
  bool insecure_http = false;
};

std::string DefaultDataDir() {
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/muster";
  }
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home != '\0' ? home : ".") + "/.local/share/muster";
}

// This machine as the one node, with its GPUs when NVML finds any: one nvidia.com/gpu each, or
// as NVIDIA's device plugin would offer them under `gpu_config` (--gpu-config; cmd/gpu_node.h).
absl::StatusOr<node::NodeConfig> LocalNodeWithGpus(
    const std::string& nvml_library,
    const std::optional<deviceplugin::PluginConfig>& gpu_config) {
  gpu::DiscoverOptions options;
  options.nvml_library = nvml_library;
  if (gpu_config) options.driver_root = gpu_config->nvidia_driver_root;
  auto system = gpu::DiscoverSystem(options);
  if (!system.ok()) {
    if (gpu_config && gpu_config->fail_on_init_error) {
      return absl::Status(system.status().code(),
                          fmt::format("{} (--gpu-config: failOnInitError is true; set it to false "
                                      "to start without GPUs)",
                                      std::string(system.status().message())));
    }
    fmt::print(stderr, "muster up: {}; this node offers no GPUs\n",
               std::string(system.status().message()));
    return node::LocalNode();
  }
  for (const auto& g : system->devices) {
    fmt::print(stderr, "muster up: GPU {}: {} ({}, {} MiB)\n", g.index, g.name, g.uuid,
               g.memory_bytes >> 20);
    for (const auto& m : g.mig_devices) {
      fmt::print(stderr, "muster up: GPU {} MIG device {}: {} ({})\n", g.index, m.index,
                 m.profile, m.uuid);
    }
  }
  if (!gpu_config) return node::LocalNode(system->devices);
  node::NodeConfig local = node::LocalNode();
  if (absl::Status s = AddConfiguredGpus(local, *system, *gpu_config,
                                         CurrentLabelInputs(*gpu_config));
      !s.ok()) {
    return absl::Status(s.code(), "--gpu-config: " + std::string(s.message()));
  }
  for (const auto& r : local.device_resources) {
    fmt::print(stderr, "muster up: the node offers {} {}\n", r.devices.size(), r.name);
  }
  return local;
}

std::string SummaryLine(const node::NodeAgentStats& n, const scheduler::SchedulerStats& s) {
  return fmt::format(
      "nodes {} | GPUs {}/{} free | pods {} pending, {} running, {} succeeded, {} failed | "
      "gangs waiting {} | cycles {} (last {:.1f} ms)",
      n.nodes, n.gpus_free, n.gpus_total, s.pods_pending + n.pods_pending, n.pods_running,
      n.pods_succeeded, n.pods_failed, s.gangs_waiting, s.cycles,
      static_cast<double>(s.last_cycle.count()) / 1000.0);
}

int RunUp(const UpFlags& flags) {
  const sigset_t signals = BlockSignals();

  const std::string data_dir = flags.data_dir.empty() ? DefaultDataDir() : flags.data_dir;
  // The nodes first: a bad cluster file is reported before anything starts.
  std::vector<node::NodeConfig> nodes;
  std::vector<api::HyperNode> hypernodes;
  if (!flags.config.empty()) {
    auto parsed = node::LoadClusterSpec(flags.config);
    if (!parsed.ok()) {
      fmt::print(stderr, "muster up: {}\n", std::string(parsed.status().message()));
      return 1;
    }
    nodes = std::move(parsed->nodes);
    hypernodes = std::move(parsed->hypernodes);
  }
  std::optional<deviceplugin::PluginConfig> gpu_config;
  if (!flags.gpu_config.empty()) {
    auto loaded = deviceplugin::LoadConfig(flags.gpu_config, {});
    if (!loaded.ok()) {
      fmt::print(stderr, "muster up: --gpu-config: {}\n", std::string(loaded.status().message()));
      return 1;
    }
    gpu_config = std::move(*loaded);
  }
  if (flags.config.empty()) {
    auto local = LocalNodeWithGpus(flags.nvml_library, gpu_config);
    if (!local.ok()) {
      fmt::print(stderr, "muster up: {}\n", std::string(local.status().message()));
      return 1;
    }
    nodes.push_back(std::move(*local));
  }
  if (!flags.scheduler_conf.empty() && !std::filesystem::exists(flags.scheduler_conf)) {
    fmt::print(stderr, "muster up: --scheduler-conf {}: no such file\n", flags.scheduler_conf);
    return 1;
  }
  if (absl::Status s = common::CreatePrivateDirectories(data_dir); !s.ok()) {
    fmt::print(stderr, "muster up: data directory: {}\n", std::string(s.message()));
    return 1;
  }
  if (flags.reset) {
    if (absl::Status s = ResetDataDir(data_dir); !s.ok()) {
      fmt::print(stderr, "muster up: {}\n", std::string(s.message()));
      return 1;
    }
  }

  // The scheduler's and the controller's /metrics, and /healthz, /livez, /readyz, as
  // `muster scheduler` and `muster controller` serve them (cmd/component_ops.h).
  auto ops = ComponentOps::Start("muster up", flags.metrics_address);
  if (!ops.ok()) {
    fmt::print(stderr, "muster up: {}\n", std::string(ops.status().message()));
    return 1;
  }
  LocalClusterOptions cluster_options;
  cluster_options.data_dir = data_dir;
  cluster_options.listen = flags.listen;
  cluster_options.limits = flags.limits;
  cluster_options.insecure_http = flags.insecure_http;
  cluster_options.nodes = nodes;
  cluster_options.hypernodes = hypernodes;
  cluster_options.scheduler_conf = flags.scheduler_conf;
  cluster_options.scheduler.metrics = (*ops)->registry();
  cluster_options.controller.metrics = (*ops)->registry();
  cluster_options.queue_controller.metrics = (*ops)->registry();
  auto cluster = LocalCluster::Start(std::move(cluster_options));
  if (!cluster.ok()) {
    fmt::print(stderr, "muster up: {}\n", std::string(cluster.status().message()));
    return 1;
  }
  (*ops)->SetApiProblem("");
  (*ops)->SetLeader(true);
  (*ops)->SetSynced(true);
  apiserver::ApiServer& server = (*cluster)->server();

  fmt::print("muster up: {} node{}{}, API server at {}, data in {}\n", nodes.size(),
             nodes.size() == 1 ? "" : "s",
             hypernodes.empty() ? std::string()
                                : fmt::format(" in {} HyperNode{}", hypernodes.size(),
                                              hypernodes.size() == 1 ? "" : "s"),
             server.url(), data_dir);
  fmt::print("export KUBECONFIG={}\n", server.kubeconfig_path());
  fmt::print("dashboard: {}\n", server.dashboard_url());
  // The dashboard's cycle latency (the live line's), which no API object holds.
  scheduler::Scheduler& scheduler = (*cluster)->scheduler();
  server.SetDashboardStatus([&scheduler] { return DashboardStatusJson(scheduler.Stats()); });
  std::fflush(stdout);

  // The live line: rewritten in place on a terminal, otherwise left out (or printed when it
  // changes, for logs, with --no-summary off and no terminal).
  const bool tty = isatty(STDOUT_FILENO) == 1;
  std::string last;
  int received = 0;
  while (true) {
    received = WaitForSignal(signals, std::chrono::seconds(1));
    if (received != 0) break;
    if (flags.no_summary) continue;
    std::string line =
        SummaryLine((*cluster)->agent().Stats(), (*cluster)->scheduler().Stats());
    if (tty) {
      fmt::print("\r\033[K{}", line);
      std::fflush(stdout);
    } else if (line != last) {
      fmt::print("{}\n", line);
      std::fflush(stdout);
    }
    last = std::move(line);
  }
  if (tty && !flags.no_summary) fmt::print("\n");
  fmt::print(stderr, "muster up: {}, stopping\n", SignalName(received));
  server.SetDashboardStatus({});
  cluster->reset();
  fmt::print(stderr, "muster up: stopped\n");
  return 0;
}

}  // namespace

Subcommand AddUpCommand(CLI::App& parent) {
  auto flags = std::make_shared<UpFlags>();
  auto* app = parent.add_subcommand(
      "up",
      "Run a whole GPU batch cluster on this machine: the API server (kubectl talks to it through "
      "the kubeconfig it writes), the scheduler, the Volcano job controller, the disruption and "
      "taint eviction controllers (kubectl drain, NoExecute taints) and the nodes — "
      "simulated ones from a cluster file, or this machine running pods as processes with its "
      "GPUs. State survives a restart. Ctrl-C stops it.");
  auto* config =
      app->add_option("--config", flags->config,
                      "cluster file (docs/cluster-file.md); without it, this machine is the one "
                      "node")
          ->check(CLI::ExistingFile);
  app->add_option("--data-dir", flags->data_dir,
                  "directory for the store, the kubeconfig (DIR/kubeconfig), logs and pod "
                  "working directories (default: ~/.local/share/muster)");
  app->add_option("--listen", flags->listen, "ADDR:PORT of the API server; port 0 picks a free one")
      ->capture_default_str();
  app->add_option("--scheduler-conf", flags->scheduler_conf,
                  "volcano-scheduler.conf to schedule with, reloaded when it changes (default: "
                  "Volcano's built-in configuration)");
  app->add_flag("--reset", flags->reset,
                "start from an empty cluster: remove the store, the kubeconfig and credentials, "
                "logs and pod directories of the data directory first");
  app->add_flag("--no-summary", flags->no_summary, "do not print the live summary line");
  app->add_option("--metrics-address", flags->metrics_address,
                  "where the scheduler's and controller's /metrics and /healthz, /livez, /readyz "
                  "are served (host:port, port 0 picks one; \"\" serves nothing)")
      ->capture_default_str();
  app->add_option("--nvml-library", flags->nvml_library,
                  "NVML library for GPU discovery of the local node (no --config)")
      ->capture_default_str();
  app->add_option("--gpu-config", flags->gpu_config,
                  "NVIDIA device-plugin config file (version: v1, as muster device-plugin "
                  "--config-file takes; docs/device-plugin.md): the local node offers its GPUs as "
                  "that plugin would — MIG devices by migStrategy single or mixed "
                  "(nvidia.com/mig-<profile>), time-slicing replicas — with GPU Feature "
                  "Discovery's labels")
      ->check(CLI::ExistingFile)
      ->excludes(config);
  AddServingLimitFlags(*app, flags->limits);
  AddInsecureHttpFlag(*app, flags->insecure_http);
  return {app, [flags] { return RunUp(*flags); }};
}

}  // namespace muster::cmd
