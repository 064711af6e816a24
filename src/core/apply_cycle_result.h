#pragma once

// A cycle's decisions applied back to the engine's cluster view the way the API server, and
// optionally the kubelet, would apply them: the one copy used by the scenario runner
// (scenario/scenario.cc), the trace replay (sim/replay_engine.cc), the benchmarks
// (bench/bench_support.cc) and the engine's tests (core/testing/harness.h). The live scheduler
// does not use it: there the binds go to the API server (scheduler/write_plan.h) and come back
// through the informers.
//
// A bind is what Volcano's binder posts (pkg/scheduler/cache/cache.go, Bind): the pod gets
// spec.nodeName, and the GPU devices the engine chose go into the muster.dev/gpu-indices annotation
// as muster's bind does (scheduler/write_plan.cc). An eviction deletes the pod, as Volcano's
// evictor does (cache.go, Evict); a controller that makes a replacement does so itself.

#include <optional>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/framework/cycle_result.h"

namespace muster::core {

struct ApplyOptions {
  // When set, every bound pod is also reported Running with this status.startTime (RFC 3339), as
  // a kubelet that starts containers at once would report it. Unset: the phase is left as it was.
  std::optional<std::string> running_since;
};

// Applies `result`'s binds, then its evictions, to `cluster`. A bind or eviction naming a pod the
// cluster does not hold is skipped (it went away since the session took its snapshot).
void ApplyCycleResult(Cluster& cluster, const CycleResult& result, const ApplyOptions& options = {});

// Its two halves, for a caller that does more for an eviction than delete the pod (the trace
// replay puts a pending replacement in its place, as the pod's controller would).
void ApplyBinds(Cluster& cluster, const std::vector<CycleResult::Bind>& binds,
                const ApplyOptions& options = {});
void ApplyEvictions(Cluster& cluster, const std::vector<CycleResult::Eviction>& evictions);

}  // namespace muster::core
