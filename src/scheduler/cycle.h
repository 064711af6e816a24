#pragma once

// One scheduling cycle over the scheduler's view: Volcano's session over the gangs (the
// configured actions and plugins), then, when default-scheduler pods wait, a session of
// kube-scheduler's rules over those pods alone (KubeSchedulerConf). Each session leaves the
// other's pods out, so they see each other only as occupied nodes, as Volcano and kube-scheduler
// do in a real cluster. The decisions of both come back as one CycleResult.
//
// Thread-safety: none; the caller owns the mirror.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/cluster.h"
#include "core/framework/conf.h"
#include "core/framework/session.h"
#include "scheduler/cluster_mirror.h"

namespace muster::scheduler {

struct CycleOptions {
  std::string session_id = "session";
  // Where feasible-node searches start; advanced past what this cycle examined, for the next.
  int start_node_index = 0;
  int64_t now_unix = 0;
  // Jobs waiting out a backoff (core::JobRole::kHeldBack).
  std::function<bool(const core::JobInfo&)> hold_back;
  // Given to both sessions as core::SessionOptions::on_step (each opens with "start"), so that
  // the scheduler can time their steps. Empty: none.
  std::function<void(std::string_view step, std::string_view name)> on_step;
};

core::CycleResult RunCycle(ClusterMirror& mirror, const core::SchedulerConf& conf,
                           CycleOptions& options);

}  // namespace muster::scheduler
