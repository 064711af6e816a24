// The PodGroup phase texts, Volcano's scheduling.PodGroupPhase values
// (pkg/apis/scheduling/types.go).

#include "core/podgroup_phase.h"

#include <array>
#include <utility>

namespace muster::core {
namespace {

constexpr std::array<std::pair<PodGroupPhase, std::string_view>, 5> kPhaseNames = {{
    {PodGroupPhase::kPending, "Pending"},
    {PodGroupPhase::kInqueue, "Inqueue"},
    {PodGroupPhase::kRunning, "Running"},
    {PodGroupPhase::kUnknown, "Unknown"},
    {PodGroupPhase::kCompleted, "Completed"},
}};

}  // namespace

std::string_view PodGroupPhaseName(PodGroupPhase phase) {
  for (const auto& [p, name] : kPhaseNames) {
    if (p == phase) return name;
  }
  return {};
}

PodGroupPhase ParsePodGroupPhase(std::string_view text) {
  for (const auto& [p, name] : kPhaseNames) {
    if (name == text) return p;
  }
  return PodGroupPhase::kOther;
}

}  // namespace muster::core
