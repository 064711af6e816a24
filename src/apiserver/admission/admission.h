#pragma once

// Admission: defaulting and validation of objects before they are stored, as kube-apiserver's
// built-in rules and Volcano's admission webhook do it (webhook messages kept verbatim from
// volcano-sh/volcano pkg/webhooks/admission/{jobs,podgroups,queues}/{mutate,validate}; each file
// of this folder names the upstream code it follows). Called by the REST handlers on create,
// update and patch. A refusal is the API server's own error (apiserver/api_error.h); the handler
// fills in its details (the object's name, kind and group) and renders it as a Status.

#include <cstdint>
#include <optional>
#include <string>

#include "apiserver/api_error.h"
#include "apiserver/descriptors/resources.h"
#include "boost/json/object.hpp"
#include "store/store.h"

namespace muster::apiserver {

// The PriorityClasses kube-apiserver creates at start-up (pkg/apis/scheduling
// SystemPriorityClasses): what Handlers::Bootstrap stores, and the only system-* names the
// PriorityClass rules allow.
struct SystemPriorityClass {
  const char* name;
  int64_t value;
  const char* description;
};
inline constexpr SystemPriorityClass kSystemPriorityClasses[] = {
    {"system-node-critical", 2000001000,
     "Used for system critical pods that must not be moved from their current node."},
    {"system-cluster-critical", 2000000000,
     "Used for system critical pods that must run in the cluster, but can be moved to another "
     "node if necessary."},
};

struct AdmissionRequest {
  const ResourceInfo* resource = nullptr;
  std::string subresource;                   // "" or "status"
  const boost::json::object* old = nullptr;  // the live object on update/patch; null on create
  const store::Store* store = nullptr;       // for lookups (PriorityClass, Queue, Namespace)
  int64_t now_unix = 0;
};

// Fills defaults into `obj` and validates it. On success `obj` is what should be stored (the
// handler still sets uid, creationTimestamp, resourceVersion and generation). A refusal carries
// code, reason, message and causes: 422 Invalid, 400 BadRequest (or a webhook's 400 with no
// reason), 403 Forbidden, 500 InternalError.
std::optional<ApiError> Admit(const AdmissionRequest& req, boost::json::object& obj);

// validatequeue.volcano.sh on DELETE (validateQueueDeleting), 400 as kube-apiserver passes a
// webhook's refusal on: root and default ("`root` queue can not be deleted"), and a queue that
// other queues name as their spec.parent ("queue org can not be deleted because it has 2 child
// queues: team-a, team-b"). nullopt when it may go.
std::optional<ApiError> AdmitQueueDelete(const store::Store* store, const std::string& name);

}  // namespace muster::apiserver
