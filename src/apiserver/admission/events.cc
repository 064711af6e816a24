#include "apiserver/admission/kinds.h"

// core/v1 Events: pkg/apis/core/validation/events.go legacyValidateEvent (involvedObject's
// namespace) for events without eventTime.

#include <optional>
#include <string>

#include "apiserver/admission/context.h"
#include "boost/json.hpp"

namespace muster::apiserver::admission {

std::optional<ApiError> AdmitEvent(Context& c) {
  json::object* involved =
      c.reader.Obj(c.obj, "involvedObject", "involvedObject", "v1.ObjectReference");
  if (involved == nullptr) {
    // unverified: kube has no such check (an empty involvedObject passes); muster needs one.
    if (c.problems.empty()) c.errs.Required("involvedObject");
    return std::nullopt;
  }
  // legacyValidateEvent for events without eventTime.
  std::string involved_ns = c.reader.StrOr(*involved, "namespace", "involvedObject.namespace");
  if (involved_ns.empty()) {
    if (!c.ns.empty() && c.ns != "default") {
      c.errs.InvalidString("involvedObject.namespace", involved_ns,
                           "does not match event.namespace");
    }
  } else if (involved_ns != c.ns) {
    c.errs.InvalidString("involvedObject.namespace", involved_ns, "does not match event.namespace");
  }
  return std::nullopt;
}

}  // namespace muster::apiserver::admission
