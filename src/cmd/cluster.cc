#include "cmd/cluster.h"

#include <utility>

#include "apiserver/handlers.h"
#include "apiserver/local_transport.h"
#include "node/cluster_topology.h"

namespace muster::cmd {

absl::StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(LocalClusterOptions options) {
  if (options.nodes.empty()) return absl::InvalidArgumentError("a cluster needs at least one node");
  std::unique_ptr<LocalCluster> c(new LocalCluster());

  apiserver::ApiServerOptions server_options;
  server_options.data_dir = options.data_dir;
  server_options.listen = options.listen;
  server_options.limits = options.limits;
  server_options.insecure_http = options.insecure_http;
  auto server = apiserver::ApiServer::Start(server_options);
  if (!server.ok()) return server.status();
  c->server_ = *std::move(server);
  c->client_ =
      std::make_unique<client::Client>(std::make_shared<apiserver::LocalTransport>(*c->server_));

  options.agent.data_dir = options.data_dir;
  options.scheduler.serve_default_scheduler = true;  // the only scheduler here
  options.scheduler.conf_path = options.scheduler_conf;
  c->agent_ = std::make_unique<node::NodeAgent>(*c->client_, std::move(options.nodes),
                                                std::move(options.agent));
  options.podgroup_controller.scheduler_names = options.scheduler.scheduler_names;
  client::Client& client = *c->client_;
  c->controllers_.emplace_back("job controller",
                               controller::NewJobController(client, std::move(options.controller)));
  c->controllers_.emplace_back(
      "podgroup controller",
      controller::NewPodGroupController(client, std::move(options.podgroup_controller)));
  c->controllers_.emplace_back(
      "queue controller",
      controller::NewQueueController(client, std::move(options.queue_controller)));
  c->controllers_.emplace_back("hypernode controller", controller::NewHyperNodeController(client));
  c->controllers_.emplace_back(
      "disruption controller",
      controller::NewDisruptionController(client, std::move(options.disruption_controller)));
  c->controllers_.emplace_back("taint eviction controller",
                               controller::NewTaintEvictionController(
                                   client, std::move(options.taint_eviction_controller)));
  options.batch_job_controller.scheduler_names = options.scheduler.scheduler_names;
  c->controllers_.emplace_back(
      "batch job controller",
      controller::NewBatchJobController(client, std::move(options.batch_job_controller)));
  c->controllers_.emplace_back(
      "cronjob controller",
      controller::NewCronJobController(client, std::move(options.cronjob_controller)));
  c->scheduler_ =
      std::make_unique<scheduler::Scheduler>(*c->client_, std::move(options.scheduler));

  auto failed = [&c](const char* part, const absl::Status& s) {
    c->Stop();
    return absl::Status(s.code(), std::string(part) + ": " + std::string(s.message()));
  };
  if (absl::Status s = c->agent_->Start(); !s.ok()) return failed("node agents", s);
  // kubectl exec, attach, cp and port-forward reach the process nodes' containers in process.
  c->server_->handlers().SetPodStreams(&c->agent_->streams());
  if (absl::Status s = node::ApplyHyperNodes(*c->client_, options.hypernodes); !s.ok()) {
    return failed("hypernodes", s);
  }
  for (auto& [name, controller] : c->controllers_) {
    if (absl::Status s = controller->Start(); !s.ok()) return failed(name.c_str(), s);
  }
  if (absl::Status s = c->scheduler_->Start(); !s.ok()) return failed("scheduler", s);
  return c;
}

LocalCluster::~LocalCluster() { Stop(); }

void LocalCluster::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (scheduler_) scheduler_->Stop();
  for (auto it = controllers_.rbegin(); it != controllers_.rend(); ++it) it->second->Stop();
  if (server_) server_->handlers().SetPodStreams(nullptr);  // the agent goes before the server
  if (agent_) agent_->Stop();
  if (server_) server_->Stop();
}

}  // namespace muster::cmd
