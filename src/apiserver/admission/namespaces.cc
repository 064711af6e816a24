#include "apiserver/admission/kinds.h"

// Namespaces: what kube-apiserver fills in (pkg/registry/core/namespace/strategy.go:
// PrepareForCreate, the kubernetes finalizer and phase Active; Canonicalize and
// pkg/apis/core/v1/defaults.go SetDefaults_Namespace, the kubernetes.io/metadata.name label), and
// the NamespaceLifecycle admission plugin (plugin/pkg/admission/namespace/lifecycle) for objects
// created in a namespace.

#include <optional>

#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "fmt/format.h"

namespace muster::apiserver::admission {

// NamespaceLifecycle: nothing new in a namespace that is being deleted.
std::optional<ApiError> CheckNamespaceLifecycle(const Context& c) {
  if (!c.create() || !c.res.namespaced || c.ns.empty()) return std::nullopt;
  std::optional<json::object> ns = GetObject(c.req.store, kNamespacesResource, "", c.ns);
  if (!ns) return std::nullopt;  // a missing namespace is the handler's 404
  const json::object* ns_meta = FindObject(*ns, "metadata");
  bool terminating = NestedString(*ns, "status", "phase") == "Terminating" ||
                     (ns_meta != nullptr && ns_meta->contains("deletionTimestamp"));
  if (!terminating) return std::nullopt;
  ApiError err = ForbiddenError(
      c.res, c.name,
      fmt::format("unable to create new content in namespace {} because it is being terminated",
                  c.ns));
  err.causes.push_back({"NamespaceTerminating",
                        fmt::format("namespace {} is being terminated", c.ns),
                        "metadata.namespace"});
  return err;
}

std::optional<ApiError> AdmitNamespace(Context& c) {
  json::object* meta = EnsureObject(c.obj, "metadata");
  if (meta != nullptr && !c.name.empty()) {
    // The NamespaceDefaultLabelName feature (GA in 1.22): the name as a label.
    if (json::object* labels = EnsureObject(*meta, "labels")) {
      (*labels)["kubernetes.io/metadata.name"] = c.name;
    }
  }
  if (c.create()) {
    json::object* spec = EnsureObject(c.obj, "spec");
    if (spec != nullptr && IsAbsent(spec->if_contains("finalizers"))) {
      (*spec)["finalizers"] = json::array{"kubernetes"};
    }
    c.obj["status"] = json::object{{"phase", "Active"}};
  }
  return std::nullopt;
}

}  // namespace muster::apiserver::admission
