#pragma once

// The API server's resource registry: every resource it serves, with what discovery, OpenAPI,
// `kubectl get` tables and the REST handlers need to know about it. The compiled-in table is
// built in one function (resources.cc); a server adds the custom resources of its established
// CustomResourceDefinitions at run time (apiserver/resource_registry.h), each change giving a new
// immutable ResourceSet. Everything else looks resources up in one of these.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace muster::apiserver {

// What a CustomResourceDefinition says of a resource beyond the fields below: its schema,
// subresources and versions (custom_resource.h).
struct CustomResourceSpec;

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
  // Set for a resource that a CustomResourceDefinition stored in this server defines (served
  // from the dynamic registry); null for the compiled-in table, Volcano's kinds included.
  std::shared_ptr<const CustomResourceSpec> custom;

  // "v1" or "batch.volcano.sh/v1alpha1".
  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }
  // The store's resource key: "pods", "jobs.batch.volcano.sh".
  std::string StoreResource() const { return group.empty() ? resource : resource + "." + group; }
};

struct GroupVersion {
  std::string group;  // "" for the core group
  std::string version;
  bool operator==(const GroupVersion&) const = default;
};

// An immutable set of served resources: the compiled-in table, then the custom resources of a
// server's established CustomResourceDefinitions. Lookups are linear over a few dozen entries.
// Thread-safe: it never changes; a pointer it returns lives as long as the set (or the entry's
// shared_ptr from all()).
class ResourceSet {
 public:
  explicit ResourceSet(std::vector<std::shared_ptr<const ResourceInfo>> resources);

  const std::vector<std::shared_ptr<const ResourceInfo>>& all() const { return resources_; }
  // By URL parts; null when not served.
  std::shared_ptr<const ResourceInfo> Find(std::string_view group, std::string_view version,
                                           std::string_view resource) const;
  // By apiVersion and kind of an object; null when not served.
  std::shared_ptr<const ResourceInfo> FindByKind(std::string_view api_version,
                                                 std::string_view kind) const;
  // Every served group-version, core first, then in set order; no duplicates.
  std::vector<GroupVersion> GroupVersions() const;
  // The resources of one group-version, in set order (empty when not served).
  std::vector<const ResourceInfo*> In(std::string_view group, std::string_view version) const;

 private:
  std::vector<std::shared_ptr<const ResourceInfo>> resources_;
};

// The compiled-in table as a set (what a server without CustomResourceDefinitions serves).
const std::shared_ptr<const ResourceSet>& BuiltinResources();

// The compiled-in table, in a stable order; the functions below look only there, and what they
// return lives for the life of the process.
const std::vector<ResourceInfo>& AllResources();
// By URL parts; nullptr when not served.
const ResourceInfo* FindResource(std::string_view group, std::string_view version,
                                 std::string_view resource);
// By apiVersion and kind of an object; nullptr when not served.
const ResourceInfo* FindByKind(std::string_view api_version, std::string_view kind);
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
