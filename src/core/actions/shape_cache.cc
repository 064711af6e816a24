// Scheduling shapes and the per-shape search cache (shape_cache.h).

#include "core/actions/shape_cache.h"

#include <functional>
#include <string>

namespace muster::core {

bool SameSchedulingShape(const TaskInfo& a, const TaskInfo& b) {
  const api::PodSpec& x = a.pod->spec;
  const api::PodSpec& y = b.pod->spec;
  auto placement_free = [](const api::PodSpec& s) {
    return s.topology_spread_constraints.empty() &&
           !(s.affinity && (s.affinity->pod_affinity || s.affinity->pod_anti_affinity));
  };
  // Compared in place: copying the affinity out per comparison cost more than the rest.
  auto node_affinity = [](const api::PodSpec& s) -> const api::NodeAffinity* {
    return s.affinity && s.affinity->node_affinity ? &*s.affinity->node_affinity : nullptr;
  };
  const api::NodeAffinity* xa = node_affinity(x);
  const api::NodeAffinity* ya = node_affinity(y);
  return placement_free(x) && placement_free(y) && a.resreq == b.resreq &&
         x.node_selector == y.node_selector && x.tolerations == y.tolerations &&
         (xa == nullptr ? ya == nullptr : ya != nullptr && (xa == ya || *xa == *ya));
}

size_t ShapeCache::Hash(const TaskInfo& t) {
  size_t h = 0;
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2); };
  auto mix_str = [&mix](const std::string& v) { mix(std::hash<std::string>()(v)); };
  for (ResourceId r = 0; r < t.resreq.Size(); ++r) mix(static_cast<size_t>(t.resreq.Get(r)));
  const api::PodSpec& s = t.pod->spec;
  for (const auto& [k, v] : s.node_selector) {
    mix_str(k);
    mix_str(v);
  }
  for (const auto& tol : s.tolerations) {
    mix_str(tol.key);
    mix_str(tol.value);
    mix_str(tol.effect);
  }
  return h;
}

ShapeCache::Entry* ShapeCache::Find(const TaskInfo& t) {
  auto it = entries_.find(Hash(t));
  if (it == entries_.end()) return nullptr;
  for (Entry& e : it->second) {
    if (SameSchedulingShape(*e.shape, t)) return &e;
  }
  return nullptr;
}

ShapeCache::Entry& ShapeCache::Get(const TaskInfo& t) {
  std::vector<Entry>& bucket = entries_[Hash(t)];
  for (Entry& e : bucket) {
    if (SameSchedulingShape(*e.shape, t)) {
      e.shape = &t;
      return e;
    }
  }
  bucket.emplace_back().shape = &t;
  return bucket.back();
}

}  // namespace muster::core
