// Tests of the API server's descriptors: the resource registry, discovery, OpenAPI documents and
// `kubectl get` tables. Expectations come from what kubectl 1.32 reads on the wire (aggregated
// discovery as client-go discovery/aggregated_discovery.go reads it, KEP-3352; the OpenAPI v3
// checks of cli-runtime pkg/resource/query_param_verifier_v3.go; meta.k8s.io/v1 Tables) and from
// kube-apiserver's own printers (pkg/printers/internalversion/printers.go).

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "api/time.h"
#include "apiserver/descriptors/discovery.h"
#include "apiserver/descriptors/openapi.h"
#include "apiserver/descriptors/resources.h"
#include "apiserver/descriptors/schemas/schema_files.h"
#include "apiserver/descriptors/tables.h"
#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::apiserver {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

// --- Helpers
// ---------------------------------------------------------------------------------------

const value* At(const value& v, std::initializer_list<std::string_view> keys) {
  const value* cur = &v;
  for (std::string_view key : keys) {
    if (cur == nullptr || !cur->is_object()) return nullptr;
    auto it = cur->get_object().find(key);
    cur = it == cur->get_object().end() ? nullptr : &it->value();
  }
  return cur;
}

std::string Str(const value* v) {
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : "<missing>";
}

std::vector<std::string> Strings(const value* v) {
  std::vector<std::string> out;
  if (v == nullptr || !v->is_array()) return out;
  for (const value& s : v->get_array()) out.push_back(Str(&s));
  return out;
}

// The element of an array of objects whose `key` is `name`.
const value* Named(const value* list, std::string_view key, std::string_view name) {
  if (list == nullptr || !list->is_array()) return nullptr;
  for (const value& item : list->get_array()) {
    if (Str(At(item, {key})) == name) return &item;
  }
  return nullptr;
}

const ResourceInfo& Res(std::string_view group, std::string_view resource) {
  for (const ResourceInfo& info : AllResources()) {
    if (info.group == group && info.resource == resource) return info;
  }
  ADD_FAILURE() << "no resource " << resource << "." << group;
  return AllResources().front();
}

// A fixed clock: every timestamp in the fixtures is relative to it.
constexpr std::string_view kNowText = "2024-05-01T12:00:00Z";
int64_t Now() { return *api::ParseUnixTime(kNowText); }

// Builds a Pod as the API server stores it.
class MakePod {
 public:
  explicit MakePod(std::string_view name) {
    pod_ = boost::json::parse(R"({"apiVersion":"v1","kind":"Pod",
        "metadata":{"namespace":"default","uid":"u-1","resourceVersion":"7",
                    "creationTimestamp":"2024-05-01T11:55:00Z","labels":{"app":"x"}},
        "spec":{"containers":[]},"status":{"phase":"Pending"}})")
               .as_object();
    pod_["metadata"].as_object()["name"] = name;
  }
  MakePod& Container(std::string_view name) {
    pod_["spec"].as_object()["containers"].as_array().emplace_back(object{{"name", name}});
    return *this;
  }
  MakePod& InitContainer(std::string_view name, bool sidecar = false) {
    object c{{"name", name}};
    if (sidecar) c["restartPolicy"] = "Always";
    Spec()["initContainers"].emplace_array().emplace_back(std::move(c));
    return *this;
  }
  MakePod& Phase(std::string_view phase) {
    Status()["phase"] = phase;
    return *this;
  }
  MakePod& Node(std::string_view node) {
    Spec()["nodeName"] = node;
    return *this;
  }
  MakePod& PodIp(std::string_view ip) {
    Status()["podIP"] = ip;
    Status()["podIPs"] = array{object{{"ip", ip}}};
    return *this;
  }
  MakePod& Nominated(std::string_view node) {
    Status()["nominatedNodeName"] = node;
    return *this;
  }
  // `state` is a ContainerState JSON, e.g. {"running":{}}.
  MakePod& ContainerStatus(std::string_view name, bool ready, std::string_view state,
                           int restarts = 0, std::string_view last_finished = "") {
    object cs{{"name", name},
              {"ready", ready},
              {"restartCount", restarts},
              {"state", boost::json::parse(state)}};
    if (!last_finished.empty()) {
      cs["lastState"] =
          object{{"terminated", object{{"exitCode", 1}, {"finishedAt", last_finished}}}};
    }
    StatusArray("containerStatuses").emplace_back(std::move(cs));
    return *this;
  }
  MakePod& InitContainerStatus(std::string_view name, std::string_view state, bool started = false,
                               bool ready = false) {
    StatusArray("initContainerStatuses")
        .emplace_back(object{{"name", name},
                             {"ready", ready},
                             {"started", started},
                             {"restartCount", 0},
                             {"state", boost::json::parse(state)}});
    return *this;
  }
  MakePod& Condition(std::string_view type, std::string_view status, std::string_view reason = "") {
    object c{{"type", type}, {"status", status}};
    if (!reason.empty()) c["reason"] = reason;
    StatusArray("conditions").emplace_back(std::move(c));
    return *this;
  }
  MakePod& ReadinessGate(std::string_view condition_type) {
    if (!Spec().contains("readinessGates")) Spec()["readinessGates"] = array{};
    Spec()["readinessGates"].as_array().emplace_back(object{{"conditionType", condition_type}});
    return *this;
  }
  MakePod& Deleting() {
    pod_["metadata"].as_object()["deletionTimestamp"] = "2024-05-01T11:59:50Z";
    return *this;
  }
  value Obj() const { return pod_; }

 private:
  object& Spec() { return pod_["spec"].as_object(); }
  object& Status() { return pod_["status"].as_object(); }
  array& StatusArray(std::string_view key) {
    if (!Status().contains(key)) Status()[key] = array{};
    return Status()[key].as_array();
  }
  object pod_;
};

array Cells(const ResourceInfo& resource, const value& obj) {
  return TableCells(resource, obj, Now());
}

// --- Registry ------------------------------------------------------------------------------------

TEST(RegistryTest, FindsResourcesByUrlParts) {
  const ResourceInfo* pods = FindResource("", "v1", "pods");
  ASSERT_NE(pods, nullptr);
  EXPECT_EQ(pods->kind, "Pod");
  EXPECT_EQ(pods->list_kind, "PodList");
  EXPECT_EQ(pods->singular, "pod");
  EXPECT_TRUE(pods->namespaced);
  EXPECT_TRUE(pods->builtin);
  EXPECT_THAT(pods->short_names, ElementsAre("po"));
  EXPECT_THAT(pods->categories, ElementsAre("all"));
  EXPECT_THAT(pods->subresources, UnorderedElementsAre("status", "binding", "eviction", "log",
                                                      "exec", "attach", "portforward"));
  EXPECT_EQ(pods->ApiVersion(), "v1");
  EXPECT_EQ(pods->StoreResource(), "pods");

  const ResourceInfo* jobs = FindResource("batch.volcano.sh", "v1alpha1", "jobs");
  ASSERT_NE(jobs, nullptr);
  EXPECT_EQ(jobs->kind, "Job");
  EXPECT_FALSE(jobs->builtin);
  EXPECT_THAT(jobs->short_names, ElementsAre("vcjob", "vj"));
  EXPECT_THAT(jobs->subresources, ElementsAre("status"));
  EXPECT_EQ(jobs->ApiVersion(), "batch.volcano.sh/v1alpha1");
  EXPECT_EQ(jobs->StoreResource(), "jobs.batch.volcano.sh");

  const ResourceInfo* queues = FindResource("scheduling.volcano.sh", "v1beta1", "queues");
  ASSERT_NE(queues, nullptr);
  EXPECT_FALSE(queues->namespaced);
  EXPECT_THAT(queues->short_names, ElementsAre("q", "queue-v1beta1"));

  const ResourceInfo* podgroups = FindResource("scheduling.volcano.sh", "v1beta1", "podgroups");
  ASSERT_NE(podgroups, nullptr);
  EXPECT_TRUE(podgroups->namespaced);
  EXPECT_THAT(podgroups->short_names, ElementsAre("pg", "podgroup-v1beta1"));

  EXPECT_FALSE(FindResource("", "v1", "nodes")->namespaced);
  EXPECT_FALSE(FindResource("", "v1", "namespaces")->namespaced);
  EXPECT_THAT(FindResource("", "v1", "events")->short_names, ElementsAre("ev"));
  EXPECT_THAT(FindResource("scheduling.k8s.io", "v1", "priorityclasses")->short_names,
              ElementsAre("pc"));
  EXPECT_NE(FindResource("coordination.k8s.io", "v1", "leases"), nullptr);
  EXPECT_NE(FindResource("", "v1", "services"), nullptr);

  EXPECT_EQ(FindResource("", "v1", "jobs"), nullptr);
  EXPECT_EQ(FindResource("batch.volcano.sh", "v1", "jobs"), nullptr);
  EXPECT_EQ(FindResource("", "v1", "pod"), nullptr);
}

TEST(RegistryTest, FindsResourcesByKind) {
  ASSERT_NE(FindByKind("v1", "Pod"), nullptr);
  EXPECT_EQ(FindByKind("v1", "Pod")->resource, "pods");
  EXPECT_EQ(FindByKind("batch.volcano.sh/v1alpha1", "Job")->resource, "jobs");
  EXPECT_EQ(FindByKind("scheduling.volcano.sh/v1beta1", "Queue")->resource, "queues");
  EXPECT_EQ(FindByKind("scheduling.k8s.io/v1", "PriorityClass")->resource, "priorityclasses");
  EXPECT_EQ(FindByKind("batch/v1", "Job")->resource, "jobs");
  EXPECT_EQ(FindByKind("batch/v1", "CronJob")->resource, "cronjobs");
  EXPECT_EQ(FindByKind("v1", "Job"), nullptr);
  EXPECT_EQ(FindByKind("v1", "PodList"), nullptr);
}

TEST(RegistryTest, EveryResourceIsWellFormedAndUnique) {
  std::set<std::string> keys;
  std::set<std::string> short_names;
  for (const ResourceInfo& info : AllResources()) {
    SCOPED_TRACE(info.StoreResource());
    EXPECT_TRUE(keys.insert(info.StoreResource()).second);
    EXPECT_EQ(info.list_kind, info.kind + "List");
    EXPECT_FALSE(info.singular.empty());
    EXPECT_THAT(info.verbs, Not(IsEmpty()));
    EXPECT_EQ(FindResource(info.group, info.version, info.resource), &info);
    EXPECT_EQ(FindByKind(info.ApiVersion(), info.kind), &info);
    for (const std::string& s : info.short_names) EXPECT_TRUE(short_names.insert(s).second) << s;
    // Custom resources describe their columns (a Command's CRD has none: NAME and AGE);
    // built-ins print with code in tables.cc.
    EXPECT_EQ(info.builtin || info.kind == "Command", info.columns.empty());
  }
}

TEST(RegistryTest, ServedGroupVersionsListCoreFirst) {
  std::vector<GroupVersion> gvs = ServedGroupVersions();
  ASSERT_FALSE(gvs.empty());
  EXPECT_EQ(gvs.front(), (GroupVersion{"", "v1"}));
  EXPECT_THAT(gvs,
              UnorderedElementsAre(GroupVersion{"", "v1"}, GroupVersion{"scheduling.k8s.io", "v1"},
                                   GroupVersion{"coordination.k8s.io", "v1"},
                                   GroupVersion{"policy", "v1"}, GroupVersion{"batch", "v1"},
                                   GroupVersion{"apiextensions.k8s.io", "v1"},
                                   GroupVersion{"authentication.k8s.io", "v1"},
                                   GroupVersion{"authorization.k8s.io", "v1"},
                                   GroupVersion{"batch.volcano.sh", "v1alpha1"},
                                   GroupVersion{"scheduling.volcano.sh", "v1beta1"},
                                   GroupVersion{"bus.volcano.sh", "v1alpha1"},
                                   GroupVersion{"topology.volcano.sh", "v1alpha1"},
                                   GroupVersion{"apps", "v1"},
                                   GroupVersion{"networking.k8s.io", "v1"}));
  std::vector<std::string> volcano;
  for (const ResourceInfo* r : ResourcesIn("scheduling.volcano.sh", "v1beta1")) {
    volcano.push_back(r->resource);
  }
  EXPECT_THAT(volcano, UnorderedElementsAre("queues", "podgroups"));
  EXPECT_THAT(ResourcesIn("batch", "v2"), IsEmpty());
}

TEST(RegistryTest, DescribesSubresources) {
  const ResourceInfo& pods = Res("", "pods");
  SubresourceInfo binding = DescribeSubresource(pods, "binding");
  EXPECT_EQ(binding.kind, "Binding");
  EXPECT_THAT(binding.verbs, ElementsAre("create"));
  EXPECT_EQ(DescribeSubresource(pods, "log").kind, "Pod");
  EXPECT_THAT(DescribeSubresource(pods, "log").verbs, ElementsAre("get"));
  SubresourceInfo status = DescribeSubresource(Res("batch.volcano.sh", "jobs"), "status");
  EXPECT_EQ(status.group, "batch.volcano.sh");
  EXPECT_EQ(status.kind, "Job");
  EXPECT_THAT(status.verbs, ElementsAre("get", "patch", "update"));
}

// --- Discovery -----------------------------------------------------------------------------------

TEST(DiscoveryTest, AggregatedCoreGroupHasWhatKubectlNeeds) {
  value doc = AggregatedDiscovery(/*core_group=*/true);
  EXPECT_EQ(Str(At(doc, {"kind"})), "APIGroupDiscoveryList");
  EXPECT_EQ(Str(At(doc, {"apiVersion"})), "apidiscovery.k8s.io/v2");
  ASSERT_TRUE(At(doc, {"metadata"})->is_object());
  const array& items = At(doc, {"items"})->as_array();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(Str(At(items[0], {"metadata", "name"})), "");
  const array& versions = At(items[0], {"versions"})->as_array();
  ASSERT_EQ(versions.size(), 1u);
  EXPECT_EQ(Str(At(versions[0], {"version"})), "v1");
  EXPECT_EQ(Str(At(versions[0], {"freshness"})), "Current");

  const value* resources = At(versions[0], {"resources"});
  const value* pods = Named(resources, "resource", "pods");
  ASSERT_NE(pods, nullptr);
  EXPECT_EQ(Str(At(*pods, {"scope"})), "Namespaced");
  EXPECT_EQ(Str(At(*pods, {"singularResource"})), "pod");
  EXPECT_EQ(Str(At(*pods, {"responseKind", "kind"})), "Pod");
  EXPECT_EQ(Str(At(*pods, {"responseKind", "version"})), "v1");
  EXPECT_EQ(Str(At(*pods, {"responseKind", "group"})), "");
  EXPECT_THAT(Strings(At(*pods, {"verbs"})),
              ElementsAre("create", "delete", "deletecollection", "get", "list", "patch", "update",
                          "watch"));
  EXPECT_THAT(Strings(At(*pods, {"shortNames"})), ElementsAre("po"));
  EXPECT_THAT(Strings(At(*pods, {"categories"})), ElementsAre("all"));
  const value* binding = Named(At(*pods, {"subresources"}), "subresource", "binding");
  ASSERT_NE(binding, nullptr);
  EXPECT_EQ(Str(At(*binding, {"responseKind", "kind"})), "Binding");
  EXPECT_THAT(Strings(At(*binding, {"verbs"})), ElementsAre("create"));
  ASSERT_NE(Named(At(*pods, {"subresources"}), "subresource", "log"), nullptr);
  ASSERT_NE(Named(At(*pods, {"subresources"}), "subresource", "status"), nullptr);
  // kubectl drain evicts through pods/eviction only where discovery names policy/v1 Eviction.
  const value* eviction = Named(At(*pods, {"subresources"}), "subresource", "eviction");
  ASSERT_NE(eviction, nullptr);
  EXPECT_EQ(Str(At(*eviction, {"responseKind", "group"})), "policy");
  EXPECT_EQ(Str(At(*eviction, {"responseKind", "version"})), "v1");
  EXPECT_EQ(Str(At(*eviction, {"responseKind", "kind"})), "Eviction");
  EXPECT_THAT(Strings(At(*eviction, {"verbs"})), ElementsAre("create"));

  const value* nodes = Named(resources, "resource", "nodes");
  ASSERT_NE(nodes, nullptr);
  EXPECT_EQ(Str(At(*nodes, {"scope"})), "Cluster");
  EXPECT_THAT(Strings(At(*nodes, {"shortNames"})), ElementsAre("no"));
  EXPECT_EQ(At(*nodes, {"categories"}), nullptr);  // only pods (and services) are in "all"
  for (std::string_view r : {"namespaces", "events", "services"}) {
    EXPECT_NE(Named(resources, "resource", r), nullptr) << r;
  }
  EXPECT_EQ(Named(resources, "resource", "jobs"), nullptr);
}

TEST(DiscoveryTest, AggregatedGroupsListVolcanoKinds) {
  value doc = AggregatedDiscovery(/*core_group=*/false);
  const value* items = At(doc, {"items"});
  ASSERT_NE(items, nullptr);
  std::vector<std::string> groups;
  for (const value& item : items->as_array()) groups.push_back(Str(At(item, {"metadata", "name"})));
  EXPECT_THAT(groups, UnorderedElementsAre("scheduling.k8s.io", "coordination.k8s.io", "policy",
                                           "batch", "apiextensions.k8s.io", "authentication.k8s.io",
                                           "authorization.k8s.io", "batch.volcano.sh",
                                           "scheduling.volcano.sh", "bus.volcano.sh",
                                           "topology.volcano.sh", "apps", "networking.k8s.io"));
  // kubectl resolves `jobs`, which both batch and batch.volcano.sh serve, to the group listed
  // first: Kubernetes' own, as kube-apiserver lists its groups before any CRD's.
  const auto batch_at = std::find(groups.begin(), groups.end(), "batch");
  const auto volcano_at = std::find(groups.begin(), groups.end(), "batch.volcano.sh");
  EXPECT_LT(batch_at, volcano_at);

  const value* batch = Named(items, "metadata", "");  // no group may be unnamed
  EXPECT_EQ(batch, nullptr);
  for (const value& item : items->as_array()) {
    if (Str(At(item, {"metadata", "name"})) != "batch.volcano.sh") continue;
    const value& version = At(item, {"versions"})->as_array().at(0);
    EXPECT_EQ(Str(At(version, {"version"})), "v1alpha1");
    const value* jobs = Named(At(version, {"resources"}), "resource", "jobs");
    ASSERT_NE(jobs, nullptr);
    EXPECT_EQ(Str(At(*jobs, {"singularResource"})), "job");
    EXPECT_EQ(Str(At(*jobs, {"scope"})), "Namespaced");
    EXPECT_EQ(Str(At(*jobs, {"responseKind", "group"})), "batch.volcano.sh");
    EXPECT_EQ(Str(At(*jobs, {"responseKind", "version"})), "v1alpha1");
    EXPECT_EQ(Str(At(*jobs, {"responseKind", "kind"})), "Job");
    EXPECT_THAT(Strings(At(*jobs, {"shortNames"})), ElementsAre("vcjob", "vj"));
    const value* status = Named(At(*jobs, {"subresources"}), "subresource", "status");
    ASSERT_NE(status, nullptr);
    EXPECT_THAT(Strings(At(*status, {"verbs"})), ElementsAre("get", "patch", "update"));
    EXPECT_EQ(Str(At(*status, {"responseKind", "kind"})), "Job");
  }
  for (const value& item : items->as_array()) {
    if (Str(At(item, {"metadata", "name"})) != "scheduling.volcano.sh") continue;
    const value* resources = At(item.as_object().at("versions").as_array().at(0), {"resources"});
    const value* queues = Named(resources, "resource", "queues");
    ASSERT_NE(queues, nullptr);
    EXPECT_EQ(Str(At(*queues, {"scope"})), "Cluster");
    EXPECT_THAT(Strings(At(*queues, {"shortNames"})), ElementsAre("q", "queue-v1beta1"));
    const value* podgroups = Named(resources, "resource", "podgroups");
    ASSERT_NE(podgroups, nullptr);
    EXPECT_EQ(Str(At(*podgroups, {"scope"})), "Namespaced");
    EXPECT_THAT(Strings(At(*podgroups, {"shortNames"})), ElementsAre("pg", "podgroup-v1beta1"));
  }
}

TEST(DiscoveryTest, ContentTypeAndAcceptNegotiation) {
  EXPECT_EQ(kAggregatedDiscoveryContentType,
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
  EXPECT_TRUE(AcceptsAggregatedDiscovery(
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;"
      "g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"));
  EXPECT_TRUE(AcceptsAggregatedDiscovery(
      "application/json; as=APIGroupDiscoveryList; v=v2; g=apidiscovery.k8s.io"));
  EXPECT_FALSE(AcceptsAggregatedDiscovery("application/json"));
  EXPECT_FALSE(AcceptsAggregatedDiscovery(
      "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"));
  EXPECT_FALSE(AcceptsAggregatedDiscovery(""));
}

TEST(DiscoveryTest, LegacyDocuments) {
  value versions = LegacyApiVersions("127.0.0.1:6443");
  EXPECT_EQ(Str(At(versions, {"kind"})), "APIVersions");
  EXPECT_THAT(Strings(At(versions, {"versions"})), ElementsAre("v1"));
  EXPECT_EQ(Str(&At(versions, {"serverAddressByClientCIDRs"})
                     ->as_array()[0]
                     .as_object()
                     .at("serverAddress")),
            "127.0.0.1:6443");

  value groups = LegacyApiGroupList();
  EXPECT_EQ(Str(At(groups, {"kind"})), "APIGroupList");
  EXPECT_EQ(Str(At(groups, {"apiVersion"})), "v1");
  const value* batch = Named(At(groups, {"groups"}), "name", "batch.volcano.sh");
  ASSERT_NE(batch, nullptr);
  EXPECT_EQ(Str(At(*batch, {"preferredVersion", "groupVersion"})), "batch.volcano.sh/v1alpha1");
  EXPECT_EQ(Str(At(*batch, {"preferredVersion", "version"})), "v1alpha1");
  EXPECT_EQ(Named(At(groups, {"groups"}), "name", ""), nullptr);

  std::optional<value> group = LegacyApiGroup("scheduling.volcano.sh");
  ASSERT_TRUE(group.has_value());
  EXPECT_EQ(Str(At(*group, {"kind"})), "APIGroup");
  EXPECT_EQ(Str(At(*group, {"preferredVersion", "version"})), "v1beta1");
  EXPECT_FALSE(LegacyApiGroup("storage.k8s.io").has_value());

  std::optional<value> list = ApiResourceList("batch.volcano.sh", "v1alpha1");
  ASSERT_TRUE(list.has_value());
  EXPECT_EQ(Str(At(*list, {"kind"})), "APIResourceList");
  EXPECT_EQ(Str(At(*list, {"groupVersion"})), "batch.volcano.sh/v1alpha1");
  const value* jobs = Named(At(*list, {"resources"}), "name", "jobs");
  ASSERT_NE(jobs, nullptr);
  EXPECT_EQ(Str(At(*jobs, {"singularName"})), "job");
  EXPECT_TRUE(At(*jobs, {"namespaced"})->as_bool());
  EXPECT_EQ(Str(At(*jobs, {"kind"})), "Job");
  EXPECT_THAT(Strings(At(*jobs, {"shortNames"})), ElementsAre("vcjob", "vj"));
  const value* status = Named(At(*list, {"resources"}), "name", "jobs/status");
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(Str(At(*status, {"singularName"})), "");
  EXPECT_THAT(Strings(At(*status, {"verbs"})), ElementsAre("get", "patch", "update"));

  std::optional<value> core = ApiResourceList("", "v1");
  ASSERT_TRUE(core.has_value());
  EXPECT_EQ(Str(At(*core, {"groupVersion"})), "v1");
  const value* binding = Named(At(*core, {"resources"}), "name", "pods/binding");
  ASSERT_NE(binding, nullptr);
  EXPECT_EQ(Str(At(*binding, {"kind"})), "Binding");
  // kubectl drain's CheckEvictionSupport: pods/eviction of kind Eviction with a group and version.
  const value* eviction = Named(At(*core, {"resources"}), "name", "pods/eviction");
  ASSERT_NE(eviction, nullptr);
  EXPECT_EQ(Str(At(*eviction, {"kind"})), "Eviction");
  EXPECT_EQ(Str(At(*eviction, {"group"})), "policy");
  EXPECT_EQ(Str(At(*eviction, {"version"})), "v1");
  EXPECT_FALSE(At(*Named(At(*core, {"resources"}), "name", "nodes"), {"namespaced"})->as_bool());

  EXPECT_FALSE(ApiResourceList("batch", "v2").has_value());
  EXPECT_FALSE(ApiResourceList("", "v2").has_value());
}

TEST(DiscoveryTest, VersionSaysKubernetes132) {
  value version = VersionInfo();
  EXPECT_EQ(Str(At(version, {"major"})), "1");
  EXPECT_EQ(Str(At(version, {"minor"})), "32");
  EXPECT_EQ(Str(At(version, {"gitVersion"})), "v1.32.0");
  for (std::string_view key :
       {"gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler", "platform"}) {
    EXPECT_NE(At(version, {key}), nullptr) << key;
  }
}

// --- OpenAPI -------------------------------------------------------------------------------------

value ParsedDocument(std::string_view path) {
  const OpenApiDocument* doc = FindOpenApiDocument(path);
  if (doc == nullptr) {
    ADD_FAILURE() << "no document " << path;
    return nullptr;
  }
  return boost::json::parse(doc->json);
}

std::string DocPath(const ResourceInfo& info) {
  return info.group.empty() ? "api/" + info.version : "apis/" + info.ApiVersion();
}

object GvkOf(const ResourceInfo& info) {
  return object{{"group", info.group}, {"kind", info.kind}, {"version", info.version}};
}

TEST(OpenApiTest, IndexListsEveryGroupVersionWithItsHash) {
  value index = OpenApiIndex();
  const object& paths = At(index, {"paths"})->as_object();
  EXPECT_EQ(paths.size(), ServedGroupVersions().size());
  std::set<std::string> hashes;
  for (const GroupVersion& gv : ServedGroupVersions()) {
    std::string path =
        gv.group.empty() ? "api/" + gv.version : "apis/" + gv.group + "/" + gv.version;
    SCOPED_TRACE(path);
    ASSERT_TRUE(paths.contains(path));
    const OpenApiDocument* doc = FindOpenApiDocument(path);
    ASSERT_NE(doc, nullptr);
    EXPECT_EQ(Str(At(paths.at(path), {"serverRelativeURL"})),
              "/openapi/v3/" + path + "?hash=" + doc->hash);
    EXPECT_TRUE(hashes.insert(doc->hash).second);
    // Stable: the document rebuilt gives the same bytes.
    EXPECT_EQ(boost::json::serialize(BuildOpenApiDocument(gv.group, gv.version)), doc->json);
  }
  EXPECT_TRUE(paths.contains("api/v1"));
  EXPECT_TRUE(paths.contains("apis/batch.volcano.sh/v1alpha1"));
  EXPECT_TRUE(paths.contains("apis/scheduling.volcano.sh/v1beta1"));
  EXPECT_EQ(boost::json::serialize(OpenApiIndex()), boost::json::serialize(index));
  EXPECT_EQ(FindOpenApiDocument("apis/storage.k8s.io/v1"), nullptr);
  EXPECT_EQ(FindOpenApiDocument("/api/v1"), nullptr);
  EXPECT_TRUE(BuildOpenApiDocument("storage.k8s.io", "v1").is_null());
}

TEST(OpenApiTest, SchemaNamesFollowKubeApiserver) {
  EXPECT_EQ(SchemaName(Res("", "pods")), "io.k8s.api.core.v1.Pod");
  EXPECT_EQ(SchemaName(Res("", "pods"), /*list=*/true), "io.k8s.api.core.v1.PodList");
  EXPECT_EQ(SchemaName(Res("scheduling.k8s.io", "priorityclasses")),
            "io.k8s.api.scheduling.v1.PriorityClass");
  EXPECT_EQ(SchemaName(Res("coordination.k8s.io", "leases")), "io.k8s.api.coordination.v1.Lease");
  EXPECT_EQ(SchemaName(Res("policy", "poddisruptionbudgets")),
            "io.k8s.api.policy.v1.PodDisruptionBudget");
  EXPECT_EQ(SchemaName(Res("batch.volcano.sh", "jobs")), "sh.volcano.batch.v1alpha1.Job");
  EXPECT_EQ(SchemaName(Res("scheduling.volcano.sh", "podgroups")),
            "sh.volcano.scheduling.v1beta1.PodGroup");
  EXPECT_EQ(SchemaName(Res("scheduling.volcano.sh", "queues"), true),
            "sh.volcano.scheduling.v1beta1.QueueList");
}

// query_param_verifier_v3.go: any PATCH operation of the kind must take fieldValidation (kubectl
// ranges over a Go map, so it may meet any of them first).
TEST(OpenApiTest, EveryPatchableKindHasServerSideFieldValidation) {
  for (const ResourceInfo& info : AllResources()) {
    if (std::find(info.verbs.begin(), info.verbs.end(), "patch") == info.verbs.end()) continue;
    SCOPED_TRACE(info.StoreResource());
    value doc = ParsedDocument(DocPath(info));
    EXPECT_EQ(Str(At(doc, {"openapi"})), "3.0.0");
    int patches = 0;
    for (const auto& path : At(doc, {"paths"})->as_object()) {
      for (std::string_view method : {"patch", "put", "post"}) {
        const value* op = At(path.value(), {method});
        if (op == nullptr) continue;
        const value* gvk = At(*op, {"x-kubernetes-group-version-kind"});
        ASSERT_NE(gvk, nullptr) << path.key() << " " << method;
        if (*gvk != value(GvkOf(info))) continue;
        if (method == "patch") ++patches;
        const value* param = Named(At(*op, {"parameters"}), "name", "fieldValidation");
        ASSERT_NE(param, nullptr) << path.key() << " " << method;
        EXPECT_EQ(Str(At(*param, {"in"})), "query");
      }
    }
    EXPECT_GE(patches, 1);
    std::string item = (info.group.empty() ? "/api/v1" : "/apis/" + info.ApiVersion()) +
                       (info.namespaced ? "/namespaces/{namespace}/" : "/") + info.resource +
                       "/{name}";
    EXPECT_EQ(*At(doc, {"paths", item, "patch", "x-kubernetes-group-version-kind"}),
              value(GvkOf(info)));
  }
}

TEST(OpenApiTest, PatchBodiesOfferStrategicMergeOnlyForBuiltins) {
  value core = ParsedDocument("api/v1");
  const value* pod_patch = At(core, {"paths", "/api/v1/namespaces/{namespace}/pods/{name}", "patch",
                                     "requestBody", "content"});
  ASSERT_NE(pod_patch, nullptr);
  EXPECT_TRUE(pod_patch->as_object().contains("application/strategic-merge-patch+json"));
  EXPECT_TRUE(pod_patch->as_object().contains("application/apply-patch+yaml"));
  value batch = ParsedDocument("apis/batch.volcano.sh/v1alpha1");
  const value* job_patch =
      At(batch, {"paths", "/apis/batch.volcano.sh/v1alpha1/namespaces/{namespace}/jobs/{name}",
                 "patch", "requestBody", "content"});
  ASSERT_NE(job_patch, nullptr);
  EXPECT_FALSE(job_patch->as_object().contains("application/strategic-merge-patch+json"));
  EXPECT_TRUE(job_patch->as_object().contains("application/merge-patch+json"));
}

void CollectRefs(const value& v, std::vector<std::string>& out) {
  if (v.is_object()) {
    for (const auto& kv : v.get_object()) {
      if (kv.key() == "$ref")
        out.emplace_back(kv.value().as_string());
      else
        CollectRefs(kv.value(), out);
    }
  } else if (v.is_array()) {
    for (const value& e : v.get_array()) CollectRefs(e, out);
  }
}

TEST(OpenApiTest, EveryRefResolvesWithinItsDocumentAndEachKindHasOneSchema) {
  for (const GroupVersion& gv : ServedGroupVersions()) {
    value doc = BuildOpenApiDocument(gv.group, gv.version);
    SCOPED_TRACE(gv.group + "/" + gv.version);
    std::vector<std::string> refs;
    CollectRefs(doc, refs);
    EXPECT_THAT(refs, Not(IsEmpty()));
    const object& schemas = At(doc, {"components", "schemas"})->as_object();
    for (const std::string& ref : refs) {
      ASSERT_THAT(ref, StartsWith("#/components/schemas/"));
      EXPECT_TRUE(schemas.contains(ref.substr(21))) << ref;
    }
    std::map<std::string, int> gvk_count;
    for (const auto& schema : schemas) {
      if (const value* gvks = At(schema.value(), {"x-kubernetes-group-version-kind"})) {
        for (const value& gvk : gvks->as_array()) ++gvk_count[boost::json::serialize(gvk)];
      }
    }
    for (const ResourceInfo* info : ResourcesIn(gv.group, gv.version)) {
      EXPECT_EQ(gvk_count[boost::json::serialize(GvkOf(*info))], 1) << info->kind;
      EXPECT_TRUE(schemas.contains(SchemaName(*info)));
      // Reviews are never listed: no list kind.
      EXPECT_EQ(schemas.contains(SchemaName(*info, true)), !info->review) << info->kind;
    }
  }
}

// The file a schema belongs in (schemas/README.md): its package as the group-version kube
// serves it ("io.k8s.api.scheduling.v1.PriorityClass" in scheduling.k8s.io.v1.json, a custom
// resource's reversed group put back: "sh.volcano.batch.v1alpha1.Job" in
// batch.volcano.sh.v1alpha1.json), apimachinery's by package (meta.v1.json, resource.json,
// intstr.json); policy and batch are served as "policy" and "batch", not "policy.k8s.io"
// (policy.v1.json, batch.v1.json).
std::string SchemaFileOf(std::string_view name) {
  std::string_view package = name.substr(0, name.rfind('.'));
  for (auto [prefix, file] : {std::pair{"io.k8s.apimachinery.pkg.apis.meta.v1", "meta.v1"},
                              std::pair{"io.k8s.apimachinery.pkg.api.resource", "resource"},
                              std::pair{"io.k8s.apimachinery.pkg.util.intstr", "intstr"},
                              std::pair{"io.k8s.api.core.v1", "core.v1"},
                              std::pair{"io.k8s.api.policy.v1", "policy.v1"},
                              std::pair{"io.k8s.api.batch.v1", "batch.v1"},
                              std::pair{"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1",
                                        "apiextensions.k8s.io.v1"}}) {
    if (package == prefix) return fmt::format("{}.json", file);
  }
  const size_t dot = package.rfind('.');
  std::string_view version = package.substr(dot + 1);
  std::string_view group = package.substr(0, dot);
  if (group.starts_with("io.k8s.api.")) {
    return fmt::format("{}.k8s.io.{}.json", group.substr(11), version);
  }
  std::string forward;
  for (std::string_view rest = group; !rest.empty();) {
    const size_t last = rest.rfind('.');
    if (!forward.empty()) forward += '.';
    forward += last == std::string_view::npos ? rest : rest.substr(last + 1);
    rest = last == std::string_view::npos ? std::string_view{} : rest.substr(0, last);
  }
  return fmt::format("{}.{}.json", forward, version);
}

TEST(OpenApiSchemaFilesTest, EachHoldsItsGroupVersionsSchemasThatResolveAndAreServed) {
  // What the documents hold beside the files: list kinds and kinds the files do not describe.
  std::set<std::string> served;
  for (const GroupVersion& gv : ServedGroupVersions()) {
    value doc = BuildOpenApiDocument(gv.group, gv.version);
    for (const auto& schema : At(doc, {"components", "schemas"})->as_object())
      served.emplace(schema.key());
  }
  std::set<std::string> generated;
  for (const ResourceInfo& info : AllResources()) {
    generated.insert(SchemaName(info));
    if (!info.review) generated.insert(SchemaName(info, /*list=*/true));
  }

  std::map<std::string, std::string> file_of;  // schema name -> file
  std::vector<std::string> refs;
  ASSERT_THAT(OpenApiSchemaFiles(), Not(IsEmpty()));
  for (const EmbeddedFile& file : OpenApiSchemaFiles()) {
    SCOPED_TRACE(file.name);
    boost::json::error_code error;
    value parsed = boost::json::parse(file.content, error);
    ASSERT_FALSE(error) << error.message();
    ASSERT_TRUE(parsed.is_object());
    EXPECT_THAT(parsed.as_object(), Not(IsEmpty()));
    for (const auto& [name, schema] : parsed.as_object()) {
      EXPECT_TRUE(schema.is_object()) << name;
      EXPECT_EQ(SchemaFileOf(name), file.name) << name;
      auto [it, inserted] = file_of.emplace(name, file.name);
      EXPECT_TRUE(inserted) << name << " is in " << it->second << " too";
      EXPECT_TRUE(served.contains(name)) << name << " is in no served document";
      CollectRefs(schema, refs);
    }
  }
  EXPECT_THAT(refs, Not(IsEmpty()));
  for (const std::string& ref : refs) {
    ASSERT_THAT(ref, StartsWith("#/components/schemas/"));
    const std::string name = ref.substr(21);
    EXPECT_TRUE(file_of.contains(name) || generated.contains(name)) << ref;
  }
}

// `kubectl auth can-i` and `whoami` find these in discovery: create-only, cluster-scoped, with
// only the collection's POST in OpenAPI.
TEST(ReviewResourcesTest, AreCreateOnlyClusterScopedAndHaveOnlyACollectionPost) {
  for (auto [group, resource, kind] :
       {std::tuple{"authorization.k8s.io", "selfsubjectaccessreviews", "SelfSubjectAccessReview"},
        std::tuple{"authorization.k8s.io", "selfsubjectrulesreviews", "SelfSubjectRulesReview"},
        std::tuple{"authentication.k8s.io", "selfsubjectreviews", "SelfSubjectReview"}}) {
    SCOPED_TRACE(resource);
    const ResourceInfo* info = FindResource(group, "v1", resource);
    ASSERT_NE(info, nullptr);
    EXPECT_TRUE(info->review);
    EXPECT_FALSE(info->namespaced);
    EXPECT_EQ(info->kind, kind);
    EXPECT_THAT(info->verbs, ElementsAre("create"));
    std::optional<value> list = ApiResourceList(group, "v1");
    ASSERT_TRUE(list.has_value());
    const value* entry = Named(At(*list, {"resources"}), "name", resource);
    ASSERT_NE(entry, nullptr);
    EXPECT_EQ(boost::json::serialize(*At(*entry, {"verbs"})), R"(["create"])");

    value doc = BuildOpenApiDocument(group, "v1");
    const object& paths = At(doc, {"paths"})->as_object();
    const std::string collection = fmt::format("/apis/{}/v1/{}", group, resource);
    ASSERT_TRUE(paths.contains(collection));
    const object& ops = paths.at(collection).as_object();
    EXPECT_TRUE(ops.contains("post"));
    EXPECT_FALSE(ops.contains("get"));
    EXPECT_FALSE(paths.contains(collection + "/{name}"));
  }
  std::vector<std::string> stored;
  for (const ResourceInfo& info : AllResources()) {
    if (!info.review) stored.push_back(info.resource);
  }
  EXPECT_THAT(stored, Not(Contains("selfsubjectaccessreviews")));
}

TEST(OpenApiV2Test, IsAValidEmptySwaggerDocumentInJsonAndProtobuf) {
  EXPECT_EQ(boost::json::parse(OpenApiV2Document(false)),
            boost::json::parse(R"({"swagger":"2.0","info":{"title":"Kubernetes",
                                   "version":"v1.32.0"},"paths":{},"definitions":{}})"));
  // openapi_v2.Document{swagger: "2.0", info: {title, version}, paths: {}, definitions: {}}.
  EXPECT_EQ(OpenApiV2Document(true), std::string("\x0a\x03"
                                                 "2.0"
                                                 "\x12\x15\x0a\x0a"
                                                 "Kubernetes"
                                                 "\x12\x07"
                                                 "v1.32.0"
                                                 "\x42\x00\x4a\x00",
                                                 32));
}

// What `kubectl explain <resource>.<field path>` does (explain/v2/templates/plaintext.tmpl): find
// the GVK on one of the resource's paths, the schema carrying that GVK, then walk the fields
// through properties, allOf, items and $refs. Returns the field's schema with refs resolved.
class Explainer {
 public:
  explicit Explainer(const ResourceInfo& info) : info_(info), doc_(ParsedDocument(DocPath(info))) {}

  // The resolved schema of the field at `path` ("" for the kind itself); null when missing.
  value Explain(std::vector<std::string> path) const {
    const value* gvk = FindGvk();
    if (gvk == nullptr) return nullptr;
    const value* schema = nullptr;
    for (const auto& s : At(doc_, {"components", "schemas"})->as_object()) {
      const value* gvks = At(s.value(), {"x-kubernetes-group-version-kind"});
      if (gvks == nullptr) continue;
      for (const value& g : gvks->as_array()) {
        if (g == *gvk) schema = &s.value();
      }
    }
    if (schema == nullptr) return nullptr;
    for (const std::string& field : path) {
      schema = Field(*schema, field);
      if (schema == nullptr) return nullptr;
    }
    return Resolve(*schema);
  }

  // The description kubectl prints for a field: its own, or its (allOf-referenced) type's.
  std::string Description(std::vector<std::string> path) const {
    const value* gvk = FindGvk();
    if (gvk == nullptr) return "";
    value parent = Explain({path.begin(), path.end() - 1});
    const value* field = At(parent, {"properties", path.back()});
    if (field == nullptr) return "";
    if (const value* d = At(*field, {"description"})) return std::string(d->as_string());
    return Str(At(Resolve(*field), {"description"}));
  }

 private:
  const value* FindGvk() const {
    std::string prefix =
        info_.group.empty() ? "/api/" + info_.version : "/apis/" + info_.ApiVersion();
    for (const std::string& p :
         {prefix + "/" + info_.resource, prefix + "/" + info_.resource + "/{name}",
          prefix + "/namespaces/{namespace}/" + info_.resource,
          prefix + "/namespaces/{namespace}/" + info_.resource + "/{name}"}) {
      const value* item = At(doc_, {"paths", p});
      if (item == nullptr) continue;
      for (std::string_view method : {"get", "post", "put", "patch", "delete"}) {
        if (const value* gvk = At(*item, {method, "x-kubernetes-group-version-kind"})) return gvk;
      }
    }
    return nullptr;
  }

  // Follows $ref, single-element allOf, items and additionalProperties to an object schema.
  value Resolve(const value& schema) const {
    if (const value* ref = At(schema, {"$ref"})) {
      std::string name(ref->as_string().subview(21));
      const value* target = At(doc_, {"components", "schemas", name});
      return target == nullptr ? value(nullptr) : Resolve(*target);
    }
    if (const value* all_of = At(schema, {"allOf"});
        all_of != nullptr && !At(schema, {"properties"})) {
      return Resolve(all_of->as_array().at(0));
    }
    if (const value* items = At(schema, {"items"})) return Resolve(*items);
    if (const value* extra = At(schema, {"additionalProperties"}); extra && extra->is_object()) {
      return Resolve(*extra);
    }
    return schema;
  }

  const value* Field(const value& schema, const std::string& name) const {
    resolved_.push_back(Resolve(schema));
    return At(resolved_.back(), {"properties", name});
  }

  const ResourceInfo& info_;
  value doc_;
  mutable std::deque<value> resolved_;  // stable addresses for the walked schemas
};

std::vector<std::string> PropertyNames(const value& schema) {
  std::vector<std::string> names;
  if (const value* props = At(schema, {"properties"})) {
    for (const auto& p : props->as_object()) names.emplace_back(p.key());
  }
  return names;
}

TEST(OpenApiTest, ExplainVcjobSpecShowsRealFields) {
  Explainer explain(Res("batch.volcano.sh", "jobs"));
  value spec = explain.Explain({"spec"});
  ASSERT_TRUE(spec.is_object());
  for (std::string_view field :
       {"minAvailable", "schedulerName", "queue", "maxRetry", "tasks", "policies", "plugins",
        "ttlSecondsAfterFinished", "priorityClassName", "minSuccess"}) {
    SCOPED_TRACE(field);
    ASSERT_NE(At(spec, {"properties", field}), nullptr);
    EXPECT_THAT(explain.Description({"spec", std::string(field)}), Not(IsEmpty()));
  }
  EXPECT_EQ(Str(At(spec, {"properties", "minAvailable", "type"})), "integer");
  EXPECT_EQ(Str(At(spec, {"properties", "tasks", "type"})), "array");
  EXPECT_THAT(explain.Description({"spec", "queue"}), HasSubstr("queue"));

  value task = explain.Explain({"spec", "tasks"});
  EXPECT_THAT(PropertyNames(task),
              testing::IsSupersetOf({"name", "replicas", "minAvailable", "template", "policies"}));
  EXPECT_THAT(explain.Description({"spec", "tasks", "replicas"}), HasSubstr("replicas"));
  value policy = explain.Explain({"spec", "tasks", "policies"});
  EXPECT_THAT(PropertyNames(policy), testing::IsSupersetOf({"event", "action", "exitCode"}));
  value containers = explain.Explain({"spec", "tasks", "template", "spec", "containers"});
  EXPECT_THAT(PropertyNames(containers), testing::IsSupersetOf({"name", "image", "resources"}));

  value status = explain.Explain({"status"});
  EXPECT_THAT(PropertyNames(status),
              testing::IsSupersetOf({"state", "minAvailable", "running", "pending", "succeeded",
                                     "failed", "retryCount"}));
  EXPECT_NE(At(explain.Explain({"status", "state"}), {"properties", "phase", "enum"}), nullptr);
}

TEST(OpenApiTest, ExplainPodFieldsHaveDescriptions) {
  Explainer explain(Res("", "pods"));
  value containers = explain.Explain({"spec", "containers"});
  EXPECT_THAT(PropertyNames(containers),
              testing::IsSupersetOf({"name", "image", "command", "args", "env", "ports",
                                     "resources", "volumeMounts"}));
  EXPECT_THAT(explain.Description({"spec", "containers"}), HasSubstr("List of containers"));
  EXPECT_THAT(explain.Description({"spec", "containers", "image"}), HasSubstr("Container image"));
  EXPECT_THAT(explain.Description({"spec", "containers", "resources", "limits"}),
              HasSubstr("maximum amount of compute resources"));
  EXPECT_THAT(explain.Description({"spec", "tolerations", "operator"}), HasSubstr("Exists"));
  EXPECT_THAT(explain.Description({"spec", "nodeSelector"}), HasSubstr("selector"));
  EXPECT_THAT(explain.Description({"spec", "schedulerName"}), HasSubstr("scheduler"));
  EXPECT_THAT(PropertyNames(explain.Explain({"spec", "affinity", "nodeAffinity",
                                             "requiredDuringSchedulingIgnoredDuringExecution",
                                             "nodeSelectorTerms", "matchExpressions"})),
              testing::IsSupersetOf({"key", "operator", "values"}));
  EXPECT_THAT(PropertyNames(explain.Explain({"spec", "affinity", "podAntiAffinity",
                                             "preferredDuringSchedulingIgnoredDuringExecution",
                                             "podAffinityTerm"})),
              testing::IsSupersetOf({"labelSelector", "topologyKey"}));
  EXPECT_THAT(explain.Description({"status", "phase"}), HasSubstr("Pending"));
  EXPECT_THAT(PropertyNames(explain.Explain({"status", "containerStatuses", "state"})),
              UnorderedElementsAre("waiting", "running", "terminated"));
  EXPECT_THAT(explain.Description({"metadata", "name"}), HasSubstr("unique within a namespace"));
}

TEST(OpenApiTest, ExplainOtherKinds) {
  EXPECT_THAT(Explainer(Res("", "nodes")).Description({"spec", "unschedulable"}),
              HasSubstr("schedulability"));
  EXPECT_THAT(PropertyNames(Explainer(Res("", "nodes")).Explain({"spec", "taints"})),
              testing::IsSupersetOf({"key", "value", "effect"}));
  EXPECT_THAT(Explainer(Res("", "nodes")).Description({"status", "allocatable"}),
              HasSubstr("available for scheduling"));
  EXPECT_THAT(Explainer(Res("", "namespaces")).Description({"status", "phase"}),
              HasSubstr("lifecycle phase"));
  EXPECT_THAT(Explainer(Res("", "events")).Description({"involvedObject"}),
              HasSubstr("this event is about"));
  EXPECT_THAT(Explainer(Res("scheduling.k8s.io", "priorityclasses")).Description({"value"}),
              HasSubstr("priority"));
  EXPECT_THAT(
      Explainer(Res("coordination.k8s.io", "leases")).Description({"spec", "holderIdentity"}),
      HasSubstr("holder"));
  EXPECT_THAT(
      Explainer(Res("scheduling.volcano.sh", "podgroups")).Description({"spec", "minMember"}),
      HasSubstr("minimal number"));
  EXPECT_THAT(Explainer(Res("scheduling.volcano.sh", "queues")).Description({"spec", "parent"}),
              HasSubstr("parent"));
  EXPECT_THAT(PropertyNames(Explainer(Res("scheduling.volcano.sh", "queues")).Explain({"spec"})),
              testing::IsSupersetOf(
                  {"weight", "capability", "reclaimable", "deserved", "guarantee", "priority"}));
  // Every served kind explains, at least to apiVersion/kind/metadata.
  for (const ResourceInfo& info : AllResources()) {
    EXPECT_THAT(PropertyNames(Explainer(info).Explain({})),
                testing::IsSupersetOf({"apiVersion", "kind", "metadata"}))
        << info.StoreResource();
  }
}

// Fields of `obj` that the kind's schema does not describe, walking as strict field validation
// does: properties, items, additionalProperties, $ref and allOf; objects without properties or
// marked x-kubernetes-preserve-unknown-fields accept anything.
class UnknownFieldFinder {
 public:
  explicit UnknownFieldFinder(const ResourceInfo& info)
      : doc_(BuildOpenApiDocument(info.group, info.version)), root_(SchemaName(info)) {}

  std::vector<std::string> Find(const value& obj) {
    unknown_.clear();
    Walk(At(doc_, {"components", "schemas", root_}), obj, "");
    return unknown_;
  }

 private:
  const value* Resolve(const value* schema) const {
    for (int hops = 0; schema != nullptr && hops < 32; ++hops) {
      if (const value* ref = At(*schema, {"$ref"})) {
        schema = At(doc_, {"components", "schemas", ref->as_string().subview(21)});
      } else if (const value* all = At(*schema, {"allOf"}); all && !At(*schema, {"properties"})) {
        schema = &all->as_array().at(0);
      } else {
        return schema;
      }
    }
    return nullptr;
  }

  void Walk(const value* schema, const value& v, const std::string& path) {
    schema = Resolve(schema);
    ASSERT_NE(schema, nullptr) << path;
    if (At(*schema, {"x-kubernetes-preserve-unknown-fields"}) != nullptr) return;
    if (v.is_object()) {
      const value* props = At(*schema, {"properties"});
      const value* extra = At(*schema, {"additionalProperties"});
      if (props == nullptr && extra == nullptr) return;
      for (const auto& kv : v.get_object()) {
        std::string child = path + "." + std::string(kv.key());
        if (const value* field = props ? At(*props, {kv.key()}) : nullptr) {
          Walk(field, kv.value(), child);
        } else if (extra != nullptr) {
          Walk(extra, kv.value(), child);
        } else {
          unknown_.push_back(child);
        }
      }
    } else if (v.is_array()) {
      if (const value* items = At(*schema, {"items"})) {
        for (const value& e : v.get_array()) Walk(items, e, path + "[]");
      }
    }
  }

  value doc_;
  std::string root_;
  std::vector<std::string> unknown_;
};

// Manifests as users write them (Volcano's examples, a busy Pod) pass strict field validation.
TEST(OpenApiTest, RealManifestsHaveNoUnknownFields) {
  const std::vector<std::pair<const ResourceInfo*, std::string_view>> manifests = {
      {&Res("batch.volcano.sh", "jobs"), R"({"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job",
        "metadata":{"name":"test-job","labels":{"a":"b"}},
        "spec":{"minAvailable":3,"schedulerName":"volcano","queue":"default","maxRetry":5,
          "priorityClassName":"high-priority","ttlSecondsAfterFinished":600,"minSuccess":1,
          "policies":[{"event":"PodEvicted","action":"RestartJob"},
                      {"events":["PodFailed"],"action":"RestartJob","timeout":"10s"}],
          "plugins":{"ssh":[],"env":[],"svc":["--disable-network-policy=true"]},
          "volumes":[{"mountPath":"/data","volumeClaimName":"pvc"}],
          "tasks":[{"name":"master","replicas":1,"minAvailable":1,"maxRetry":3,
                    "policies":[{"event":"TaskCompleted","action":"CompleteJob"}],
                    "dependsOn":{"name":["worker"],"iteration":"any"},
                    "template":{"metadata":{"labels":{"role":"m"}},
                      "spec":{"restartPolicy":"OnFailure","containers":[{"name":"m","image":"img",
                        "resources":{"limits":{"nvidia.com/gpu":1}}}]}}}]},
        "status":{"state":{"phase":"Running","lastTransitionTime":"2024-05-01T11:00:00Z"},
          "minAvailable":3,"running":3,"taskStatusCount":{"master":{"phase":{"Running":1}}},
          "conditions":[{"status":"Running","lastTransitionTime":"2024-05-01T11:00:00Z"}]}})"},
      {&Res("scheduling.volcano.sh", "podgroups"), R"({"apiVersion":"scheduling.volcano.sh/v1beta1",
        "kind":"PodGroup","metadata":{"name":"test","namespace":"default",
          "ownerReferences":[{"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job","name":"j",
                              "uid":"u","controller":true}]},
        "spec":{"minMember":1,"minTaskMember":{"w":1},"minResources":{"cpu":"3","memory":"2048Mi"},
                "priorityClassName":"high-priority","queue":"default"},
        "status":{"phase":"Running","running":1,"conditions":[{"type":"Unschedulable",
          "status":"True","reason":"NotEnoughResources","transitionID":"77d5","message":"m",
          "lastTransitionTime":"2024-05-01T11:00:00Z"}]}})"},
      {&Res("scheduling.volcano.sh", "queues"), R"({"apiVersion":"scheduling.volcano.sh/v1beta1",
        "kind":"Queue","metadata":{"name":"team-a"},
        "spec":{"weight":4,"parent":"root","reclaimable":true,"priority":10,
                "capability":{"cpu":"256","nvidia.com/gpu":"32"},
                "deserved":{"cpu":"128","nvidia.com/gpu":"16"},
                "guarantee":{"resource":{"nvidia.com/gpu":"8"}}},
        "status":{"state":"Open","allocated":{"cpu":"4"},"running":1}})"},
      {&Res("", "pods"), R"({"apiVersion":"v1","kind":"Pod",
        "metadata":{"name":"p","annotations":{"scheduling.k8s.io/group-name":"pg"}},
        "spec":{"schedulerName":"volcano","priorityClassName":"high","nodeSelector":{"gpu":"a100"},
          "hostNetwork":false,"hostPID":false,"dnsPolicy":"ClusterFirst",
          "terminationGracePeriodSeconds":30,"serviceAccountName":"default",
          "tolerations":[{"key":"nvidia.com/gpu","operator":"Exists","effect":"NoSchedule"}],
          "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{
              "nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In",
                                                         "values":["a"]}]}]}},
            "podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":10,
              "podAffinityTerm":{"labelSelector":{"matchLabels":{"app":"x"}},
                                 "topologyKey":"kubernetes.io/hostname"}}]}},
          "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone",
            "whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"app":"x"}}}],
          "volumes":[{"name":"data","nfs":{"server":"s","path":"/"}},{"name":"shm","emptyDir":{"medium":"Memory"}}],
          "initContainers":[{"name":"init","image":"busybox","command":["sh","-c","true"]}],
          "containers":[{"name":"c","image":"img:1","imagePullPolicy":"IfNotPresent",
            "args":["--x"],"workingDir":"/w","env":[{"name":"A","value":"1"},
              {"name":"B","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}],
            "ports":[{"containerPort":8080,"name":"http","protocol":"TCP"}],
            "resources":{"requests":{"cpu":"500m","memory":"1Gi"},"limits":{"nvidia.com/gpu":"1"}},
            "volumeMounts":[{"name":"data","mountPath":"/data","readOnly":true}],
            "readinessProbe":{"httpGet":{"path":"/","port":8080}},
            "securityContext":{"privileged":false}}]},
        "status":{"phase":"Running","podIP":"10.1.0.5","podIPs":[{"ip":"10.1.0.5"}],
          "hostIP":"10.0.0.7","startTime":"2024-05-01T11:00:00Z","qosClass":"Burstable",
          "conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2024-05-01T11:00:00Z"}],
          "containerStatuses":[{"name":"c","ready":true,"restartCount":0,"image":"img:1",
            "imageID":"sha","containerID":"containerd://x","started":true,
            "state":{"running":{"startedAt":"2024-05-01T11:00:00Z"}}}]}})"},
      {&Res("", "nodes"), R"({"apiVersion":"v1","kind":"Node","metadata":{"name":"n"},
        "spec":{"unschedulable":true,"taints":[{"key":"k","value":"v","effect":"NoSchedule"}]},
        "status":{"capacity":{"nvidia.com/gpu":"8"},"allocatable":{"cpu":"63"},
          "conditions":[{"type":"Ready","status":"True","lastHeartbeatTime":"2024-05-01T11:00:00Z"}],
          "addresses":[{"type":"InternalIP","address":"10.0.0.7"}],
          "nodeInfo":{"kubeletVersion":"v1.32.0","architecture":"amd64","operatingSystem":"linux"}}})"},
      {&Res("scheduling.k8s.io", "priorityclasses"), R"({"apiVersion":"scheduling.k8s.io/v1",
        "kind":"PriorityClass","metadata":{"name":"high"},"value":1000,"globalDefault":false,
        "description":"d","preemptionPolicy":"Never"})"},
  };
  for (const auto& [info, text] : manifests) {
    EXPECT_THAT(UnknownFieldFinder(*info).Find(boost::json::parse(text)), IsEmpty())
        << info->StoreResource();
  }
  // The finder does report what the schemas do not know.
  EXPECT_THAT(
      UnknownFieldFinder(Res("batch.volcano.sh", "jobs"))
          .Find(boost::json::parse(R"({"spec":{"minAvalable":1,"tasks":[{"replica":2}]}})")),
      UnorderedElementsAre(".spec.minAvalable", ".spec.tasks[].replica"));
}

// --- Tables: formatting
// ----------------------------------------------------------------------------

TEST(HumanDurationTest, MatchesKubeFormatting) {
  const std::vector<std::pair<int64_t, std::string>> cases = {
      {-5, "<invalid>"},
      {-1, "0s"},
      {0, "0s"},
      {5, "5s"},
      {119, "119s"},
      {120, "2m"},
      {182, "3m2s"},
      {599, "9m59s"},
      {600, "10m"},
      {3 * 3600 - 1, "179m"},
      {3 * 3600, "3h"},
      {4 * 3600, "4h"},
      {4 * 3600 + 30 * 60, "4h30m"},
      {8 * 3600, "8h"},
      {47 * 3600, "47h"},
      {2 * 86400, "2d"},
      {2 * 86400 + 5 * 3600, "2d5h"},
      {8 * 86400, "8d"},
      {729 * 86400, "729d"},
      {730 * 86400, "2y"},
      {740 * 86400, "2y10d"},
      {8 * 365 * 86400, "8y"},
  };
  for (const auto& [seconds, text] : cases) EXPECT_EQ(HumanDuration(seconds), text) << seconds;
}

TEST(AgeCellTest, MissingAndMalformedTimestamps) {
  value created = "2024-05-01T11:57:00Z";
  EXPECT_EQ(AgeCell(&created, Now()), "3m");
  EXPECT_EQ(AgeCell(nullptr, Now()), "<unknown>");
  value empty = "";
  EXPECT_EQ(AgeCell(&empty, Now()), "<unknown>");
  value bad = "yesterday";
  EXPECT_EQ(AgeCell(&bad, Now()), "<invalid>");
}

TEST(TableNegotiationTest, AcceptsKubectlTableHeader) {
  EXPECT_TRUE(AcceptsTable(
      "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;"
      "g=meta.k8s.io,application/json"));
  EXPECT_TRUE(AcceptsTable("application/json;as=Table;v=v1beta1;g=meta.k8s.io"));
  EXPECT_FALSE(AcceptsTable("application/json"));
  EXPECT_FALSE(AcceptsTable("application/json;as=Table;v=v1;g=other.io"));
  EXPECT_EQ(ParseIncludeObject("Object"), IncludeObject::kObject);
  EXPECT_EQ(ParseIncludeObject("None"), IncludeObject::kNone);
  EXPECT_EQ(ParseIncludeObject(""), IncludeObject::kMetadata);
}

TEST(JsonPathTest, EvaluatesSimplePaths) {
  value obj = boost::json::parse(
      R"({"status":{"state":{"phase":"Running"}},"spec":{"tasks":[{"name":"a"},{"name":"b"}]}})");
  EXPECT_EQ(Str(LookupJsonPath(obj, ".status.state.phase")), "Running");
  EXPECT_EQ(Str(LookupJsonPath(obj, "{.status.state.phase}")), "Running");
  EXPECT_EQ(Str(LookupJsonPath(obj, ".spec.tasks[1].name")), "b");
  EXPECT_EQ(LookupJsonPath(obj, ".spec.tasks[2].name"), nullptr);
  EXPECT_EQ(LookupJsonPath(obj, ".status.running"), nullptr);
  EXPECT_EQ(LookupJsonPath(obj, ".status.state.phase.deeper"), nullptr);
}

// The filters of CRDs' printer columns (JobSet's COMPLETED, KubeRay's, ...): the first element
// whose field has the value.
TEST(JsonPathTest, FiltersPickTheFirstMatchingElement) {
  value obj = boost::json::parse(
      R"({"status":{"conditions":[{"type":"Ready","status":"False"},)"
      R"({"type":"Completed","status":"True"}]}})");
  EXPECT_EQ(Str(LookupJsonPath(obj, R"(.status.conditions[?(@.type=="Completed")].status)")),
            "True");
  EXPECT_EQ(Str(LookupJsonPath(obj, ".status.conditions[?(@.type=='Ready')].status")), "False");
  EXPECT_EQ(LookupJsonPath(obj, R"(.status.conditions[?(@.type=="Failed")].status)"), nullptr);
}

// --- Tables: pods
// ----------------------------------------------------------------------------------

std::vector<std::string> ColumnNames(const value& table) {
  std::vector<std::string> names;
  for (const value& c : At(table, {"columnDefinitions"})->as_array()) {
    names.push_back(Str(At(c, {"name"})));
  }
  return names;
}

std::vector<int64_t> ColumnPriorities(const value& table) {
  std::vector<int64_t> priorities;
  for (const value& c : At(table, {"columnDefinitions"})->as_array()) {
    priorities.push_back(At(c, {"priority"})->as_int64());
  }
  return priorities;
}

TEST(PodTableTest, TableShapeAndRowObjects) {
  std::vector<value> pods = {MakePod("p1").Container("c").Obj(),
                             MakePod("p2").Container("c").Obj()};
  value table = ToTable(Res("", "pods"), pods, "113", Now());
  EXPECT_EQ(Str(At(table, {"kind"})), "Table");
  EXPECT_EQ(Str(At(table, {"apiVersion"})), "meta.k8s.io/v1");
  EXPECT_EQ(Str(At(table, {"metadata", "resourceVersion"})), "113");
  EXPECT_EQ(At(table, {"metadata", "continue"}), nullptr);
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Ready", "Status", "Restarts", "Age", "IP",
                                              "Node", "Nominated Node", "Readiness Gates"));
  EXPECT_THAT(ColumnPriorities(table), ElementsAre(0, 0, 0, 0, 0, 1, 1, 1, 1));
  EXPECT_EQ(Str(At(At(table, {"columnDefinitions"})->as_array()[0], {"format"})), "name");

  const array& rows = At(table, {"rows"})->as_array();
  ASSERT_EQ(rows.size(), 2u);
  const value& object = *At(rows[0], {"object"});
  EXPECT_EQ(Str(At(object, {"kind"})), "PartialObjectMetadata");
  EXPECT_EQ(Str(At(object, {"apiVersion"})), "meta.k8s.io/v1");
  EXPECT_EQ(Str(At(object, {"metadata", "name"})), "p1");
  EXPECT_EQ(Str(At(object, {"metadata", "namespace"})), "default");
  EXPECT_EQ(Str(At(object, {"metadata", "labels", "app"})), "x");
  EXPECT_EQ(Str(At(object, {"metadata", "resourceVersion"})), "7");
  EXPECT_EQ(At(object, {"spec"}), nullptr);
}

TEST(PodTableTest, Options) {
  std::vector<value> pods = {MakePod("p1").Container("c").Obj()};
  TableOptions full;
  full.include_object = IncludeObject::kObject;
  full.continue_token = "tok";
  value table = ToTable(Res("", "pods"), pods, "5", Now(), full);
  EXPECT_EQ(Str(At(table, {"metadata", "continue"})), "tok");
  EXPECT_EQ(Str(At(At(table, {"rows"})->as_array()[0], {"object", "kind"})), "Pod");

  TableOptions bare;
  bare.include_object = IncludeObject::kNone;
  bare.no_headers = true;
  table = ToTable(Res("", "pods"), pods, "5", Now(), bare);
  EXPECT_EQ(At(At(table, {"rows"})->as_array()[0], {"object"}), nullptr);
  EXPECT_TRUE(At(table, {"columnDefinitions"})->as_array().empty());

  table = ToTable(Res("", "pods"), {}, "9", Now());
  EXPECT_TRUE(At(table, {"rows"})->as_array().empty());
  EXPECT_EQ(ColumnNames(table).size(), 9u);
}

TEST(PodTableTest, PendingUnscheduled) {
  EXPECT_EQ(Cells(Res("", "pods"), MakePod("p").Container("a").Container("b").Obj()),
            (array{"p", "0/2", "Pending", "0", "5m", "<none>", "<none>", "<none>", "<none>"}));
}

TEST(PodTableTest, PendingNominatedAndGated) {
  value pod = MakePod("p").Container("c").Nominated("n2").Obj();
  EXPECT_EQ(Cells(Res("", "pods"), pod)[7], "n2");
  pod = MakePod("p").Container("c").Condition("PodScheduled", "False", "SchedulingGated").Obj();
  EXPECT_EQ(Cells(Res("", "pods"), pod)[2], "SchedulingGated");
}

TEST(PodTableTest, ContainerCreatingShowsWaitingReason) {
  value pod = MakePod("p")
                  .Container("c")
                  .Node("n1")
                  .ContainerStatus("c", false, R"({"waiting":{"reason":"ContainerCreating"}})")
                  .Obj();
  array cells = Cells(Res("", "pods"), pod);
  EXPECT_EQ(cells[1], "0/1");
  EXPECT_EQ(cells[2], "ContainerCreating");
  EXPECT_EQ(cells[6], "n1");
}

TEST(PodTableTest, RunningReadyWithIpAndNode) {
  value pod = MakePod("p")
                  .Container("a")
                  .Container("b")
                  .Phase("Running")
                  .Node("gpu-1")
                  .PodIp("10.1.0.5")
                  .ContainerStatus("a", true, R"({"running":{"startedAt":"2024-05-01T11:56:00Z"}})")
                  .ContainerStatus("b", false, R"({"running":{}})")
                  .Obj();
  EXPECT_EQ(Cells(Res("", "pods"), pod),
            (array{"p", "1/2", "Running", "0", "5m", "10.1.0.5", "gpu-1", "<none>", "<none>"}));
}

TEST(PodTableTest, RestartsShowWhenTheLastOneWas) {
  value pod = MakePod("p")
                  .Container("c")
                  .Phase("Running")
                  .ContainerStatus("c", false, R"({"waiting":{"reason":"CrashLoopBackOff"}})", 4,
                                   "2024-05-01T11:58:00Z")
                  .Obj();
  array cells = Cells(Res("", "pods"), pod);
  EXPECT_EQ(cells[2], "CrashLoopBackOff");
  EXPECT_EQ(cells[3], "4 (2m ago)");
}

TEST(PodTableTest, TerminatingWhenDeletionTimestampIsSet) {
  value pod = MakePod("p")
                  .Container("c")
                  .Phase("Running")
                  .Node("n1")
                  .ContainerStatus("c", true, R"({"running":{}})")
                  .Deleting()
                  .Obj();
  array cells = Cells(Res("", "pods"), pod);
  EXPECT_EQ(cells[1], "1/1");
  EXPECT_EQ(cells[2], "Terminating");
  // A finished pod being deleted keeps its final status.
  pod = MakePod("p").Container("c").Phase("Succeeded").Deleting().Obj();
  EXPECT_EQ(Cells(Res("", "pods"), pod)[2], "Succeeded");
}

TEST(PodTableTest, CompletedAndFailedContainers) {
  value pod =
      MakePod("p")
          .Container("c")
          .Phase("Succeeded")
          .ContainerStatus("c", false, R"({"terminated":{"exitCode":0,"reason":"Completed"}})")
          .Obj();
  EXPECT_EQ(Cells(Res("", "pods"), pod)[2], "Completed");
  value table = ToTable(Res("", "pods"), {pod}, "1", Now());
  EXPECT_EQ(Str(At(At(table, {"rows"})->as_array()[0].as_object().at("conditions").as_array()[0],
                   {"reason"})),
            "Succeeded");

  pod = MakePod("p")
            .Container("c")
            .Phase("Failed")
            .ContainerStatus("c", false, R"({"terminated":{"exitCode":137,"signal":9}})")
            .Obj();
  EXPECT_EQ(Cells(Res("", "pods"), pod)[2], "Signal:9");
  pod = MakePod("p")
            .Container("c")
            .Phase("Failed")
            .ContainerStatus("c", false, R"({"terminated":{"exitCode":3}})")
            .Obj();
  EXPECT_EQ(Cells(Res("", "pods"), pod)[2], "ExitCode:3");
  pod = MakePod("p").Container("c").Phase("Failed").Obj();
  pod.as_object()["status"].as_object()["reason"] = "Evicted";
  EXPECT_EQ(Cells(Res("", "pods"), pod)[2], "Evicted");
}

TEST(PodTableTest, InitContainers) {
  value pod = MakePod("p")
                  .InitContainer("init")
                  .Container("c")
                  .InitContainerStatus("init", R"({"waiting":{"reason":"PodInitializing"}})")
                  .ContainerStatus("c", false, R"({"waiting":{"reason":"PodInitializing"}})")
                  .Obj();
  EXPECT_EQ(Cells(Res("", "pods"), pod)[2], "Init:0/1");
  pod = MakePod("p")
            .InitContainer("init")
            .Container("c")
            .InitContainerStatus("init", R"({"terminated":{"exitCode":1,"reason":"Error"}})")
            .Obj();
  EXPECT_EQ(Cells(Res("", "pods"), pod)[2], "Init:Error");
  // A started sidecar counts towards READY and the total.
  pod = MakePod("p")
            .InitContainer("proxy", /*sidecar=*/true)
            .Container("c")
            .Phase("Running")
            .InitContainerStatus("proxy", R"({"running":{}})", /*started=*/true, /*ready=*/true)
            .ContainerStatus("c", true, R"({"running":{}})")
            .Condition("Initialized", "True")
            .Obj();
  array cells = Cells(Res("", "pods"), pod);
  EXPECT_EQ(cells[1], "2/2");
  EXPECT_EQ(cells[2], "Running");
}

TEST(PodTableTest, ReadinessGates) {
  value pod = MakePod("p")
                  .Container("c")
                  .ReadinessGate("example.com/a")
                  .ReadinessGate("example.com/b")
                  .Condition("example.com/a", "True")
                  .Condition("example.com/b", "False")
                  .Obj();
  EXPECT_EQ(Cells(Res("", "pods"), pod)[8], "1/2");
}

// --- Tables: other built-in kinds ----------------------------------------------------------------

value NodeObj(std::string_view json) { return boost::json::parse(json); }

TEST(NodeTableTest, ColumnsAndCells) {
  value table = ToTable(Res("", "nodes"), {}, "1", Now());
  EXPECT_THAT(ColumnNames(table),
              ElementsAre("Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP",
                          "OS-Image", "Kernel-Version", "Container-Runtime"));
  EXPECT_THAT(ColumnPriorities(table), ElementsAre(0, 0, 0, 0, 0, 1, 1, 1, 1, 1));

  value ready = NodeObj(R"({"metadata":{"name":"gpu-1","creationTimestamp":"2024-04-29T12:00:00Z",
      "labels":{"node-role.kubernetes.io/worker":"","node-role.kubernetes.io/gpu":"",
                "kubernetes.io/role":"edge"}},
      "status":{"conditions":[{"type":"MemoryPressure","status":"False"},
                              {"type":"Ready","status":"True"}],
                "addresses":[{"type":"Hostname","address":"gpu-1"},
                             {"type":"InternalIP","address":"10.0.0.7"}],
                "nodeInfo":{"kubeletVersion":"v1.32.0","osImage":"Ubuntu 22.04",
                            "kernelVersion":"6.5.0","containerRuntimeVersion":"containerd://1.7"}}})");
  EXPECT_EQ(Cells(Res("", "nodes"), ready),
            (array{"gpu-1", "Ready", "edge,gpu,worker", "2d", "v1.32.0", "10.0.0.7", "<none>",
                   "Ubuntu 22.04", "6.5.0", "containerd://1.7"}));

  value cordoned = NodeObj(R"({"metadata":{"name":"n"},"spec":{"unschedulable":true},
      "status":{"conditions":[{"type":"Ready","status":"False"}]}})");
  array cells = Cells(Res("", "nodes"), cordoned);
  EXPECT_EQ(cells[1], "NotReady,SchedulingDisabled");
  EXPECT_EQ(cells[2], "<none>");
  EXPECT_EQ(cells[3], "<unknown>");
  EXPECT_EQ(cells[7], "<unknown>");

  EXPECT_EQ(Cells(Res("", "nodes"), NodeObj(R"({"metadata":{"name":"n"}})"))[1], "Unknown");
}

TEST(NamespaceTableTest, ColumnsAndCells) {
  value ns = boost::json::parse(
      R"({"metadata":{"name":"team-a","creationTimestamp":"2024-05-01T08:00:00Z"},
          "status":{"phase":"Active"}})");
  value table = ToTable(Res("", "namespaces"), {ns}, "1", Now());
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Status", "Age"));
  EXPECT_EQ(At(table, {"rows"})->as_array()[0].as_object().at("cells"),
            (array{"team-a", "Active", "4h"}));
}

TEST(EventTableTest, ColumnsAndCells) {
  value table = ToTable(Res("", "events"), {}, "1", Now());
  EXPECT_THAT(ColumnNames(table), ElementsAre("Last Seen", "Type", "Reason", "Object", "Subobject",
                                              "Source", "Message", "First Seen", "Count", "Name"));
  EXPECT_THAT(ColumnPriorities(table), ElementsAre(0, 0, 0, 0, 1, 1, 0, 1, 1, 1));

  value event = boost::json::parse(R"({"metadata":{"name":"p1.17a"},
      "involvedObject":{"kind":"Pod","name":"p1","namespace":"default"},
      "reason":"FailedScheduling","message":"  0/3 nodes are unavailable: 3 Insufficient nvidia.com/gpu.\n",
      "type":"Warning","source":{"component":"volcano"},
      "firstTimestamp":"2024-05-01T11:50:00Z","lastTimestamp":"2024-05-01T11:59:30Z","count":4})");
  EXPECT_EQ(
      Cells(Res("", "events"), event),
      (array{"30s", "Warning", "FailedScheduling", "pod/p1", "", "volcano",
             "0/3 nodes are unavailable: 3 Insufficient nvidia.com/gpu.", "10m", 4, "p1.17a"}));

  value modern = boost::json::parse(R"({"metadata":{"name":"e"},
      "involvedObject":{"kind":"Node","name":"n1"},"reason":"Ready","type":"Normal",
      "eventTime":"2024-05-01T11:59:00.000000Z","reportingComponent":"kubelet",
      "reportingInstance":"n1"})");
  array cells = Cells(Res("", "events"), modern);
  EXPECT_EQ(cells[0], "60s");
  EXPECT_EQ(cells[3], "node/n1");
  EXPECT_EQ(cells[5], "kubelet, n1");
  EXPECT_EQ(cells[7], "60s");
  EXPECT_EQ(cells[8], 1);
}

TEST(PriorityClassTableTest, ColumnsAndCells) {
  value pc =
      boost::json::parse(R"({"metadata":{"name":"high","creationTimestamp":"2024-05-01T11:00:00Z"},
      "value":1000,"globalDefault":true,"preemptionPolicy":"Never"})");
  value table = ToTable(Res("scheduling.k8s.io", "priorityclasses"), {pc}, "1", Now());
  EXPECT_THAT(ColumnNames(table),
              ElementsAre("Name", "Value", "Global-Default", "Age", "PreemptionPolicy"));
  EXPECT_EQ(At(table, {"rows"})->as_array()[0].as_object().at("cells"),
            (array{"high", 1000, true, "60m", "Never"}));
}

TEST(LeaseTableTest, ColumnsAndCells) {
  value lease =
      boost::json::parse(R"({"metadata":{"name":"n1","creationTimestamp":"2024-05-01T11:59:00Z"},
      "spec":{"holderIdentity":"n1"}})");
  value table = ToTable(Res("coordination.k8s.io", "leases"), {lease}, "1", Now());
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Holder", "Age"));
  EXPECT_EQ(At(table, {"rows"})->as_array()[0].as_object().at("cells"), (array{"n1", "n1", "60s"}));
}

// printPodDisruptionBudget: what `kubectl get pdb` shows, "N/A" for the bound not set.
TEST(PodDisruptionBudgetTableTest, ColumnsAndCellsAsKubectlShowsThem) {
  const ResourceInfo& pdbs = Res("policy", "poddisruptionbudgets");
  value table = ToTable(pdbs, {}, "1", Now());
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Min Available", "Max Unavailable",
                                              "Allowed Disruptions", "Age"));
  value min = boost::json::parse(R"({"metadata":{"name":"web","creationTimestamp":
      "2024-05-01T11:59:00Z"},"spec":{"minAvailable":2},"status":{"disruptionsAllowed":1}})");
  EXPECT_EQ(Cells(pdbs, min), (array{"web", "2", "N/A", 1, "60s"}));
  value max = boost::json::parse(R"({"metadata":{"name":"db","creationTimestamp":
      "2024-05-01T11:59:00Z"},"spec":{"maxUnavailable":"25%"}})");
  EXPECT_EQ(Cells(pdbs, max), (array{"db", "N/A", "25%", 0, "60s"}));
}

// printJob and printCronJob: what `kubectl get jobs` and `kubectl get cronjobs` show.
TEST(BatchTableTest, JobsAndCronJobsAsKubectlShowsThem) {
  const ResourceInfo& jobs = Res("batch", "jobs");
  EXPECT_THAT(ColumnNames(ToTable(jobs, {}, "1", Now())),
              ElementsAre("Name", "Status", "Completions", "Duration", "Age", "Containers",
                          "Images", "Selector"));
  value done = boost::json::parse(R"({"metadata":{"name":"pi","creationTimestamp":
      "2024-05-01T11:59:00Z"},"spec":{"completions":1,"parallelism":1,
      "selector":{"matchLabels":{"batch.kubernetes.io/controller-uid":"u"}},
      "template":{"spec":{"containers":[{"name":"pi","image":"perl"}]}}},
      "status":{"succeeded":1,"startTime":"2024-05-01T11:59:00Z",
      "completionTime":"2024-05-01T11:59:07Z",
      "conditions":[{"type":"SuccessCriteriaMet","status":"True"},
                    {"type":"Complete","status":"True"}]}})");
  EXPECT_EQ(Cells(jobs, done), (array{"pi", "Complete", "1/1", "7s", "60s", "pi", "perl",
                                      "batch.kubernetes.io/controller-uid=u"}));
  value running = boost::json::parse(R"({"metadata":{"name":"q","creationTimestamp":
      "2024-05-01T11:59:00Z"},"spec":{"parallelism":3},
      "status":{"startTime":"2024-05-01T11:59:30Z"}})");
  EXPECT_EQ(Cells(jobs, running), (array{"q", "Running", "0/1 of 3", "30s", "60s", "", "",
                                         "<none>"}));
  const ResourceInfo& cronjobs = Res("batch", "cronjobs");
  EXPECT_THAT(ColumnNames(ToTable(cronjobs, {}, "1", Now())),
              ElementsAre("Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule",
                          "Age", "Containers", "Images", "Selector"));
  value cj = boost::json::parse(R"({"metadata":{"name":"hello","creationTimestamp":
      "2024-05-01T11:58:00Z"},"spec":{"schedule":"*/1 * * * *","suspend":false},
      "status":{"active":[{"name":"hello-28577519"}],"lastScheduleTime":"2024-05-01T11:59:00Z"}})");
  EXPECT_EQ(Cells(cronjobs, cj), (array{"hello", "*/1 * * * *", "<none>", "False", 1, "60s",
                                        "2m", "", "", "<none>"}));
}

// printService's columns: a ClusterIP, a headless, a NodePort, a pending LoadBalancer and an
// ExternalName Service as `kubectl get svc -o wide` shows them.
TEST(ServiceTableTest, ColumnsAndCellsAsKubectlShowsThem) {
  const ResourceInfo& services = Res("", "services");
  value table = ToTable(services, {}, "1", Now());
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "Type", "Cluster-IP", "External-IP",
                                              "Port(s)", "Age", "Selector"));
  EXPECT_THAT(ColumnPriorities(table), ElementsAre(0, 0, 0, 0, 0, 0, 1));
  auto svc = [](std::string_view name, std::string_view spec, std::string_view status = "{}") {
    return boost::json::parse(fmt::format(
        R"({{"metadata":{{"name":"{}","creationTimestamp":"2024-05-01T11:59:55Z"}},"spec":{},)"
        R"("status":{}}})",
        name, spec, status));
  };
  EXPECT_EQ(Cells(services, svc("web", R"({"type":"ClusterIP","clusterIPs":["10.96.3.4"],
      "ports":[{"port":80,"protocol":"TCP"},{"port":53,"protocol":"UDP"}],
      "selector":{"tier":"front","app":"web"}})")),
            (array{"web", "ClusterIP", "10.96.3.4", "<none>", "80/TCP,53/UDP", "5s",
                   "app=web,tier=front"}));
  EXPECT_EQ(Cells(services, svc("job", R"({"type":"ClusterIP","clusterIPs":["None"]})")),
            (array{"job", "ClusterIP", "None", "<none>", "<none>", "5s", "<none>"}));
  EXPECT_EQ(Cells(services, svc("np", R"({"type":"NodePort","clusterIPs":["10.96.0.7"],
      "externalIPs":["192.0.2.1"],"ports":[{"port":443,"nodePort":30443,"protocol":"TCP"}]})")),
            (array{"np", "NodePort", "10.96.0.7", "192.0.2.1", "443:30443/TCP", "5s", "<none>"}));
  EXPECT_EQ(Cells(services, svc("lb", R"({"type":"LoadBalancer","clusterIPs":["10.96.0.8"]})")),
            (array{"lb", "LoadBalancer", "10.96.0.8", "<pending>", "<none>", "5s", "<none>"}));
  EXPECT_EQ(Cells(services, svc("up", R"({"type":"LoadBalancer","clusterIPs":["10.96.0.9"]})",
                                R"({"loadBalancer":{"ingress":[{"ip":"203.0.113.5"}]}})")),
            (array{"up", "LoadBalancer", "10.96.0.9", "203.0.113.5", "<none>", "5s", "<none>"}));
  EXPECT_EQ(Cells(services, svc("ext", R"({"type":"ExternalName","externalName":"db.example"})")),
            (array{"ext", "ExternalName", "<none>", "db.example", "<none>", "5s", "<none>"}));
}

// --- Tables: Volcano kinds (their CRDs' printer columns) -----------------------------------------

TEST(VolcanoTableTest, JobColumnsAndCells) {
  const ResourceInfo& jobs = Res("batch.volcano.sh", "jobs");
  value table = ToTable(jobs, {}, "1", Now());
  EXPECT_THAT(ColumnNames(table),
              ElementsAre("Name", "STATUS", "minAvailable", "RUNNINGS", "AGE", "QUEUE"));
  EXPECT_THAT(ColumnPriorities(table), ElementsAre(0, 0, 0, 0, 0, 1));

  value job = boost::json::parse(R"({"apiVersion":"batch.volcano.sh/v1alpha1","kind":"Job",
      "metadata":{"name":"train","namespace":"default","creationTimestamp":"2024-05-01T11:57:58Z"},
      "spec":{"queue":"team-a","minAvailable":3},
      "status":{"state":{"phase":"Running"},"minAvailable":3,"running":2}})");
  EXPECT_EQ(Cells(jobs, job), (array{"train", "Running", 3, 2, "2m2s", "team-a"}));

  value fresh = boost::json::parse(
      R"({"metadata":{"name":"new","creationTimestamp":"2024-05-01T11:59:59Z"},"spec":{}})");
  EXPECT_EQ(Cells(jobs, fresh), (array{"new", nullptr, nullptr, nullptr, "1s", nullptr}));
}

TEST(VolcanoTableTest, PodGroupColumnsAndCells) {
  const ResourceInfo& pgs = Res("scheduling.volcano.sh", "podgroups");
  value table = ToTable(pgs, {}, "1", Now());
  EXPECT_THAT(ColumnNames(table),
              ElementsAre("Name", "STATUS", "minMember", "RUNNINGS", "AGE", "QUEUE"));
  EXPECT_THAT(ColumnPriorities(table), ElementsAre(0, 0, 0, 0, 0, 1));
  value pg = boost::json::parse(
      R"({"metadata":{"name":"train-3f2a","creationTimestamp":"2024-05-01T07:00:00Z"},
      "spec":{"minMember":4,"queue":"default"},"status":{"phase":"Inqueue"}})");
  EXPECT_EQ(Cells(pgs, pg), (array{"train-3f2a", "Inqueue", 4, nullptr, "5h", "default"}));
}

// kubectl get queue: each queue's parent, share and use (resource lists as JSON, keys sorted as
// kube-apiserver's CRD tables print a map); capability, guarantee and state with -o wide.
TEST(VolcanoTableTest, QueueShowsParentDeservedAndAllocated) {
  const ResourceInfo& queues = Res("scheduling.volcano.sh", "queues");
  value table = ToTable(queues, {}, "1", Now());
  EXPECT_THAT(ColumnNames(table), ElementsAre("Name", "PARENT", "DESERVED", "ALLOCATED",
                                              "CAPABILITY", "GUARANTEE", "STATE"));
  EXPECT_THAT(ColumnPriorities(table), ElementsAre(0, 0, 0, 0, 1, 1, 1));
  EXPECT_EQ(Cells(queues, boost::json::parse(R"({"metadata":{"name":"team-a"},
                "spec":{"parent":"org","deserved":{"nvidia.com/gpu":4,"cpu":"8"},
                "capability":{"nvidia.com/gpu":"6"},"guarantee":{"resource":{"cpu":"1"}}},
                "status":{"state":"Open","allocated":{"nvidia.com/gpu":"3","cpu":"500m"}}})")),
            (array{"team-a", "org", R"({"cpu":"8","nvidia.com/gpu":4})",
                   R"({"cpu":"500m","nvidia.com/gpu":"3"})", R"({"nvidia.com/gpu":"6"})",
                   R"({"cpu":"1"})", "Open"}));
  EXPECT_EQ(
      Cells(queues, boost::json::parse(R"({"metadata":{"name":"root"},"spec":{"weight":1}})")),
      (array{"root", nullptr, nullptr, nullptr, nullptr, nullptr, nullptr}));
}

TEST(VolcanoTableTest, MistypedValuesAreNull) {
  value job = boost::json::parse(R"({"metadata":{"name":"j","creationTimestamp":42},
      "spec":{"queue":7},"status":{"state":{"phase":"Pending"},"minAvailable":"three"}})");
  EXPECT_EQ(Cells(Res("batch.volcano.sh", "jobs"), job),
            (array{"j", "Pending", nullptr, nullptr, nullptr, "7"}));
}

// Property: every resource prints exactly one cell per column, for empty and full objects.
TEST(TablePropertyTest, CellsMatchColumnsForEveryResource) {
  const std::vector<value> objects = {
      boost::json::parse(R"({"metadata":{"name":"x"}})"),
      MakePod("p")
          .Container("c")
          .Phase("Running")
          .ContainerStatus("c", true, R"({"running":{}})")
          .Obj(),
  };
  for (const ResourceInfo& info : AllResources()) {
    for (const value& obj : objects) {
      value table = ToTable(info, {obj}, "1", Now());
      EXPECT_EQ(At(table, {"rows"})->as_array()[0].as_object().at("cells").as_array().size(),
                At(table, {"columnDefinitions"})->as_array().size())
          << info.StoreResource();
      EXPECT_EQ(Str(At(At(table, {"rows"})->as_array()[0], {"object", "metadata", "name"})),
                Str(At(obj, {"metadata", "name"})));
    }
  }
}

}  // namespace
}  // namespace muster::apiserver
