#include "node/node_resources.h"

#include <algorithm>
#include <iterator>
#include <string_view>

#include "node/json_access.h"

namespace muster::node {
namespace {

using common::Quantity;

std::vector<DeviceResource> ResourcesOf(const NodeConfig& config) {
  if (!config.device_resources.empty() || config.gpus.empty()) return config.device_resources;
  DeviceResource gpus{api::kGpuResource, {}};
  for (const gpu::GpuDevice& g : config.gpus) {
    const std::string index = std::to_string(g.index);
    gpus.devices.push_back({g.uuid, index, index});
  }
  return {std::move(gpus)};
}

// What the kubelet compares and reports: cpu in milli, the rest in whole units (bytes, counts).
int64_t Amount(std::string_view resource, Quantity q) {
  return resource == "cpu" ? q.MilliValue() : q.Value();
}

// A resource of a domain other than kubernetes.io ("example.com/foo"). The kubelet does not check
// those its node lacks: they may be the cluster's rather than the node's.
bool IsExtended(std::string_view resource) {
  return resource.find('/') != std::string_view::npos &&
         resource.find("kubernetes.io/") == std::string_view::npos;
}

// The order the fit check goes in after pods: cpu, memory, ephemeral-storage, then by name.
int FitRank(std::string_view resource) {
  static constexpr std::string_view kFirst[] = {"cpu", "memory", "ephemeral-storage"};
  return static_cast<int>(std::find(std::begin(kFirst), std::end(kFirst), resource) -
                          std::begin(kFirst));
}

}  // namespace

NodeResources::NodeResources(NodeConfig config)
    : config_(std::move(config)), resources_(ResourcesOf(config_)) {
  for (const DeviceResource& r : resources_) users_[r.name].assign(r.devices.size(), 0);
}

const NodeDevice* NodeResources::Device(const std::string& resource, int number) const {
  for (const DeviceResource& r : resources_) {
    if (r.name != resource) continue;
    if (number < 0 || number >= static_cast<int>(r.devices.size())) return nullptr;
    return &r.devices[number];
  }
  return nullptr;
}

absl::StatusOr<DeviceGrant> NodeResources::AcquireDevices(
    const std::string& uid, const std::vector<int>& named_gpus,
    const std::map<std::string, int>& wanted) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = held_.find(uid); it != held_.end()) return it->second;
  static const std::vector<int> kNone;
  auto users_of = [this](const std::string& resource) -> const std::vector<int>& {
    auto it = users_.find(resource);
    return it == users_.end() ? kNone : it->second;
  };
  DeviceGrant grant;
  if (!named_gpus.empty()) {
    const int total = static_cast<int>(users_of(api::kGpuResource).size());
    for (int index : named_gpus) {
      if (index < 0 || index >= total) {
        return absl::FailedPreconditionError(Cat("muster.dev/gpu-indices names GPU ", index,
                                                 ", which node ", config_.name,
                                                 " does not have (it has ", total, ")"));
      }
    }
    grant[api::kGpuResource] = named_gpus;
  }
  for (const auto& [resource, count] : wanted) {
    if (count <= 0 || grant.count(resource) > 0) continue;
    const std::vector<int>& users = users_of(resource);
    std::vector<int> devices;
    for (int i = 0; i < static_cast<int>(users.size()) && static_cast<int>(devices.size()) < count;
         ++i) {
      if (users[i] == 0) devices.push_back(i);
    }
    if (static_cast<int>(devices.size()) < count) {
      // The kubelet's device manager's words.
      return absl::FailedPreconditionError(
          Cat("Allocate failed due to requested number of devices unavailable for ", resource,
              ". Requested: ", count, ", Available: ", devices.size(), ", which is unexpected"));
    }
    grant[resource] = std::move(devices);
  }
  for (const auto& [resource, devices] : grant) {
    for (int d : devices) ++users_[resource][d];
  }
  held_[uid] = grant;
  return grant;
}

std::optional<Rejection> NodeResources::AdmitRequests(const std::string& uid,
                                                      const api::ResourceList& requests,
                                                      bool admitted_before) {
  std::lock_guard<std::mutex> lock(mu_);
  if (admitted_.contains(uid)) return std::nullopt;
  const api::ResourceList& allocatable = config_.allocatable;
  api::ResourceList counted;
  for (const auto& [name, q] : requests) {
    const std::string& resource = name;  // a binding a lambda can capture (clang before 16)
    const bool by_device = std::any_of(resources_.begin(), resources_.end(),
                                       [&](const DeviceResource& r) { return r.name == resource; });
    if (by_device || resource == api::kGpuShareResource) continue;
    if (IsExtended(resource) && !allocatable.contains(resource)) continue;
    counted[resource] = q;
  }
  if (!admitted_before) {
    auto rejection = [](const std::string& resource, int64_t requested, int64_t used,
                        int64_t capacity) {
      return Rejection{Cat("OutOf", resource),
                       Cat("Node didn't have enough resource: ", resource,
                           ", requested: ", requested, ", used: ", used, ", capacity: ", capacity)};
    };
    if (auto pods = allocatable.find("pods"); pods != allocatable.end()) {
      const auto used = static_cast<int64_t>(admitted_.size());
      if (used + 1 > pods->second.Value()) return rejection("pods", 1, used, pods->second.Value());
    }
    std::vector<std::string> order;
    for (const auto& [resource, q] : counted) order.push_back(resource);
    std::stable_sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
      return FitRank(a) < FitRank(b);
    });
    for (const std::string& resource : order) {
      const int64_t requested = Amount(resource, counted.at(resource));
      auto in_use = used_.find(resource);
      const int64_t used = in_use == used_.end() ? 0 : Amount(resource, in_use->second);
      auto alloc = allocatable.find(resource);
      const int64_t capacity = alloc == allocatable.end() ? 0 : Amount(resource, alloc->second);
      if (requested > 0 && requested > capacity - used) {
        return rejection(resource, requested, used, capacity);
      }
    }
  }
  for (const auto& [resource, q] : counted) used_[resource] += q;
  admitted_[uid] = std::move(counted);
  return std::nullopt;
}

void NodeResources::Release(const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = held_.find(uid); it != held_.end()) {
    for (const auto& [resource, devices] : it->second) {
      for (int d : devices) --users_[resource][d];
    }
    held_.erase(it);
  }
  if (auto it = admitted_.find(uid); it != admitted_.end()) {
    for (const auto& [resource, q] : it->second) used_[resource] -= q;
    admitted_.erase(it);
  }
}

int NodeResources::DevicesInUse() const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& [resource, users] : users_) {
    n += static_cast<int>(std::count_if(users.begin(), users.end(), [](int u) { return u > 0; }));
  }
  return n;
}

int NodeResources::DeviceCount() const {
  int n = 0;
  for (const DeviceResource& r : resources_) n += static_cast<int>(r.devices.size());
  return n;
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
