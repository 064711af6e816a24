// The feasible-node search and the choice of the best node (feasible_nodes.h).

#include "core/actions/feasible_nodes.h"

#include <algorithm>

namespace muster::core {

std::string InsufficientReason(const Resources& need, const Resources& have) {
  ResourceId r = need.FirstExceeding(have);
  return r < 0 ? "" : "Insufficient " + ResourceNames::Name(r);
}

int InsufficientReasonId(ResourceId r) {
  // Resource ids are few and stable: cache their reason ids (per thread, so without a lock).
  thread_local std::vector<int> ids;
  if (r >= static_cast<int>(ids.size())) ids.resize(r + 1, -1);
  int& id = ids[r];
  if (id < 0) id = FitReasons::Id("Insufficient " + ResourceNames::Name(r));
  return id;
}

namespace {

// Resources against future idle first (Volcano's allocate predicate), then the node's GPU
// devices, then every plugin predicate; a failure is counted in `errors`.
bool Fits(Session& ssn, const TaskInfo& t, const NodeInfo& node, FitErrors& errors) {
  ResourceId short_of = node.FirstShortOfFutureIdle(t.resreq);
  if (short_of >= 0) {
    errors.SetNodeError(node.id, InsufficientReasonId(short_of));
    return false;
  }
  // GPU shares: the totals fit, but one device has to take the share (and whole GPUs need
  // devices no share has started on).
  if (!node.GpuDevicesFit(t)) {
    errors.SetNodeError(
        node.id,
        InsufficientReasonId(t.gpu_share > 0 ? ResourceNames::Id(kGpuShareResource) : kGpu));
    return false;
  }
  PredicateStatus st = ssn.Predicate(t, node);
  if (!st.ok) {
    errors.SetNodeError(node.id, st.reason);
    return false;
  }
  return true;
}

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
    if (Fits(ssn, t, *node, out.errors)) out.nodes.push_back(node);
  }
  ssn.set_next_start_node((start + k) % n);
  return out;
}

FeasibleNodes RecheckFeasibleNodes(Session& ssn, const TaskInfo& t,
                                   const std::vector<NodeInfo*>& candidates) {
  FeasibleNodes out;
  for (NodeInfo* node : candidates) {
    if (Fits(ssn, t, *node, out.errors)) out.nodes.push_back(node);
  }
  return out;
}

NodeInfo* BestNode(Session& ssn, const TaskInfo& t, const std::vector<NodeInfo*>& nodes) {
  if (nodes.empty()) return nullptr;
  if (nodes.size() == 1) return nodes[0];
  thread_local std::vector<const NodeInfo*> cnodes;
  thread_local std::vector<double> scores;
  cnodes.assign(nodes.begin(), nodes.end());
  ssn.NodeScores(t, cnodes, scores);
  size_t best = 0;
  for (size_t i = 1; i < nodes.size(); ++i) {
    if (scores[i] > scores[best]) best = i;
  }
  return nodes[best];
}

}  // namespace muster::core
