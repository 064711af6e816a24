#pragma once

// Admission: defaulting and validation of objects before they are stored, as kube-apiserver's
// built-in rules and Volcano's admission webhook do it (webhook messages kept verbatim from
// volcano-sh/volcano pkg/webhooks/admission/{jobs,podgroups,queues}/{mutate,validate}; the
// kube-apiserver sources are listed in admission.cc). Called by the REST handlers on create,
// update and patch.

#include <optional>
#include <string>
#include <vector>

#include "apiserver/resources.h"
#include "boost/json/object.hpp"
#include "store/store.h"

namespace muster::apiserver {

struct FieldCause {
  std::string reason;   // FieldValueRequired, FieldValueInvalid, FieldValueNotSupported, ...
  std::string message;  // "Required value"
  std::string field;    // "spec.containers"
};

// A refusal, rendered by the handler as a Kubernetes Status object.
struct AdmissionError {
  int code = 422;                 // 422 Invalid, 400 BadRequest, 403 Forbidden, 404 NotFound
  std::string reason = "Invalid";
  std::string message;            // `Pod "x" is invalid: spec.containers: Required value`
  std::vector<FieldCause> causes;
};

struct AdmissionRequest {
  const ResourceInfo* resource = nullptr;
  std::string subresource;            // "" or "status"
  const boost::json::object* old = nullptr;  // the live object on update/patch; null on create
  const store::Store* store = nullptr;       // for lookups (PriorityClass, Queue, Namespace)
  int64_t now_unix = 0;
};

// Fills defaults into `obj` and validates it. On success `obj` is what should be stored (the
// handler still sets uid, creationTimestamp, resourceVersion and generation).
std::optional<AdmissionError> Admit(const AdmissionRequest& req, boost::json::object& obj);

}  // namespace muster::apiserver
