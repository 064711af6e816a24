// Allocate and GetPreferredAllocation for one resource (allocate.h), after NVIDIA's
// k8s-device-plugin (internal/plugin/server.go, internal/rm/allocate.go) and go-gpuallocator's
// best-effort policy; on NVLink machines the scheduler's best-connected set (api/gpu_sets.h).

#include "deviceplugin/allocate.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <set>

#include "api/gpu_sets.h"
#include "api/gpu_topology.h"
#include "fmt/format.h"

namespace muster::deviceplugin {
namespace {

constexpr std::string_view kVolumeMountRoot = "/var/run/nvidia-container-devices";

std::string Join(const std::vector<std::string>& values, std::string_view separator) {
  std::string out;
  for (const std::string& v : values) {
    if (!out.empty()) out += separator;
    out += v;
  }
  return out;
}

std::string JoinPath(const std::string& root, std::string_view path) {
  std::string base = root;
  while (!base.empty() && base.back() == '/') base.pop_back();
  return base + std::string(path);
}

// /proc/driver/nvidia-caps/mig-minors: "gpu<minor>/gi<gi>/access <N>" and
// "gpu<minor>/gi<gi>/ci<ci>/access <N>" -> /dev/nvidia-caps/nvidia-cap<N>.
absl::StatusOr<std::map<std::string, int>> ReadMigMinors(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::FailedPreconditionError(fmt::format(
        "passDeviceSpecs needs {} for MIG devices, which cannot be read", path));
  }
  std::map<std::string, int> minors;
  std::string name;
  int minor = 0;
  while (in >> name >> minor) minors[name] = minor;
  return minors;
}

absl::Status AddDeviceSpecs(const ResourceDevices& resource, const PluginConfig& config,
                            const std::vector<const AdvertisedDevice*>& devices,
                            const AllocateEnvironment& environment,
                            ContainerAllocation& allocation) {
  const std::string dev_root = config.DevRoot();
  auto add = [&](const std::string& path) {
    for (const DeviceNodeSpec& existing : allocation.devices) {
      if (existing.container_path == path) return;
    }
    allocation.devices.push_back({path, JoinPath(dev_root, path), "rw"});
  };
  for (std::string_view optional :
       {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"}) {
    if (access(JoinPath(dev_root, optional).c_str(), F_OK) == 0) add(std::string(optional));
  }
  std::map<std::string, int> mig_minors;
  std::string minors_path = JoinPath(environment.proc_root, "/driver/nvidia-caps/mig-minors");
  for (const AdvertisedDevice* device : devices) {
    add(fmt::format("/dev/nvidia{}", device->minor));
    if (!device->is_mig) continue;
    if (mig_minors.empty()) {
      auto read = ReadMigMinors(minors_path);
      if (!read.ok()) return read.status();
      mig_minors = std::move(*read);
    }
    std::string gi = fmt::format("gpu{}/gi{}/access", device->minor, device->gpu_instance_id);
    std::string ci = fmt::format("gpu{}/gi{}/ci{}/access", device->minor,
                                 device->gpu_instance_id, device->compute_instance_id);
    for (const std::string& cap : {gi, ci}) {
      auto it = mig_minors.find(cap);
      if (it == mig_minors.end()) {
        return absl::FailedPreconditionError(fmt::format(
            "no capability device for {} ({}) in {}", cap, device->uuid, minors_path));
      }
      add(fmt::format("/dev/nvidia-caps/nvidia-cap{}", it->second));
    }
  }
  (void)resource;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ContainerAllocation> Allocate(const ResourceDevices& resource,
                                             const PluginConfig& config,
                                             const std::vector<std::string>& ids,
                                             const AllocateEnvironment& environment) {
  if (ids.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("invalid allocation request for '{}': no devices", resource.name));
  }
  std::vector<const AdvertisedDevice*> devices;
  std::set<std::string> seen_units;
  for (const std::string& id : ids) {
    const AdvertisedDevice* device = resource.Find(id);
    if (device == nullptr) {
      return absl::InvalidArgumentError(fmt::format(
          "invalid allocation request for '{}': unknown device: {}", resource.name, id));
    }
    if (seen_units.insert(device->uuid).second) devices.push_back(device);
  }
  if (resource.replicas > 1 && config.time_slicing.fail_requests_greater_than_one &&
      ids.size() > 1) {
    return absl::InvalidArgumentError(fmt::format(
        "invalid allocation request for '{}': request for {} shared devices is not supported "
        "(failRequestsGreaterThanOne is set)",
        resource.name, ids.size()));
  }

  std::vector<std::string> device_ids;
  for (const AdvertisedDevice* device : devices) {
    device_ids.push_back(config.device_id_strategy == DeviceIdStrategy::kIndex ? device->index
                                                                                : device->uuid);
  }

  ContainerAllocation allocation;
  const DeviceListStrategies& strategies = config.device_list_strategy;
  if (strategies.envvar) allocation.envs["NVIDIA_VISIBLE_DEVICES"] = Join(device_ids, ",");
  if (strategies.volume_mounts) {
    allocation.envs["NVIDIA_VISIBLE_DEVICES"] = std::string(kVolumeMountRoot);
    for (const std::string& id : device_ids) {
      allocation.mounts.push_back({fmt::format("{}/{}", kVolumeMountRoot, id), "/dev/null", true});
    }
  }
  if (strategies.envvar || strategies.volume_mounts) {
    if (config.gdrcopy_enabled) allocation.envs["NVIDIA_GDRCOPY"] = "enabled";
    if (config.gds_enabled) allocation.envs["NVIDIA_GDS"] = "enabled";
    if (config.mofed_enabled) allocation.envs["NVIDIA_MOFED"] = "enabled";
  }
  if (strategies.cdi_annotations || strategies.cdi_cri) {
    std::vector<std::string> names;
    for (const std::string& id : device_ids) names.push_back("nvidia.com/gpu=" + id);
    if (config.gds_enabled) names.emplace_back("nvidia.com/gds=all");
    if (config.mofed_enabled) names.emplace_back("nvidia.com/mofed=all");
    if (strategies.cdi_annotations) {
      // NVIDIA keys the annotation by a random UUID; the resource name is unique per container
      // too and keeps the answer deterministic.
      std::string key = fmt::format("{}nvidia-device-plugin_{}", config.cdi_annotation_prefix,
                                    resource.name.substr(resource.name.find('/') + 1));
      allocation.annotations[key] = Join(names, ",");
    }
    if (strategies.cdi_cri) allocation.cdi_devices = names;
  }
  if (config.pass_device_specs) {
    if (auto s = AddDeviceSpecs(resource, config, devices, environment, allocation); !s.ok()) {
      return s;
    }
  }
  return allocation;
}

int PairScore(const std::vector<gpu::GpuDevice>& gpus, int a, int b) {
  const gpu::GpuDevice* from = nullptr;
  for (const gpu::GpuDevice& g : gpus) {
    if (g.index == a) from = &g;
  }
  if (from == nullptr) return 0;
  const gpu::PeerLink* link = from->Peer(b);
  if (link == nullptr) return 0;
  int score = 0;
  switch (link->level) {
    case gpu::TopologyLevel::kInternal:
      score = 60;
      break;
    case gpu::TopologyLevel::kSingle:
      score = 50;
      break;
    case gpu::TopologyLevel::kMultiple:
      score = 40;
      break;
    case gpu::TopologyLevel::kHostBridge:
      score = 30;
      break;
    case gpu::TopologyLevel::kNode:
      score = 20;
      break;
    case gpu::TopologyLevel::kSystem:
      score = 10;
      break;
  }
  return score + 100 * link->nvlinks;
}

namespace {

// go-gpuallocator's best-effort policy over positions 0..n-1 of `scores`; -1 marks padding.
class BestEffort {
 public:
  BestEffort(std::vector<std::vector<int>> scores, int size, std::vector<int> required)
      : scores_(std::move(scores)), size_(size), required_(std::move(required)) {}

  std::vector<int> Choose() {
    int n = static_cast<int>(scores_.size());
    std::vector<int> devices(n);
    for (int i = 0; i < n; ++i) devices[i] = i;
    if (size_ >= n) return devices;
    int padding = n % size_ == 0 ? 0 : size_ - n % size_;
    for (int i = 0; i < padding; ++i) devices.push_back(-1);
    if (PartitionCount(static_cast<int>(devices.size())) > 1e6) return Greedy();
    std::vector<std::vector<int>> accum;
    Iterate(devices, accum, 0);
    if (best_partition_.empty()) return {};
    std::vector<int> best;
    int best_score = -1;
    for (const auto& set : best_partition_) {
      if (!Qualifies(set)) continue;
      int score = SetScore(set);
      if (score > best_score) {
        best = set;
        best_score = score;
      }
    }
    return best;
  }

 private:
  double PartitionCount(int n) const {
    int k = n / size_;
    double log_count = std::lgamma(n + 1.0) - k * std::lgamma(size_ + 1.0) - std::lgamma(k + 1.0);
    return std::exp(log_count);
  }

  int SetScore(const std::vector<int>& set) const {
    int score = 0;
    for (size_t i = 0; i < set.size(); ++i) {
      for (size_t j = i + 1; j < set.size(); ++j) {
        if (set[i] >= 0 && set[j] >= 0) score += scores_[set[i]][set[j]];
      }
    }
    return score;
  }

  // A set the answer may be: no padding, every required device.
  bool Qualifies(const std::vector<int>& set) const {
    if (std::find(set.begin(), set.end(), -1) != set.end()) return false;
    for (int r : required_) {
      if (std::find(set.begin(), set.end(), r) == set.end()) return false;
    }
    return true;
  }

  void Consider(const std::vector<std::vector<int>>& partition, int score) {
    bool any = false;
    for (const auto& set : partition) any = any || Qualifies(set);
    if (!any) return;
    if (best_partition_.empty() || score > best_score_) {
      best_partition_ = partition;
      best_score_ = score;
    }
  }

  // Partitions of `devices` into sets of size_: the first device with every combination of the
  // others, recursively, in lexicographic order.
  void Iterate(const std::vector<int>& devices, std::vector<std::vector<int>>& accum, int score) {
    if (static_cast<int>(devices.size()) == size_) {
      accum.push_back(devices);
      Consider(accum, score + SetScore(devices));
      accum.pop_back();
      return;
    }
    std::vector<int> rest(devices.begin() + 1, devices.end());
    std::vector<int> pick(size_ - 1);
    std::function<void(int, int)> combine = [&](int from, int depth) {
      if (depth == size_ - 1) {
        std::vector<int> set = {devices[0]};
        std::vector<bool> used(rest.size(), false);
        for (int p : pick) {
          set.push_back(rest[p]);
          used[p] = true;
        }
        std::vector<int> left;
        for (size_t i = 0; i < rest.size(); ++i) {
          if (!used[i]) left.push_back(rest[i]);
        }
        accum.push_back(set);
        Iterate(left, accum, score + SetScore(set));
        accum.pop_back();
        return;
      }
      for (int i = from; i <= static_cast<int>(rest.size()) - (size_ - 1 - depth); ++i) {
        pick[depth] = i;
        combine(i + 1, depth + 1);
      }
    };
    combine(0, 0);
  }

  // Too many partitions: start from the required devices (or the best-connected device) and add
  // the device with the highest score to the chosen ones until the set is full.
  std::vector<int> Greedy() const {
    int n = static_cast<int>(scores_.size());
    std::vector<int> chosen = required_;
    std::vector<bool> in(n, false);
    for (int r : chosen) in[r] = true;
    while (static_cast<int>(chosen.size()) < size_) {
      int best = -1;
      int best_score = -1;
      for (int c = 0; c < n; ++c) {
        if (in[c]) continue;
        int score = 0;
        if (chosen.empty()) {
          for (int o = 0; o < n; ++o) score += o == c ? 0 : scores_[c][o];
        } else {
          for (int o : chosen) score += scores_[c][o];
        }
        if (score > best_score) {
          best = c;
          best_score = score;
        }
      }
      chosen.push_back(best);
      in[best] = true;
    }
    std::sort(chosen.begin(), chosen.end());
    return chosen;
  }

  std::vector<std::vector<int>> scores_;
  int size_;
  std::vector<int> required_;
  std::vector<std::vector<int>> best_partition_;
  int best_score_ = 0;
};

}  // namespace

absl::StatusOr<std::vector<std::string>> PreferredAllocation(
    const ResourceDevices& resource, const std::vector<gpu::GpuDevice>& gpus,
    const PluginConfig& config, const std::vector<std::string>& available,
    const std::vector<std::string>& must_include, int size) {
  auto invalid = [&](const std::string& why) {
    return absl::InvalidArgumentError(
        fmt::format("invalid preferred allocation request for '{}': {}", resource.name, why));
  };
  if (size <= 0) return invalid(fmt::format("allocation size {}", size));
  // Positions in the resource's own order, so that the answer does not depend on the kubelet's.
  std::set<size_t> available_positions;
  std::set<size_t> required_positions;
  auto position_of = [&](const std::string& id) -> long {
    for (size_t i = 0; i < resource.devices.size(); ++i) {
      if (resource.devices[i].id == id) return static_cast<long>(i);
    }
    return -1;
  };
  for (const std::string& id : available) {
    long p = position_of(id);
    if (p < 0) return invalid("unknown device: " + id);
    available_positions.insert(static_cast<size_t>(p));
  }
  for (const std::string& id : must_include) {
    long p = position_of(id);
    if (p < 0) return invalid("unknown device: " + id);
    required_positions.insert(static_cast<size_t>(p));
    available_positions.insert(static_cast<size_t>(p));
  }
  if (static_cast<int>(required_positions.size()) > size) {
    return invalid(fmt::format("{} devices must be included in an allocation of {}",
                               required_positions.size(), size));
  }
  if (static_cast<int>(available_positions.size()) < size) {
    return invalid(fmt::format("{} devices available for an allocation of {}",
                               available_positions.size(), size));
  }

  std::vector<std::string> result;
  // Whole GPUs on a machine with NVLinks: the scheduler's choice (api/gpu_sets.h) from the same
  // muster.dev/gpu-topology this plugin publishes, so that the kubelet's devices are the ones the
  // scheduler named in muster.dev/gpu-indices.
  const api::GpuTopology topology =
      resource.full_gpus && resource.replicas == 1
          ? api::GpuTopology::FromMatrix(gpu::NvLinkMatrix(gpus)).value_or(api::GpuTopology())
          : api::GpuTopology();
  if (topology.HasNvLinks()) {
    std::vector<int> free, must;
    std::map<int, size_t> position_of_gpu;
    for (size_t p : available_positions) {
      free.push_back(resource.devices[p].gpu_index);
      position_of_gpu[resource.devices[p].gpu_index] = p;
    }
    for (size_t p : required_positions) must.push_back(resource.devices[p].gpu_index);
    for (int g : api::BestGpuSet(topology, free, size, must)) {
      result.push_back(resource.devices[position_of_gpu[g]].id);
    }
    if (static_cast<int>(result.size()) != size) {
      return absl::InternalError(fmt::format("preferred allocation for '{}' found no set of {}",
                                             resource.name, size));
    }
    return result;
  }
  if (resource.full_gpus && resource.replicas == 1) {
    std::vector<size_t> positions(available_positions.begin(), available_positions.end());
    int n = static_cast<int>(positions.size());
    std::vector<std::vector<int>> scores(n, std::vector<int>(n, 0));
    std::vector<int> required;
    for (int i = 0; i < n; ++i) {
      if (required_positions.count(positions[i]) != 0) required.push_back(i);
      for (int j = 0; j < n; ++j) {
        if (i != j) {
          scores[i][j] = PairScore(gpus, resource.devices[positions[i]].gpu_index,
                                   resource.devices[positions[j]].gpu_index);
        }
      }
    }
    for (int chosen : BestEffort(std::move(scores), size, required).Choose()) {
      result.push_back(resource.devices[positions[chosen]].id);
    }
    if (static_cast<int>(result.size()) != size) {
      return absl::InternalError(fmt::format("preferred allocation for '{}' found no set of {}",
                                             resource.name, size));
    }
    return result;
  }

  // Replicas and MIG devices: by how many replicas of each unit are already in use.
  std::map<std::string, int> total;
  std::map<std::string, int> free;
  for (const AdvertisedDevice& device : resource.devices) ++total[device.uuid];
  std::vector<size_t> candidates;
  for (size_t p : available_positions) {
    if (required_positions.count(p) != 0) continue;
    candidates.push_back(p);
    ++free[resource.devices[p].uuid];
  }
  for (size_t p : required_positions) result.push_back(resource.devices[p].id);
  bool packed = config.shared_allocation_policy == SharedAllocationPolicy::kPacked;
  while (static_cast<int>(result.size()) < size) {
    std::stable_sort(candidates.begin(), candidates.end(), [&](size_t a, size_t b) {
      const std::string& ua = resource.devices[a].uuid;
      const std::string& ub = resource.devices[b].uuid;
      int used_a = total[ua] - free[ua];
      int used_b = total[ub] - free[ub];
      return packed ? used_a > used_b : used_a < used_b;
    });
    size_t pick = candidates.front();
    candidates.erase(candidates.begin());
    --free[resource.devices[pick].uuid];
    result.push_back(resource.devices[pick].id);
  }
  return result;
}

}  // namespace muster::deviceplugin
