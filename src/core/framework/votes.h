#pragma once

// The votes plugins cast in JobPipelined, JobEnqueueable and the victim functions: Volcano's
// util.Permit / util.Abstain / util.Reject (pkg/scheduler/util), combined as
// pkg/scheduler/framework/session_plugins.go does.

namespace muster::core {

inline constexpr int kPermit = 1;
inline constexpr int kAbstain = 0;
inline constexpr int kReject = -1;

}  // namespace muster::core
