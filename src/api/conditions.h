#pragma once

// Conditions in status.conditions, set as Kubernetes' helpers set them, so that the API server
// (the eviction subresource) and the controllers (disruption, taint eviction) write the same
// shapes: apimachinery meta.SetStatusCondition for metav1.Condition lists (a PodDisruptionBudget's
// DisruptionAllowed) and kube's podutil.UpdatePodCondition for a pod's (DisruptionTarget).
//
// Thread-safety: pure functions.

#include <cstdint>
#include <string>
#include <string_view>

#include "boost/json/array.hpp"
#include "boost/json/object.hpp"

namespace muster::api {

// One metav1.Condition.
struct MetaCondition {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  int64_t observed_generation = 0;
};

// meta.SetStatusCondition: adds the condition, or updates the one of its type: status (and then
// lastTransitionTime, to `now`), reason, message and observedGeneration. A new one gets
// lastTransitionTime `now` (RFC 3339). Returns whether `conditions` changed.
bool SetStatusCondition(boost::json::array& conditions, const MetaCondition& condition,
                        std::string_view now);

// The condition of `type` in conditions; nullptr when there is none.
const boost::json::object* FindCondition(const boost::json::array& conditions,
                                         std::string_view type);

// A pod condition ({type, status, lastProbeTime: null, lastTransitionTime, reason, message}) set
// as podutil.UpdatePodCondition does in `status` (its "conditions" made when missing): the
// transition time is kept while the status stays. Returns whether anything changed.
bool SetPodCondition(boost::json::object& status, std::string_view type, std::string_view value,
                     std::string_view reason, std::string_view message, std::string_view now);

// Whether the pod's Ready condition is True (podutil.IsPodReady).
bool IsPodReady(const boost::json::object& pod);

}  // namespace muster::api
