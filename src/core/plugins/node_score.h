#pragma once

// The range of a node score: kube-scheduler's framework.MaxNodeScore. Each score plugin
// (nodeorder's parts, binpack) gives a node 0..kMaxNodeScore before its weight multiplies it, as
// Volcano's pkg/scheduler/plugins/nodeorder and binpack do.

namespace muster::core {

inline constexpr double kMaxNodeScore = 100.0;

}  // namespace muster::core
