#pragma once

// The scheduling actions (Volcano's pkg/scheduler/actions), each in the file of its name
// (enqueue.cc, allocate.cc, backfill.cc, preempt.cc, reclaim.cc). The registry (registry.cc,
// framework/registry.h) builds them by name from volcano-scheduler.conf. What they share is in
// ordered_queue.h, feasible_nodes.h, shape_cache.h and make_room.h.

#include <memory>

#include "core/framework/plugin.h"

namespace muster::core {

std::unique_ptr<Action> NewEnqueueAction();
std::unique_ptr<Action> NewAllocateAction();
std::unique_ptr<Action> NewBackfillAction();
std::unique_ptr<Action> NewPreemptAction();
std::unique_ptr<Action> NewReclaimAction();

}  // namespace muster::core
