#include <algorithm>

#include "core/actions/actions.h"

namespace muster::core {

std::string InsufficientReason(const Resources& need, const Resources& have) {
  ResourceId r = need.FirstExceeding(have);
  return r < 0 ? "" : "Insufficient " + ResourceNames::Name(r);
}

namespace {

int NumFeasibleToFind(const SessionOptions& o, int all) {
  if (all <= o.min_feasible_nodes || o.percentage_nodes_to_find >= 100) return all;
  int pct = o.percentage_nodes_to_find;
  if (pct <= 0) pct = std::max(50 - all / 125, 5);
  return std::max(all * pct / 100, o.min_feasible_nodes);
}

}  // namespace

FeasibleNodes FindFeasibleNodes(Session& ssn, const TaskInfo& t) {
  FeasibleNodes out;
  const auto& nodes = ssn.nodes();
  int n = static_cast<int>(nodes.size());
  if (n == 0) return out;
  int want = NumFeasibleToFind(ssn.options(), n);
  int start = ssn.next_start_node() % n;
  int k = 0;
  for (; k < n && static_cast<int>(out.nodes.size()) < want; ++k) {
    NodeInfo* node = nodes[(start + k) % n];
    std::string insufficient = InsufficientReason(t.resreq, node->FutureIdle());
    if (!insufficient.empty()) {
      out.errors.SetNodeError(node->id, {insufficient});
      continue;
    }
    PredicateStatus st = ssn.Predicate(t, *node);
    if (!st.ok) {
      out.errors.SetNodeError(node->id, st.reasons);
      continue;
    }
    out.nodes.push_back(node);
  }
  ssn.set_next_start_node((start + k) % n);
  return out;
}

NodeInfo* BestNode(Session& ssn, const TaskInfo& t, const std::vector<NodeInfo*>& nodes) {
  if (nodes.empty()) return nullptr;
  if (nodes.size() == 1) return nodes[0];
  std::vector<const NodeInfo*> cnodes(nodes.begin(), nodes.end());
  std::vector<double> scores = ssn.NodeScores(t, cnodes);
  size_t best = 0;
  for (size_t i = 1; i < nodes.size(); ++i) {
    if (scores[i] > scores[best]) best = i;
  }
  return nodes[best];
}

std::unique_ptr<Action> NewAction(const std::string& name) {
  if (name == "enqueue") return NewEnqueueAction();
  if (name == "allocate") return NewAllocateAction();
  if (name == "backfill") return NewBackfillAction();
  if (name == "preempt") return NewPreemptAction();
  if (name == "reclaim") return NewReclaimAction();
  return nullptr;
}

}  // namespace muster::core
