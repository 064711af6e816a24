// predicates: kube-scheduler's filters as Volcano's predicates plugin runs them: pod count,
// node unschedulable, node affinity and selector, taints, inter-pod affinity and anti-affinity,
// and topology spread constraints. Reasons are kube-scheduler's texts. Resource fit is checked
// by the actions themselves (against idle or future-idle resources), as in Volcano.

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "api/selector.h"
#include "core/plugins/plugins.h"

namespace muster::core {
namespace {

constexpr char kPodNumberExceeded[] = "node(s) pod number exceeded";
constexpr char kUnschedulable[] = "node(s) were unschedulable";
constexpr char kNodeAffinity[] = "node(s) didn't match Pod's node affinity/selector";
constexpr char kPodAffinity[] = "node(s) didn't match pod affinity rules";
constexpr char kPodAntiAffinity[] = "node(s) didn't match pod anti-affinity rules";
constexpr char kExistingAntiAffinity[] = "node(s) didn't satisfy existing pods anti-affinity rules";
constexpr char kTopologySpread[] = "node(s) didn't match pod topology spread constraints";
constexpr char kTopologySpreadLabel[] =
    "node(s) didn't match pod topology spread constraints (missing required label)";

const std::string* Label(const NodeInfo& n, const std::string& key) {
  const auto& labels = n.node->meta.labels;
  auto it = labels.find(key);
  return it == labels.end() ? nullptr : &it->second;
}

bool SameDomain(const NodeInfo& a, const NodeInfo& b, const std::string& key) {
  const std::string* va = Label(a, key);
  const std::string* vb = Label(b, key);
  return va && vb && *va == *vb;
}

// Does `other` fall under `term` as seen from the pod that owns the term (namespace `ns`)?
bool TermMatchesPod(const api::PodAffinityTerm& term, const std::string& ns,
                    const api::Pod& other) {
  if (term.namespaces.empty() && !term.namespace_selector) {
    if (other.meta.namespace_ != ns) return false;
  } else if (!term.namespaces.empty() &&
             std::find(term.namespaces.begin(), term.namespaces.end(), other.meta.namespace_) ==
                 term.namespaces.end() &&
             !term.namespace_selector) {
    return false;
  }
  if (!term.label_selector) return false;
  return api::MatchesLabelSelector(*term.label_selector, other.meta.labels);
}

bool Counts(const TaskInfo& t) {
  return t.status != TaskStatus::kReleasing && t.status != TaskStatus::kSucceeded &&
         t.status != TaskStatus::kFailed;
}

class PredicatesPlugin : public Plugin {
 public:
  void OnSessionOpen(Session& ssn) override {
    Cluster& c = ssn.cluster();
    for (const NodeInfo* n : ssn.nodes()) {
      for (int tid : n->tasks) {
        if (HasRequiredAntiAffinity(c.task(tid))) anti_affinity_tasks_.push_back(tid);
      }
    }
    ssn.AddEventHandler({[this](const TaskInfo& t) {
                           if (HasRequiredAntiAffinity(t)) anti_affinity_tasks_.push_back(t.id);
                         },
                         [this](const TaskInfo& t) {
                           if (HasRequiredAntiAffinity(t)) std::erase(anti_affinity_tasks_, t.id);
                         }});
    Session* s = &ssn;
    ssn.AddPredicateFn("predicates", [this, s](const TaskInfo& t, const NodeInfo& n) {
      return Check(*s, t, n);
    });
  }

  static bool HasRequiredAntiAffinity(const TaskInfo& t) {
    return t.pod->spec.affinity && t.pod->spec.affinity->pod_anti_affinity &&
           !t.pod->spec.affinity->pod_anti_affinity->required.empty();
  }

  static PredicateStatus Fail(const std::string& reason, bool unresolvable) {
    PredicateStatus st;
    st.ok = false;
    st.unresolvable = unresolvable;
    st.reasons.push_back(reason);
    return st;
  }

  PredicateStatus Check(Session& ssn, const TaskInfo& t, const NodeInfo& n) {
    if (n.pod_count - n.releasing_pods >= n.max_pods) return Fail(kPodNumberExceeded, false);
    // Node-only filters depend on the pod's constraints and the node's labels and taints, which
    // do not change within a session: evaluate them once per node for all identical pods.
    std::vector<int>* cache = StaticCache(t);
    int cached = -1;
    if (cache) {
      if (static_cast<size_t>(n.id) >= cache->size()) cache->resize(n.id + 1, -1);
      cached = (*cache)[n.id];
    }
    if (cached < 0) {
      cached = StaticCheck(t, n);
      if (cache) (*cache)[n.id] = cached;
    }
    if (cached > 0) return Fail(static_reasons_[cached - 1], true);
    if (auto st = InterPodAffinity(ssn, t, n); !st.ok) return st;
    if (auto st = TopologySpread(ssn, t, n); !st.ok) return st;
    return {};
  }

  // 0 when the node passes the node-only filters, else 1 + the index of the reason.
  int StaticCheck(const TaskInfo& t, const NodeInfo& n) {
    const api::Pod& pod = *t.pod;
    const api::Node& node = *n.node;
    std::string reason;
    if (n.unschedulable &&
        !api::TolerationsTolerateTaint(pod.spec.tolerations,
                                       {"node.kubernetes.io/unschedulable", "", "NoSchedule"})) {
      reason = kUnschedulable;
    } else if (!api::PodMatchesNodeAffinity(pod, node)) {
      reason = kNodeAffinity;
    } else if (const api::Taint* taint =
                   api::FindUntoleratedTaint(node.spec.taints, pod.spec.tolerations)) {
      reason = api::UntoleratedTaintReason(*taint);
    } else {
      return 0;
    }
    auto it = std::find(static_reasons_.begin(), static_reasons_.end(), reason);
    if (it == static_reasons_.end()) it = static_reasons_.insert(static_reasons_.end(), reason);
    return static_cast<int>(it - static_reasons_.begin()) + 1;
  }

  static bool SameNodeConstraints(const api::Pod& a, const api::Pod& b) {
    auto node_affinity = [](const api::Pod& p) -> std::optional<api::NodeAffinity> {
      if (!p.spec.affinity) return std::nullopt;
      return p.spec.affinity->node_affinity;
    };
    return a.spec.node_selector == b.spec.node_selector &&
           a.spec.tolerations == b.spec.tolerations && node_affinity(a) == node_affinity(b);
  }

  // The per-node cache shared by the task's equivalence class: the tasks of one job whose node
  // selector, node affinity and tolerations are equal. nullptr for tasks outside a job.
  std::vector<int>* StaticCache(const TaskInfo& t) {
    if (t.job < 0) return nullptr;
    auto it = class_of_task_.find(t.id);
    if (it == class_of_task_.end()) {
      std::vector<int>& classes = classes_by_job_[t.job];
      int found = -1;
      for (int c : classes) {
        if (SameNodeConstraints(*class_pod_[c], *t.pod)) {
          found = c;
          break;
        }
      }
      if (found < 0) {
        found = static_cast<int>(class_pod_.size());
        class_pod_.push_back(t.pod);
        class_cache_.emplace_back();
        classes.push_back(found);
      }
      it = class_of_task_.emplace(t.id, found).first;
    }
    return &class_cache_[it->second];
  }

  PredicateStatus InterPodAffinity(Session& ssn, const TaskInfo& t, const NodeInfo& n) {
    const api::Pod& pod = *t.pod;
    Cluster& c = ssn.cluster();
    const auto& affinity = pod.spec.affinity;
    // Existing pods' required anti-affinity against this pod.
    for (int tid : anti_affinity_tasks_) {
      const TaskInfo& e = c.task(tid);
      if (e.id == t.id || !Counts(e) || e.node < 0) continue;
      const NodeInfo& other = c.node(e.node);
      for (const auto& term : e.pod->spec.affinity->pod_anti_affinity->required) {
        if (TermMatchesPod(term, e.ns, pod) && SameDomain(other, n, term.topology_key)) {
          return Fail(kExistingAntiAffinity, false);
        }
      }
    }
    if (!affinity) return {};
    if (affinity->pod_affinity) {
      for (const auto& term : affinity->pod_affinity->required) {
        bool found = false, any_match = false;
        for (const NodeInfo* other : ssn.nodes()) {
          for (int tid : other->tasks) {
            const TaskInfo& e = c.task(tid);
            if (e.id == t.id || !Counts(e) || !TermMatchesPod(term, t.ns, *e.pod)) continue;
            any_match = true;
            if (SameDomain(*other, n, term.topology_key)) found = true;
          }
        }
        // A pod may be the first of its group: it matches its own term and no pod matches yet.
        bool self_match = TermMatchesPod(term, t.ns, *t.pod) && Label(n, term.topology_key);
        if (!found && !(any_match == false && self_match)) return Fail(kPodAffinity, true);
      }
    }
    if (affinity->pod_anti_affinity) {
      for (const auto& term : affinity->pod_anti_affinity->required) {
        for (const NodeInfo* other : ssn.nodes()) {
          if (!SameDomain(*other, n, term.topology_key)) continue;
          for (int tid : other->tasks) {
            const TaskInfo& e = c.task(tid);
            if (e.id == t.id || !Counts(e)) continue;
            if (TermMatchesPod(term, t.ns, *e.pod)) return Fail(kPodAntiAffinity, false);
          }
        }
      }
    }
    return {};
  }

  static PredicateStatus TopologySpread(Session& ssn, const TaskInfo& t, const NodeInfo& n) {
    const api::Pod& pod = *t.pod;
    if (pod.spec.topology_spread_constraints.empty()) return {};
    Cluster& c = ssn.cluster();
    for (const auto& tsc : pod.spec.topology_spread_constraints) {
      if (tsc.when_unsatisfiable != "DoNotSchedule") continue;
      const std::string* domain = Label(n, tsc.topology_key);
      if (!domain) return Fail(kTopologySpreadLabel, true);
      std::map<std::string, int> counts;
      for (const NodeInfo* other : ssn.nodes()) {
        const std::string* d = Label(*other, tsc.topology_key);
        if (!d || !api::PodMatchesNodeAffinity(pod, *other->node)) continue;
        int& cnt = counts[*d];
        for (int tid : other->tasks) {
          const TaskInfo& e = c.task(tid);
          if (e.id == t.id || !Counts(e) || e.ns != t.ns) continue;
          if (tsc.label_selector && api::MatchesLabelSelector(*tsc.label_selector, e.pod->meta.labels)) {
            ++cnt;
          }
        }
      }
      int min_count = counts.empty() ? 0 : INT32_MAX;
      for (const auto& [d, cnt] : counts) min_count = std::min(min_count, cnt);
      if (tsc.min_domains && static_cast<int>(counts.size()) < *tsc.min_domains) min_count = 0;
      bool self = tsc.label_selector && api::MatchesLabelSelector(*tsc.label_selector, pod.meta.labels);
      int after = counts[*domain] + (self ? 1 : 0);
      if (after - min_count > tsc.max_skew) return Fail(kTopologySpread, false);
    }
    return {};
  }

 private:
  std::vector<int> anti_affinity_tasks_;
  std::vector<std::string> static_reasons_;
  std::unordered_map<int, int> class_of_task_;
  std::unordered_map<int, std::vector<int>> classes_by_job_;
  std::vector<std::shared_ptr<const api::Pod>> class_pod_;
  std::vector<std::vector<int>> class_cache_;
};

}  // namespace

std::unique_ptr<Plugin> NewPredicatesPlugin(const PluginOption&) {
  return std::make_unique<PredicatesPlugin>();
}

}  // namespace muster::core
