// What a fresh cluster has before anyone writes to it: the four namespaces and the two system
// PriorityClasses kube-apiserver creates (its scheduling storage's post-start hook,
// SystemPriorityClasses), and the two queues Volcano's scheduler creates (its cache's
// newDefaultAndRootQueue: root, weight 1 and not reclaimable, the top of every queue tree; default,
// weight 1 and reclaimable; both Open); and each namespace's "default" ServiceAccount.

#include "absl/status/status.h"
#include "apiserver/admission/admission.h"
#include "apiserver/handlers.h"
#include "boost/json/object.hpp"
#include "fmt/format.h"

namespace muster::apiserver {

namespace json = boost::json;

void Handlers::EnsureDefaultServiceAccount(const std::string& ns) {
  const ResourceInfo* accounts = FindResource("", "v1", "serviceaccounts");
  if (accounts == nullptr || store_.Get({accounts->StoreResource(), ns, "default"}).ok()) return;
  json::object obj{{"apiVersion", "v1"},
                   {"kind", "ServiceAccount"},
                   {"metadata", json::object{{"name", "default"}, {"namespace", ns}}}};
  (void)CreateObject(*accounts, ns, std::move(obj), false);
}

absl::Status Handlers::Bootstrap() {
  const ResourceInfo* namespaces = FindResource("", "v1", "namespaces");
  const ResourceInfo* queues = FindResource("scheduling.volcano.sh", "v1beta1", "queues");
  if (namespaces == nullptr || queues == nullptr) {
    return absl::InternalError("the registry lacks namespaces or queues");
  }
  for (const char* name : {"default", "kube-system", "kube-public", "kube-node-lease"}) {
    if (store_.Get({namespaces->StoreResource(), "", name}).ok()) continue;
    json::object obj;
    obj["apiVersion"] = "v1";
    obj["kind"] = "Namespace";
    obj["metadata"] = json::object{{"name", name},
                                   {"labels", json::object{{"kubernetes.io/metadata.name", name}}}};
    obj["spec"] = json::object{{"finalizers", json::array{"kubernetes"}}};
    auto created = CreateObject(*namespaces, "", std::move(obj), false);
    if (!created.ok() && created.error().reason != "AlreadyExists") {
      return absl::InternalError(
          fmt::format("creating namespace {}: {}", name, created.error().message));
    }
  }
  const ResourceInfo* classes = FindResource("scheduling.k8s.io", "v1", "priorityclasses");
  if (classes == nullptr) return absl::InternalError("the registry lacks priorityclasses");
  for (const SystemPriorityClass& pc : kSystemPriorityClasses) {
    if (store_.Get({classes->StoreResource(), "", pc.name}).ok()) continue;
    json::object obj;
    obj["apiVersion"] = "scheduling.k8s.io/v1";
    obj["kind"] = "PriorityClass";
    obj["metadata"] = json::object{{"name", pc.name}};
    obj["value"] = pc.value;
    obj["description"] = pc.description;
    auto created = CreateObject(*classes, "", std::move(obj), false);
    if (!created.ok() && created.error().reason != "AlreadyExists") {
      return absl::InternalError(
          fmt::format("creating priority class {}: {}", pc.name, created.error().message));
    }
  }
  const store::ListResult stored = store_.List(namespaces->StoreResource(), "");
  for (const store::Object& ns : stored.items) EnsureDefaultServiceAccount(ns.key.name);
  for (const char* name : {"root", "default"}) {
    if (store_.Get({queues->StoreResource(), "", name}).ok()) continue;
    json::object obj;
    obj["apiVersion"] = queues->ApiVersion();
    obj["kind"] = queues->kind;
    obj["metadata"] = json::object{{"name", name}};
    obj["spec"] =
        json::object{{"weight", 1}, {"reclaimable", std::string_view(name) != "root"}};
    auto created = CreateObject(*queues, "", std::move(obj), false);
    if (!created.ok() && created.error().reason != "AlreadyExists") {
      return absl::InternalError(
          fmt::format("creating queue {}: {}", name, created.error().message));
    }
  }
  return absl::OkStatus();
}

}  // namespace muster::apiserver
