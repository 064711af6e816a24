// predicates: kube-scheduler's filters as Volcano's predicates plugin runs them: pod count,
// node unschedulable, node affinity and selector, taints, inter-pod affinity and anti-affinity,
// and topology spread constraints. Reasons are kube-scheduler's texts. Resource fit is checked
// by the actions themselves (against idle or future-idle resources), as in Volcano. Follows
// Volcano's pkg/scheduler/plugins/predicates/predicates.go.

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <unordered_map>

#include "api/selector.h"
#include "core/framework/conf.h"
#include "core/framework/session.h"
#include "core/plugins/pod_terms.h"

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

class PredicatesPlugin : public Plugin {
 public:
  // What the node-only filters share across every task whose node selector, node affinity and
  // tolerations are equal (the pods of one task template, and standalone pods that ask alike),
  // for this session: a per-node cache of verdicts (-1 unknown, 0 passes, else 1 + reason id;
  // empty when uncached) and memoised partial verdicts that need no node object (StaticCheck).
  struct ConstraintClass {
    std::shared_ptr<const api::Pod> pod;
    std::vector<int> cache;
    bool tolerates_unschedulable = false;
    bool reads_fields = false;  // a required term names node fields
    // The label keys the node selector and required node affinity read, and their columns
    // (nullptr: no node has the key).
    std::vector<std::string> keys;
    std::vector<const LabelColumn*> columns;
    // Affinity verdicts (-1 unknown, 0 no, 1 yes) by the node's value ids of `keys`: indexed
    // by value id + 1 for at most one key, else by the ids' bytes.
    std::vector<int8_t> one_key;
    std::unordered_map<std::string, int8_t> many_keys;
    std::vector<int> taints;  // by taint set: -1 unknown, 0 tolerated, else 1 + reason id
  };

  PredicatesPlugin()
      : pod_number_exceeded_(FitReasons::Id(kPodNumberExceeded)),
        unschedulable_(FitReasons::Id(kUnschedulable)),
        node_affinity_(FitReasons::Id(kNodeAffinity)),
        pod_affinity_(FitReasons::Id(kPodAffinity)),
        pod_anti_affinity_(FitReasons::Id(kPodAntiAffinity)),
        existing_anti_affinity_(FitReasons::Id(kExistingAntiAffinity)),
        topology_spread_(FitReasons::Id(kTopologySpread)),
        topology_spread_label_(FitReasons::Id(kTopologySpreadLabel)) {}

  void OnSessionOpen(Session& ssn) override {
    Cluster& c = ssn.cluster();
    for (const NodeInfo* n : ssn.nodes()) {
      node_capacity_ = std::max(node_capacity_, static_cast<size_t>(n->id) + 1);
    }
    for (int tid : c.AntiAffinityTasks()) {
      if (c.task(tid).node >= 0) anti_affinity_tasks_.push_back(tid);
    }
    ssn.AddEventHandler({[this](const TaskInfo& t) {
                           if (HasRequiredAntiAffinity(t)) anti_affinity_tasks_.push_back(t.id);
                         },
                         [this](const TaskInfo& t) {
                           if (HasRequiredAntiAffinity(t)) std::erase(anti_affinity_tasks_, t.id);
                         }});
    // Volcano runs predicates' SimulateRemoveTask/SimulateAddTask (which keep the inter-pod
    // state in step with topology-aware preemption's dry run) only with one of these flags on.
    const PluginOption* opt = ssn.conf().FindPlugin("predicates");
    simulates_removals_ =
        !opt || opt->Enabled("enablePreemptable") || opt->Enabled("enabledAllocatable");
    Session* s = &ssn;
    ssn.AddPredicateFn("predicates", [this, s](const TaskInfo& t, const NodeInfo& n) {
      return Check(*s, t, n);
    });
  }

  static bool HasRequiredAntiAffinity(const TaskInfo& t) {
    return t.pod->spec.affinity && t.pod->spec.affinity->pod_anti_affinity &&
           !t.pod->spec.affinity->pod_anti_affinity->required.empty();
  }

  static PredicateStatus Fail(int reason, bool unresolvable) {
    PredicateStatus st;
    st.ok = false;
    st.unresolvable = unresolvable;
    st.reason = reason;
    return st;
  }

  PredicateStatus Check(Session& ssn, const TaskInfo& t, const NodeInfo& n) {
    if (n.pod_count - n.releasing_pods >= n.max_pods) return Fail(pod_number_exceeded_, false);
    // Node-only filters depend on the pod's constraints and the node's labels and taints, which
    // do not change within a session: evaluate them once per node for all identical pods.
    ConstraintClass& cls = StaticClass(ssn.cluster(), t);
    int cached = cls.cache.empty() ? -1 : cls.cache[n.id];
    if (cached < 0) {
      cached = StaticCheck(ssn.cluster(), cls, n);
      if (!cls.cache.empty()) cls.cache[n.id] = cached;
    }
    if (cached > 0) return Fail(cached - 1, true);
    if (!anti_affinity_tasks_.empty() || HasPodAffinityTerms(t)) {
      if (auto st = InterPodAffinity(ssn, t, n); !st.ok) return st;
    }
    if (!t.pod->spec.topology_spread_constraints.empty()) {
      if (auto st = TopologySpread(ssn, t, n); !st.ok) return st;
    }
    return {};
  }

  static bool HasPodAffinityTerms(const TaskInfo& t) {
    const auto& a = t.pod->spec.affinity;
    return a && (a->pod_affinity || a->pod_anti_affinity);
  }

  // 0 when the node passes the node-only filters, else 1 + the FitReasons id. Verdicts are
  // memoised per constraint class by what they read: the node's values of the label keys the
  // pod's node selector and required node affinity name, and the node's interned taint list.
  // So a node is judged from the cluster's label columns without reading its object, the same
  // verdicts as api::PodMatchesNodeAffinity and api::FindUntoleratedTaint give on it.
  int StaticCheck(const Cluster& c, ConstraintClass& cls, const NodeInfo& n) {
    if (n.unschedulable && !cls.tolerates_unschedulable) return unschedulable_ + 1;
    if (!AffinityMatches(cls, n)) return node_affinity_ + 1;
    if (n.taint_set >= static_cast<int>(cls.taints.size())) cls.taints.resize(n.taint_set + 1, -1);
    int& taints = cls.taints[n.taint_set];
    if (taints < 0) {
      const api::Taint* taint =
          api::FindUntoleratedTaint(c.TaintSet(n.taint_set), cls.pod->spec.tolerations);
      taints = taint ? FitReasons::Id(api::UntoleratedTaintReason(*taint)) + 1 : 0;
    }
    return taints;
  }

  static bool AffinityMatches(ConstraintClass& cls, const NodeInfo& n) {
    // A term on node fields (metadata.name) reads the node's name: judged on the object.
    if (cls.reads_fields) return api::PodMatchesNodeAffinity(*cls.pod, *n.node);
    int8_t* verdict = nullptr;
    if (cls.columns.size() <= 1) {
      int v = cls.columns.empty() || !cls.columns[0] ? -1 : cls.columns[0]->ValueOf(n.id);
      if (v + 1 >= static_cast<int>(cls.one_key.size())) cls.one_key.resize(v + 2, -1);
      verdict = &cls.one_key[v + 1];
    } else {
      std::string key;
      for (const LabelColumn* col : cls.columns) {
        int v = col ? col->ValueOf(n.id) : -1;
        key.append(reinterpret_cast<const char*>(&v), sizeof v);
      }
      verdict = &cls.many_keys.try_emplace(std::move(key), int8_t{-1}).first->second;
    }
    if (*verdict < 0) {
      // Judge a node that carries only the labels read: the verdict depends on nothing else.
      api::Node probe;
      for (size_t k = 0; k < cls.columns.size(); ++k) {
        int v = cls.columns[k] ? cls.columns[k]->ValueOf(n.id) : -1;
        if (v >= 0) probe.meta.labels[cls.keys[k]] = cls.columns[k]->values[v];
      }
      *verdict = api::PodMatchesNodeAffinity(*cls.pod, probe) ? 1 : 0;
    }
    return *verdict == 1;
  }

  static bool SameNodeConstraints(const api::Pod& a, const api::Pod& b) {
    auto node_affinity = [](const api::Pod& p) -> std::optional<api::NodeAffinity> {
      if (!p.spec.affinity) return std::nullopt;
      return p.spec.affinity->node_affinity;
    };
    return a.spec.node_selector == b.spec.node_selector &&
           a.spec.tolerations == b.spec.tolerations && node_affinity(a) == node_affinity(b);
  }

  // A hash of what the node-only filters read from a pod.
  static size_t ConstraintHash(const api::Pod& p) {
    size_t h = 0;
    auto mix = [&h](std::string_view v) {
      h ^= std::hash<std::string_view>()(v) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    };
    for (const auto& [k, v] : p.spec.node_selector) {
      mix(k);
      mix(v);
    }
    for (const auto& tol : p.spec.tolerations) {
      mix(tol.key);
      mix(tol.op);
      mix(tol.value);
      mix(tol.effect);
    }
    if (p.spec.affinity && p.spec.affinity->node_affinity &&
        p.spec.affinity->node_affinity->required) {
      for (const auto& term : *p.spec.affinity->node_affinity->required) {
        for (const auto& e : term.match_expressions) {
          mix(e.key);
          mix(e.op);
          for (const auto& v : e.values) mix(v);
        }
        for (const auto& e : term.match_fields) {
          mix(e.key);
          for (const auto& v : e.values) mix(v);
        }
        mix("|");
      }
    }
    return h;
  }

  ConstraintClass& StaticClass(const Cluster& c, const TaskInfo& t) {
    // Filters run node after node for one task: remember its class.
    if (t.id == last_task_) return *last_class_;
    last_task_ = t.id;
    last_class_ = &ClassOf(c, t);
    return *last_class_;
  }

  static ConstraintClass NewClass(const Cluster& c, std::shared_ptr<const api::Pod> pod,
                                  size_t cache_size) {
    ConstraintClass cls;
    cls.pod = std::move(pod);
    cls.cache.assign(cache_size, -1);
    const api::PodSpec& spec = cls.pod->spec;
    cls.tolerates_unschedulable = api::TolerationsTolerateTaint(
        spec.tolerations, {"node.kubernetes.io/unschedulable", "", "NoSchedule"});
    for (const auto& [key, value] : spec.node_selector) cls.keys.push_back(key);
    if (spec.affinity && spec.affinity->node_affinity && spec.affinity->node_affinity->required) {
      for (const api::NodeSelectorTerm& term : *spec.affinity->node_affinity->required) {
        if (!term.match_fields.empty()) cls.reads_fields = true;
        for (const auto& e : term.match_expressions) cls.keys.push_back(e.key);
      }
    }
    std::sort(cls.keys.begin(), cls.keys.end());
    cls.keys.erase(std::unique(cls.keys.begin(), cls.keys.end()), cls.keys.end());
    for (const std::string& key : cls.keys) cls.columns.push_back(c.FindLabelColumn(key));
    return cls;
  }

  ConstraintClass& ClassOf(const Cluster& c, const TaskInfo& t) {
    auto it = class_of_task_.find(t.id);
    if (it == class_of_task_.end()) {
      std::vector<int>& bucket = classes_by_hash_[ConstraintHash(*t.pod)];
      int found = -1;
      for (int c : bucket) {
        if (SameNodeConstraints(*classes_[c].pod, *t.pod)) {
          found = c;
          break;
        }
      }
      if (found < 0) {
        found = static_cast<int>(classes_.size());
        // Bound the memory: past kMaxCachedEntries, new classes are evaluated uncached.
        bool cached = (classes_.size() + 1) * node_capacity_ <= kMaxCachedEntries;
        classes_.push_back(NewClass(c, t.pod, cached ? node_capacity_ : 0));
        bucket.push_back(found);
      }
      it = class_of_task_.emplace(t.id, found).first;
    }
    return classes_[it->second];
  }

  static constexpr size_t kMaxCachedEntries = size_t{1} << 24;  // 64 MiB of ints

  // Whether `e` counts for inter-pod terms: as CountsForPodTerms, and without removal
  // simulation a victim of topology-aware preemption's dry run still counts, so that the
  // preemptor's inter-pod verdict stays what it was before the dry run (Volcano).
  bool Counts(const Session& ssn, const TaskInfo& e) const {
    if (CountsForPodTerms(e)) return true;
    if (simulates_removals_) return false;
    const std::vector<int>& v = ssn.dry_run_victims();
    return std::find(v.begin(), v.end(), e.id) != v.end();
  }

  PredicateStatus InterPodAffinity(Session& ssn, const TaskInfo& t, const NodeInfo& n) {
    const api::Pod& pod = *t.pod;
    Cluster& c = ssn.cluster();
    const auto& affinity = pod.spec.affinity;
    // Existing pods' required anti-affinity against this pod.
    auto existing_blocks = [&](const TaskInfo& e) {
      if (e.id == t.id || !Counts(ssn, e) || e.node < 0) return false;
      const NodeInfo& other = c.node(e.node);
      for (const auto& term : e.pod->spec.affinity->pod_anti_affinity->required) {
        if (TermMatchesPod(term, e.ns, pod) && SameTopologyDomain(other, n, term.topology_key)) {
          return true;
        }
      }
      return false;
    };
    for (int tid : anti_affinity_tasks_) {
      if (existing_blocks(c.task(tid))) return Fail(existing_anti_affinity_, false);
    }
    // Eviction took the dry run's victims off anti_affinity_tasks_; they may still count.
    if (!simulates_removals_) {
      for (int tid : ssn.dry_run_victims()) {
        const TaskInfo& e = c.task(tid);
        if (HasRequiredAntiAffinity(e) && existing_blocks(e)) {
          return Fail(existing_anti_affinity_, false);
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
            if (e.id == t.id || !Counts(ssn, e) || !TermMatchesPod(term, t.ns, *e.pod)) continue;
            any_match = true;
            if (SameTopologyDomain(*other, n, term.topology_key)) found = true;
          }
        }
        // A pod may be the first of its group: it matches its own term and no pod matches yet.
        bool self_match = TermMatchesPod(term, t.ns, *t.pod) && NodeLabel(n, term.topology_key);
        if (!found && !(any_match == false && self_match)) return Fail(pod_affinity_, true);
      }
    }
    if (affinity->pod_anti_affinity) {
      for (const auto& term : affinity->pod_anti_affinity->required) {
        for (const NodeInfo* other : ssn.nodes()) {
          if (!SameTopologyDomain(*other, n, term.topology_key)) continue;
          for (int tid : other->tasks) {
            const TaskInfo& e = c.task(tid);
            if (e.id == t.id || !Counts(ssn, e)) continue;
            if (TermMatchesPod(term, t.ns, *e.pod)) return Fail(pod_anti_affinity_, false);
          }
        }
      }
    }
    return {};
  }

  PredicateStatus TopologySpread(Session& ssn, const TaskInfo& t, const NodeInfo& n) {
    const api::Pod& pod = *t.pod;
    if (pod.spec.topology_spread_constraints.empty()) return {};
    Cluster& c = ssn.cluster();
    for (const auto& tsc : pod.spec.topology_spread_constraints) {
      if (tsc.when_unsatisfiable != "DoNotSchedule") continue;
      const std::string* domain = NodeLabel(n, tsc.topology_key);
      if (!domain) return Fail(topology_spread_label_, true);
      std::map<std::string, int> counts;
      for (const NodeInfo* other : ssn.nodes()) {
        const std::string* d = NodeLabel(*other, tsc.topology_key);
        if (!d || !api::PodMatchesNodeAffinity(pod, *other->node)) continue;
        int& cnt = counts[*d];
        for (int tid : other->tasks) {
          const TaskInfo& e = c.task(tid);
          if (e.id == t.id || !CountsForPodTerms(e) || e.ns != t.ns) continue;
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
      if (after - min_count > tsc.max_skew) return Fail(topology_spread_, false);
    }
    return {};
  }

 private:
  std::vector<int> anti_affinity_tasks_;
  bool simulates_removals_ = true;
  const int pod_number_exceeded_, unschedulable_, node_affinity_, pod_affinity_,
      pod_anti_affinity_, existing_anti_affinity_, topology_spread_, topology_spread_label_;
  size_t node_capacity_ = 0;  // 1 + the largest node id of the session
  int last_task_ = -1;
  ConstraintClass* last_class_ = nullptr;
  std::unordered_map<int, int> class_of_task_;
  std::unordered_map<size_t, std::vector<int>> classes_by_hash_;
  std::deque<ConstraintClass> classes_;  // deque: references stay valid as classes are added
};

}  // namespace

std::unique_ptr<Plugin> NewPredicatesPlugin(const PluginOption&) {
  return std::make_unique<PredicatesPlugin>();
}

}  // namespace muster::core
