#pragma once

// NodeAgent: the kubelets of a set of nodes, in one object (one node of this machine, or a
// thousand simulated ones from a cluster file), talking to the API through a client::Client.
//
//   auto nodes = node::LoadClusterFile("cluster.yaml");          // or {node::LocalNode(gpus)}
//   node::NodeAgent agent(client, *nodes, {.data_dir = dir});
//   if (absl::Status s = agent.Start(); !s.ok()) ...             // nodes registered, pods run
//   ... agent.Stats() ...                                        // for a live summary line
//   agent.Stop();                                                // every container stopped
//
// What it keeps in the API, as the kubelet does:
// - each Node: labels, taints and podCIDR at registration (labels re-applied on a restart, taints
//   left as an administrator may have changed them), status capacity/allocatable, conditions
//   (MemoryPressure, DiskPressure, PIDPressure False; Ready True with reason KubeletReady),
//   addresses (InternalIP, Hostname), daemonEndpoints and nodeInfo, the heartbeat times renewed
//   every `status_report_interval`, and at once when another writer has marked one of them
//   not Ready (the node lifecycle controller's Unknown after a late Lease), as the kubelet's
//   status loop puts back what it reports;
// - each node's Lease in kube-node-lease (holder = node, 40 s duration), renewed every
//   `lease_renew_interval`, spread over the interval across nodes;
// - the pods bound to its nodes (one informer on spec.nodeName!=, filtered by node): run through
//   the node's runtime with status written as the kubelet writes it (pod_worker.h), deletions
//   confirmed with gracePeriodSeconds=0 once the containers have stopped, and the kubelet's
//   events (Started, Killing, BackOff, Failed, FailedMount; Starting and NodeReady for nodes);
// - for process nodes, Services (a second informer), so that process pods resolve the names of
//   headless Services (pod_network.h).
//
// Thread-safety: Start and Stop from one thread; Stats from any.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "client/client.h"
#include "client/informer.h"
#include "node/cluster_file.h"
#include "node/pod_manager.h"
#include "node/pod_streams.h"
#include "node/process_runtime.h"
#include "node/simulated_runtime.h"

namespace muster::node {

struct NodeAgentOptions {
  // Process containers work under <data_dir>/pods and log to <data_dir>/logs/<ns>/<pod>/, where
  // the API server's pods/log reads.
  std::string data_dir;
  std::chrono::milliseconds lease_renew_interval{10000};
  int lease_duration_seconds = 40;
  std::chrono::milliseconds status_report_interval{60000};
  // Restart back-off of crashed containers (the kubelet's 10 s doubling to 5 min).
  std::chrono::milliseconds backoff_initial{10000};
  std::chrono::milliseconds backoff_max{300000};
  // On Stop(): SIGTERM to process containers, SIGKILL after this long.
  std::chrono::milliseconds shutdown_grace{5000};
  int shards = 2;            // pod worker threads
  bool record_events = true;  // pod and node Events
  std::string kubelet_version = "v1.32.0";  // nodeInfo.kubeletVersion (kubectl's VERSION)
};

// For `muster up`'s live line.
struct NodeAgentStats {
  int nodes = 0;        // registered
  // GPU devices the nodes offer (whole GPUs, MIG devices or time-slicing replicas, as their
  // resources count them) and those not held by a pod this agent runs.
  int gpus_total = 0;
  int gpus_free = 0;
  int pods_pending = 0;  // bound here, not running yet
  int pods_running = 0;
  int pods_succeeded = 0;
  int pods_failed = 0;
};

class NodeAgent {
 public:
  NodeAgent(client::Client& client, std::vector<NodeConfig> nodes, NodeAgentOptions options);
  ~NodeAgent();  // Stop()

  NodeAgent(const NodeAgent&) = delete;
  NodeAgent& operator=(const NodeAgent&) = delete;

  // Registers the nodes and their leases, then starts running their pods. An error (the API
  // unreachable, a node refused) leaves nothing running.
  absl::Status Start();
  // Stops watching, stops every container (SIGTERM, SIGKILL after shutdown_grace) and reaps
  // them. Nodes and pods stay in the API as they are; a later Start picks the pods up again.
  // Idempotent.
  void Stop();

  [[nodiscard]] NodeAgentStats Stats() const;
  [[nodiscard]] const std::vector<NodeConfig>& nodes() const { return nodes_; }
  // kubectl exec, attach, cp and port-forward into the pods these nodes run (pod_streams.h), for
  // an API server in the same process (apiserver::Handlers::SetPodStreams). Refuses once
  // stopping; valid as long as the agent.
  [[nodiscard]] common::PodStreams& streams() { return *streams_; }

 private:
  class Sink;

  // Every node registered with its Lease; the first failure.
  absl::Status RegisterAll();
  // The Node created with its status in one write, as the kubelet registers (its initialNode
  // carries the status; kube-apiserver keeps a Node's status on create). A Node an earlier run
  // registered gets its labels and its status written apart. *created: whether this call made it.
  absl::Status RegisterNode(const NodeConfig& node, bool* created = nullptr);
  boost::json::object NodeStatus(const NodeConfig& node) const;
  absl::Status WriteNodeStatus(const NodeConfig& node);
  // The Lease renewed by a patch, created when there is none. create_first: a node registered
  // a moment ago has none, so the create goes first (and a patch follows if one appeared).
  absl::Status RenewLease(const NodeConfig& node, bool create_first = false);
  void Heartbeats();
  // The Node as stored (informer): when it is one of ours and not Ready as we report it, its
  // status is written at once.
  void NodeSeen(const boost::json::object& node);
  void NodeEvent(const NodeConfig& node, const std::string& reason, const std::string& message);

  client::Client& client_;
  const std::vector<NodeConfig> nodes_;
  const NodeAgentOptions options_;
  const std::chrono::system_clock::time_point started_at_;

  ProcessRuntime process_;
  SimulatedRuntime simulated_;
  std::unique_ptr<Sink> sink_;
  std::unique_ptr<PodManager> pods_;
  std::unique_ptr<NodePodStreams> streams_;  // declared after pods_: destroyed before it
  std::unique_ptr<client::Informer> informer_;
  std::unique_ptr<client::Informer> services_;  // with process nodes only
  // Every Node, to see ours marked not Ready by someone else (the status is then written again).
  std::unique_ptr<client::Informer> node_watch_;

  std::atomic<int> registered_{0};
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool started_ = false;
  std::thread heartbeat_;
  std::vector<std::string> node_uids_;  // by node index, for lease owner references
  std::unordered_map<std::string, size_t> node_index_;  // node name -> index in nodes_
  std::vector<size_t> status_now_;  // node indices whose status is due at once; under mu_
};

}  // namespace muster::node
