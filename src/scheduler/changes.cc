#include "scheduler/changes.h"

#include "scheduler/estimates.h"

#include <string_view>

#include "boost/json/value.hpp"

namespace muster::scheduler {
namespace {

namespace json = boost::json;

const json::value* At(const json::object* o, std::string_view a, std::string_view b = {}) {
  if (o == nullptr) return nullptr;
  const json::value* v = o->if_contains(a);
  if (v == nullptr || b.empty()) return v;
  return v->is_object() ? v->get_object().if_contains(b) : nullptr;
}

// Absent and null compare equal, as an omitted field and an empty one mean the same.
bool Same(const json::value* a, const json::value* b) {
  bool a_empty = a == nullptr || a->is_null();
  bool b_empty = b == nullptr || b->is_null();
  if (a_empty || b_empty) return a_empty == b_empty;
  return *a == *b;
}

std::string_view Str(const json::value* v) {
  return v != nullptr && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

std::string_view ReadyStatus(const json::object* node) {
  const json::value* conditions = At(node, "status", "conditions");
  if (conditions == nullptr || !conditions->is_array()) return {};
  for (const json::value& c : conditions->get_array()) {
    if (!c.is_object()) continue;
    if (Str(c.get_object().if_contains("type")) == "Ready") {
      return Str(c.get_object().if_contains("status"));
    }
  }
  return {};
}

bool Finished(const json::object* pod) {
  std::string_view phase = Str(At(pod, "status", "phase"));
  return phase == "Succeeded" || phase == "Failed";
}

}  // namespace

ChangeEffect PodChange(const json::object* before, const json::object* after) {
  if (before == nullptr) return {true, Helps::kItsGang};
  if (after == nullptr) return {true, Helps::kEveryone};
  // Resources are freed when the pod finishes or starts terminating.
  if (Finished(after) && !Finished(before)) return {true, Helps::kEveryone};
  if (!Same(At(before, "metadata", "deletionTimestamp"),
            At(after, "metadata", "deletionTimestamp"))) {
    return {true, Helps::kEveryone};
  }
  if (!Same(At(before, "spec"), At(after, "spec")) ||
      !Same(At(before, "metadata", "labels"), At(after, "metadata", "labels")) ||
      !Same(At(before, "metadata", "annotations"), At(after, "metadata", "annotations"))) {
    return {true, Helps::kItsGang};
  }
  // A phase change moves the PodGroup's counters (running, succeeded, failed).
  if (!Same(At(before, "status", "phase"), At(after, "status", "phase"))) {
    return {true, Helps::kNobody};
  }
  return {};
}

ChangeEffect NodeChange(const json::object* before, const json::object* after) {
  if (before == nullptr) return {true, Helps::kEveryone};
  if (after == nullptr) return {true, Helps::kNobody};
  if (!Same(At(before, "spec"), At(after, "spec")) ||
      !Same(At(before, "metadata", "labels"), At(after, "metadata", "labels")) ||
      !Same(At(before, "status", "allocatable"), At(after, "status", "allocatable")) ||
      !Same(At(before, "status", "capacity"), At(after, "status", "capacity")) ||
      ReadyStatus(before) != ReadyStatus(after)) {
    return {true, Helps::kEveryone};
  }
  return {};
}

namespace {
// The annotations the scheduler writes about a waiting gang (estimates.h) help no one: apart from
// them, are the two annotation maps the same?
bool SameAnnotationsButEstimates(const json::value* a, const json::value* b) {
  if (Same(a, b)) return true;
  auto strip = [](const json::value* v) {
    json::object o;
    if (v != nullptr && v->is_object()) o = v->as_object();
    o.erase(kEstimatedStartAnnotation);
    o.erase(kWaitReasonAnnotation);
    return o;
  };
  return strip(a) == strip(b);
}
}  // namespace

ChangeEffect PodGroupChange(const json::object* before, const json::object* after) {
  if (before == nullptr) return {true, Helps::kItsGang};
  if (after == nullptr) return {true, Helps::kNobody};
  if (!Same(At(before, "spec"), At(after, "spec")) ||
      !Same(At(before, "metadata", "labels"), At(after, "metadata", "labels")) ||
      !SameAnnotationsButEstimates(At(before, "metadata", "annotations"),
                                   At(after, "metadata", "annotations"))) {
    return {true, Helps::kItsGang};
  }
  return {};
}

ChangeEffect QueueChange(const json::object* before, const json::object* after) {
  if (before == nullptr) return {true, Helps::kEveryone};
  if (after == nullptr) return {true, Helps::kNobody};
  if (!Same(At(before, "spec"), At(after, "spec")) ||
      !Same(At(before, "status", "state"), At(after, "status", "state"))) {
    return {true, Helps::kEveryone};
  }
  return {};
}

ChangeEffect HyperNodeChange(const json::object* before, const json::object* after) {
  if (before == nullptr || after == nullptr) return {true, Helps::kEveryone};
  if (!Same(At(before, "spec"), At(after, "spec"))) return {true, Helps::kEveryone};
  return {};
}

ChangeEffect PriorityClassChange(const json::object* before, const json::object* after) {
  if (before != nullptr && after != nullptr) {
    bool same = Same(before->if_contains("value"), after->if_contains("value")) &&
                Same(before->if_contains("globalDefault"), after->if_contains("globalDefault"));
    if (same) return {};
  }
  return {true, Helps::kEveryone};
}

}  // namespace muster::scheduler
