#include "apiserver/descriptors/resources.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace muster::apiserver {
namespace {

// Verbs as kube-apiserver reports them, sorted (discovery clients compare them as sets).
const std::vector<std::string>& AllVerbs() {
  static const auto* const verbs = new std::vector<std::string>{
      "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"};
  return *verbs;
}

ResourceInfo Resource(std::string group, std::string version, std::string resource,
                      std::string singular, std::string kind, bool namespaced) {
  ResourceInfo info;
  info.group = std::move(group);
  info.version = std::move(version);
  info.resource = std::move(resource);
  info.singular = std::move(singular);
  info.list_kind = kind + "List";
  info.kind = std::move(kind);
  info.namespaced = namespaced;
  info.verbs = AllVerbs();
  return info;
}

PrinterColumn Column(std::string name, std::string type, std::string json_path,
                     std::string description, int priority = 0) {
  return PrinterColumn{std::move(name),        std::move(type), std::move(json_path),
                       std::move(description), priority,        ""};
}

// Core v1 -----------------------------------------------------------------------------------------

ResourceInfo Namespaces() {
  ResourceInfo info = Resource("", "v1", "namespaces", "namespace", "Namespace", false);
  // Upstream namespaces have no deletecollection.
  info.verbs = {"create", "delete", "get", "list", "patch", "update", "watch"};
  info.short_names = {"ns"};
  info.subresources = {"finalize", "status"};
  return info;
}

ResourceInfo Nodes() {
  ResourceInfo info = Resource("", "v1", "nodes", "node", "Node", false);
  info.short_names = {"no"};
  info.subresources = {"status"};
  return info;
}

ResourceInfo Pods() {
  ResourceInfo info = Resource("", "v1", "pods", "pod", "Pod", true);
  info.short_names = {"po"};
  info.categories = {"all"};
  // eviction: kube's EvictionREST (write_evict.cc), which `kubectl drain` posts to.
  info.subresources = {"attach", "binding", "eviction", "exec", "log", "portforward", "status"};
  return info;
}

ResourceInfo Events() {
  ResourceInfo info = Resource("", "v1", "events", "event", "Event", true);
  info.short_names = {"ev"};
  return info;
}

// Defaulted and given a cluster IP (and node ports) as kube-apiserver does (admission/services.cc;
// nothing routes to them): the job controller's svc plugin creates a Job's headless Service, and
// `kubectl cluster-info` lists kube-system's.
ResourceInfo Services() {
  ResourceInfo info = Resource("", "v1", "services", "service", "Service", true);
  info.short_names = {"svc"};
  info.categories = {"all"};
  return info;
}

// The svc job plugin keeps a Job's host lists in a ConfigMap.
ResourceInfo ConfigMaps() {
  ResourceInfo info = Resource("", "v1", "configmaps", "configmap", "ConfigMap", true);
  info.short_names = {"cm"};
  return info;
}

// Tokens, credentials and keys for pods: env (secretKeyRef, envFrom), volumes; Volcano's ssh
// plugin keeps a Job's keys in one. data is base64 as in kube (stringData is merged into it on
// write, admission/config_data.cc).
ResourceInfo Secrets() {
  return Resource("", "v1", "secrets", "secret", "Secret", true);
}

// The identities pods run as. Every namespace has "default" (the lifecycle pass creates it, as
// kube's serviceaccounts controller does); a pod naming one that does not exist is refused.
ResourceInfo ServiceAccounts() {
  ResourceInfo info =
      Resource("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", true);
  info.short_names = {"sa"};
  return info;
}

// The addresses behind a Service, as kube's endpoints controller keeps them; stored as written
// (a Service without a selector has the Endpoints its user writes).
ResourceInfo Endpoints() {
  ResourceInfo info = Resource("", "v1", "endpoints", "endpoints", "Endpoints", true);
  info.short_names = {"ep"};
  return info;
}

// Kinds `muster up` lists (empty) and does not store: kubectl's default prune set and
// `cluster-info dump` expect every one of them on a cluster, and nothing in `muster up` would act
// on one (no Deployment, ReplicaSet, StatefulSet, DaemonSet or ReplicationController controller,
// no volume provisioner, no ingress controller).
ResourceInfo ListedOnly(std::string group, std::string version, std::string resource,
                        std::string singular, std::string kind, bool namespaced,
                        std::vector<std::string> short_names, std::string_view runs_instead) {
  ResourceInfo info = Resource(std::move(group), version, std::move(resource),
                               std::move(singular), std::move(kind), namespaced);
  info.verbs = {"delete", "deletecollection", "get", "list", "watch"};
  info.short_names = std::move(short_names);
  info.refuse_writes = std::string("muster up runs no controller for ") + info.ApiVersion() +
                       " " + info.kind + " objects, so it stores none; " +
                       std::string(runs_instead);
  return info;
}

constexpr std::string_view kRunPodsInstead =
    "run the pods as a Pod, a Volcano Job or a batch/v1 Job";
constexpr std::string_view kNoVolumes =
    "pods on its nodes use hostPath, emptyDir, configMap and secret volumes";

std::vector<ResourceInfo> ListedOnlyKinds() {
  return {
      ListedOnly("", "v1", "replicationcontrollers", "replicationcontroller",
                 "ReplicationController", true, {"rc"}, kRunPodsInstead),
      ListedOnly("", "v1", "persistentvolumeclaims", "persistentvolumeclaim",
                 "PersistentVolumeClaim", true, {"pvc"}, kNoVolumes),
      ListedOnly("", "v1", "persistentvolumes", "persistentvolume", "PersistentVolume", false,
                 {"pv"}, kNoVolumes),
      ListedOnly("apps", "v1", "deployments", "deployment", "Deployment", true, {"deploy"},
                 kRunPodsInstead),
      ListedOnly("apps", "v1", "replicasets", "replicaset", "ReplicaSet", true, {"rs"},
                 kRunPodsInstead),
      ListedOnly("apps", "v1", "statefulsets", "statefulset", "StatefulSet", true, {"sts"},
                 kRunPodsInstead),
      ListedOnly("apps", "v1", "daemonsets", "daemonset", "DaemonSet", true, {"ds"},
                 kRunPodsInstead),
      ListedOnly("networking.k8s.io", "v1", "ingresses", "ingress", "Ingress", true, {"ing"},
                 "nothing routes to its Services' addresses"),
  };
}

// Other built-in groups ---------------------------------------------------------------------------

ResourceInfo PriorityClasses() {
  ResourceInfo info = Resource("scheduling.k8s.io", "v1", "priorityclasses", "priorityclass",
                               "PriorityClass", false);
  info.short_names = {"pc"};
  return info;
}

ResourceInfo Leases() {
  return Resource("coordination.k8s.io", "v1", "leases", "lease", "Lease", true);
}

// Budgets that pods/eviction honours, kept current by the disruption controller
// (controller/disruption_controller.h), as kube's policy/v1 PodDisruptionBudget.
ResourceInfo PodDisruptionBudgets() {
  ResourceInfo info = Resource("policy", "v1", "poddisruptionbudgets", "poddisruptionbudget",
                               "PodDisruptionBudget", true);
  info.short_names = {"pdb"};
  info.subresources = {"status"};
  return info;
}

// Kubernetes' own Jobs and CronJobs (batch/v1), run by the batch Job and CronJob controllers
// (controller/batch_job_controller.h, cronjob_controller.h). Listed before Volcano's Job: kubectl
// resolves a plural that two groups serve (`kubectl get jobs`) to the group discovery lists first,
// and kube-apiserver lists its own groups before any CRD's, so `jobs` is batch/v1 here as on a
// cluster with Volcano installed (Volcano's stays `vcjob` or `jobs.batch.volcano.sh`).
ResourceInfo BatchJobs() {
  ResourceInfo info = Resource("batch", "v1", "jobs", "job", "Job", true);
  info.categories = {"all"};
  info.subresources = {"status"};
  return info;
}

ResourceInfo CronJobs() {
  ResourceInfo info = Resource("batch", "v1", "cronjobs", "cronjob", "CronJob", true);
  info.short_names = {"cj"};
  info.categories = {"all"};
  info.subresources = {"status"};
  return info;
}

// apiextensions.k8s.io/v1 CustomResourceDefinition: what makes the resources of the dynamic
// registry (custom_resource.h, apiserver/resource_registry.h); checked and given its status by
// admission/customresourcedefinitions.cc.
ResourceInfo CustomResourceDefinitionsResource() {
  ResourceInfo info = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                               "customresourcedefinition", "CustomResourceDefinition", false);
  info.short_names = {"crd", "crds"};
  info.categories = {"api-extensions"};
  info.subresources = {"status"};
  return info;
}

// What the caller may do (`kubectl auth can-i`) and who it is (`kubectl auth whoami`): virtual,
// create-only, cluster-scoped, as kube-apiserver serves them.
ResourceInfo ReviewResource(std::string group, std::string resource, std::string singular,
                            std::string kind) {
  ResourceInfo info = Resource(std::move(group), "v1", std::move(resource), std::move(singular),
                               std::move(kind), false);
  info.verbs = {"create"};
  info.review = true;
  return info;
}

// Volcano custom resources: names, scopes and printer columns as in Volcano's CRDs
// (config/crd/volcano/bases/*.yaml). Column names keep the CRDs' spelling ("minAvailable");
// kubectl upper-cases headers.

ResourceInfo VolcanoJobs() {
  ResourceInfo info = Resource("batch.volcano.sh", "v1alpha1", "jobs", "job", "Job", true);
  info.builtin = false;
  info.short_names = {"vcjob", "vj"};
  info.subresources = {"status"};
  info.columns = {
      Column("STATUS", "string", ".status.state.phase", "The phase of the job"),
      Column("minAvailable", "integer", ".status.minAvailable",
             "The minimal available pods to run for this Job"),
      Column("RUNNINGS", "integer", ".status.running", "The number of running pods"),
      Column("AGE", "date", ".metadata.creationTimestamp", ""),
      Column("QUEUE", "string", ".spec.queue", "The queue the job is submitted to", 1),
  };
  return info;
}

ResourceInfo VolcanoQueues() {
  ResourceInfo info =
      Resource("scheduling.volcano.sh", "v1beta1", "queues", "queue", "Queue", false);
  info.builtin = false;
  info.short_names = {"q", "queue-v1beta1"};
  info.subresources = {"status"};
  // Volcano's CRD has PARENT only. The rest is muster's, here and in the CRD it ships: a queue's
  // share and use (each a resource list, printed as JSON) without -o custom-columns.
  info.columns = {
      Column("PARENT", "string", ".spec.parent", "The parent queue of this queue"),
      Column("DESERVED", "string", ".spec.deserved",
             "The resources this queue deserves (capacity plugin)"),
      Column("ALLOCATED", "string", ".status.allocated",
             "The resources allocated to this queue's jobs, its descendants' included"),
      Column("CAPABILITY", "string", ".spec.capability",
             "The most this queue may use (capacity plugin)", 1),
      Column("GUARANTEE", "string", ".spec.guarantee.resource",
             "The resources always left to this queue", 1),
      Column("STATE", "string", ".status.state", "The state of the queue", 1),
  };
  return info;
}

ResourceInfo VolcanoPodGroups() {
  ResourceInfo info =
      Resource("scheduling.volcano.sh", "v1beta1", "podgroups", "podgroup", "PodGroup", true);
  info.builtin = false;
  info.short_names = {"pg", "podgroup-v1beta1"};
  // The upstream CRD declares `subresources: {}`; vc-scheduler writes PodGroup status with a
  // full update. The status subresource is served in addition, so both paths must keep working.
  info.subresources = {"status"};
  info.status_with_object = true;
  info.columns = {
      Column("STATUS", "string", ".status.phase", "Current phase of PodGroup"),
      Column("minMember", "integer", ".spec.minMember",
             "The minimal number of members to run the pod group"),
      Column("RUNNINGS", "integer", ".status.running", "The number of actively running pods"),
      Column("AGE", "date", ".metadata.creationTimestamp", ""),
      Column("QUEUE", "string", ".spec.queue", "The queue of the pod group", 1),
  };
  return info;
}

// Volcano's network topology: racks and spines as groups of nodes (config/crd/volcano/bases/
// topology.volcano.sh_hypernodes.yaml: cluster-scoped, short name hn, its printer columns).
ResourceInfo VolcanoHyperNodes() {
  ResourceInfo info =
      Resource("topology.volcano.sh", "v1alpha1", "hypernodes", "hypernode", "HyperNode", false);
  info.builtin = false;
  info.short_names = {"hn"};
  info.subresources = {"status"};
  info.columns = {
      Column("Tier", "string", ".spec.tier", ""),
      Column("TierName", "string", ".spec.tierName", ""),
      Column("NodeCount", "integer", ".status.nodeCount", ""),
      Column("Age", "date", ".metadata.creationTimestamp", ""),
  };
  return info;
}

// What `vcctl job suspend|resume` and `vcctl queue operate` create: an action for a Job (the job
// controller) or a Queue (the queue controller), which deletes the Command once it has taken it.
// Volcano's CRD declares no printer columns, short names or subresources.
ResourceInfo VolcanoCommands() {
  ResourceInfo info =
      Resource("bus.volcano.sh", "v1alpha1", "commands", "command", "Command", true);
  info.builtin = false;
  return info;
}

std::vector<ResourceInfo> BuildRegistry() {
  std::vector<ResourceInfo> registry = {
      Namespaces(),
      Nodes(),
      Pods(),
      Events(),
      Services(),
      ConfigMaps(),
      Secrets(),
      ServiceAccounts(),
      Endpoints(),
      PriorityClasses(),
      Leases(),
      PodDisruptionBudgets(),
      BatchJobs(),
      CronJobs(),
      CustomResourceDefinitionsResource(),
      ReviewResource("authentication.k8s.io", "selfsubjectreviews", "selfsubjectreview",
                     "SelfSubjectReview"),
      ReviewResource("authorization.k8s.io", "selfsubjectaccessreviews",
                     "selfsubjectaccessreview", "SelfSubjectAccessReview"),
      ReviewResource("authorization.k8s.io", "selfsubjectrulesreviews",
                     "selfsubjectrulesreview", "SelfSubjectRulesReview"),
      VolcanoJobs(),
      VolcanoQueues(),
      VolcanoPodGroups(),
      VolcanoCommands(),
      VolcanoHyperNodes()};
  for (ResourceInfo& info : ListedOnlyKinds()) registry.push_back(std::move(info));
  return registry;
}

}  // namespace

const std::vector<ResourceInfo>& AllResources() {
  static const auto* const registry = new std::vector<ResourceInfo>(BuildRegistry());
  return *registry;
}

ResourceSet::ResourceSet(std::vector<std::shared_ptr<const ResourceInfo>> resources)
    : resources_(std::move(resources)) {}

std::shared_ptr<const ResourceInfo> ResourceSet::Find(std::string_view group,
                                                      std::string_view version,
                                                      std::string_view resource) const {
  for (const auto& info : resources_) {
    if (info->group == group && info->version == version && info->resource == resource) {
      return info;
    }
  }
  return nullptr;
}

std::shared_ptr<const ResourceInfo> ResourceSet::FindByKind(std::string_view api_version,
                                                            std::string_view kind) const {
  for (const auto& info : resources_) {
    if (info->kind == kind && info->ApiVersion() == api_version) return info;
  }
  return nullptr;
}

std::vector<GroupVersion> ResourceSet::GroupVersions() const {
  std::vector<GroupVersion> result;
  for (const auto& info : resources_) {
    GroupVersion gv{info->group, info->version};
    if (std::find(result.begin(), result.end(), gv) == result.end()) result.push_back(gv);
  }
  // Core first (it is served at /api, the rest at /apis); stable for the rest.
  std::stable_partition(result.begin(), result.end(),
                        [](const GroupVersion& gv) { return gv.group.empty(); });
  return result;
}

std::vector<const ResourceInfo*> ResourceSet::In(std::string_view group,
                                                 std::string_view version) const {
  std::vector<const ResourceInfo*> result;
  for (const auto& info : resources_) {
    if (info->group == group && info->version == version) result.push_back(info.get());
  }
  return result;
}

const std::shared_ptr<const ResourceSet>& BuiltinResources() {
  static const auto* const set = [] {
    std::vector<std::shared_ptr<const ResourceInfo>> entries;
    // The table is never freed: the entries share no ownership of it.
    for (const ResourceInfo& info : AllResources()) {
      entries.emplace_back(std::shared_ptr<const ResourceInfo>(), &info);
    }
    return new std::shared_ptr<const ResourceSet>(
        std::make_shared<const ResourceSet>(std::move(entries)));
  }();
  return *set;
}

const ResourceInfo* FindResource(std::string_view group, std::string_view version,
                                 std::string_view resource) {
  return BuiltinResources()->Find(group, version, resource).get();
}

const ResourceInfo* FindByKind(std::string_view api_version, std::string_view kind) {
  return BuiltinResources()->FindByKind(api_version, kind).get();
}

std::vector<GroupVersion> ServedGroupVersions() { return BuiltinResources()->GroupVersions(); }

std::vector<const ResourceInfo*> ResourcesIn(std::string_view group, std::string_view version) {
  return BuiltinResources()->In(group, version);
}

SubresourceInfo DescribeSubresource(const ResourceInfo& resource, std::string_view subresource) {
  if (subresource == "binding") return {"", "v1", "Binding", {"create"}};
  if (subresource == "eviction") return {"policy", "v1", "Eviction", {"create"}};
  if (subresource == "scale") return {"autoscaling", "v1", "Scale", {"get", "patch", "update"}};
  if (subresource == "log") return {resource.group, resource.version, resource.kind, {"get"}};
  if (subresource == "exec") return {"", "v1", "PodExecOptions", {"create", "get"}};
  if (subresource == "attach") return {"", "v1", "PodAttachOptions", {"create", "get"}};
  if (subresource == "portforward") return {"", "v1", "PodPortForwardOptions", {"create", "get"}};
  if (subresource == "finalize") {
    return {resource.group, resource.version, resource.kind, {"update"}};
  }
  return {resource.group, resource.version, resource.kind, {"get", "patch", "update"}};
}

}  // namespace muster::apiserver
