#include "core/plugins/gpuplacement/placement.h"

#include <algorithm>

namespace muster::core {

int GpuModels::Id(std::string_view name) {
  auto it = ids_.find(std::string(name));
  if (it != ids_.end()) return it->second;
  int id = static_cast<int>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(std::string(name), id);
  return id;
}

int GpuModels::Find(std::string_view name) const {
  auto it = ids_.find(std::string(name));
  return it == ids_.end() ? -1 : it->second;
}

int64_t GpuNodeState::GpuFreeTotal() const {
  int64_t total = 0;
  for (int32_t f : gpu_free) total += f;
  return total;
}

int GpuNodeState::FullyFreeGpus() const {
  int n = 0;
  for (int32_t f : gpu_free) n += f == kMilliPerGpu ? 1 : 0;
  return n;
}

void GpuNodeState::AddTag(int tag, int delta) {
  if (tag < 0) return;
  if (tag >= static_cast<int>(pods_by_tag.size())) pods_by_tag.resize(tag + 1, 0);
  pods_by_tag[tag] += delta;
}

int GpuNodeState::TagKinds() const {
  int kinds = 0;
  for (int c : pods_by_tag) kinds += c > 0 ? 1 : 0;
  return kinds;
}

bool Fits(const GpuPodRequest& pod, const GpuNodeState& node) {
  if (pod.cpu_milli > node.cpu_free || pod.memory > node.memory_free) return false;
  if (node.pods >= node.max_pods) return false;
  if (!pod.UsesGpu()) return true;
  if (node.gpu_free.empty()) return false;
  if (!pod.models.empty() &&
      std::find(pod.models.begin(), pod.models.end(), node.model) == pod.models.end()) {
    return false;
  }
  int enough = 0;
  for (int32_t f : node.gpu_free) {
    if (f >= pod.gpu_milli && ++enough >= pod.gpus) return true;
  }
  return false;
}

void ApplyPlacement(const GpuPodRequest& pod, const std::vector<int>& gpus, int sign,
                    GpuNodeState& node) {
  node.cpu_free -= sign * pod.cpu_milli;
  node.memory_free -= sign * pod.memory;
  node.pods += sign;
  for (int g : gpus) node.gpu_free[g] -= static_cast<int32_t>(sign * pod.gpu_milli);
  node.AddTag(pod.ClusteringTag(), sign);
}

std::vector<int> BestGpus(const GpuPodRequest& pod, const GpuNodeState& node) {
  std::vector<int> out;
  if (!pod.UsesGpu()) return out;
  const auto& f = node.gpu_free;
  if (pod.SharesGpu()) {
    int best = -1;
    for (int g = 0; g < static_cast<int>(f.size()); ++g) {
      if (f[g] >= pod.gpu_milli && (best < 0 || f[g] < f[best])) best = g;
    }
    if (best >= 0) out.push_back(best);
    return out;
  }
  // Whole GPUs (every multi-GPU pod in the traces asks for 1000 milli each): the first k by index.
  for (int g = 0; g < static_cast<int>(f.size()) && static_cast<int>(out.size()) < pod.gpus; ++g) {
    if (f[g] >= pod.gpu_milli) out.push_back(g);
  }
  return out;
}

}  // namespace muster::core
