#pragma once

// What predicates (inter-pod affinity, topology spread filters) and nodeorder (their scores)
// both read about pods and nodes: a node's topology label, whether two nodes share a domain,
// whether a pod falls under an affinity term, and which tasks count as present.

#include <algorithm>
#include <string>

#include "api/model.h"
#include "api/selector.h"
#include "core/cluster.h"

namespace muster::core {

// The node's value for a topology key; nullptr when the node lacks the label.
inline const std::string* NodeLabel(const NodeInfo& n, const std::string& key) {
  const auto& labels = n.node->meta.labels;
  auto it = labels.find(key);
  return it == labels.end() ? nullptr : &it->second;
}

inline bool SameTopologyDomain(const NodeInfo& a, const NodeInfo& b, const std::string& key) {
  const std::string* va = NodeLabel(a, key);
  const std::string* vb = NodeLabel(b, key);
  return va && vb && *va == *vb;
}

// Does `other` fall under `term` as seen from the pod that owns the term (namespace `ns`)?
inline bool TermMatchesPod(const api::PodAffinityTerm& term, const std::string& ns,
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

// A task on a node that affinity and spread rules see: not leaving, not finished.
inline bool CountsForPodTerms(const TaskInfo& t) {
  return t.status != TaskStatus::kReleasing && t.status != TaskStatus::kSucceeded &&
         t.status != TaskStatus::kFailed;
}

}  // namespace muster::core
