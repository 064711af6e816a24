// The OpenAPI documents of openapi.h. The kinds' field schemas are data (schemas/*.json, parsed
// once from the copy compiled into the binary); this file builds what depends on the resource
// registry: paths and operations, list kinds, and the reference closure each document carries.

#include "apiserver/descriptors/openapi.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "apiserver/descriptors/custom_resource.h"
#include "apiserver/descriptors/schemas/schema_files.h"
#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "common/hash.h"
#include "fmt/format.h"

namespace muster::apiserver {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;

constexpr std::string_view kRefPrefix = kSchemaRefPrefix;

// Schema names the paths and the generated kinds refer to; schemas/meta.v1.json defines them.
constexpr std::string_view kObjectMeta = kObjectMetaSchema;
constexpr std::string_view kListMeta = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
constexpr std::string_view kPatch = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
constexpr std::string_view kDeleteOptions = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
constexpr std::string_view kStatus = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";

std::string Core(std::string_view kind) { return fmt::format("io.k8s.api.core.v1.{}", kind); }

// --- Schemas -------------------------------------------------------------------------------------
// Shapes as kube-openapi emits them (and as the schema files hold them): a field that refers to a
// named schema is {"allOf": [{"$ref": …}], "description": …} (a $ref's siblings are ignored in
// OpenAPI 3.0).

struct Field {
  std::string_view name;
  value schema;
};
using Fields = std::initializer_list<Field>;

value Described(object schema, std::string_view description) {
  if (!description.empty()) schema["description"] = description;
  return schema;
}

value RefTo(std::string_view name) {
  return object{{"$ref", fmt::format("{}{}", kRefPrefix, name)}};
}
value Ref(std::string_view name, std::string_view description) {
  return Described(object{{"allOf", array{RefTo(name)}}}, description);
}
value Str(std::string_view description) {
  return Described(object{{"type", "string"}}, description);
}
value ArrayOfRef(std::string_view name, std::string_view description) {
  return Described(object{{"type", "array"}, {"items", RefTo(name)}}, description);
}
// An object whose fields are not described here; any content is accepted.
value Free(std::string_view description) {
  return Described(object{{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}},
                   description);
}

object Gvk(std::string_view group, std::string_view version, std::string_view kind) {
  return object{{"group", group}, {"kind", kind}, {"version", version}};
}

constexpr std::string_view kApiVersionDoc =
    "APIVersion defines the versioned schema of this representation of an object. Servers should "
    "convert recognized schemas to the latest internal value, and may reject unrecognized values. "
    "More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
constexpr std::string_view kKindDoc =
    "Kind is a string value representing the REST resource this object represents. Servers may "
    "infer this from the endpoint the client submits requests to. Cannot be updated. In "
    "CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#types-kinds";
constexpr std::string_view kMetadataDoc =
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#metadata";
constexpr std::string_view kListMetadataDoc =
    "Standard list metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#types-kinds";

// A top-level kind: apiVersion, kind and metadata, then `fields`, tagged with its GVK (the shape
// of every kind in the schema files).
value KindSchema(std::string_view group, std::string_view version, std::string_view kind,
                 std::string_view description, Fields fields,
                 std::initializer_list<std::string_view> required = {}) {
  object properties{{"apiVersion", Str(kApiVersionDoc)},
                    {"kind", Str(kKindDoc)},
                    {"metadata", Ref(kObjectMeta, kMetadataDoc)}};
  for (const Field& f : fields) properties[f.name] = f.schema;
  object schema{{"type", "object"}};
  if (!description.empty()) schema["description"] = description;
  schema["properties"] = std::move(properties);
  if (required.size() > 0) {
    array names;
    for (std::string_view r : required) names.emplace_back(r);
    schema["required"] = std::move(names);
  }
  schema["x-kubernetes-group-version-kind"] = array{Gvk(group, version, kind)};
  return schema;
}

using Catalog = std::map<std::string, value, std::less<>>;

// Every named schema: those of the schema files, plus a list kind for every served resource and a
// generic kind schema for any served resource the files do not describe. The files are part of
// the binary; apiserver_descriptors_test checks that each parses as an object of named schemas,
// that no name is given twice and that every reference resolves, so none is skipped here.
Catalog BuildCatalog() {
  Catalog c;
  for (const EmbeddedFile& file : OpenApiSchemaFiles()) {
    boost::json::error_code error;
    value parsed = boost::json::parse(file.content, error);
    if (error || !parsed.is_object()) continue;
    for (auto& [name, schema] : parsed.as_object()) c.emplace(name, std::move(schema));
  }
  for (const ResourceInfo& info : AllResources()) {
    std::string kind_name = SchemaName(info);
    if (!c.contains(kind_name)) {
      c[kind_name] = KindSchema(info.group, info.version, info.kind,
                                fmt::format("{} is a {} resource.", info.kind, info.ApiVersion()),
                                {{"spec", Free("Specification of the desired behavior.")},
                                 {"status", Free("Most recently observed status.")}});
    }
    if (info.review) continue;  // never listed: no list kind
    c[SchemaName(info, /*list=*/true)] =
        KindSchema(info.group, info.version, info.list_kind,
                   fmt::format("{} is a list of {} objects.", info.list_kind, info.kind),
                   {{"metadata", Ref(kListMeta, kListMetadataDoc)},
                    {"items", ArrayOfRef(kind_name, fmt::format("List of {}.", info.resource))}},
                   {"items"});
  }
  return c;
}

const Catalog& SchemaCatalog() {
  static const auto* const catalog = new Catalog(BuildCatalog());
  return *catalog;
}

// A custom resource's kind as kube-apiserver publishes a CRD version's schema: the schema, with
// apiVersion and kind described and metadata an ObjectMeta, tagged with its GVK.
value CustomKindSchema(const ResourceInfo& info) {
  object schema = info.custom->schema_json;
  schema["type"] = "object";
  object properties;
  if (const value* p = schema.if_contains("properties"); p != nullptr && p->is_object()) {
    properties = p->get_object();
  }
  properties["apiVersion"] = Str(kApiVersionDoc);
  properties["kind"] = Str(kKindDoc);
  properties["metadata"] = Ref(kObjectMeta, kMetadataDoc);
  schema["properties"] = std::move(properties);
  schema["x-kubernetes-group-version-kind"] = array{Gvk(info.group, info.version, info.kind)};
  return schema;
}

value ListKindSchema(const ResourceInfo& info) {
  return KindSchema(info.group, info.version, info.list_kind,
                    fmt::format("{} is a list of {}", info.list_kind, info.kind),
                    {{"metadata", Ref(kListMeta, kListMetadataDoc)},
                     {"items", ArrayOfRef(SchemaName(info), fmt::format("List of {}. More info: "
                                                                        "https://k8s.io/docs/"
                                                                        "reference/using-api/"
                                                                        "api-concepts",
                                                                        info.resource))}},
                    {"items"});
}

// --- Paths ---------------------------------------------------------------------------------------

// "CoreV1", "SchedulingV1", "BatchVolcanoShV1alpha1": the group-version part of operationIds.
std::string OperationGroup(const ResourceInfo& info) {
  std::string_view group = info.group;
  if (group.empty()) group = "core";
  constexpr std::string_view kK8sSuffix = ".k8s.io";
  if (group.ends_with(kK8sSuffix)) group.remove_suffix(kK8sSuffix.size());
  std::string result;
  bool upper = true;
  for (char ch : group) {
    if (ch == '.' || ch == '-') {
      upper = true;
      continue;
    }
    result += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(ch))) : ch;
    upper = false;
  }
  std::string version = info.version;
  version[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(version[0])));
  return result + version;
}

object QueryParam(std::string_view name, std::string_view description,
                  std::string_view type = "string") {
  return object{{"name", name},
                {"in", "query"},
                {"description", description},
                {"schema", object{{"type", type}, {"uniqueItems", true}}}};
}

object PathParam(std::string_view name, std::string_view description) {
  return object{{"name", name},
                {"in", "path"},
                {"description", description},
                {"required", true},
                {"schema", object{{"type", "string"}, {"uniqueItems", true}}}};
}

object DryRunParam() {
  return QueryParam("dryRun",
                    "When present, indicates that modifications should not be persisted. An "
                    "invalid or unrecognized dryRun directive will result in an error response "
                    "and no further processing of the request. Valid values are: - All: all dry "
                    "run stages will be processed");
}

// The parameters of create, update and patch. `fieldValidation` is what kubectl looks for.
array WriteParams(bool patch) {
  array params{
      DryRunParam(),
      QueryParam("fieldManager",
                 "fieldManager is a name associated with the actor or entity that is making "
                 "these changes. The value must be less than or 128 characters long, and only "
                 "contain printable characters, as defined by "
                 "https://golang.org/pkg/unicode/#IsPrint."),
      QueryParam("fieldValidation",
                 "fieldValidation instructs the server on how to handle objects in the request "
                 "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - "
                 "Ignore: This will ignore any unknown fields that are silently dropped from the "
                 "object, and will ignore all but the last duplicate field that the decoder "
                 "encounters. - Warn: This will send a warning via the standard warning response "
                 "header for each unknown field that is dropped from the object, and for each "
                 "duplicate field that is encountered. The request will still succeed if there "
                 "are no other errors, and will only persist the last of any duplicate fields. - "
                 "Strict: This will fail the request with a BadRequest error if any unknown "
                 "fields would be dropped from the object, or if any duplicate fields are "
                 "present. The error returned from the server will contain all unknown and "
                 "duplicate fields encountered."),
  };
  if (patch) {
    params.emplace_back(QueryParam(
        "force",
        "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting "
        "fields owned by other people. Force flag must be unset for non-apply patch requests.",
        "boolean"));
  }
  return params;
}

array ListParams() {
  return array{
      QueryParam("allowWatchBookmarks",
                 "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that "
                 "do not implement bookmarks may ignore this flag.",
                 "boolean"),
      QueryParam("continue",
                 "The continue option should be set when retrieving more results from the "
                 "server. Since this value is server defined, clients may only use the continue "
                 "value from a previous query result with identical query parameters."),
      QueryParam("fieldSelector",
                 "A selector to restrict the list of returned objects by their fields. Defaults "
                 "to everything."),
      QueryParam("labelSelector",
                 "A selector to restrict the list of returned objects by their labels. Defaults "
                 "to everything."),
      QueryParam("limit",
                 "limit is a maximum number of responses to return for a list call. If more "
                 "items exist, the server will set the `continue` field on the list metadata.",
                 "integer"),
      QueryParam("resourceVersion",
                 "resourceVersion sets a constraint on what resource versions a request may be "
                 "served from. Defaults to unset"),
      QueryParam("resourceVersionMatch",
                 "resourceVersionMatch determines how resourceVersion is applied to list calls."),
      QueryParam("sendInitialEvents",
                 "`sendInitialEvents=true` may be set together with `watch=true`. In that case, "
                 "the watch stream will begin with synthetic events to produce the current "
                 "state of objects in the collection.",
                 "boolean"),
      QueryParam("timeoutSeconds",
                 "Timeout for the list/watch call. This limits the duration of the call, "
                 "regardless of any activity or inactivity.",
                 "integer"),
      QueryParam("watch",
                 "Watch for changes to the described resources and return them as a stream of "
                 "add, update, and remove notifications. Specify resourceVersion.",
                 "boolean"),
  };
}

array DeleteParams() {
  return array{
      DryRunParam(),
      QueryParam("gracePeriodSeconds",
                 "The duration in seconds before the object should be deleted. Value must be "
                 "non-negative integer. The value zero indicates delete immediately.",
                 "integer"),
      QueryParam("propagationPolicy",
                 "Whether and how garbage collection will be performed. Acceptable values are: "
                 "'Orphan', 'Background', 'Foreground'."),
  };
}

object JsonContent(const value& schema) {
  return object{{"application/json", object{{"schema", schema}}},
                {"application/yaml", object{{"schema", schema}}}};
}

object Responses(std::initializer_list<std::pair<std::string_view, std::string_view>> codes,
                 std::string_view schema_name) {
  object responses;
  for (const auto& [code, description] : codes) {
    responses[code] =
        object{{"description", description}, {"content", JsonContent(RefTo(schema_name))}};
  }
  responses["401"] = object{{"description", "Unauthorized"}};
  return responses;
}

struct OperationSpec {
  std::string id;
  std::string_view action;  // x-kubernetes-action
  object gvk;
  array params;
  value request_body;  // null: none
  object responses;
};

object Operation(OperationSpec spec) {
  object op{{"description", fmt::format("{} the object", spec.action)},
            {"operationId", std::move(spec.id)}};
  if (!spec.params.empty()) op["parameters"] = std::move(spec.params);
  if (!spec.request_body.is_null()) op["requestBody"] = std::move(spec.request_body);
  op["responses"] = std::move(spec.responses);
  op["x-kubernetes-action"] = spec.action;
  op["x-kubernetes-group-version-kind"] = std::move(spec.gvk);
  return op;
}

value BodyOf(std::string_view schema_name) {
  return object{{"content", object{{"*/*", object{{"schema", RefTo(schema_name)}}}}},
                {"required", true}};
}

value PatchBody(bool builtin) {
  object content;
  for (std::string_view type : {"application/apply-patch+yaml", "application/json-patch+json",
                                "application/merge-patch+json"}) {
    content[type] = object{{"schema", RefTo(kPatch)}};
  }
  if (builtin)
    content["application/strategic-merge-patch+json"] = object{{"schema", RefTo(kPatch)}};
  return object{{"content", std::move(content)}, {"required", true}};
}

bool HasVerb(const ResourceInfo& info, std::string_view verb) {
  return std::find(info.verbs.begin(), info.verbs.end(), verb) != info.verbs.end();
}

// The operations kube-apiserver serves for one resource, under the paths kubectl explain
// searches: <prefix>/<resource>[/{name}] and <prefix>/namespaces/{namespace}/<resource>[/{name}].
void AddResourcePaths(const ResourceInfo& info, object& paths) {
  const std::string prefix =
      info.group.empty() ? "/api/" + info.version : "/apis/" + info.ApiVersion();
  const std::string collection =
      prefix + (info.namespaced ? "/namespaces/{namespace}/" : "/") + info.resource;
  const std::string item = collection + "/{name}";
  const std::string id_group = OperationGroup(info);
  const std::string scope = info.namespaced ? "Namespaced" : "";
  const std::string kind_schema = SchemaName(info);
  const std::string list_schema = SchemaName(info, /*list=*/true);
  const object gvk = Gvk(info.group, info.version, info.kind);
  const auto id = [&](std::string_view verb, std::string_view suffix = "") {
    return fmt::format("{}{}{}{}{}", verb, id_group, scope, info.kind, suffix);
  };

  array collection_params;
  array item_params;
  if (info.namespaced) {
    collection_params.emplace_back(
        PathParam("namespace", "object name and auth scope, such as for teams and projects"));
    item_params.emplace_back(collection_params.back());
  }
  item_params.emplace_back(PathParam("name", fmt::format("name of the {}", info.kind)));
  const object pretty = QueryParam("pretty", "If 'true', then the output is pretty printed.");
  collection_params.emplace_back(pretty);
  item_params.emplace_back(pretty);

  object collection_ops{{"parameters", collection_params}};
  if (HasVerb(info, "list")) {
    collection_ops["get"] = Operation(
        {id("list"), "list", gvk, ListParams(), nullptr, Responses({{"200", "OK"}}, list_schema)});
  }
  if (HasVerb(info, "create")) {
    collection_ops["post"] = Operation(
        {id("create"), "post", gvk, WriteParams(false), BodyOf(kind_schema),
         Responses({{"200", "OK"}, {"201", "Created"}, {"202", "Accepted"}}, kind_schema)});
  }
  if (HasVerb(info, "deletecollection")) {
    array params = DeleteParams();
    for (value& p : ListParams()) params.emplace_back(std::move(p));
    collection_ops["delete"] = Operation(
        {fmt::format("deleteCollection{}{}{}", id_group, scope, info.kind), "deletecollection", gvk,
         std::move(params), BodyOf(kDeleteOptions), Responses({{"200", "OK"}}, kStatus)});
  }
  paths[collection] = std::move(collection_ops);
  if (info.review) return;  // create-only: no item paths

  object item_ops{{"parameters", item_params}};
  if (HasVerb(info, "get")) {
    item_ops["get"] = Operation(
        {id("read"), "get", gvk, array{}, nullptr, Responses({{"200", "OK"}}, kind_schema)});
  }
  if (HasVerb(info, "update")) {
    item_ops["put"] = Operation({id("replace"), "put", gvk, WriteParams(false), BodyOf(kind_schema),
                                 Responses({{"200", "OK"}, {"201", "Created"}}, kind_schema)});
  }
  if (HasVerb(info, "patch")) {
    item_ops["patch"] =
        Operation({id("patch"), "patch", gvk, WriteParams(true), PatchBody(info.builtin),
                   Responses({{"200", "OK"}, {"201", "Created"}}, kind_schema)});
  }
  if (HasVerb(info, "delete")) {
    item_ops["delete"] =
        Operation({id("delete"), "delete", gvk, DeleteParams(), BodyOf(kDeleteOptions),
                   Responses({{"200", "OK"}, {"202", "Accepted"}}, kind_schema)});
  }
  paths[item] = std::move(item_ops);

  if (info.namespaced && HasVerb(info, "list")) {
    paths[prefix + "/" + info.resource] = object{
        {"parameters", array{pretty}},
        {"get", Operation({fmt::format("list{}{}ForAllNamespaces", id_group, info.kind), "list",
                           gvk, ListParams(), nullptr, Responses({{"200", "OK"}}, list_schema)})}};
  }

  for (const std::string& sub : info.subresources) {
    SubresourceInfo sub_info = DescribeSubresource(info, sub);
    std::string suffix = sub;
    suffix[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0])));
    object ops{{"parameters", item_params}};
    const object sub_gvk = Gvk(sub_info.group, sub_info.version, sub_info.kind);
    if (sub == "binding") {
      std::string binding_schema = Core("Binding");
      ops["post"] = Operation(
          {fmt::format("create{}{}{}{}", id_group, scope, info.kind, suffix), "post", sub_gvk,
           WriteParams(false), BodyOf(binding_schema),
           Responses({{"200", "OK"}, {"201", "Created"}, {"202", "Accepted"}}, binding_schema)});
    } else if (sub == "eviction") {
      const std::string eviction_schema = "io.k8s.api.policy.v1.Eviction";
      ops["post"] = Operation(
          {fmt::format("create{}{}{}{}", id_group, scope, info.kind, suffix), "post", sub_gvk,
           WriteParams(false), BodyOf(eviction_schema),
           Responses({{"200", "OK"}, {"201", "Created"}, {"202", "Accepted"}}, eviction_schema)});
    } else if (sub == "log") {
      array params;
      for (auto [name, type, description] :
           std::initializer_list<std::tuple<std::string_view, std::string_view, std::string_view>>{
               {"container", "string", "The container for which to stream logs."},
               {"follow", "boolean", "Follow the log stream of the pod."},
               {"limitBytes", "integer",
                "If set, the number of bytes to read from the server "
                "before terminating the log output."},
               {"previous", "boolean", "Return previous terminated container logs."},
               {"sinceSeconds", "integer",
                "A relative time in seconds before the current time "
                "from which to show logs."},
               {"tailLines", "integer",
                "If set, the number of lines from the end of the logs "
                "to show."},
               {"timestamps", "boolean",
                "If true, add an RFC3339 timestamp at the beginning "
                "of every line of log output."}}) {
        params.emplace_back(QueryParam(name, description, type));
      }
      ops["get"] = Operation(
          {id("read", suffix), "get", sub_gvk, std::move(params), nullptr,
           object{{"200",
                   object{{"description", "OK"},
                          {"content", object{{"text/plain",
                                              object{{"schema", object{{"type", "string"}}}}}}}}},
                  {"401", object{{"description", "Unauthorized"}}}}});
    } else if (sub == "finalize") {
      ops["put"] =
          Operation({id("replace", suffix), "put", sub_gvk, WriteParams(false), BodyOf(kind_schema),
                     Responses({{"200", "OK"}, {"201", "Created"}}, kind_schema)});
    } else {
      ops["get"] = Operation({id("read", suffix), "get", sub_gvk, array{}, nullptr,
                              Responses({{"200", "OK"}}, kind_schema)});
      ops["put"] =
          Operation({id("replace", suffix), "put", sub_gvk, WriteParams(false), BodyOf(kind_schema),
                     Responses({{"200", "OK"}, {"201", "Created"}}, kind_schema)});
      ops["patch"] = Operation({id("patch", suffix), "patch", sub_gvk, WriteParams(true),
                                PatchBody(info.builtin),
                                Responses({{"200", "OK"}, {"201", "Created"}}, kind_schema)});
    }
    paths[item + "/" + sub] = std::move(ops);
  }
}

void CollectRefs(const value& v, std::vector<std::string>& out) {
  if (const object* obj = v.if_object()) {
    for (const auto& kv : *obj) {
      const std::string_view key = kv.key();
      const value& child = kv.value();
      if (key == "$ref" && child.is_string()) {
        std::string_view ref = child.get_string();
        if (ref.starts_with(kRefPrefix)) out.emplace_back(ref.substr(kRefPrefix.size()));
      } else {
        CollectRefs(child, out);
      }
    }
  } else if (const array* arr = v.if_array()) {
    for (const value& child : *arr) CollectRefs(child, out);
  }
}

std::string DocumentPath(std::string_view group, std::string_view version) {
  return group.empty() ? fmt::format("api/{}", version) : fmt::format("apis/{}/{}", group, version);
}

std::vector<OpenApiDocument> BuildAllDocuments() {
  std::vector<OpenApiDocument> docs;
  for (const GroupVersion& gv : ServedGroupVersions()) {
    OpenApiDocument doc;
    doc.path = DocumentPath(gv.group, gv.version);
    doc.json = boost::json::serialize(BuildOpenApiDocument(gv.group, gv.version));
    doc.hash = fmt::format("{:016X}", common::Fnv1a64(doc.json));
    docs.push_back(std::move(doc));
  }
  return docs;
}

const std::vector<OpenApiDocument>& AllDocuments() {
  static const auto* const docs = new std::vector<OpenApiDocument>(BuildAllDocuments());
  return *docs;
}

}  // namespace

std::string SchemaName(const ResourceInfo& resource, bool list) {
  const std::string& kind = list ? resource.list_kind : resource.kind;
  std::string_view group = resource.group;
  if (group.empty()) return fmt::format("io.k8s.api.core.{}.{}", resource.version, kind);
  // Kubernetes' own groups of one label (policy; apps and batch too): CRD groups have a dot.
  if (group.find('.') == std::string_view::npos) {
    return fmt::format("io.k8s.api.{}.{}.{}", group, resource.version, kind);
  }
  // apiextensions' kinds live in their own module, which names them.
  if (group == "apiextensions.k8s.io") {
    return fmt::format("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{}.{}",
                       resource.version, kind);
  }
  constexpr std::string_view kK8sSuffix = ".k8s.io";
  if (group.ends_with(kK8sSuffix)) {
    group.remove_suffix(kK8sSuffix.size());
    return fmt::format("io.k8s.api.{}.{}.{}", group, resource.version, kind);
  }
  // Custom resources: the group reversed, as kube-apiserver names CRD schemas.
  std::string reversed;
  while (!group.empty()) {
    size_t dot = group.rfind('.');
    std::string_view segment = dot == std::string_view::npos ? group : group.substr(dot + 1);
    if (!reversed.empty()) reversed += '.';
    reversed += segment;
    group = dot == std::string_view::npos ? std::string_view{} : group.substr(0, dot);
  }
  return fmt::format("{}.{}.{}", reversed, resource.version, kind);
}

value BuildOpenApiDocument(std::string_view group, std::string_view version) {
  return BuildOpenApiDocument(*BuiltinResources(), group, version);
}

value BuildOpenApiDocument(const ResourceSet& set, std::string_view group,
                           std::string_view version) {
  std::vector<const ResourceInfo*> infos = set.In(group, version);
  if (infos.empty()) return nullptr;
  object paths;
  std::vector<std::string> pending;
  Catalog custom;  // the kinds of custom resources, from their CRDs
  for (const ResourceInfo* info : infos) {
    AddResourcePaths(*info, paths);
    pending.push_back(SchemaName(*info));
    if (!info->review) pending.push_back(SchemaName(*info, /*list=*/true));
    if (info->custom != nullptr) {
      custom[SchemaName(*info)] = CustomKindSchema(*info);
      custom[SchemaName(*info, /*list=*/true)] = ListKindSchema(*info);
    }
  }
  CollectRefs(paths, pending);

  // The schemas the paths name, and everything they refer to, sorted by name.
  const Catalog& catalog = SchemaCatalog();
  std::map<std::string, const value*> included;
  while (!pending.empty()) {
    std::string name = std::move(pending.back());
    pending.pop_back();
    if (included.contains(name)) continue;
    const value* found = nullptr;
    if (auto c = custom.find(name); c != custom.end()) {
      found = &c->second;
    } else if (auto b = catalog.find(name); b != catalog.end()) {
      found = &b->second;
    }
    if (found == nullptr) continue;
    included.emplace(name, found);
    CollectRefs(*found, pending);
  }
  object schemas;
  for (const auto& [name, schema] : included) schemas[name] = *schema;

  return object{{"openapi", "3.0.0"},
                {"info", object{{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
                {"paths", std::move(paths)},
                {"components", object{{"schemas", std::move(schemas)}}}};
}

std::shared_ptr<const OpenApiDocuments> OpenApiDocuments::Build(const ResourceSet& set) {
  auto result = std::make_shared<OpenApiDocuments>();
  for (const GroupVersion& gv : set.GroupVersions()) {
    std::vector<const ResourceInfo*> infos = set.In(gv.group, gv.version);
    const bool custom = std::any_of(infos.begin(), infos.end(),
                                    [](const ResourceInfo* r) { return r->custom != nullptr; });
    const std::string path = DocumentPath(gv.group, gv.version);
    if (!custom) {
      // The built-in documents live as long as the process; shared without ownership.
      if (const OpenApiDocument* doc = FindOpenApiDocument(path)) {
        result->docs_.emplace_back(std::shared_ptr<const OpenApiDocument>(), doc);
      }
      continue;
    }
    auto doc = std::make_shared<OpenApiDocument>();
    doc->path = path;
    doc->json = boost::json::serialize(BuildOpenApiDocument(set, gv.group, gv.version));
    doc->hash = fmt::format("{:016X}", common::Fnv1a64(doc->json));
    result->docs_.push_back(std::move(doc));
  }
  return result;
}

value OpenApiDocuments::Index() const {
  object paths;
  for (const auto& doc : docs_) {
    paths[doc->path] =
        object{{"serverRelativeURL", fmt::format("/openapi/v3/{}?hash={}", doc->path, doc->hash)}};
  }
  return object{{"paths", std::move(paths)}};
}

const OpenApiDocument* OpenApiDocuments::Find(std::string_view path) const {
  for (const auto& doc : docs_) {
    if (doc->path == path) return doc.get();
  }
  return nullptr;
}

value OpenApiIndex() {
  object paths;
  for (const OpenApiDocument& doc : AllDocuments()) {
    paths[doc.path] =
        object{{"serverRelativeURL", fmt::format("/openapi/v3/{}?hash={}", doc.path, doc.hash)}};
  }
  return object{{"paths", std::move(paths)}};
}

std::string OpenApiV2Document(bool protobuf) {
  constexpr std::string_view kTitle = "Kubernetes";
  constexpr std::string_view kVersion = "v1.32.0";
  if (!protobuf) {
    return boost::json::serialize(object{{"swagger", "2.0"},
                                         {"info", object{{"title", kTitle}, {"version", kVersion}}},
                                         {"paths", object{}},
                                         {"definitions", object{}}});
  }
  // Protobuf wire format, fields of gnostic's OpenAPIv2.proto: Document{swagger = 1, info = 2,
  // paths = 8, definitions = 9}, Info{title = 1, version = 2}. Every length here is below 128, so
  // each fits one varint byte.
  const auto field = [](int number, std::string_view bytes) {
    std::string out;
    out += static_cast<char>(number << 3 | 2);  // wire type 2: length-delimited
    out += static_cast<char>(bytes.size());
    out += bytes;
    return out;
  };
  const std::string info = field(1, kTitle) + field(2, kVersion);
  return field(1, "2.0") + field(2, info) + field(8, "") + field(9, "");
}

const OpenApiDocument* FindOpenApiDocument(std::string_view path) {
  for (const OpenApiDocument& doc : AllDocuments()) {
    if (doc.path == path) return &doc;
  }
  return nullptr;
}

}  // namespace muster::apiserver
