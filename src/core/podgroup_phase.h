#pragma once

// A PodGroup's phase (status.phase) as the engine reasons about it, and the one mapping between
// the phase and its text. The five values and their spelling are Volcano's
// scheduling.PodGroupPhase (pkg/apis/scheduling/types.go).
//
// Any other text (a phase another controller or a user wrote) is kOther: the engine gives it no
// meaning, and whoever holds it keeps the text beside it so that it is written back as it came
// (JobInfo::other_phase).

#include <string_view>

namespace muster::core {

enum class PodGroupPhase {
  kPending,    // not yet admitted: its pods are not to be created or placed
  kInqueue,    // admitted; waiting for its gang to be placed
  kRunning,    // at least minMember pods placed
  kUnknown,    // some pods run while the rest cannot be placed
  kCompleted,  // every placed pod has succeeded
  kOther,      // a text the engine has no name for, empty included
};

// The phase's text as in status.phase; empty for kOther, whose text lies with its holder.
std::string_view PodGroupPhaseName(PodGroupPhase phase);

// The phase a status.phase text names, compared exactly (Volcano's are case-sensitive); kOther
// for any other text, the empty one included.
PodGroupPhase ParsePodGroupPhase(std::string_view text);

}  // namespace muster::core
