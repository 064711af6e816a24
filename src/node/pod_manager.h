#pragma once

// PodManager: runs the pods bound to a set of nodes, each through a PodWorker, and reports what
// the kubelet reports (pod status, deletion confirmations, events) to a PodSink: the API through
// the node agent (agent.h), or a fake in tests.
//
// Work is spread over a few shard threads by pod key; each pod is handled by one shard, in
// arrival order, so a worker is never touched by two threads. A shard wakes on a new pod
// version, a container exit or a due timer (back-off, set-up retry, write retry). A status is
// written only when it differs from the last one written (or found on the pod), so the API sees
// one write per change.
//
// Thread-safety: Upsert, Remove, Counts and Gpus may be called from any thread.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "boost/json/object.hpp"
#include "node/cluster_file.h"
#include "node/node_resources.h"
#include "node/pod_network.h"
#include "node/pod_worker.h"
#include "node/runtime.h"

namespace muster::node {

struct PodRef {
  std::string ns;
  std::string name;
  std::string uid;
};

// Where the pod manager's reports go. Called from shard threads, possibly several at once.
class PodSink {
 public:
  virtual ~PodSink() = default;
  // Replaces the pod's .status. NotFound when the pod is gone; other errors are retried.
  virtual absl::Status WriteStatus(const PodRef& pod, const boost::json::object& status) = 0;
  // Deletes the pod now (gracePeriodSeconds=0, precondition uid): its containers have stopped.
  virtual absl::Status ConfirmDeletion(const PodRef& pod) = 0;
  virtual void RecordEvent(const PodRef& pod, const std::string& node, const PodEvent& event) = 0;
  // The ConfigMap or Secret (`resource` "configmaps" or "secrets"); NotFound when there is none.
  virtual absl::StatusOr<boost::json::object> GetObject(std::string_view resource,
                                                        const std::string& ns,
                                                        const std::string& name) = 0;
};

struct PodManagerOptions {
  PodWorkerOptions worker;
  int shards = 2;
  // How soon a failed status write or deletion is tried again.
  std::chrono::milliseconds write_retry{1000};
  // Process nodes' pods get addresses and names of their own (pod_network.h) when
  // `worker.data_dir` is set, with the namespaces this machine allows (nullopt: found by
  // ProbePodIsolation) or those given.
  std::optional<PodIsolation> pod_isolation;
};

// Pods this manager runs, by phase (as last computed).
struct PodCounts {
  int pending = 0;
  int running = 0;
  int succeeded = 0;
  int failed = 0;
};

class PodManager {
 public:
  // `simulated` and `process` run the pods of nodes with that runtime; both must outlive the
  // manager and be shut down only after Stop().
  PodManager(const std::vector<NodeConfig>& nodes, PodSink& sink, Runtime& simulated,
             Runtime& process, PodManagerOptions options);
  ~PodManager();  // Stop()

  PodManager(const PodManager&) = delete;
  PodManager& operator=(const PodManager&) = delete;

  // ResourceExhausted when a shard's thread cannot be made; then none runs.
  absl::Status Start();
  // Joins the shard threads; queued work is dropped. Containers are left to the runtimes'
  // Shutdown. Idempotent.
  void Stop();

  // The pod as the API has it now (added or modified). Pods not bound to one of the nodes are
  // ignored. The shared form keeps the object itself (an informer's immutable state: no copy);
  // the other keeps a copy without metadata.managedFields, which the agent never reads.
  void Upsert(std::shared_ptr<const boost::json::object> pod);
  void Upsert(const boost::json::object& pod);
  // The pod is gone from the API.
  void Remove(const boost::json::object& pod);

  // Services as the API has them, for the names process pods see (pod_network.h).
  void UpsertService(const boost::json::object& service);
  void RemoveService(const boost::json::object& service);
  // Null when no pod gets a network of its own (no process node, or no data directory).
  [[nodiscard]] const PodNetwork* network() const { return network_.get(); }

  [[nodiscard]] bool HasNode(const std::string& name) const { return nodes_.count(name) != 0; }

  // What exec, attach and port-forward need of a pod (node/pod_streams.h): its node and that
  // node's runtime, and the named container's current run (none for an empty name). Asked of
  // the pod's shard, so it waits behind the pod's queued work. NotFound when these nodes do not
  // run the pod (with `uid`: that pod), or it has no such container; Unavailable once stopping.
  struct ContainerLookup {
    std::string node;
    RuntimeKind runtime = RuntimeKind::kSimulated;
    PodWorker::ContainerRun run;
  };
  absl::StatusOr<ContainerLookup> Lookup(const std::string& ns, const std::string& name,
                                         const std::string& uid, const std::string& container);
  [[nodiscard]] PodCounts Counts() const;
  // GPU devices of every resource the nodes hand out by device (whole GPUs, MIG devices,
  // time-slicing replicas).
  struct GpuCounts {
    int total = 0;
    int in_use = 0;
  };
  [[nodiscard]] GpuCounts Gpus() const;

 private:
  class Shard;
  Shard& ShardFor(const std::string& key);

  std::map<std::string, std::unique_ptr<NodeResources>> nodes_;
  PodSink& sink_;
  Runtime& simulated_;
  Runtime& process_;
  const PodManagerOptions options_;
  std::unique_ptr<PodNetwork> network_;  // before the shards: their workers use it
  std::vector<std::unique_ptr<Shard>> shards_;
  // Pods per phase, kept by the shards.
  std::atomic<int> pending_{0}, running_{0}, succeeded_{0}, failed_{0};
};

}  // namespace muster::node
