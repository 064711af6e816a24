#pragma once

// The HyperNode controller: the part of vc-controller-manager's hypernode controller
// (pkg/controllers/hypernode/hypernode_handler.go in volcano-sh/volcano, syncHyperNodeStatus) that
// keeps each HyperNode's status.nodeCount, the NODECOUNT column of `kubectl get hypernodes`.
// Volcano's topology discovery (UFM, labels, from a ConfigMap) is not done here.
//
// The count is what the CRD's description says, "the total number of nodes currently in the
// HyperNode": the existing Nodes its members select, through its member HyperNodes too
// (core::HyperNodeTopology, the scheduler's own resolution). Volcano 1.15's controller counts
// differently: the union of its members' selections, where an exact name counts whether or not
// such a Node exists and a member HyperNode counts as one (a spine of two racks of four nodes
// shows 2 there, 8 here); and it recounts only when the HyperNode itself changes, so a node that
// joins a rack by its label is not counted until the rack is next edited. Here every change to
// the HyperNodes, and every Node added, deleted or relabelled while HyperNodes exist, recounts
// them all (at most every `node_recount_delay` for Node changes, so that a fleet registering
// thousands of nodes costs a recount per delay, not one per node). A HyperNode the scheduler
// leaves out (on a member cycle, or with a pattern that does not compile) is not written.
// status.nodeCount is written with a merge patch of the status subresource, only when it differs
// (an absent count is 0, as Go's omitempty field).
//
// Lifecycle: construct, Start(), Stop() (or destroy). The Client must outlive the controller.
// Thread-safety: Start, Stop and WaitIdle may be called from any thread.

#include <chrono>
#include <memory>

#include "client/client.h"
#include "controller/controller.h"

namespace muster::controller {

struct HyperNodeControllerOptions {
  std::chrono::milliseconds backoff_base{5};
  std::chrono::milliseconds backoff_max{30000};
  std::chrono::milliseconds node_recount_delay{500};
};

std::unique_ptr<Controller> NewHyperNodeController(client::Client& client,
                                                   HyperNodeControllerOptions options = {});

}  // namespace muster::controller
