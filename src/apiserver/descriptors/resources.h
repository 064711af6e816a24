#pragma once

// The API server's resource registry: every resource it serves, with what discovery, OpenAPI,
// `kubectl get` tables and the REST handlers need to know about it. One table, built in one
// function (resources.cc); everything else looks resources up here.

#include <string>
#include <string_view>
#include <vector>

namespace muster::apiserver {

struct PrinterColumn {
  std::string name;       // "STATUS"
  std::string type;       // "string", "integer", "date"
  std::string json_path;  // ".status.state.phase" (CRD additionalPrinterColumns style)
  std::string description;
  int priority = 0;    // 1 = only with -o wide
  std::string format;  // "name" for the NAME column
};

struct ResourceInfo {
  std::string group;      // "" for the core group
  std::string version;    // "v1", "v1alpha1", "v1beta1"
  std::string resource;   // plural: "pods"
  std::string singular;   // "pod"
  std::string kind;       // "Pod"
  std::string list_kind;  // "PodList"
  bool namespaced = true;
  // Built-in Kubernetes kinds accept strategic merge patches; Volcano's custom kinds get 415.
  bool builtin = true;
  std::vector<std::string> short_names;
  std::vector<std::string> categories;
  std::vector<std::string> verbs;
  std::vector<std::string> subresources;  // "status", "binding", "eviction", "log"
  // A review (SelfSubjectAccessReview, SelfSubjectRulesReview, SelfSubjectReview): virtual and
  // create-only as upstream, never stored; POST answers with the object's status filled in
  // (reviews.cc). Everything that walks the stored resources skips these.
  bool review = false;
  // Whether writes of the object itself carry its status too, although /status is served: a
  // PodGroup's, whose Volcano CRD (and so muster's, crds.h) has no status subresource and whose
  // status vc-scheduler and muster write with the object.
  bool status_with_object = false;
  // A kind that `muster up` lists but runs no controller for (apps/v1 Deployments, volumes,
  // Ingress): why it refuses to store one (create, update, patch and apply are 405 with this
  // reason); empty for every kind it stores. Listing them empty is what `kubectl apply --prune`
  // and `kubectl cluster-info dump` need of a cluster; storing them would let a Deployment sit
  // there never starting a pod.
  std::string refuse_writes;
  // Volcano kinds: their CRDs' additionalPrinterColumns (built-in kinds have server-side column
  // code in tables.cc).
  std::vector<PrinterColumn> columns;

  // "v1" or "batch.volcano.sh/v1alpha1".
  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }
  // The store's resource key: "pods", "jobs.batch.volcano.sh".
  std::string StoreResource() const { return group.empty() ? resource : resource + "." + group; }
};

// Every served resource, in a stable order.
const std::vector<ResourceInfo>& AllResources();
// By URL parts; nullptr when not served.
const ResourceInfo* FindResource(std::string_view group, std::string_view version,
                                 std::string_view resource);
// By apiVersion and kind of an object; nullptr when not served.
const ResourceInfo* FindByKind(std::string_view api_version, std::string_view kind);

struct GroupVersion {
  std::string group;  // "" for the core group
  std::string version;
  bool operator==(const GroupVersion&) const = default;
};
// Every served group-version, core first, then in registry order; no duplicates.
std::vector<GroupVersion> ServedGroupVersions();
// The resources of one group-version, in registry order (empty when not served).
std::vector<const ResourceInfo*> ResourcesIn(std::string_view group, std::string_view version);

// What a subresource answers with, as discovery reports it.
struct SubresourceInfo {
  std::string group;  // of the response kind: "" for Binding, the parent's group otherwise
  std::string version;
  std::string kind;  // "Pod" for pods/status and pods/log, "Binding" for pods/binding, "Eviction"
  std::vector<std::string> verbs;
};
// Precondition: `subresource` is one of `resource.subresources`.
SubresourceInfo DescribeSubresource(const ResourceInfo& resource, std::string_view subresource);

}  // namespace muster::apiserver
