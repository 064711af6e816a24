// The action registry: every action name volcano-scheduler.conf may list, with its builder
// (framework/registry.h). Volcano's pkg/scheduler/actions/factory.go, as one table.

#include "core/framework/registry.h"

#include <array>
#include <cstddef>

#include "core/framework/plugin.h"

namespace muster::core {

// Each action's builder, defined in the file of its name (enqueue.cc, allocate.cc, ...): a new
// action is a file plus its line here and its row in the table below.
std::unique_ptr<Action> NewEnqueueAction();
std::unique_ptr<Action> NewAllocateAction();
std::unique_ptr<Action> NewBackfillAction();
std::unique_ptr<Action> NewPreemptAction();
std::unique_ptr<Action> NewReclaimAction();

namespace {

struct ActionRegistration {
  std::string_view name;
  std::unique_ptr<Action> (*build)();
};

// In the order the conf parser's errors list the names.
constexpr ActionRegistration kActions[] = {
    {"enqueue", NewEnqueueAction}, {"allocate", NewAllocateAction}, {"backfill", NewBackfillAction},
    {"preempt", NewPreemptAction}, {"reclaim", NewReclaimAction},
};

constexpr auto kActionNames = [] {
  std::array<std::string_view, std::size(kActions)> names{};
  for (size_t i = 0; i < names.size(); ++i) names[i] = kActions[i].name;
  return names;
}();

}  // namespace

std::span<const std::string_view> ActionNames() { return kActionNames; }

std::unique_ptr<Action> NewAction(const std::string& name) {
  for (const ActionRegistration& r : kActions) {
    if (r.name == name) return r.build();
  }
  return nullptr;
}

}  // namespace muster::core
