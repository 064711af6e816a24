#pragma once

// What `muster up` runs, assembled in one object so that `muster up` (src/cmd/up.cc) and the
// end-to-end benchmark (bench/up_benchmark.cc) run exactly the same cluster: the embedded API
// server and its store, one in-process client (apiserver::LocalTransport) shared by the node
// agents, the Volcano job controller, the PodGroup controller (one-member PodGroups for plain pods
// of the scheduler), the queue controller (OpenQueue and CloseQueue Commands),
// kube-controller-manager's disruption controller (PodDisruptionBudget status, for pods/eviction),
// taint eviction controller (NoExecute taints), Job and CronJob controllers (batch/v1), and the
// scheduler (which also serves default-scheduler pods, being the only scheduler).
//
//   cmd::LocalClusterOptions options;
//   options.data_dir = dir;
//   options.nodes = *node::LoadClusterFile("cluster.yaml");
//   auto cluster = cmd::LocalCluster::Start(std::move(options));   // everything running
//   ... (*cluster)->client(), (*cluster)->scheduler().Stats() ...
//   (*cluster)->Stop();                                             // or destroy it
//
// Start order: API server, node agents (nodes registered), the cluster file's HyperNodes, job
// controller (synced), PodGroup controller (synced), queue controller (synced), disruption and
// taint eviction controllers (synced), batch/v1 Job and CronJob controllers (synced), scheduler.
// Stop order: the reverse. Thread-safety: Start and Stop from one thread; the accessors' objects
// are as thread-safe as they document.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "apiserver/apiserver.h"
#include "client/client.h"
#include "controller/batch_job_controller.h"
#include "controller/cronjob_controller.h"
#include "controller/disruption_controller.h"
#include "controller/hypernode_controller.h"
#include "controller/job_controller.h"
#include "controller/podgroup_controller.h"
#include "controller/queue_controller.h"
#include "controller/taint_eviction.h"
#include "node/agent.h"
#include "node/cluster_file.h"
#include "scheduler/scheduler.h"

namespace muster::cmd {

struct LocalClusterOptions {
  // The store, kubeconfig, logs and pod working directories; must exist.
  std::string data_dir;
  // API server address; port 0 picks a free one.
  std::string listen = "127.0.0.1:6443";
  apiserver::ServingLimits limits;  // the API server's, over HTTP
  bool insecure_http = false;  // ApiServerOptions::insecure_http
  // The nodes the agents run (cluster_file.h); at least one.
  std::vector<node::NodeConfig> nodes;
  // The cluster file's racks and spines (ClusterSpec::hypernodes), written to the API server once
  // the nodes are registered (node::ApplyHyperNodes: created or brought up to date, and those of
  // an earlier cluster file that this one no longer has deleted).
  std::vector<api::HyperNode> hypernodes;
  // volcano-scheduler.conf ("" for Volcano's built-in default), reloaded when it changes.
  std::string scheduler_conf;
  // The layers' own options, as `muster up` leaves them unless set. `agent.data_dir` is replaced
  // by `data_dir`; the scheduler always serves default-scheduler pods and reads
  // `scheduler_conf`; the PodGroup controller's scheduler_names are the scheduler's.
  node::NodeAgentOptions agent;
  controller::JobControllerOptions controller;
  controller::PodGroupControllerOptions podgroup_controller;
  controller::QueueControllerOptions queue_controller;
  controller::DisruptionControllerOptions disruption_controller;
  controller::TaintEvictionControllerOptions taint_eviction_controller;
  // Its scheduler_names (which pods may form gangs) are the scheduler's.
  controller::BatchJobControllerOptions batch_job_controller;
  controller::CronJobControllerOptions cronjob_controller;
  scheduler::SchedulerOptions scheduler;
};

class LocalCluster {
 public:
  // Starts every part; on an error whatever had started is stopped again and the error says
  // which part failed ("node agents: ...", "hypernodes: ...", "job controller: ...",
  // "podgroup controller: ...", "queue controller: ...", "disruption controller: ...",
  // "taint eviction controller: ...", "batch job controller: ...", "cronjob controller: ...",
  // "scheduler: ...").
  static absl::StatusOr<std::unique_ptr<LocalCluster>> Start(LocalClusterOptions options);
  ~LocalCluster();  // Stop()

  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  // Scheduler, controllers, node agents (their containers stopped), then the API server.
  // Idempotent.
  void Stop();

  apiserver::ApiServer& server() { return *server_; }
  client::Client& client() { return *client_; }
  node::NodeAgent& agent() { return *agent_; }
  scheduler::Scheduler& scheduler() { return *scheduler_; }
  const std::vector<node::NodeConfig>& nodes() const { return agent_->nodes(); }

 private:
  LocalCluster() = default;

  std::unique_ptr<apiserver::ApiServer> server_;
  std::unique_ptr<client::Client> client_;
  std::unique_ptr<node::NodeAgent> agent_;
  // In start order, each with the name its errors carry.
  std::vector<std::pair<std::string, std::unique_ptr<controller::Controller>>> controllers_;
  std::unique_ptr<scheduler::Scheduler> scheduler_;
  bool stopped_ = false;
};

}  // namespace muster::cmd
