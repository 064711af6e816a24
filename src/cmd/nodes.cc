// `muster nodes`: muster's node agents against any API server, as KWOK does for a real control
// plane: the nodes of a cluster file (docs/cluster-file.md, the same files as `muster up`)
// registered with their GPUs, labels and taints, their Leases kept fresh in kube-node-lease, and
// the pods bound to them run (simulated: for muster.dev/run-seconds; process: as processes on this
// machine) with status written as the kubelet writes it. No kubelet is needed, so tests,
// benchmarks and users trying muster on a real kube-apiserver get GPU nodes on one machine.

#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "cmd/commands.h"
#include "cmd/process.h"
#include "common/files.h"
#include "fmt/format.h"
#include "node/agent.h"
#include "node/cluster_file.h"

namespace muster::cmd {
namespace {

struct NodesFlags {
  std::string config;
  std::string kubeconfig;
  std::string context;
  std::string data_dir;
  int lease_renew_seconds = 10;
  int status_report_seconds = 60;
  int shards = 2;
  bool events = true;
};

// Removes `dir` (unless empty) with everything in it when it goes out of scope.
struct RemovedAtExit {
  std::string dir;
  ~RemovedAtExit() {
    std::error_code ignored;
    if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
  }
};

int RunNodes(const NodesFlags& flags) {
  const sigset_t signals = BlockSignals();

  auto nodes = node::LoadClusterFile(flags.config);
  if (!nodes.ok()) {
    fmt::print(stderr, "muster nodes: {}\n", std::string(nodes.status().message()));
    return 1;
  }
  const std::string kubeconfig = KubeconfigPath(flags.kubeconfig);
  if (kubeconfig.empty()) {
    fmt::print(stderr, "muster nodes: no kubeconfig: pass --kubeconfig FILE or set KUBECONFIG\n");
    return 2;
  }
  auto remote = ConnectWithKubeconfig(kubeconfig, flags.context);
  if (!remote.ok()) {
    fmt::print(stderr, "muster nodes: {}\n", std::string(remote.status().message()));
    return 1;
  }
  std::string data_dir = flags.data_dir;
  // Without --data-dir: a directory of our own under $TMPDIR (else /tmp), removed again however
  // this returns, once the agent has stopped (its pods' working directories and logs are in it).
  RemovedAtExit made_dir;
  if (data_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/muster-nodes-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      fmt::print(stderr, "muster nodes: cannot create a data directory like {}: {}\n", pattern,
                 std::strerror(errno));
      return 1;
    }
    data_dir = pattern;
    made_dir.dir = data_dir;
  } else {
    if (absl::Status s = common::CreatePrivateDirectories(data_dir); !s.ok()) {
      fmt::print(stderr, "muster nodes: --data-dir: {}\n", std::string(s.message()));
      return 1;
    }
  }

  client::Client api(remote->transport);
  node::NodeAgentOptions options;
  options.data_dir = data_dir;
  options.lease_renew_interval = std::chrono::seconds(flags.lease_renew_seconds);
  options.status_report_interval = std::chrono::seconds(flags.status_report_seconds);
  options.shards = flags.shards;
  options.record_events = flags.events;
  node::NodeAgent agent(api, std::move(*nodes), options);
  if (absl::Status s = agent.Start(); !s.ok()) {
    fmt::print(stderr, "muster nodes: {} ({})\n", std::string(s.message()), remote->server);
    return 1;
  }
  const node::NodeAgentStats stats = agent.Stats();
  fmt::print("muster nodes: {} node{} ({} GPUs) registered at {}, data in {}\n", stats.nodes,
             stats.nodes == 1 ? "" : "s", stats.gpus_total, remote->server, data_dir);
  std::fflush(stdout);

  fmt::print(stderr, "muster nodes: {}, stopping\n", SignalName(WaitForSignal(signals)));
  agent.Stop();
  return 0;
}

}  // namespace

Subcommand AddNodesCommand(CLI::App& parent) {
  auto flags = std::make_shared<NodesFlags>();
  auto* app = parent.add_subcommand(
      "nodes",
      "Run simulated (or process) GPU nodes from a cluster file against any API server, as "
      "kubelets would: Node objects with GPUs, labels and taints, Leases kept fresh, bound pods "
      "run and finished by their annotations. SIGINT or SIGTERM stop it; the Node objects stay.");
  app->add_option("--config", flags->config, "cluster file (docs/cluster-file.md)")->required();
  app->add_option("--kubeconfig", flags->kubeconfig,
                  "kubeconfig of the API server (default: $KUBECONFIG)");
  app->add_option("--context", flags->context, "kubeconfig context (default: current-context)");
  app->add_option(
      "--data-dir", flags->data_dir,
      "working directories and logs of process pods (default: a new one under $TMPDIR or "
      "/tmp, removed at exit)");
  app->add_option("--lease-renew-seconds", flags->lease_renew_seconds,
                  "seconds between two renewals of each node's Lease (its duration is 40 s)")
      ->check(CLI::Range(1, 39))
      ->capture_default_str();
  app->add_option("--status-report-seconds", flags->status_report_seconds,
                  "seconds between two heartbeats of each node's status")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  app->add_option("--workers", flags->shards, "pod worker threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app->add_flag("!--no-events", flags->events, "record no pod or node Events");
  return {app, [flags] { return RunNodes(*flags); }};
}

}  // namespace muster::cmd
