#pragma once

// The nodes that can take a task, and the best of them: the search every placing action runs
// (resources against future idle, the node's GPU devices, then the plugins' predicates), with
// Volcano's early stop and rotating start, and the fit-error reasons of the nodes that failed.
// Follows Volcano's pkg/scheduler/util/predicate_helper.go (PredicateNodes) and
// pkg/scheduler/util/scheduler_helper.go (CalculateNumOfFeasibleNodesToFind, SelectBestNode).

#include <string>
#include <vector>

#include "core/framework/session.h"

namespace muster::core {

struct FeasibleNodes {
  std::vector<NodeInfo*> nodes;
  FitErrors errors;
};

// Nodes where the task passes every predicate and fits in future-idle resources, examined from
// a rotating start and stopping early once enough are found (Volcano's PredicateNodes with
// kube-scheduler's numFeasibleNodesToFind).
FeasibleNodes FindFeasibleNodes(Session& ssn, const TaskInfo& t);
// The same checks over `candidates` only, in their order and without early stop: for a task
// identical to one whose feasible nodes are `candidates` (see SameSchedulingShape), when only
// placements have happened since. Nodes outside them cannot have become feasible.
FeasibleNodes RecheckFeasibleNodes(Session& ssn, const TaskInfo& t,
                                   const std::vector<NodeInfo*>& candidates);
// The best-scoring node of `nodes` (first in order among equals).
NodeInfo* BestNode(Session& ssn, const TaskInfo& t, const std::vector<NodeInfo*>& nodes);

// "Insufficient <resource>" for the first dimension of `need` above `have`; empty when it fits.
std::string InsufficientReason(const Resources& need, const Resources& have);
// The FitReasons id of "Insufficient <resource>".
int InsufficientReasonId(ResourceId r);

}  // namespace muster::core
