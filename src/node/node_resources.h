#pragma once

// What one node hands out to the pods it runs: GPU devices and pod addresses.
//
// GPUs: the scheduler names a pod's devices in annotation muster.dev/gpu-indices ("0,3"); those
// are taken as given. A pod that asks for GPUs without the annotation (placed by another
// scheduler) gets the lowest free devices, as the kubelet's device manager would hand them out.
//
// Thread-safety: every method may be called from any thread.

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "node/cluster_file.h"

namespace muster::node {

class NodeResources {
 public:
  explicit NodeResources(NodeConfig config);

  const NodeConfig& config() const { return config_; }

  // The devices pod `uid` uses: `named` when not empty (validated against the node's devices),
  // else `count` free ones. Calling again for the same uid returns what it already holds.
  // FailedPrecondition, with the kubelet's message, when the node cannot provide them.
  absl::StatusOr<std::vector<int>> AcquireGpus(const std::string& uid, const std::vector<int>& named,
                                               int count);
  void ReleaseGpus(const std::string& uid);
  [[nodiscard]] int GpusInUse() const;
  [[nodiscard]] int GpuCount() const { return static_cast<int>(config_.gpus.size()); }

  // An address for a new pod: the node's own for process nodes, the next one of the node's pod
  // network for simulated ones.
  std::string NextPodIp();

 private:
  const NodeConfig config_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<int>> held_;  // pod uid -> device indices
  std::vector<int> users_;                         // per device: pods holding it
  int next_host_ = 0;
};

}  // namespace muster::node
