#include "cmd/cluster.h"

#include <utility>

#include "apiserver/handlers.h"
#include "apiserver/local_transport.h"

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
  c->controller_ =
      std::make_unique<controller::JobController>(*c->client_, std::move(options.controller));
  options.podgroup_controller.scheduler_names = options.scheduler.scheduler_names;
  c->podgroup_controller_ = std::make_unique<controller::PodGroupController>(
      *c->client_, std::move(options.podgroup_controller));
  c->queue_controller_ = std::make_unique<controller::QueueController>(
      *c->client_, std::move(options.queue_controller));
  c->disruption_controller_ = std::make_unique<controller::DisruptionController>(
      *c->client_, std::move(options.disruption_controller));
  c->taint_eviction_controller_ = std::make_unique<controller::TaintEvictionController>(
      *c->client_, std::move(options.taint_eviction_controller));
  c->scheduler_ =
      std::make_unique<scheduler::Scheduler>(*c->client_, std::move(options.scheduler));

  auto failed = [&c](const char* part, const absl::Status& s) {
    c->Stop();
    return absl::Status(s.code(), std::string(part) + ": " + std::string(s.message()));
  };
  if (absl::Status s = c->agent_->Start(); !s.ok()) return failed("node agents", s);
  // kubectl exec, attach, cp and port-forward reach the process nodes' containers in process.
  c->server_->handlers().SetPodStreams(&c->agent_->streams());
  if (absl::Status s = c->controller_->Start(); !s.ok()) return failed("job controller", s);
  if (absl::Status s = c->podgroup_controller_->Start(); !s.ok()) {
    return failed("podgroup controller", s);
  }
  if (absl::Status s = c->queue_controller_->Start(); !s.ok()) return failed("queue controller", s);
  if (absl::Status s = c->disruption_controller_->Start(); !s.ok()) {
    return failed("disruption controller", s);
  }
  if (absl::Status s = c->taint_eviction_controller_->Start(); !s.ok()) {
    return failed("taint eviction controller", s);
  }
  if (absl::Status s = c->scheduler_->Start(); !s.ok()) return failed("scheduler", s);
  return c;
}

LocalCluster::~LocalCluster() { Stop(); }

void LocalCluster::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (scheduler_) scheduler_->Stop();
  if (taint_eviction_controller_) taint_eviction_controller_->Stop();
  if (disruption_controller_) disruption_controller_->Stop();
  if (server_) server_->handlers().SetPodStreams(nullptr);  // the agent goes before the server
  if (queue_controller_) queue_controller_->Stop();
  if (podgroup_controller_) podgroup_controller_->Stop();
  if (controller_) controller_->Stop();
  if (agent_) agent_->Stop();
  if (server_) server_->Stop();
}

}  // namespace muster::cmd
