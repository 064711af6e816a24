#pragma once

// Making room on one node for a task by evicting victims, shared by preempt and reclaim: the
// victims the plugins allowed are evicted lowest-ordered first until the task fits (Volcano's
// pkg/scheduler/actions/preempt/preempt.go and reclaim/reclaim.go), or, topology-aware, all
// evicted and the most important reprieved while it still fits (kube-scheduler's
// SelectVictimsOnNode, pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go).

#include <vector>

#include "core/framework/session.h"

namespace muster::core {

// Whether `t` fits on `n` once the node's releasing pods (the evictions so far among them) are
// gone: resources against future idle, GPU devices, a pod slot, every predicate, and (with
// `check_queue`) the queue's Allocatable.
bool FitsNow(Session& ssn, const QueueInfo& q, const TaskInfo& t, const NodeInfo& n,
             bool check_queue);

// Tries to make room for `t` on `n` by evicting from `victims`; on success the evictions are in
// `node_stmt` and true is returned, else nothing is changed.
bool MakeRoom(Session& ssn, const QueueInfo& q, TaskInfo& t, NodeInfo& n,
              std::vector<const TaskInfo*> victims, bool topology_aware, bool check_queue,
              Statement& node_stmt, const char* reason);

}  // namespace muster::core
