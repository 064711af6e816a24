#include "node/node_resources.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "node/json_access.h"

namespace muster::node {

NodeResources::NodeResources(NodeConfig config)
    : config_(std::move(config)), users_(config_.gpus.size(), 0) {}

absl::StatusOr<std::vector<int>> NodeResources::AcquireGpus(const std::string& uid,
                                                            const std::vector<int>& named,
                                                            int count) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = held_.find(uid); it != held_.end()) return it->second;
  const int total = static_cast<int>(users_.size());
  std::vector<int> devices;
  if (!named.empty()) {
    for (int index : named) {
      if (index < 0 || index >= total) {
        return absl::FailedPreconditionError(Cat(
            "muster.dev/gpu-indices names GPU ", index, ", which node ", config_.name,
            " does not have (it has ", total, ")"));
      }
    }
    devices = named;
  } else if (count > 0) {
    for (int i = 0; i < total && static_cast<int>(devices.size()) < count; ++i) {
      if (users_[i] == 0) devices.push_back(i);
    }
    if (static_cast<int>(devices.size()) < count) {
      // The kubelet's device manager's words.
      return absl::FailedPreconditionError(Cat(
          "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. "
          "Requested: ",
          count, ", Available: ", devices.size(), ", which is unexpected"));
    }
  }
  for (int index : devices) ++users_[index];
  held_[uid] = devices;
  return devices;
}

void NodeResources::ReleaseGpus(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(uid);
  if (it == held_.end()) return;
  for (int index : it->second) --users_[index];
  held_.erase(it);
}

int NodeResources::GpusInUse() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(std::count_if(users_.begin(), users_.end(), [](int u) { return u > 0; }));
}

std::string NodeResources::NextPodIp() {
  if (config_.pod_cidr.empty()) return config_.internal_ip;
  std::lock_guard<std::mutex> lock(mu_);
  const int host = 2 + next_host_;
  next_host_ = (next_host_ + 1) % 253;
  std::string prefix = config_.pod_cidr.substr(0, config_.pod_cidr.rfind('.') + 1);
  return Cat(prefix, host);
}

}  // namespace muster::node
