#pragma once

// What a watched object's change means for the scheduling loop: whether a cycle should run soon
// (`wake`), and whose backoff it ends (`helps`): nobody's (a heartbeat, the scheduler's own
// status writes), the gang the object belongs to (its pod added or changed, its PodGroup's spec
// changed), or every gang (capacity freed or added: a pod deleted or finished, a node added or
// its allocatable, taints, labels or readiness changed, a queue or priority class changed).
//
// Each function takes the object before and after the change as the API serves it; `before` is
// null for an addition and `after` null for a deletion. Pure.

#include "boost/json/object.hpp"

namespace muster::scheduler {

enum class Helps { kNobody, kItsGang, kEveryone };

struct ChangeEffect {
  bool wake = false;
  Helps helps = Helps::kNobody;

  bool operator==(const ChangeEffect&) const = default;
};

ChangeEffect PodChange(const boost::json::object* before, const boost::json::object* after);
ChangeEffect NodeChange(const boost::json::object* before, const boost::json::object* after);
ChangeEffect PodGroupChange(const boost::json::object* before, const boost::json::object* after);
ChangeEffect QueueChange(const boost::json::object* before, const boost::json::object* after);
// A HyperNode added, removed or with a new spec may let a waiting topology gang in.
ChangeEffect HyperNodeChange(const boost::json::object* before, const boost::json::object* after);
ChangeEffect PriorityClassChange(const boost::json::object* before,
                                 const boost::json::object* after);

}  // namespace muster::scheduler
