// nodeorder: kube-scheduler's scores (0-100 each) weighted as Volcano's nodeorder plugin does
// (leastrequested 1, mostrequested 0, balancedresource 1, nodeaffinity 2, tainttoleration 3,
// podaffinity 2, podtopologyspread 2; imagelocality is not scored, the engine knows no images).
// Inter-pod affinity scores the pod's own preferred affinity and anti-affinity terms (the terms
// of pods already placed are not scored toward it); topology spread scores its ScheduleAnyway
// constraints. Follows Volcano's pkg/scheduler/plugins/nodeorder/nodeorder.go and
// kube-scheduler's InterPodAffinity and PodTopologySpread score plugins.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "api/selector.h"
#include "core/framework/conf.h"
#include "core/framework/session.h"
#include "core/plugins/node_score.h"
#include "core/plugins/pod_terms.h"

namespace muster::core {
namespace {

// Fraction of a dimension used once the task is placed; 0 when the node has none.
double UsedFraction(const TaskInfo& t, const NodeInfo& n, ResourceId r) {
  double alloc = static_cast<double>(n.allocatable.Get(r));
  if (alloc <= 0) return 0;
  double used = static_cast<double>(n.used.Get(r) + t.resreq.Get(r));
  return std::min(used / alloc, 1.0);
}

class NodeOrderPlugin : public Plugin {
 public:
  explicit NodeOrderPlugin(const PluginOption& opt) {
    auto w = [&](const char* key, double def) { return opt.Number(key, def).value_or(def); };
    least_ = w("leastrequested.weight", 1);
    most_ = w("mostrequested.weight", 0);
    balanced_ = w("balancedresource.weight", 1);
    node_affinity_ = w("nodeaffinity.weight", 2);
    taint_ = w("tainttoleration.weight", 3);
    pod_affinity_ = w("podaffinity.weight", 2);
    spread_ = w("podtopologyspread.weight", 2);
  }

  void OnSessionOpen(Session& ssn) override {
    Session* s = &ssn;
    ssn.AddBatchNodeOrderFn("nodeorder", [this, s](const TaskInfo& t,
                                                   const std::vector<const NodeInfo*>& nodes,
                                                   std::vector<double>& scores) {
      Score(t, nodes, scores);
      if (pod_affinity_ != 0) InterPodAffinity(*s, t, nodes, scores);
      if (spread_ != 0) TopologySpread(*s, t, nodes, scores);
    });
  }

 private:
  void Score(const TaskInfo& t, const std::vector<const NodeInfo*>& nodes,
             std::vector<double>& out) {
    const auto& affinity_spec = t.pod->spec.affinity;
    bool has_preferred = affinity_spec && affinity_spec->node_affinity &&
                         !affinity_spec->node_affinity->preferred.empty();
    if (has_preferred) affinity_.assign(nodes.size(), 0.0);
    taints_.assign(nodes.size(), 0.0);
    double max_affinity = 0, max_taints = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const NodeInfo& n = *nodes[i];
      double cpu = UsedFraction(t, n, kCpu), mem = UsedFraction(t, n, kMemory);
      if (least_ != 0) out[i] += least_ * ((1 - cpu) + (1 - mem)) / 2 * kMaxNodeScore;
      if (most_ != 0) out[i] += most_ * (cpu + mem) / 2 * kMaxNodeScore;
      if (balanced_ != 0) out[i] += balanced_ * (1 - std::abs(cpu - mem) / 2) * kMaxNodeScore;
      if (node_affinity_ != 0 && has_preferred) {
        affinity_[i] = static_cast<double>(api::PreferredNodeAffinityScore(*t.pod, *n.node));
        max_affinity = std::max(max_affinity, affinity_[i]);
      }
      if (taint_ != 0 && n.has_prefer_no_schedule_taint) {
        taints_[i] = api::CountIntolerablePreferNoSchedule(n.node->spec.taints,
                                                           t.pod->spec.tolerations);
        max_taints = std::max(max_taints, taints_[i]);
      }
    }
    if (max_affinity == 0 && max_taints == 0) {
      // No preference anywhere: every node gets the full taint score; no second pass needed.
      if (taint_ != 0) {
        for (size_t i = 0; i < nodes.size(); ++i) out[i] += taint_ * kMaxNodeScore;
      }
      return;
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (max_affinity > 0) out[i] += node_affinity_ * affinity_[i] * kMaxNodeScore / max_affinity;
      if (taint_ != 0) {
        double s = max_taints > 0 ? (max_taints - taints_[i]) * kMaxNodeScore / max_taints
                                  : kMaxNodeScore;
        out[i] += taint_ * s;
      }
    }
  }

  // kube-scheduler's InterPodAffinity score: on each node, the weights of the pod's preferred
  // affinity terms that pods already in the node's domain match, less those of its preferred
  // anti-affinity terms; scaled so the lowest node gets 0 and the highest 100 (all 0 when equal).
  void InterPodAffinity(Session& ssn, const TaskInfo& t, const std::vector<const NodeInfo*>& nodes,
                        std::vector<double>& out) {
    const auto& aff = t.pod->spec.affinity;
    if (!aff) return;
    struct Term {
      const api::PodAffinityTerm* term;
      double weight;
    };
    std::vector<Term> terms;
    if (aff->pod_affinity) {
      for (const auto& w : aff->pod_affinity->preferred) terms.push_back({&w.term, 1.0 * w.weight});
    }
    if (aff->pod_anti_affinity) {
      for (const auto& w : aff->pod_anti_affinity->preferred) {
        terms.push_back({&w.term, -1.0 * w.weight});
      }
    }
    if (terms.empty()) return;
    Cluster& c = ssn.cluster();
    // Per term, the weight each topology value earns from the matching pods placed under it.
    std::vector<std::map<std::string, double>> by_domain(terms.size());
    for (const NodeInfo* m : ssn.nodes()) {
      for (int tid : m->tasks) {
        const TaskInfo& e = c.task(tid);
        if (e.id == t.id || !CountsForPodTerms(e)) continue;
        for (size_t k = 0; k < terms.size(); ++k) {
          const std::string* d = NodeLabel(*m, terms[k].term->topology_key);
          if (d && TermMatchesPod(*terms[k].term, t.ns, *e.pod)) by_domain[k][*d] += terms[k].weight;
        }
      }
    }
    std::vector<double> raw(nodes.size(), 0.0);
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (size_t k = 0; k < terms.size(); ++k) {
        const std::string* d = NodeLabel(*nodes[i], terms[k].term->topology_key);
        if (!d) continue;
        auto it = by_domain[k].find(*d);
        if (it != by_domain[k].end()) raw[i] += it->second;
      }
    }
    if (raw.empty()) return;
    auto [lo, hi] = std::minmax_element(raw.begin(), raw.end());
    double span = *hi - *lo;
    if (span <= 0) return;
    for (size_t i = 0; i < nodes.size(); ++i) {
      out[i] += pod_affinity_ * std::trunc(kMaxNodeScore * (raw[i] - *lo) / span);
    }
  }

  // kube-scheduler's PodTopologySpread score over the pod's ScheduleAnyway constraints: a node
  // scores the matching pods in its domain (same namespace, on nodes the pod's node affinity
  // admits), weighted by log(domains + 2), plus maxSkew - 1; the fewest get 100. A node lacking a
  // constraint's key gets 0.
  void TopologySpread(Session& ssn, const TaskInfo& t, const std::vector<const NodeInfo*>& nodes,
                      std::vector<double>& out) {
    std::vector<const api::TopologySpreadConstraint*> soft;
    for (const auto& tsc : t.pod->spec.topology_spread_constraints) {
      if (tsc.when_unsatisfiable == "ScheduleAnyway") soft.push_back(&tsc);
    }
    if (soft.empty()) return;
    Cluster& c = ssn.cluster();
    std::vector<bool> ignored(nodes.size(), false);
    std::vector<std::map<std::string, int64_t>> counts(soft.size());
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (size_t k = 0; k < soft.size(); ++k) {
        const std::string* d = NodeLabel(*nodes[i], soft[k]->topology_key);
        if (!d) {
          ignored[i] = true;
          break;
        }
      }
      if (ignored[i]) continue;
      for (size_t k = 0; k < soft.size(); ++k) {
        counts[k].try_emplace(*NodeLabel(*nodes[i], soft[k]->topology_key), 0);
      }
    }
    for (const NodeInfo* m : ssn.nodes()) {
      if (!api::PodMatchesNodeAffinity(*t.pod, *m->node)) continue;
      for (size_t k = 0; k < soft.size(); ++k) {
        const std::string* d = NodeLabel(*m, soft[k]->topology_key);
        if (!d) continue;
        auto it = counts[k].find(*d);
        if (it == counts[k].end()) continue;
        for (int tid : m->tasks) {
          const TaskInfo& e = c.task(tid);
          if (e.id == t.id || !CountsForPodTerms(e) || e.ns != t.ns) continue;
          if (soft[k]->label_selector &&
              api::MatchesLabelSelector(*soft[k]->label_selector, e.pod->meta.labels)) {
            ++it->second;
          }
        }
      }
    }
    std::vector<double> weight(soft.size());
    for (size_t k = 0; k < soft.size(); ++k) {
      weight[k] = std::log(static_cast<double>(counts[k].size()) + 2);
    }
    std::vector<int64_t> raw(nodes.size(), 0);
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (ignored[i]) continue;
      double score = 0;
      for (size_t k = 0; k < soft.size(); ++k) {
        int64_t cnt = counts[k].at(*NodeLabel(*nodes[i], soft[k]->topology_key));
        score += static_cast<double>(cnt) * weight[k] + (soft[k]->max_skew - 1);
      }
      raw[i] = std::llround(score);
      lo = std::min(lo, raw[i]);
      hi = std::max(hi, raw[i]);
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (ignored[i]) continue;
      double s = hi == 0 ? kMaxNodeScore
                         : static_cast<double>(static_cast<int64_t>(kMaxNodeScore) *
                                               (hi + lo - raw[i]) / hi);
      out[i] += spread_ * s;
    }
  }

  std::vector<double> affinity_, taints_;
  double least_, most_, balanced_, node_affinity_, taint_, pod_affinity_, spread_;
};

}  // namespace

std::unique_ptr<Plugin> NewNodeOrderPlugin(const PluginOption& opt) {
  return std::make_unique<NodeOrderPlugin>(opt);
}

}  // namespace muster::core
