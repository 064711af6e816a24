#include "apiserver/openapi.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"

namespace muster::apiserver {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;

constexpr std::string_view kRefPrefix = kSchemaRefPrefix;

// Shared schema names.
constexpr std::string_view kObjectMeta = kObjectMetaSchema;
constexpr std::string_view kListMeta = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
constexpr std::string_view kOwnerReference = "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference";
constexpr std::string_view kManagedFieldsEntry =
    "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry";
constexpr std::string_view kTime = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
constexpr std::string_view kMicroTime = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime";
constexpr std::string_view kLabelSelector = "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector";
constexpr std::string_view kLabelSelectorRequirement =
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement";
constexpr std::string_view kPatch = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
constexpr std::string_view kDeleteOptions = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
constexpr std::string_view kPreconditions = "io.k8s.apimachinery.pkg.apis.meta.v1.Preconditions";
constexpr std::string_view kStatus = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
constexpr std::string_view kQuantity = kQuantitySchema;

std::string Core(std::string_view kind) { return fmt::format("io.k8s.api.core.v1.{}", kind); }

// --- Schema builders ----------------------------------------------------------------------------
// Shapes as kube-openapi emits them: a field that refers to a named schema is
// {"allOf": [{"$ref": …}], "description": …} (a $ref's siblings are ignored in OpenAPI 3.0).

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
value Enum(std::string_view description, std::initializer_list<std::string_view> values) {
  array list;
  for (std::string_view v : values) list.emplace_back(v);
  return Described(object{{"type", "string"}, {"enum", std::move(list)}}, description);
}
value Int32(std::string_view description) {
  return Described(object{{"type", "integer"}, {"format", "int32"}}, description);
}
value Int64(std::string_view description) {
  return Described(object{{"type", "integer"}, {"format", "int64"}}, description);
}
value Bool(std::string_view description) {
  return Described(object{{"type", "boolean"}}, description);
}
value ArrayOf(value items, std::string_view description) {
  return Described(object{{"type", "array"}, {"items", std::move(items)}}, description);
}
value ArrayOfRef(std::string_view name, std::string_view description) {
  return ArrayOf(RefTo(name), description);
}
value StrArray(std::string_view description) {
  return ArrayOf(object{{"type", "string"}}, description);
}
value MapOf(value items, std::string_view description) {
  return Described(object{{"type", "object"}, {"additionalProperties", std::move(items)}},
                   description);
}
value StrMap(std::string_view description) {
  return MapOf(object{{"type", "string"}}, description);
}
value QuantityMap(std::string_view description) { return MapOf(RefTo(kQuantity), description); }
// An object whose fields are not described here; any content is accepted.
value Free(std::string_view description) {
  return Described(object{{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}},
                   description);
}
// A described object that also accepts fields not listed (a kind with many optional sources,
// such as Volume): explain shows the listed ones, strict field validation accepts the rest.
value Open(value schema) {
  schema.as_object()["x-kubernetes-preserve-unknown-fields"] = true;
  return schema;
}
value Obj(std::string_view description, Fields fields,
          std::initializer_list<std::string_view> required = {}) {
  object properties;
  for (const Field& f : fields) properties[f.name] = f.schema;
  object schema{{"type", "object"}};
  if (!description.empty()) schema["description"] = description;
  schema["properties"] = std::move(properties);
  if (required.size() > 0) {
    array names;
    for (std::string_view r : required) names.emplace_back(r);
    schema["required"] = std::move(names);
  }
  return schema;
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

// A top-level kind: apiVersion, kind and metadata, then `fields`, tagged with its GVK.
value KindSchema(std::string_view group, std::string_view version, std::string_view kind,
                 std::string_view description, Fields fields,
                 std::initializer_list<std::string_view> required = {}) {
  object schema = Obj(description,
                      {{"apiVersion", Str(kApiVersionDoc)},
                       {"kind", Str(kKindDoc)},
                       {"metadata", Ref(kObjectMeta, kMetadataDoc)}},
                      required)
                      .as_object();
  object& properties = schema["properties"].as_object();
  for (const Field& f : fields) properties[f.name] = f.schema;
  schema["x-kubernetes-group-version-kind"] = array{Gvk(group, version, kind)};
  return schema;
}

using Catalog = std::map<std::string, value, std::less<>>;

// --- apimachinery
// ---------------------------------------------------------------------------------

void AddMetaSchemas(Catalog& c) {
  c[std::string(kTime)] = Described(
      object{{"type", "string"}, {"format", "date-time"}},
      "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON. "
      "Wrappers are provided for many of the factory methods that the time package offers.");
  c[std::string(kMicroTime)] =
      Described(object{{"type", "string"}, {"format", "date-time"}},
                "MicroTime is version of Time with microsecond level precision.");
  c[std::string(kQuantity)] = Described(
      object{{"oneOf", array{object{{"type", "string"}}, object{{"type", "number"}}}}},
      "Quantity is a fixed-point representation of a number. It provides convenient "
      "marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() "
      "accessors.\n\nThe serialization format is:\n\n<quantity> ::= <signedNumber><suffix>\n\n"
      "(Note that <suffix> may be empty, from the \"\" case in <decimalSI>.)\n\n<suffix> ::= "
      "<binarySI> | <decimalExponent> | <decimalSI>\n<binarySI> ::= Ki | Mi | Gi | Ti | Pi | Ei\n"
      "<decimalSI> ::= m | \"\" | k | M | G | T | P | E");
  c[std::string(kOwnerReference)] = Obj(
      "OwnerReference contains enough information to let you identify an owning object. An "
      "owning object must be in the same namespace as the dependent, or be cluster-scoped, so "
      "there is no namespace field.",
      {{"apiVersion", Str("API version of the referent.")},
       {"kind", Str("Kind of the referent.")},
       {"name", Str("Name of the referent.")},
       {"uid", Str("UID of the referent.")},
       {"controller", Bool("If true, this reference points to the managing controller.")},
       {"blockOwnerDeletion",
        Bool("If true, AND if the owner has the \"foregroundDeletion\" finalizer, then the owner "
             "cannot be deleted from the key-value store until this reference is removed.")}},
      {"apiVersion", "kind", "name", "uid"});
  c[std::string(kManagedFieldsEntry)] = Free(
      "ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource "
      "that the fieldset applies to.");
  c[std::string(kObjectMeta)] = Obj(
      "ObjectMeta is metadata that all persisted resources must have, which includes all objects "
      "users must create.",
      {{"name",
        Str("Name must be unique within a namespace. Is required when creating resources, "
            "although some resources may allow a client to request the generation of an "
            "appropriate name automatically. Name is primarily intended for creation idempotence "
            "and configuration definition. Cannot be updated. More info: "
            "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names")},
       {"generateName",
        Str("GenerateName is an optional prefix, used by the server, to generate a unique name "
            "ONLY IF the Name field has not been provided. If this field is used, the name "
            "returned to the client will be different than the name passed. This value will "
            "also be combined with a unique suffix. The provided value has the same validation "
            "rules as the Name field, and may be truncated by the length of the suffix required "
            "to make the value unique on the server.")},
       {"namespace",
        Str("Namespace defines the space within which each name must be unique. An empty "
            "namespace is equivalent to the \"default\" namespace, but \"default\" is the "
            "canonical representation. Not all objects are required to be scoped to a namespace "
            "- the value of this field for those objects will be empty.\n\nMust be a DNS_LABEL. "
            "Cannot be updated. More info: "
            "https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces")},
       {"uid",
        Str("UID is the unique in time and space value for this object. It is typically "
            "generated by the server on successful creation of a resource and is not allowed to "
            "change on PUT operations.\n\nPopulated by the system. Read-only.")},
       {"resourceVersion",
        Str("An opaque value that represents the internal version of this object that can be "
            "used by clients to determine when objects have changed. May be used for optimistic "
            "concurrency, change detection, and the watch operation on a resource or set of "
            "resources. Clients must treat these values as opaque and passed unmodified back to "
            "the server.\n\nPopulated by the system. Read-only.")},
       {"generation",
        Int64("A sequence number representing a specific generation of the desired state. "
              "Populated by the system. Read-only.")},
       {"creationTimestamp",
        Ref(kTime,
            "CreationTimestamp is a timestamp representing the server time when this object was "
            "created. It is not guaranteed to be set in happens-before order across separate "
            "operations. Clients may not set this value. It is represented in RFC3339 form and "
            "is in UTC.\n\nPopulated by the system. Read-only. Null for lists.")},
       {"deletionTimestamp",
        Ref(kTime,
            "DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted. "
            "This field is set by the server when a graceful deletion is requested by the user, "
            "and is not directly settable by a client. The resource is expected to be deleted "
            "(no longer visible from resource lists, and not reachable by name) after the time "
            "in this field, once the finalizers list is empty.\n\nPopulated by the system when a "
            "graceful deletion is requested. Read-only.")},
       {"deletionGracePeriodSeconds",
        Int64("Number of seconds allowed for this object to gracefully terminate before it will "
              "be removed from the system. Only set when deletionTimestamp is also set. May only "
              "be shortened. Read-only.")},
       {"labels",
        StrMap("Map of string keys and values that can be used to organize and categorize (scope "
               "and select) objects. May match selectors of replication controllers and "
               "services. More info: https://kubernetes.io/docs/concepts/overview/"
               "working-with-objects/labels")},
       {"annotations",
        StrMap("Annotations is an unstructured key value map stored with a resource that may be "
               "set by external tools to store and retrieve arbitrary metadata. They are not "
               "queryable and should be preserved when modifying objects. More info: "
               "https://kubernetes.io/docs/concepts/overview/working-with-objects/annotations")},
       {"ownerReferences",
        ArrayOfRef(kOwnerReference,
                   "List of objects depended by this object. If ALL objects in the list have "
                   "been deleted, this object will be garbage collected. If this object is "
                   "managed by a controller, then an entry in this list will point to this "
                   "controller, with the controller field set to true. There cannot be more "
                   "than one managing controller.")},
       {"finalizers",
        StrArray("Must be empty before the object is deleted from the registry. Each entry is an "
                 "identifier for the responsible component that will remove the entry from the "
                 "list. If the deletionTimestamp of the object is non-nil, entries in this list "
                 "can only be removed.")},
       {"selfLink", Str("Deprecated: selfLink is a legacy read-only field that is no longer "
                        "populated by the system.")},
       {"managedFields",
        ArrayOfRef(kManagedFieldsEntry,
                   "ManagedFields maps workflow-id and version to the set of fields that are "
                   "managed by that workflow. This is mostly for internal housekeeping, and "
                   "users typically shouldn't need to set or understand this field.")}});
  c[std::string(kListMeta)] =
      Obj("ListMeta describes metadata that synthetic resources must have, including lists and "
          "various status objects.",
          {{"resourceVersion",
            Str("String that identifies the server's internal version of this object that can be "
                "used by clients to determine when objects have changed. Value must be treated as "
                "opaque by clients and passed unmodified back to the server. Populated by the "
                "system. Read-only.")},
           {"continue",
            Str("continue may be set if the user set a limit on the number of items returned, and "
                "indicates that the server has more data available. The value is opaque and may be "
                "used to issue another request to the endpoint that served this list to retrieve "
                "the next set of available objects.")},
           {"remainingItemCount",
            Int64("remainingItemCount is the number of subsequent items in the list which are not "
                  "included in this list response.")}});
  c[std::string(kLabelSelectorRequirement)] = Obj(
      "A label selector requirement is a selector that contains values, a key, and an operator "
      "that relates the key and values.",
      {{"key", Str("key is the label key that the selector applies to.")},
       {"operator",
        Str("operator represents a key's relationship to a set of values. Valid operators are "
            "In, NotIn, Exists and DoesNotExist.")},
       {"values",
        StrArray("values is an array of string values. If the operator is In or NotIn, the "
                 "values array must be non-empty. If the operator is Exists or DoesNotExist, the "
                 "values array must be empty. This array is replaced during a strategic merge "
                 "patch.")}},
      {"key", "operator"});
  c[std::string(kLabelSelector)] = Obj(
      "A label selector is a label query over a set of resources. The result of matchLabels and "
      "matchExpressions are ANDed. An empty label selector matches all objects. A null label "
      "selector matches no objects.",
      {{"matchLabels",
        StrMap("matchLabels is a map of {key,value} pairs. A single {key,value} in the "
               "matchLabels map is equivalent to an element of matchExpressions, whose key field "
               "is \"key\", the operator is \"In\", and the values array contains only "
               "\"value\". The requirements are ANDed.")},
       {"matchExpressions",
        ArrayOfRef(kLabelSelectorRequirement,
                   "matchExpressions is a list of label selector requirements. The requirements "
                   "are ANDed.")}});
  c[std::string(kPatch)] = Described(
      object{{"type", "object"}},
      "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.");
  c[std::string(kPreconditions)] =
      Obj("Preconditions must be fulfilled before an operation (update, delete, etc.) is carried "
          "out.",
          {{"resourceVersion", Str("Specifies the target ResourceVersion")},
           {"uid", Str("Specifies the target UID.")}});
  c[std::string(kDeleteOptions)] = Obj(
      "DeleteOptions may be provided when deleting an API object.",
      {{"apiVersion", Str(kApiVersionDoc)},
       {"kind", Str(kKindDoc)},
       {"dryRun",
        StrArray("When present, indicates that modifications should not be persisted. Valid "
                 "values are: - All: all dry run stages will be processed")},
       {"gracePeriodSeconds",
        Int64("The duration in seconds before the object should be deleted. Value must be "
              "non-negative integer. The value zero indicates delete immediately. If this value "
              "is nil, the default grace period for the specified type will be used.")},
       {"preconditions",
        Ref(kPreconditions,
            "Must be fulfilled before a deletion is carried out. If not possible, a 409 Conflict "
            "status will be returned.")},
       {"propagationPolicy",
        Str("Whether and how garbage collection will be performed. Acceptable values are: "
            "'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to "
            "delete the dependents in the background; 'Foreground' - a cascading policy that "
            "deletes all dependents in the foreground.")}});
  c[std::string(kStatus)] = Obj(
      "Status is a return value for calls that don't return other objects.",
      {{"apiVersion", Str(kApiVersionDoc)},
       {"kind", Str(kKindDoc)},
       {"metadata", Ref(kListMeta, kListMetadataDoc)},
       {"status", Str("Status of the operation. One of: \"Success\" or \"Failure\".")},
       {"message", Str("A human-readable description of the status of this operation.")},
       {"reason", Str("A machine-readable description of why this operation is in the \"Failure\" "
                      "status. If this value is empty there is no information available.")},
       {"details", Free("Extended data associated with the reason.")},
       {"code", Int32("Suggested HTTP return code for this status, 0 if not set.")}});
}

// --- Pods --------------------------------------------------------------------------------------

void AddSchedulingConstraintSchemas(Catalog& c) {
  c[Core("Toleration")] = Obj(
      "The pod this Toleration is attached to tolerates any taint that matches the triple "
      "<key,value,effect> using the matching operator <operator>.",
      {{"key",
        Str("Key is the taint key that the toleration applies to. Empty means match all taint "
            "keys. If the key is empty, operator must be Exists; this combination means to match "
            "all values and all keys.")},
       {"operator",
        Enum("Operator represents a key's relationship to the value. Valid operators are Exists "
             "and Equal. Defaults to Equal. Exists is equivalent to wildcard for value, so that a "
             "pod can tolerate all taints of a particular category.",
             {"Equal", "Exists"})},
       {"value",
        Str("Value is the taint value the toleration matches to. If the operator is Exists, the "
            "value should be empty, otherwise just a regular string.")},
       {"effect",
        Enum("Effect indicates the taint effect to match. Empty means match all taint effects. "
             "When specified, allowed values are NoSchedule, PreferNoSchedule and NoExecute.",
             {"NoExecute", "NoSchedule", "PreferNoSchedule"})},
       {"tolerationSeconds",
        Int64("TolerationSeconds represents the period of time the toleration (which must be of "
              "effect NoExecute, otherwise this field is ignored) tolerates the taint. By "
              "default, it is not set, which means tolerate the taint forever (do not evict). "
              "Zero and negative values will be treated as 0 (evict immediately) by the "
              "system.")}});
  c[Core("NodeSelectorRequirement")] = Obj(
      "A node selector requirement is a selector that contains values, a key, and an operator "
      "that relates the key and values.",
      {{"key", Str("The label key that the selector applies to.")},
       {"operator",
        Enum("Represents a key's relationship to a set of values. Valid operators are In, NotIn, "
             "Exists, DoesNotExist. Gt, and Lt.",
             {"DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"})},
       {"values",
        StrArray("An array of string values. If the operator is In or NotIn, the values array "
                 "must be non-empty. If the operator is Exists or DoesNotExist, the values array "
                 "must be empty. If the operator is Gt or Lt, the values array must have a "
                 "single element, which will be interpreted as an integer. This array is "
                 "replaced during a strategic merge patch.")}},
      {"key", "operator"});
  c[Core("NodeSelectorTerm")] = Obj(
      "A null or empty node selector term matches no objects. The requirements of them are "
      "ANDed. The TopologySelectorTerm type implements a subset of the NodeSelectorTerm.",
      {{"matchExpressions", ArrayOfRef(Core("NodeSelectorRequirement"),
                                       "A list of node selector requirements by node's labels.")},
       {"matchFields", ArrayOfRef(Core("NodeSelectorRequirement"),
                                  "A list of node selector requirements by node's fields.")}});
  c[Core("NodeSelector")] = Obj(
      "A node selector represents the union of the results of one or more label queries over a "
      "set of nodes; that is, it represents the OR of the selectors represented by the node "
      "selector terms.",
      {{"nodeSelectorTerms", ArrayOfRef(Core("NodeSelectorTerm"),
                                        "Required. A list of node selector terms. The terms are "
                                        "ORed.")}},
      {"nodeSelectorTerms"});
  c[Core("PreferredSchedulingTerm")] = Obj(
      "An empty preferred scheduling term matches all objects with implicit weight 0 (i.e. it's "
      "a no-op). A null preferred scheduling term matches no objects (i.e. is also a no-op).",
      {{"preference", Ref(Core("NodeSelectorTerm"),
                          "A node selector term, associated with the corresponding "
                          "weight.")},
       {"weight", Int32("Weight associated with matching the corresponding nodeSelectorTerm, in "
                        "the range 1-100.")}},
      {"weight", "preference"});
  c[Core("NodeAffinity")] = Obj(
      "Node affinity is a group of node affinity scheduling rules.",
      {{"requiredDuringSchedulingIgnoredDuringExecution",
        Ref(Core("NodeSelector"),
            "If the affinity requirements specified by this field are not met at scheduling "
            "time, the pod will not be scheduled onto the node. If the affinity requirements "
            "specified by this field cease to be met at some point during pod execution (e.g. "
            "due to an update), the system may or may not try to eventually evict the pod from "
            "its node.")},
       {"preferredDuringSchedulingIgnoredDuringExecution",
        ArrayOfRef(Core("PreferredSchedulingTerm"),
                   "The scheduler will prefer to schedule pods to nodes that satisfy the "
                   "affinity expressions specified by this field, but it may choose a node that "
                   "violates one or more of the expressions. The node that is most preferred is "
                   "the one with the greatest sum of weights, i.e. for each node that meets all "
                   "of the scheduling requirements (resource request, requiredDuringScheduling "
                   "affinity expressions, etc.), compute a sum by iterating through the elements "
                   "of this field and adding \"weight\" to the sum if the node matches the "
                   "corresponding matchExpressions; the node(s) with the highest sum are the "
                   "most preferred.")}});
  c[Core("PodAffinityTerm")] = Obj(
      "Defines a set of pods (namely those matching the labelSelector relative to the given "
      "namespace(s)) that this pod should be co-located (affinity) or not co-located "
      "(anti-affinity) with, where co-located is defined as running on a node whose value of the "
      "label with key <topologyKey> matches that of any node on which a pod of the set of pods "
      "is running",
      {{"labelSelector", Ref(kLabelSelector,
                             "A label query over a set of resources, in this case pods. If it's "
                             "null, this PodAffinityTerm matches with no Pods.")},
       {"namespaces",
        StrArray("namespaces specifies a static list of namespace names that the term applies "
                 "to. The term is applied to the union of the namespaces listed in this field "
                 "and the ones selected by namespaceSelector. null or empty namespaces list and "
                 "null namespaceSelector means \"this pod's namespace\".")},
       {"namespaceSelector",
        Ref(kLabelSelector,
            "A label query over the set of namespaces that the term applies to. "
            "The term is applied to the union of the namespaces selected by "
            "this field and the ones listed in the namespaces field.")},
       {"topologyKey",
        Str("This pod should be co-located (affinity) or not co-located (anti-affinity) with the "
            "pods matching the labelSelector in the specified namespaces, where co-located is "
            "defined as running on a node whose value of the label with key topologyKey matches "
            "that of any node on which any of the selected pods is running. Empty topologyKey "
            "is not allowed.")},
       {"matchLabelKeys",
        StrArray("MatchLabelKeys is a set of pod label keys to select which pods will be taken "
                 "into consideration. The keys are used to lookup values from the incoming pod "
                 "labels, those key-value labels are merged with `labelSelector` as `key in "
                 "(value)`.")},
       {"mismatchLabelKeys",
        StrArray("MismatchLabelKeys is a set of pod label keys to select which pods will be "
                 "taken into consideration. The keys are used to lookup values from the "
                 "incoming pod labels, those key-value labels are merged with `labelSelector` "
                 "as `key notin (value)`.")}},
      {"topologyKey"});
  c[Core("WeightedPodAffinityTerm")] =
      Obj("The weights of all of the matched WeightedPodAffinityTerm fields are added per-node to "
          "find the most preferred node(s)",
          {{"podAffinityTerm", Ref(Core("PodAffinityTerm"),
                                   "Required. A pod affinity term, "
                                   "associated with the corresponding "
                                   "weight.")},
           {"weight", Int32("weight associated with matching the corresponding podAffinityTerm, in "
                            "the range 1-100.")}},
          {"weight", "podAffinityTerm"});
  const auto pod_affinity = [&](std::string_view description, std::string_view verb) {
    return Obj(
        description,
        {{"requiredDuringSchedulingIgnoredDuringExecution",
          ArrayOfRef(Core("PodAffinityTerm"),
                     fmt::format("If the {} requirements specified by this field are not met at "
                                 "scheduling time, the pod will not be scheduled onto the node. "
                                 "When there are multiple elements, the lists of nodes "
                                 "corresponding to each podAffinityTerm are intersected, i.e. "
                                 "all terms must be satisfied.",
                                 verb))},
         {"preferredDuringSchedulingIgnoredDuringExecution",
          ArrayOfRef(Core("WeightedPodAffinityTerm"),
                     fmt::format("The scheduler will prefer to schedule pods to nodes that "
                                 "satisfy the {} expressions specified by this field, but it "
                                 "may choose a node that violates one or more of the "
                                 "expressions. The node that is most preferred is the one with "
                                 "the greatest sum of weights.",
                                 verb))}});
  };
  c[Core("PodAffinity")] =
      pod_affinity("Pod affinity is a group of inter pod affinity scheduling rules.", "affinity");
  c[Core("PodAntiAffinity")] = pod_affinity(
      "Pod anti affinity is a group of inter pod anti affinity scheduling rules.", "anti-affinity");
  c[Core("Affinity")] = Obj(
      "Affinity is a group of affinity scheduling rules.",
      {{"nodeAffinity",
        Ref(Core("NodeAffinity"), "Describes node affinity scheduling rules for the pod.")},
       {"podAffinity",
        Ref(Core("PodAffinity"),
            "Describes pod affinity scheduling rules (e.g. co-locate this pod in the same node, "
            "zone, etc. as some other pod(s)).")},
       {"podAntiAffinity",
        Ref(Core("PodAntiAffinity"),
            "Describes pod anti-affinity scheduling rules (e.g. avoid putting this pod in the "
            "same node, zone, etc. as some other pod(s)).")}});
  c[Core("TopologySpreadConstraint")] = Obj(
      "TopologySpreadConstraint specifies how to spread matching pods among the given topology.",
      {{"maxSkew",
        Int32("MaxSkew describes the degree to which pods may be unevenly distributed. It's the "
              "maximum permitted difference between the number of matching pods in the target "
              "topology and the global minimum.")},
       {"topologyKey",
        Str("TopologyKey is the key of node labels. Nodes that have a label with this key and "
            "identical values are considered to be in the same topology.")},
       {"whenUnsatisfiable",
        Enum("WhenUnsatisfiable indicates how to deal with a pod if it doesn't satisfy the "
             "spread constraint. - DoNotSchedule (default) tells the scheduler not to schedule "
             "it. - ScheduleAnyway tells the scheduler to schedule the pod in any location, but "
             "giving higher precedence to topologies that would help reduce the skew.",
             {"DoNotSchedule", "ScheduleAnyway"})},
       {"labelSelector",
        Ref(kLabelSelector,
            "LabelSelector is used to find matching pods. Pods that match this label selector "
            "are counted to determine the number of pods in their corresponding topology "
            "domain.")},
       {"minDomains",
        Int32("MinDomains indicates a minimum number of eligible domains. When the number of "
              "eligible domains with matching topology keys is less than minDomains, Pod "
              "Topology Spread treats \"global minimum\" as 0.")},
       {"matchLabelKeys",
        StrArray("MatchLabelKeys is a set of pod label keys to select the pods over which "
                 "spreading will be calculated.")},
       {"nodeAffinityPolicy",
        Enum("NodeAffinityPolicy indicates how we will treat Pod's nodeAffinity/nodeSelector "
             "when calculating pod topology spread skew. Defaults to Honor.",
             {"Honor", "Ignore"})},
       {"nodeTaintsPolicy",
        Enum("NodeTaintsPolicy indicates how we will treat node taints when calculating pod "
             "topology spread skew. Defaults to Ignore.",
             {"Honor", "Ignore"})}},
      {"maxSkew", "topologyKey", "whenUnsatisfiable"});
}

void AddContainerSchemas(Catalog& c) {
  c[Core("ResourceRequirements")] =
      Obj("ResourceRequirements describes the compute resource requirements.",
          {{"limits",
            QuantityMap("Limits describes the maximum amount of compute resources allowed. More "
                        "info: https://kubernetes.io/docs/concepts/configuration/"
                        "manage-resources-containers/")},
           {"requests",
            QuantityMap("Requests describes the minimum amount of compute resources required. If "
                        "Requests is omitted for a container, it defaults to Limits if that is "
                        "explicitly specified, otherwise to an implementation-defined value. "
                        "Requests cannot exceed Limits. More info: "
                        "https://kubernetes.io/docs/concepts/configuration/"
                        "manage-resources-containers/")},
           {"claims",
            ArrayOf(Free("ResourceClaim references one entry in PodSpec.ResourceClaims."),
                    "Claims lists the names of resources, defined in spec.resourceClaims, that are "
                    "used by this container.")}});
  c[Core("ContainerPort")] = Obj(
      "ContainerPort represents a network port in a single container.",
      {{"containerPort", Int32("Number of port to expose on the pod's IP address. This must be a "
                               "valid port number, 0 < x < 65536.")},
       {"hostIP", Str("What host IP to bind the external port to.")},
       {"hostPort", Int32("Number of port to expose on the host. If specified, this must be a "
                          "valid port number, 0 < x < 65536. If HostNetwork is specified, this "
                          "must match ContainerPort. Most containers do not need this.")},
       {"name", Str("If specified, this must be an IANA_SVC_NAME and unique within the pod. Each "
                    "named port in a pod must have a unique name. Name for the port that can be "
                    "referred to by services.")},
       {"protocol", Enum("Protocol for port. Must be UDP, TCP, or SCTP. Defaults to \"TCP\".",
                         {"SCTP", "TCP", "UDP"})}},
      {"containerPort"});
  c[Core("EnvVar")] = Obj(
      "EnvVar represents an environment variable present in a Container.",
      {{"name", Str("Name of the environment variable. Must be a C_IDENTIFIER.")},
       {"value",
        Str("Variable references $(VAR_NAME) are expanded using the previously defined "
            "environment variables in the container and any service environment variables. If a "
            "variable cannot be resolved, the reference in the input string will be unchanged. "
            "Defaults to \"\".")},
       {"valueFrom", Free("Source for the environment variable's value. Cannot be used if value "
                          "is not empty.")}},
      {"name"});
  c[Core("VolumeMount")] = Obj(
      "VolumeMount describes a mounting of a Volume within a container.",
      {{"name", Str("This must match the Name of a Volume.")},
       {"mountPath", Str("Path within the container at which the volume should be mounted. Must "
                         "not contain ':'.")},
       {"readOnly", Bool("Mounted read-only if true, read-write otherwise (false or "
                         "unspecified). Defaults to false.")},
       {"subPath", Str("Path within the volume from which the container's volume should be "
                       "mounted. Defaults to \"\" (volume's root).")},
       {"subPathExpr", Str("Expanded path within the volume from which the container's volume "
                           "should be mounted. Mutually exclusive with SubPath.")},
       {"mountPropagation",
        Enum("mountPropagation determines how mounts are propagated from the host to container "
             "and the other way around. Defaults to None.",
             {"Bidirectional", "HostToContainer", "None"})},
       {"recursiveReadOnly",
        Str("RecursiveReadOnly specifies whether read-only mounts should be handled "
            "recursively.")}},
      {"name", "mountPath"});
  const auto probe = [](std::string_view what) {
    return Free(
        fmt::format("Periodic probe of container {}. Container will be restarted if the "
                    "probe fails. Cannot be updated. More info: "
                    "https://kubernetes.io/docs/concepts/workloads/pods/"
                    "pod-lifecycle#container-probes",
                    what));
  };
  c[Core("Container")] = Obj(
      "A single application container that you want to run within a pod.",
      {{"name",
        Str("Name of the container specified as a DNS_LABEL. Each container in a pod must have a "
            "unique name (DNS_LABEL). Cannot be updated.")},
       {"image",
        Str("Container image name. More info: https://kubernetes.io/docs/concepts/containers/"
            "images This field is optional to allow higher level config management to default "
            "or override container images in workload controllers like Deployments and "
            "StatefulSets.")},
       {"command",
        StrArray("Entrypoint array. Not executed within a shell. The container image's "
                 "ENTRYPOINT is used if this is not provided. Variable references $(VAR_NAME) "
                 "are expanded using the container's environment. Cannot be updated.")},
       {"args",
        StrArray("Arguments to the entrypoint. The container image's CMD is used if this is not "
                 "provided. Variable references $(VAR_NAME) are expanded using the container's "
                 "environment. Cannot be updated.")},
       {"workingDir",
        Str("Container's working directory. If not specified, the container runtime's default "
            "will be used, which might be configured in the container image. Cannot be "
            "updated.")},
       {"ports",
        ArrayOfRef(Core("ContainerPort"),
                   "List of ports to expose from the container. Not specifying a port here DOES "
                   "NOT prevent that port from being exposed. Cannot be updated.")},
       {"env", ArrayOfRef(Core("EnvVar"),
                          "List of environment variables to set in the container. Cannot be "
                          "updated.")},
       {"envFrom",
        ArrayOf(Free("EnvFromSource represents the source of a set of ConfigMaps or Secrets"),
                "List of sources to populate environment variables in the container. Cannot be "
                "updated.")},
       {"resources",
        Ref(Core("ResourceRequirements"),
            "Compute Resources required by this container. Cannot be updated. More info: "
            "https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/")},
       {"volumeMounts", ArrayOfRef(Core("VolumeMount"),
                                   "Pod volumes to mount into the container's filesystem. Cannot "
                                   "be updated.")},
       {"imagePullPolicy",
        Enum("Image pull policy. One of Always, Never, IfNotPresent. Defaults to Always if "
             ":latest tag is specified, or IfNotPresent otherwise. Cannot be updated.",
             {"Always", "IfNotPresent", "Never"})},
       {"livenessProbe", probe("liveness")},
       {"readinessProbe", probe("service readiness")},
       {"startupProbe", probe("startup")},
       {"lifecycle", Free("Actions that the management system should take in response to "
                          "container lifecycle events. Cannot be updated.")},
       {"securityContext",
        Free("SecurityContext defines the security options the container should be run with. If "
             "set, the fields of SecurityContext override the equivalent fields of "
             "PodSecurityContext.")},
       {"restartPolicy",
        Str("RestartPolicy defines the restart behavior of individual containers in a pod. This "
            "field may only be set for init containers, and the only allowed value is "
            "\"Always\". Setting it makes the init container a sidecar that keeps running "
            "alongside the regular containers.")},
       {"stdin", Bool("Whether this container should allocate a buffer for stdin in the "
                      "container runtime. Default is false.")},
       {"stdinOnce", Bool("Whether the container runtime should close the stdin channel after "
                          "it has been opened by a single attach. Default is false.")},
       {"resizePolicy",
        ArrayOf(Free("ContainerResizePolicy represents resource resize policy for the "
                     "container."),
                "Resources resize policy for the container.")},
       {"volumeDevices",
        ArrayOf(Free("volumeDevice describes a mapping of a raw block device within a "
                     "container."),
                "volumeDevices is the list of block devices to be used by the container.")},
       {"tty", Bool("Whether this container should allocate a TTY for itself, also requires "
                    "'stdin' to be true. Default is false.")},
       {"terminationMessagePath",
        Str("Optional: Path at which the file to which the container's termination message will "
            "be written is mounted into the container's filesystem. Defaults to "
            "/dev/termination-log. Cannot be updated.")},
       {"terminationMessagePolicy",
        Enum("Indicate how the termination message should be populated. Defaults to File. "
             "Cannot be updated.",
             {"FallbackToLogsOnError", "File"})}},
      {"name"});
}

void AddPodSpecSchemas(Catalog& c) {
  c[Core("LocalObjectReference")] = Obj(
      "LocalObjectReference contains enough information to let you locate the referenced object "
      "inside the same namespace.",
      {{"name", Str("Name of the referent. More info: https://kubernetes.io/docs/concepts/"
                    "overview/working-with-objects/names/#names")}});
  c[Core("PodReadinessGate")] =
      Obj("PodReadinessGate contains the reference to a pod condition",
          {{"conditionType", Str("ConditionType refers to a condition in the pod's condition list "
                                 "with matching type.")}},
          {"conditionType"});
  c[Core("PodSchedulingGate")] =
      Obj("PodSchedulingGate is associated to a Pod to guard its scheduling.",
          {{"name", Str("Name of the scheduling gate. Each scheduling gate must have a unique name "
                        "field.")}},
          {"name"});
  c[Core("Volume")] = Open(
      Obj("Volume represents a named volume in a pod that may be accessed by any container in the "
          "pod.",
          {{"name", Str("name of the volume. Must be a DNS_LABEL and unique within the pod. More "
                        "info: https://kubernetes.io/docs/concepts/overview/working-with-objects/"
                        "names/#names")},
           {"emptyDir", Free("emptyDir represents a temporary directory that shares a pod's "
                             "lifetime.")},
           {"hostPath", Free("hostPath represents a pre-existing file or directory on the host "
                             "machine that is directly exposed to the container.")},
           {"configMap", Free("configMap represents a configMap that should populate this volume")},
           {"secret", Free("secret represents a secret that should populate this volume.")},
           {"persistentVolumeClaim",
            Free("persistentVolumeClaimVolumeSource represents a reference to a "
                 "PersistentVolumeClaim in the same namespace.")},
           {"projected", Free("projected items for all in one resources secrets, configmaps, and "
                              "downward API")}},
          {"name"}));
  c[Core("PodSpec")] = Obj(
      "PodSpec is a description of a pod.",
      {{"containers",
        ArrayOfRef(Core("Container"),
                   "List of containers belonging to the pod. Containers cannot currently be "
                   "added or removed. There must be at least one container in a Pod. Cannot be "
                   "updated.")},
       {"initContainers",
        ArrayOfRef(Core("Container"),
                   "List of initialization containers belonging to the pod. Init containers are "
                   "executed in order prior to containers being started. If any init container "
                   "fails, the pod is considered to have failed and is handled according to its "
                   "restartPolicy. The name for an init container or normal container must be "
                   "unique among all containers.")},
       {"restartPolicy",
        Enum("Restart policy for all containers within the pod. One of Always, OnFailure, "
             "Never. In some contexts, only a subset of those values may be permitted. Default "
             "to Always. More info: https://kubernetes.io/docs/concepts/workloads/pods/"
             "pod-lifecycle/#restart-policy",
             {"Always", "Never", "OnFailure"})},
       {"terminationGracePeriodSeconds",
        Int64("Optional duration in seconds the pod needs to terminate gracefully. May be "
              "decreased in delete request. Value must be non-negative integer. The value zero "
              "indicates stop immediately via the kill signal (no opportunity to shut down). If "
              "this value is nil, the default grace period will be used instead. Defaults to 30 "
              "seconds.")},
       {"activeDeadlineSeconds",
        Int64("Optional duration in seconds the pod may be active on the node relative to "
              "StartTime before the system will actively try to mark it failed and kill "
              "associated containers. Value must be a positive integer.")},
       {"nodeSelector",
        StrMap("NodeSelector is a selector which must be true for the pod to fit on a node. "
               "Selector which must match a node's labels for the pod to be scheduled on that "
               "node. More info: https://kubernetes.io/docs/concepts/configuration/"
               "assign-pod-node/")},
       {"nodeName",
        Str("NodeName indicates in which node this pod is scheduled. If empty, this pod is a "
            "candidate for scheduling by the scheduler defined in schedulerName. Once this "
            "field is set, the kubelet for this node becomes responsible for the lifecycle of "
            "this pod. This field should not be used to express a desire for the pod to be "
            "scheduled on a specific node.")},
       {"schedulerName",
        Str("If specified, the pod will be dispatched by specified scheduler. If not specified, "
            "the pod will be dispatched by default scheduler.")},
       {"affinity", Ref(Core("Affinity"), "If specified, the pod's scheduling constraints")},
       {"tolerations", ArrayOfRef(Core("Toleration"), "If specified, the pod's tolerations.")},
       {"topologySpreadConstraints",
        ArrayOfRef(Core("TopologySpreadConstraint"),
                   "TopologySpreadConstraints describes how a group of pods ought to spread "
                   "across topology domains. Scheduler will schedule pods in a way which abides "
                   "by the constraints. All topologySpreadConstraints are ANDed.")},
       {"priorityClassName",
        Str("If specified, indicates the pod's priority. \"system-node-critical\" and "
            "\"system-cluster-critical\" are two special keywords which indicate the highest "
            "priorities with the former being the highest priority. Any other name must be "
            "defined by creating a PriorityClass object with that name. If not specified, the "
            "pod priority will be default or zero if there is no default.")},
       {"priority",
        Int32("The priority value. Various system components use this field to find the "
              "priority of the pod. When Priority Admission Controller is enabled, it prevents "
              "users from setting this field. The admission controller populates this field "
              "from PriorityClassName. The higher the value, the higher the priority.")},
       {"preemptionPolicy",
        Enum("PreemptionPolicy is the Policy for preempting pods with lower priority. One of "
             "Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
             {"Never", "PreemptLowerPriority"})},
       {"readinessGates",
        ArrayOfRef(Core("PodReadinessGate"),
                   "If specified, all readiness gates will be evaluated for pod readiness. A pod "
                   "is ready when all its containers are ready AND all conditions specified in "
                   "the readiness gates have status equal to \"True\"")},
       {"schedulingGates",
        ArrayOfRef(Core("PodSchedulingGate"),
                   "SchedulingGates is an opaque list of values that if specified will block "
                   "scheduling the pod. If schedulingGates is not empty, the pod will stay in "
                   "the SchedulingGated state and the scheduler will not attempt to schedule the "
                   "pod.")},
       {"volumes", ArrayOfRef(Core("Volume"),
                              "List of volumes that can be mounted by containers belonging to "
                              "the pod. More info: https://kubernetes.io/docs/concepts/storage/"
                              "volumes")},
       {"serviceAccountName",
        Str("ServiceAccountName is the name of the ServiceAccount to use to run this pod.")},
       {"automountServiceAccountToken",
        Bool("AutomountServiceAccountToken indicates whether a service account token should be "
             "automatically mounted.")},
       {"hostNetwork",
        Bool("Host networking requested for this pod. Use the host's network namespace. If this "
             "option is set, the ports that will be used must be specified. Default to "
             "false.")},
       {"hostname", Str("Specifies the hostname of the Pod If not specified, the pod's hostname "
                        "will be set to a system-defined value.")},
       {"subdomain", Str("If specified, the fully qualified Pod hostname will be "
                         "\"<hostname>.<subdomain>.<pod namespace>.svc.<cluster domain>\". If not "
                         "specified, the pod will not have a domainname at all.")},
       {"dnsPolicy", Enum("Set DNS policy for the pod. Defaults to \"ClusterFirst\".",
                          {"ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"})},
       {"enableServiceLinks",
        Bool("EnableServiceLinks indicates whether information about services should be "
             "injected into pod's environment variables, matching the syntax of Docker links. "
             "Optional: Defaults to true.")},
       {"imagePullSecrets",
        ArrayOfRef(Core("LocalObjectReference"),
                   "ImagePullSecrets is an optional list of references to secrets in the same "
                   "namespace to use for pulling any of the images used by this PodSpec.")},
       {"overhead",
        QuantityMap("Overhead represents the resource overhead associated with running a pod "
                    "for a given RuntimeClass.")},
       {"runtimeClassName",
        Str("RuntimeClassName refers to a RuntimeClass object in the node.k8s.io group, which "
            "should be used to run this pod.")},
       {"securityContext",
        Free("SecurityContext holds pod-level security attributes and common container "
             "settings. Optional: Defaults to empty.")},
       {"serviceAccount", Str("DeprecatedServiceAccount is a deprecated alias for "
                              "ServiceAccountName. Deprecated: Use serviceAccountName instead.")},
       {"hostPID", Bool("Use the host's pid namespace. Optional: Default to false.")},
       {"hostIPC", Bool("Use the host's ipc namespace. Optional: Default to false.")},
       {"hostUsers", Bool("Use the host's user namespace. Optional: Default to true.")},
       {"shareProcessNamespace",
        Bool("Share a single process namespace between all of the containers in a pod. Optional: "
             "Default to false.")},
       {"setHostnameAsFQDN",
        Bool("If true the pod's hostname will be configured as the pod's FQDN, rather than the "
             "leaf name (the default).")},
       {"hostAliases",
        ArrayOf(Free("HostAlias holds the mapping between IP and hostnames that will be injected "
                     "as an entry in the pod's hosts file."),
                "HostAliases is an optional list of hosts and IPs that will be injected into the "
                "pod's hosts file if specified.")},
       {"dnsConfig", Free("Specifies the DNS parameters of a pod. Parameters specified here will "
                          "be merged to the generated DNS configuration based on DNSPolicy.")},
       {"ephemeralContainers",
        ArrayOf(Free("An EphemeralContainer is a temporary container that you may add to an "
                     "existing Pod for user-initiated activities such as debugging."),
                "List of ephemeral containers run in this pod. Ephemeral containers may be run "
                "in an existing pod to perform user-initiated actions such as debugging.")},
       {"os", Free("Specifies the OS of the containers in the pod.")},
       {"resourceClaims",
        ArrayOf(Free("PodResourceClaim references exactly one ResourceClaim."),
                "ResourceClaims defines which ResourceClaims must be allocated and reserved "
                "before the Pod is allowed to start.")},
       {"resources",
        Ref(Core("ResourceRequirements"),
            "Resources is the total amount of CPU and Memory resources required by all "
            "containers in the pod.")}},
      {"containers"});
  c[Core("PodTemplateSpec")] =
      Obj("PodTemplateSpec describes the data a pod should have when created from a template",
          {{"metadata", Ref(kObjectMeta, kMetadataDoc)},
           {"spec", Ref(Core("PodSpec"),
                        "Specification of the desired behavior of the pod. More info: "
                        "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                        "api-conventions.md#spec-and-status")}});
}

void AddPodStatusSchemas(Catalog& c) {
  c[Core("PodCondition")] =
      Obj("PodCondition contains details for the current condition of this pod.",
          {{"type", Str("Type is the type of the condition. More info: https://kubernetes.io/docs/"
                        "concepts/workloads/pods/pod-lifecycle#pod-conditions")},
           {"status", Str("Status is the status of the condition. Can be True, False, Unknown.")},
           {"lastProbeTime", Ref(kTime, "Last time we probed the condition.")},
           {"lastTransitionTime",
            Ref(kTime, "Last time the condition transitioned from one status to another.")},
           {"reason", Str("Unique, one-word, CamelCase reason for the condition's last "
                          "transition.")},
           {"message", Str("Human-readable message indicating details about last transition.")},
           {"observedGeneration",
            Int64("If set, this represents the .metadata.generation that the pod condition was "
                  "set based upon.")}},
          {"type", "status"});
  c[Core("PodIP")] = Obj("PodIP represents a single IP address allocated to the pod.",
                         {{"ip", Str("IP is the IP address assigned to the pod")}}, {"ip"});
  c[Core("ContainerStateWaiting")] =
      Obj("ContainerStateWaiting is a waiting state of a container.",
          {{"reason", Str("(brief) reason the container is not yet running.")},
           {"message", Str("Message regarding why the container is not yet running.")}});
  c[Core("ContainerStateRunning")] =
      Obj("ContainerStateRunning is a running state of a container.",
          {{"startedAt", Ref(kTime, "Time at which the container was last (re-)started")}});
  c[Core("ContainerStateTerminated")] =
      Obj("ContainerStateTerminated is a terminated state of a container.",
          {{"exitCode", Int32("Exit status from the last termination of the container")},
           {"signal", Int32("Signal from the last termination of the container")},
           {"reason", Str("(brief) reason from the last termination of the container")},
           {"message", Str("Message regarding the last termination of the container")},
           {"startedAt", Ref(kTime, "Time at which previous execution of the container started")},
           {"finishedAt", Ref(kTime, "Time at which the container last terminated")},
           {"containerID", Str("Container's ID in the format '<type>://<container_id>'")}},
          {"exitCode"});
  c[Core("ContainerState")] =
      Obj("ContainerState holds a possible state of container. Only one of its members may be "
          "specified. If none of them is specified, the default one is ContainerStateWaiting.",
          {{"waiting", Ref(Core("ContainerStateWaiting"), "Details about a waiting container")},
           {"running", Ref(Core("ContainerStateRunning"), "Details about a running container")},
           {"terminated",
            Ref(Core("ContainerStateTerminated"), "Details about a terminated container")}});
  c[Core("ContainerStatus")] = Obj(
      "ContainerStatus contains details for the current status of this container.",
      {{"name", Str("Name is a DNS_LABEL representing the unique name of the container. Each "
                    "container in a pod must have a unique name across all container types. "
                    "Cannot be updated.")},
       {"state", Ref(Core("ContainerState"),
                     "State holds details about the container's current condition.")},
       {"lastState", Ref(Core("ContainerState"),
                         "LastTerminationState holds the last termination state of the "
                         "container to help debug container crashes and restarts.")},
       {"ready", Bool("Ready specifies whether the container is currently passing its readiness "
                      "check. The value will change as readiness probes keep executing. If no "
                      "readiness probes are specified, this field defaults to true once the "
                      "container is fully started.")},
       {"restartCount",
        Int32("RestartCount holds the number of times the container has been restarted. Kubelet "
              "makes an effort to always increment the value, but there are cases when the "
              "state may be lost due to node restarts and then the value may be reset to 0. "
              "The value is never negative.")},
       {"started", Bool("Started indicates whether the container has finished its postStart "
                        "lifecycle hook and passed its startup probe.")},
       {"image", Str("Image is the name of container image that the container is running.")},
       {"imageID", Str("ImageID is the image ID of the container's image.")},
       {"containerID", Str("ContainerID is the ID of the container in the format "
                           "'<type>://<container_id>'.")},
       {"allocatedResources", QuantityMap("AllocatedResources represents the compute resources "
                                          "allocated for this container by the node.")},
       {"allocatedResourcesStatus",
        ArrayOf(Free("ResourceStatus represents the status of a single resource allocated to a "
                     "Pod."),
                "AllocatedResourcesStatus represents the status of various resources allocated "
                "for this Pod.")},
       {"resources", Ref(Core("ResourceRequirements"),
                         "Resources represents the compute resource requests and limits that "
                         "have been successfully enacted on the running container.")},
       {"volumeMounts", ArrayOf(Free("VolumeMountStatus shows status of volume mounts."),
                                "Status of volume mounts.")},
       {"user", Free("User represents user identity information initially attached to the first "
                     "process of the container")},
       {"stopSignal", Str("StopSignal reports the effective stop signal for this container")}},
      {"name", "ready", "restartCount", "image", "imageID"});
  c[Core("PodStatus")] = Obj(
      "PodStatus represents information about the status of a pod. Status may trail the actual "
      "state of a system, especially if the node that hosts the pod cannot contact the control "
      "plane.",
      {{"phase",
        Enum("The phase of a Pod is a simple, high-level summary of where the Pod is in its "
             "lifecycle. Pending: The pod has been accepted by the Kubernetes system, but one "
             "or more of the container images has not been created. This includes time before "
             "being scheduled as well as time spent downloading images over the network. "
             "Running: The pod has been bound to a node, and all of the containers have been "
             "created. At least one container is still running, or is in the process of "
             "starting or restarting. Succeeded: All containers in the pod have terminated in "
             "success, and will not be restarted. Failed: All containers in the pod have "
             "terminated, and at least one container has terminated in failure. Unknown: For "
             "some reason the state of the pod could not be obtained.",
             {"Failed", "Pending", "Running", "Succeeded", "Unknown"})},
       {"conditions", ArrayOfRef(Core("PodCondition"),
                                 "Current service state of pod. More info: "
                                 "https://kubernetes.io/docs/concepts/workloads/pods/"
                                 "pod-lifecycle#pod-conditions")},
       {"message", Str("A human readable message indicating details about why the pod is in "
                       "this condition.")},
       {"reason", Str("A brief CamelCase message indicating details about why the pod is in "
                      "this state. e.g. 'Evicted'")},
       {"nominatedNodeName",
        Str("nominatedNodeName is set only when this pod preempts other pods on the node, but "
            "it cannot be scheduled right away as preemption victims receive their graceful "
            "termination periods. This field does not guarantee that the pod will be scheduled "
            "on this node.")},
       {"hostIP", Str("hostIP holds the IP address of the host to which the pod is assigned. "
                      "Empty if the pod has not started yet.")},
       {"podIP", Str("podIP address allocated to the pod. Routable at least within the "
                     "cluster. Empty if not yet allocated.")},
       {"podIPs", ArrayOfRef(Core("PodIP"),
                             "podIPs holds the IP addresses allocated to the pod. If this field "
                             "is specified, the 0th entry must match the podIP field.")},
       {"startTime", Ref(kTime,
                         "RFC 3339 date and time at which the object was acknowledged by "
                         "the Kubelet. This is before the Kubelet pulled the container "
                         "image(s) for the pod.")},
       {"containerStatuses",
        ArrayOfRef(Core("ContainerStatus"),
                   "The list has one entry per container in the manifest. More info: "
                   "https://kubernetes.io/docs/concepts/workloads/pods/"
                   "pod-lifecycle#pod-and-container-status")},
       {"initContainerStatuses",
        ArrayOfRef(Core("ContainerStatus"),
                   "The list has one entry per init container in the manifest. The most recent "
                   "successful init container will have ready = true, the most recently started "
                   "container will have startTime set.")},
       {"qosClass", Enum("The Quality of Service (QOS) classification assigned to the pod based "
                         "on resource requirements.",
                         {"BestEffort", "Burstable", "Guaranteed"})},
       {"hostIPs", ArrayOf(Free("HostIP represents a single IP address allocated to the host."),
                           "hostIPs holds the IP addresses allocated to the host.")},
       {"ephemeralContainerStatuses",
        ArrayOfRef(Core("ContainerStatus"),
                   "Statuses for any ephemeral containers that have run in this pod.")},
       {"resize", Str("Status of resources resize desired for pod's containers.")},
       {"resourceClaimStatuses",
        ArrayOf(Free("PodResourceClaimStatus is stored in the PodStatus for each "
                     "PodResourceClaim which references a ResourceClaimTemplate."),
                "Status of resource claims.")},
       {"observedGeneration",
        Int64("If set, this represents the .metadata.generation that the pod status was set "
              "based upon.")}});
}

// --- Other core kinds ----------------------------------------------------------------------------

void AddNodeSchemas(Catalog& c) {
  c[Core("Taint")] = Obj(
      "The node this Taint is attached to has the \"effect\" on any pod that does not tolerate "
      "the Taint.",
      {{"key", Str("Required. The taint key to be applied to a node.")},
       {"value", Str("The taint value corresponding to the taint key.")},
       {"effect", Enum("Required. The effect of the taint on pods that do not tolerate the "
                       "taint. Valid effects are NoSchedule, PreferNoSchedule and NoExecute.",
                       {"NoExecute", "NoSchedule", "PreferNoSchedule"})},
       {"timeAdded", Ref(kTime, "TimeAdded represents the time at which the taint was added.")}},
      {"key", "effect"});
  c[Core("NodeSpec")] =
      Obj("NodeSpec describes the attributes that a node is created with.",
          {{"podCIDR", Str("PodCIDR represents the pod IP range assigned to the node.")},
           {"podCIDRs", StrArray("podCIDRs represents the IP ranges assigned to the node for usage "
                                 "by Pods on that node.")},
           {"providerID", Str("ID of the node assigned by the cloud provider in the format: "
                              "<ProviderName>://<ProviderSpecificNodeID>")},
           {"unschedulable",
            Bool("Unschedulable controls node schedulability of new pods. By default, node is "
                 "schedulable. More info: https://kubernetes.io/docs/concepts/nodes/node/"
                 "#manual-node-administration")},
           {"taints", ArrayOfRef(Core("Taint"), "If specified, the node's taints.")},
           {"configSource", Free("Deprecated: Previously used to specify the source of the "
                                 "node's configuration for the DynamicKubeletConfig feature.")},
           {"externalID", Str("Deprecated. Not all kubelets will set this field.")}});
  c[Core("NodeCondition")] =
      Obj("NodeCondition contains condition information for a node.",
          {{"type", Str("Type of node condition.")},
           {"status", Str("Status of the condition, one of True, False, Unknown.")},
           {"lastHeartbeatTime", Ref(kTime, "Last time we got an update on a given condition.")},
           {"lastTransitionTime",
            Ref(kTime, "Last time the condition transit from one status to another.")},
           {"reason", Str("(brief) reason for the condition's last transition.")},
           {"message", Str("Human readable message indicating details about last transition.")}},
          {"type", "status"});
  c[Core("NodeAddress")] =
      Obj("NodeAddress contains information for the node's address.",
          {{"type", Str("Node address type, one of Hostname, ExternalIP or InternalIP.")},
           {"address", Str("The node address.")}},
          {"type", "address"});
  c[Core("NodeSystemInfo")] =
      Obj("NodeSystemInfo is a set of ids/uuids to uniquely identify the node.",
          {{"machineID", Str("MachineID reported by the node. For unique machine identification in "
                             "the cluster this field is preferred.")},
           {"systemUUID", Str("SystemUUID reported by the node. For unique machine identification "
                              "MachineID is preferred.")},
           {"bootID", Str("Boot ID reported by the node.")},
           {"kernelVersion", Str("Kernel Version reported by the node from 'uname -r' (e.g. "
                                 "3.16.0-0.bpo.4-amd64).")},
           {"osImage", Str("OS Image reported by the node from /etc/os-release (e.g. Debian "
                           "GNU/Linux 7 (wheezy)).")},
           {"containerRuntimeVersion",
            Str("ContainerRuntime Version reported by the node through runtime remote API (e.g. "
                "containerd://1.4.2).")},
           {"kubeletVersion", Str("Kubelet Version reported by the node.")},
           {"kubeProxyVersion", Str("Deprecated: KubeProxy Version reported by the node.")},
           {"operatingSystem", Str("The Operating System reported by the node")},
           {"architecture", Str("The Architecture reported by the node")},
           {"swap", Free("Swap Info reported by the node.")}});
  c[Core("NodeStatus")] =
      Obj("NodeStatus is information about the current status of a node.",
          {{"capacity", QuantityMap("Capacity represents the total resources of a node. More info: "
                                    "https://kubernetes.io/docs/reference/node/node-status/"
                                    "#capacity")},
           {"allocatable", QuantityMap("Allocatable represents the resources of a node that are "
                                       "available for scheduling. Defaults to Capacity.")},
           {"phase", Enum("NodePhase is the recently observed lifecycle phase of the node. The "
                          "field is never populated, and now is deprecated.",
                          {"Pending", "Running", "Terminated"})},
           {"conditions", ArrayOfRef(Core("NodeCondition"),
                                     "Conditions is an array of current observed node conditions. "
                                     "More info: https://kubernetes.io/docs/reference/node/"
                                     "node-status/#condition")},
           {"addresses", ArrayOfRef(Core("NodeAddress"),
                                    "List of addresses reachable to the node. Queried from cloud "
                                    "provider, if available.")},
           {"nodeInfo", Ref(Core("NodeSystemInfo"),
                            "Set of ids/uuids to uniquely identify the node. More info: "
                            "https://kubernetes.io/docs/reference/node/node-status/#info")},
           {"images",
            ArrayOf(Free("Describe a container image"), "List of container images on this node")},
           {"daemonEndpoints", Free("Endpoints of daemons running on the Node.")},
           {"volumesInUse", StrArray("List of attachable volumes in use (mounted) by the node.")},
           {"volumesAttached", ArrayOf(Free("AttachedVolume describes a volume attached to a node"),
                                       "List of volumes that are attached to the node.")},
           {"config", Free("Status of the config assigned to the node via the dynamic Kubelet "
                           "config feature.")},
           {"runtimeHandlers",
            ArrayOf(Free("NodeRuntimeHandler is a set of runtime handler information."),
                    "The available runtime handlers.")},
           {"features", Free("Features describes the set of features implemented by the CRI "
                             "implementation.")}});
  c[Core("Node")] = KindSchema(
      "", "v1", "Node",
      "Node is a worker node in Kubernetes. Each node will have a unique identifier in the cache "
      "(i.e. in etcd).",
      {{"spec", Ref(Core("NodeSpec"),
                    "Spec defines the behavior of a node. https://git.k8s.io/community/"
                    "contributors/devel/sig-architecture/api-conventions.md#spec-and-status")},
       {"status", Ref(Core("NodeStatus"),
                      "Most recently observed status of the node. Populated by the system. "
                      "Read-only. More info: https://git.k8s.io/community/contributors/devel/"
                      "sig-architecture/api-conventions.md#spec-and-status")}});
}

void AddOtherCoreSchemas(Catalog& c) {
  c[Core("Pod")] = KindSchema(
      "", "v1", "Pod",
      "Pod is a collection of containers that can run on a host. This resource is created by "
      "clients and scheduled onto hosts.",
      {{"spec", Ref(Core("PodSpec"),
                    "Specification of the desired behavior of the pod. More info: "
                    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                    "api-conventions.md#spec-and-status")},
       {"status", Ref(Core("PodStatus"),
                      "Most recently observed status of the pod. This data may not be up to "
                      "date. Populated by the system. Read-only. More info: "
                      "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                      "api-conventions.md#spec-and-status")}});
  c[Core("NamespaceSpec")] =
      Obj("NamespaceSpec describes the attributes on a Namespace.",
          {{"finalizers", StrArray("Finalizers is an opaque list of values that must be empty to "
                                   "permanently remove object from storage. More info: "
                                   "https://kubernetes.io/docs/tasks/administer-cluster/"
                                   "namespaces/")}});
  c[Core("NamespaceStatus")] =
      Obj("NamespaceStatus is information about the current status of a Namespace.",
          {{"phase", Enum("Phase is the current lifecycle phase of the namespace. More info: "
                          "https://kubernetes.io/docs/tasks/administer-cluster/namespaces/",
                          {"Active", "Terminating"})},
           {"conditions",
            ArrayOf(Free("NamespaceCondition contains details about state of namespace."),
                    "Represents the latest available observations of a namespace's current "
                    "state.")}});
  c[Core("Namespace")] =
      KindSchema("", "v1", "Namespace",
                 "Namespace provides a scope for Names. Use of multiple namespaces is optional.",
                 {{"spec", Ref(Core("NamespaceSpec"),
                               "Spec defines the behavior of the Namespace. More info: "
                               "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                               "api-conventions.md#spec-and-status")},
                  {"status", Ref(Core("NamespaceStatus"),
                                 "Status describes the current status of a Namespace. More info: "
                                 "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                                 "api-conventions.md#spec-and-status")}});
  c[Core("ObjectReference")] = Obj(
      "ObjectReference contains enough information to let you inspect or modify the referred "
      "object.",
      {{"apiVersion", Str("API version of the referent.")},
       {"kind", Str("Kind of the referent. More info: https://git.k8s.io/community/contributors/"
                    "devel/sig-architecture/api-conventions.md#types-kinds")},
       {"namespace", Str("Namespace of the referent. More info: https://kubernetes.io/docs/"
                         "concepts/overview/working-with-objects/namespaces/")},
       {"name", Str("Name of the referent. More info: https://kubernetes.io/docs/concepts/"
                    "overview/working-with-objects/names/#names")},
       {"uid", Str("UID of the referent. More info: https://kubernetes.io/docs/concepts/"
                   "overview/working-with-objects/names/#uids")},
       {"resourceVersion", Str("Specific resourceVersion to which this reference is made, if "
                               "any.")},
       {"fieldPath", Str("If referring to a piece of an object instead of an entire object, "
                         "this string should contain a valid JSON/Go field access statement, "
                         "such as desiredState.manifest.containers[2].")}});
  c[Core("EventSource")] = Obj("EventSource contains information for an event.",
                               {{"component", Str("Component from which the event is generated.")},
                                {"host", Str("Node name on which the event is generated.")}});
  c[Core("EventSeries")] =
      Obj("EventSeries contain information on series of events, i.e. thing that was/is happening "
          "continuously for some time.",
          {{"count", Int32("Number of occurrences in this series up to the last heartbeat time")},
           {"lastObservedTime", Ref(kMicroTime, "Time of the last occurrence observed")}});
  c[Core("Event")] = KindSchema(
      "", "v1", "Event",
      "Event is a report of an event somewhere in the cluster. Events have a limited retention "
      "time and triggers and messages may evolve with time. Event consumers should not rely on "
      "the timing of an event with a given Reason reflecting a consistent underlying trigger, or "
      "the continued existence of events with that Reason. Events should be treated as "
      "informative, best-effort, supplemental data.",
      {{"involvedObject", Ref(Core("ObjectReference"), "The object that this event is about.")},
       {"reason", Str("This should be a short, machine understandable string that gives the "
                      "reason for the transition into the object's current status.")},
       {"message", Str("A human-readable description of the status of this operation.")},
       {"source", Ref(Core("EventSource"),
                      "The component reporting this event. Should be a "
                      "short machine understandable string.")},
       {"firstTimestamp", Ref(kTime,
                              "The time at which the event was first recorded. (Time of "
                              "server receipt is in TypeMeta.)")},
       {"lastTimestamp",
        Ref(kTime, "The time at which the most recent occurrence of this event was recorded.")},
       {"count", Int32("The number of times this event has occurred.")},
       {"type", Str("Type of this event (Normal, Warning), new types could be added in the "
                    "future")},
       {"eventTime", Ref(kMicroTime, "Time when this Event was first observed.")},
       {"series", Ref(Core("EventSeries"),
                      "Data about the Event series this event represents "
                      "or nil if it's a singleton Event.")},
       {"action", Str("What action was taken/failed regarding to the Regarding object.")},
       {"related", Ref(Core("ObjectReference"),
                       "Optional secondary object for more complex "
                       "actions.")},
       {"reportingComponent", Str("Name of the controller that emitted this Event, e.g. "
                                  "`kubernetes.io/kubelet`.")},
       {"reportingInstance", Str("ID of the controller instance, e.g. `kubelet-xyzf`.")}},
      {"metadata", "involvedObject"});
  c[Core("Binding")] = KindSchema(
      "", "v1", "Binding",
      "Binding ties one object to another; for example, a pod is bound to a node by a "
      "scheduler.",
      {{"target", Ref(Core("ObjectReference"),
                      "The target object that you want to bind to the standard object.")}},
      {"target"});
  c[Core("ServiceSpec")] = Open(
      Obj("ServiceSpec describes the attributes that a user creates on a service.",
          {{"type", Enum("type determines how the Service is exposed. Defaults to ClusterIP.",
                         {"ClusterIP", "ExternalName", "LoadBalancer", "NodePort"})},
           {"selector", StrMap("Route service traffic to pods with label keys and values matching "
                               "this selector.")},
           {"clusterIP", Str("clusterIP is the IP address of the service and is usually assigned "
                             "randomly.")},
           {"ports", ArrayOf(Free("ServicePort contains information on service's port."),
                             "The list of ports that are exposed by this service.")}}));
  c[Core("Service")] = KindSchema(
      "", "v1", "Service",
      "Service is a named abstraction of software service (for example, mysql) consisting of "
      "local port (for example 3306) that the proxy listens on, and the selector that "
      "determines which pods will answer requests sent through the proxy.",
      {{"spec", Ref(Core("ServiceSpec"), "Spec defines the behavior of a service.")},
       {"status", Free("Most recently observed status of the service.")}});
  c[Core("ConfigMap")] =
      KindSchema("", "v1", "ConfigMap", "ConfigMap holds configuration data for pods to consume.",
                 {{"data", StrMap("Data contains the configuration data. Each key must consist of "
                                  "alphanumeric characters, '-', '_' or '.'.")},
                  {"binaryData", StrMap("BinaryData contains the binary data (base64 encoded).")},
                  {"immutable", Bool("Immutable, if set to true, ensures that data stored in the "
                                     "ConfigMap cannot be updated.")}});
}

void AddSchedulingAndCoordinationSchemas(Catalog& c) {
  c["io.k8s.api.scheduling.v1.PriorityClass"] = KindSchema(
      "scheduling.k8s.io", "v1", "PriorityClass",
      "PriorityClass defines mapping from a priority class name to the priority integer value. "
      "The value can be any valid integer.",
      {{"value", Int32("value represents the integer value of this priority class. This is the "
                       "actual priority that pods receive when they have the name of this class "
                       "in their pod spec.")},
       {"globalDefault",
        Bool("globalDefault specifies whether this PriorityClass should be considered as the "
             "default priority for pods that do not have any priority class. Only one "
             "PriorityClass can be marked as `globalDefault`. However, if more than one "
             "PriorityClasses exists with their `globalDefault` field set to true, the smallest "
             "value of such global default PriorityClasses will be used as the default "
             "priority.")},
       {"description", Str("description is an arbitrary string that usually provides guidelines "
                           "on when this priority class should be used.")},
       {"preemptionPolicy",
        Enum("preemptionPolicy is the Policy for preempting pods with lower priority. One of "
             "Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
             {"Never", "PreemptLowerPriority"})}},
      {"value"});
  c["io.k8s.api.coordination.v1.LeaseSpec"] = Obj(
      "LeaseSpec is a specification of a Lease.",
      {{"holderIdentity", Str("holderIdentity contains the identity of the holder of a current "
                              "lease.")},
       {"leaseDurationSeconds",
        Int32("leaseDurationSeconds is a duration that candidates for a lease need to wait to "
              "force acquire it. This is measured against the time of last observed "
              "renewTime.")},
       {"acquireTime", Ref(kMicroTime,
                           "acquireTime is a time when the current lease was "
                           "acquired.")},
       {"renewTime", Ref(kMicroTime,
                         "renewTime is a time when the current holder of a lease "
                         "has last updated the lease.")},
       {"leaseTransitions", Int32("leaseTransitions is the number of transitions of a lease "
                                  "between holders.")},
       {"strategy", Str("Strategy indicates the strategy for picking the leader for coordinated "
                        "leader election.")},
       {"preferredHolder", Str("PreferredHolder signals to a lease holder that the lease has a "
                               "more optimal holder and should be given up.")}});
  c["io.k8s.api.coordination.v1.Lease"] =
      KindSchema("coordination.k8s.io", "v1", "Lease", "Lease defines a lease concept.",
                 {{"spec", Ref("io.k8s.api.coordination.v1.LeaseSpec",
                               "spec contains the specification of the Lease. More info: "
                               "https://git.k8s.io/community/contributors/devel/sig-architecture/"
                               "api-conventions.md#spec-and-status")}});
}

// authorization.k8s.io/v1 and authentication.k8s.io/v1: the reviews (k8s.io/api's docs).
void AddReviewSchemas(Catalog& c) {
  constexpr std::string_view kAuthz = "io.k8s.api.authorization.v1.";
  const auto authz = [&](std::string_view name) { return fmt::format("{}{}", kAuthz, name); };
  c[authz("ResourceAttributes")] = Obj(
      "ResourceAttributes includes the authorization attributes available for resource requests "
      "to the Authorizer interface",
      {{"namespace", Str("Namespace is the namespace of the action being requested. \"\" (empty) "
                         "is defaulted for LocalSubjectAccessReviews and means \"all\" for "
                         "cluster-scoped resources.")},
       {"verb", Str("Verb is a kubernetes resource API verb, like: get, list, watch, create, "
                    "update, delete, proxy.  \"*\" means all.")},
       {"group", Str("Group is the API Group of the Resource.  \"*\" means all.")},
       {"version", Str("Version is the API Version of the Resource.  \"*\" means all.")},
       {"resource", Str("Resource is one of the existing resource types.  \"*\" means all.")},
       {"subresource", Str("Subresource is one of the existing resource types.  \"\" means "
                           "none.")},
       {"name", Str("Name is the name of the resource being requested for a \"get\" or deleted "
                    "for a \"delete\". \"\" (empty) means all.")},
       {"fieldSelector", Free("fieldSelector describes the limitation on access based on field. "
                              "It can only limit access, not broaden it.")},
       {"labelSelector", Free("labelSelector describes the limitation on access based on labels. "
                              "It can only limit access, not broaden it.")}});
  c[authz("NonResourceAttributes")] =
      Obj("NonResourceAttributes includes the authorization attributes available for non-resource "
          "requests to the Authorizer interface",
          {{"path", Str("Path is the URL path of the request")},
           {"verb", Str("Verb is the standard HTTP verb")}});
  c[authz("SelfSubjectAccessReviewSpec")] =
      Obj("SelfSubjectAccessReviewSpec is a description of the access request.  Exactly one of "
          "ResourceAuthorizationAttributes and NonResourceAuthorizationAttributes must be set",
          {{"resourceAttributes", Ref(authz("ResourceAttributes"),
                                      "ResourceAuthorizationAttributes describes information for a "
                                      "resource access request")},
           {"nonResourceAttributes", Ref(authz("NonResourceAttributes"),
                                         "NonResourceAttributes describes information for a "
                                         "non-resource access request")}});
  c[authz("SubjectAccessReviewStatus")] = Obj(
      "SubjectAccessReviewStatus",
      {{"allowed", Bool("Allowed is required. True if the action would be allowed, false "
                        "otherwise.")},
       {"denied", Bool("Denied is optional. True if the action would be denied, otherwise false. "
                       "If both allowed is false and denied is false, then the authorizer has no "
                       "opinion on whether to authorize the action. Denied may not be true if "
                       "Allowed is true.")},
       {"reason", Str("Reason is optional.  It indicates why a request was allowed or denied.")},
       {"evaluationError", Str("EvaluationError is an indication that some error occurred during "
                               "the authorization check.")}},
      {"allowed"});
  c[authz("SelfSubjectAccessReview")] = KindSchema(
      "authorization.k8s.io", "v1", "SelfSubjectAccessReview",
      "SelfSubjectAccessReview checks whether or the current user can perform an action.  Not "
      "filling in a spec.namespace means \"in all namespaces\".  Self is a special case, because "
      "users should always be able to check whether they can perform an action",
      {{"spec", Ref(authz("SelfSubjectAccessReviewSpec"),
                    "Spec holds information about the request being evaluated.  user and groups "
                    "must be empty")},
       {"status", Ref(authz("SubjectAccessReviewStatus"),
                      "Status is filled in by the server and indicates whether the request is "
                      "allowed or not")}},
      {"spec"});
  c[authz("SelfSubjectRulesReviewSpec")] =
      Obj("SelfSubjectRulesReviewSpec defines the specification for SelfSubjectRulesReview.",
          {{"namespace", Str("Namespace to evaluate rules for. Required.")}});
  c[authz("ResourceRule")] = Obj(
      "ResourceRule is the list of actions the subject is allowed to perform on resources. The "
      "list ordering isn't significant, may contain duplicates, and possibly be incomplete.",
      {{"verbs", StrArray("Verb is a list of kubernetes resource API verbs, like: get, list, "
                          "watch, create, update, delete, proxy.  \"*\" means all.")},
       {"apiGroups", StrArray("APIGroups is the name of the APIGroup that contains the resources. "
                              " \"*\" means all.")},
       {"resources", StrArray("Resources is a list of resources this rule applies to.  \"*\" "
                              "means all in the specified apiGroups.")},
       {"resourceNames", StrArray("ResourceNames is an optional white list of names that the "
                                  "rule applies to.  \"*\" means all.")}},
      {"verbs"});
  c[authz("NonResourceRule")] = Obj(
      "NonResourceRule holds information that describes a rule for the non-resource",
      {{"verbs", StrArray("Verb is a list of kubernetes non-resource API verbs, like: get, post, "
                          "put, delete, patch, head, options.  \"*\" means all.")},
       {"nonResourceURLs", StrArray("NonResourceURLs is a set of partial urls that a user should "
                                    "have access to.  *s are allowed, but only as the full, "
                                    "final step in the path.  \"*\" means all.")}},
      {"verbs"});
  c[authz("SubjectRulesReviewStatus")] = Obj(
      "SubjectRulesReviewStatus contains the result of a rules check.",
      {{"resourceRules", ArrayOfRef(authz("ResourceRule"),
                                    "ResourceRules is the list of actions the subject is allowed "
                                    "to perform on resources.")},
       {"nonResourceRules", ArrayOfRef(authz("NonResourceRule"),
                                       "NonResourceRules is the list of actions the subject is "
                                       "allowed to perform on non-resources.")},
       {"incomplete", Bool("Incomplete is true when the rules returned by this call are "
                           "incomplete.")},
       {"evaluationError", Str("EvaluationError can appear in combination with Rules.")}},
      {"resourceRules", "nonResourceRules", "incomplete"});
  c[authz("SelfSubjectRulesReview")] = KindSchema(
      "authorization.k8s.io", "v1", "SelfSubjectRulesReview",
      "SelfSubjectRulesReview enumerates the set of actions the current user can perform within "
      "a namespace.",
      {{"spec", Ref(authz("SelfSubjectRulesReviewSpec"),
                    "Spec holds information about the request being evaluated.")},
       {"status", Ref(authz("SubjectRulesReviewStatus"),
                      "Status is filled in by the server and indicates the set of actions a user "
                      "can perform.")}},
      {"spec"});

  c["io.k8s.api.authentication.v1.UserInfo"] =
      Obj("UserInfo holds the information about the user needed to implement the user.Info "
          "interface.",
          {{"username", Str("The name that uniquely identifies this user among all active users.")},
           {"uid", Str("A unique value that identifies this user across time.")},
           {"groups", StrArray("The names of groups this user is a part of.")},
           {"extra", MapOf(object{{"type", "array"}, {"items", object{{"type", "string"}}}},
                           "Any additional information provided by the authenticator.")}});
  c["io.k8s.api.authentication.v1.SelfSubjectReviewStatus"] =
      Obj("SelfSubjectReviewStatus is filled by the kube-apiserver and sent back to a user.",
          {{"userInfo", Ref("io.k8s.api.authentication.v1.UserInfo",
                            "User attributes of the user making this request.")}});
  c["io.k8s.api.authentication.v1.SelfSubjectReview"] = KindSchema(
      "authentication.k8s.io", "v1", "SelfSubjectReview",
      "SelfSubjectReview contains the user information that the kube-apiserver has about the "
      "user making this request.",
      {{"status", Ref("io.k8s.api.authentication.v1.SelfSubjectReviewStatus",
                      "Status is filled in by the server with the user attributes.")}});
}

// --- Volcano -------------------------------------------------------------------------------------
// As Volcano's CRDs publish them (config/crd/volcano/bases): nested types inline, except the task
// template, which refers to the core PodTemplateSpec so that explain can walk into it.

value NetworkTopology() {
  return Obj(
      "NetworkTopology defines the NetworkTopology config, this field works in "
      "conjunction with network topology feature and hyperNode CRD.",
      {{"mode",
        Enum("Mode specifies the mode of the network topology constrain.", {"hard", "soft"})},
       {"highestTierAllowed",
        Int32("HighestTierAllowed specifies the highest tier that a job allowed to cross "
              "when scheduling.")},
       {"highestTierName",
        Str("HighestTierName specifies the highest tier name that a job allowed to "
            "cross when scheduling.")}});
}

value LifecyclePolicies(std::string_view description) {
  const auto events = {"*",         "PodPending",    "PodRunning", "PodFailed",     "PodEvicted",
                       "Unknown",   "TaskCompleted", "OutOfSync",  "CommandIssued", "JobUpdated",
                       "TaskFailed"};
  array event_enum;
  for (std::string_view e : events) event_enum.emplace_back(e);
  object event{{"type", "string"},
               {"enum", event_enum},
               {"description",
                "The Event recorded by scheduler; the controller takes actions "
                "according to this Event."}};
  object event_item{{"type", "string"}, {"enum", event_enum}};
  return ArrayOf(
      Obj("LifecyclePolicy specifies the lifecycle and error handling of task and job.",
          {{"action",
            Enum("The action that will be taken to the PodGroup according to Event. One of "
                 "\"Restart\", \"None\". Default to None.",
                 {"AbortJob", "RestartJob", "RestartTask", "RestartPod", "RestartPartition",
                  "TerminateJob", "CompleteJob", "ResumeJob"})},
           {"event", event},
           {"events", ArrayOf(event_item,
                              "The Events recorded by scheduler; the controller "
                              "takes actions according to this Events.")},
           {"exitCode",
            Int32("The exit code of the pod container, controller will take action according "
                  "to this code. Note: only one of `Event` or `ExitCode` can be specified.")},
           {"timeout", Str("Timeout is the grace period for controller to take actions. Default "
                           "to nil (take action immediately).")}}),
      description);
}

void AddVolcanoJobSchemas(Catalog& c) {
  value task =
      Obj("TaskSpec specifies the task specification of Job.",
          {{"name", Str("Name specifies the name of tasks")},
           {"replicas", Int32("Replicas specifies the replicas of this TaskSpec in Job")},
           {"minAvailable",
            Int32("The minimal available pods to run for this Task. Defaults to the task "
                  "replicas")},
           {"template", Ref(Core("PodTemplateSpec"),
                            "Specifies the pod that will be created for "
                            "this TaskSpec when executing a Job")},
           {"policies", LifecyclePolicies("Specifies the lifecycle of task")},
           {"topologyPolicy", Enum("Specifies the topology policy of task",
                                   {"none", "best-effort", "restricted", "single-numa-node"})},
           {"maxRetry", Int32("Specifies the maximum number of retries before marking this Task "
                              "failed. Defaults to 3.")},
           {"dependsOn",
            Obj("Specifies the tasks that this task depends on.",
                {{"name", StrArray("Indicates the name of the tasks that this task depends on, "
                                   "which can depend on multiple tasks")},
                 {"iteration",
                  Enum("This field specifies that when there are multiple dependent tasks, as long "
                       "as one task becomes the specified state, the task scheduling is triggered "
                       "or all tasks must be changed to the specified state to trigger the task "
                       "scheduling",
                       {"any", "all"})}})},
           {"partitionPolicy",
            Obj("PartitionPolicy defines the partition policy of a task.",
                {{"totalPartitions", Int32("TotalPartitions indicates how many partitions the task "
                                           "is divided into.")},
                 {"partitionSize", Int32("PartitionSize is the number of pods in each "
                                         "partition.")},
                 {"minPartitions", Int32("MinPartitions is the minimal number of partitions to run "
                                         "the task.")},
                 {"networkTopology", NetworkTopology()}},
                {"totalPartitions", "partitionSize"})}});
  value spec = Obj(
      "Specification of the desired behavior of the volcano job, including the minAvailable",
      {{"schedulerName",
        Str("SchedulerName is the default value of `tasks.template.spec.schedulerName`.")},
       {"minAvailable", Int32("The minimal available pods to run for this Job Defaults to the "
                              "summary of tasks' replicas")},
       {"queue", Str("Specifies the queue that will be used in the scheduler, \"default\" queue "
                     "is used this leaves empty.")},
       {"maxRetry", Int32("Specifies the maximum number of retries before marking this Job "
                          "failed. Defaults to 3.")},
       {"tasks", ArrayOf(task, "Tasks specifies the task specification of Job")},
       {"policies", LifecyclePolicies("Specifies the default lifecycle of tasks")},
       {"plugins",
        MapOf(ArrayOf(object{{"type", "string"}}, ""), "Enabled task plugins when creating job.")},
       {"ttlSecondsAfterFinished",
        Int32("ttlSecondsAfterFinished limits the lifetime of a Job that has finished execution "
              "(either Completed or Failed). If this field is set, ttlSecondsAfterFinished "
              "after the Job finishes, it is eligible to be automatically deleted. If this field "
              "is unset, the Job won't be automatically deleted. If this field is set to zero, "
              "the Job becomes eligible to be deleted immediately after it finishes.")},
       {"priorityClassName", Str("If specified, indicates the job's priority.")},
       {"minSuccess", Int32("The minimal success pods to run for this Job")},
       {"runningEstimate", Str("Running Estimate is a user running duration estimate for the "
                               "job Default to nil")},
       {"volumes",
        ArrayOf(Obj("VolumeSpec defines the specification of Volume, e.g. PVC.",
                    {{"mountPath", Str("Path within the container at which the volume should be "
                                       "mounted. Must not contain ':'.")},
                     {"volumeClaimName", Str("defined the PVC name")},
                     {"volumeClaim", Free("VolumeClaim defines the PVC used by the "
                                          "VolumeMount.")}},
                    {"mountPath"}),
                "The volumes mount on Job")},
       {"networkTopology", NetworkTopology()}});
  value state =
      Obj("Current state of Job.",
          {{"phase", Enum("The phase of Job.",
                          {"Pending", "Aborting", "Aborted", "Running", "Restarting", "Completing",
                           "Completed", "Terminating", "Terminated", "Failed"})},
           {"reason", Str("Unique, one-word, CamelCase reason for the phase's last transition.")},
           {"message", Str("Human-readable message indicating details about last transition.")},
           {"lastTransitionTime",
            Ref(kTime, "Last time the condition transit from one phase to another.")}});
  value status = Obj(
      "Current status of the volcano Job",
      {{"state", state},
       {"minAvailable", Int32("The minimal available pods to run for this Job")},
       {"taskStatusCount",
        MapOf(Obj("TaskState contains details for the current state of the task.",
                  {{"phase", MapOf(Int32(""), "The phase of Task.")}}),
              "The status of pods for each task")},
       {"pending", Int32("The number of pending pods.")},
       {"running", Int32("The number of running pods.")},
       {"succeeded", Int32("The number of pods which reached phase Succeeded.")},
       {"failed", Int32("The number of pods which reached phase Failed.")},
       {"terminating", Int32("The number of pods which reached phase Terminating.")},
       {"unknown", Int32("The number of pods which reached phase Unknown.")},
       {"version", Int32("Current version of job")},
       {"retryCount", Int32("The number of Job retries.")},
       {"runningDuration", Str("The job running duration is the length of time from job "
                               "running to complete.")},
       {"controlledResources", StrMap("The resources that controlled by this job, e.g. Service, "
                                      "ConfigMap")},
       {"conditions",
        ArrayOf(Obj("JobCondition contains details for the current condition of this job.",
                    {{"status", Str("Status is the new phase of job after performing the state's "
                                    "action.")},
                     {"lastTransitionTime",
                      Ref(kTime,
                          "Last time the condition transitioned from one phase to "
                          "another.")}},
                    {"status"}),
                "Which conditions caused the current job state.")}});
  c["sh.volcano.batch.v1alpha1.Job"] =
      KindSchema("batch.volcano.sh", "v1alpha1", "Job", "Job defines the volcano job.",
                 {{"spec", spec}, {"status", status}});
}

void AddVolcanoSchedulingSchemas(Catalog& c) {
  value pg_spec = Obj(
      "Specification of the desired behavior of the pod group. More info: "
      "https://git.k8s.io/community/contributors/devel/api-conventions.md#spec-and-status",
      {{"minMember",
        Int32("MinMember defines the minimal number of members/tasks to run the pod group; if "
              "there's not enough resources to start all tasks, the scheduler will not start "
              "anyone.")},
       {"minTaskMember",
        MapOf(Int32(""),
              "MinTaskMember defines the minimal number of pods to run each task in "
              "the pod group; if there's not enough resources to start each task, "
              "the scheduler will not start anyone.")},
       {"queue", Str("Queue defines the queue to allocate resource for PodGroup; if queue does "
                     "not exist, the PodGroup will not be scheduled. Defaults to `default` Queue "
                     "with the lowest weight.")},
       {"priorityClassName",
        Str("If specified, indicates the PodGroup's priority. \"system-node-critical\" and "
            "\"system-cluster-critical\" are two special keywords which indicate the highest "
            "priorities with the former being the highest priority. Any other name must be "
            "defined by creating a PriorityClass object with that name. If not specified, the "
            "PodGroup priority will be default or zero if there is no default.")},
       {"minResources",
        QuantityMap("MinResources defines the minimal resource of members/tasks to run the pod "
                    "group; if there's not enough resources to start all tasks, the scheduler "
                    "will not start anyone.")},
       {"networkTopology", NetworkTopology()},
       {"preemptable", Bool("Preemptable indicates whether the PodGroup is preemptable. If "
                            "false, none of its Pods can be preemptable.")},
       {"subGroupPolicy",
        ArrayOf(Free("SubGroupPolicy defines a gang of pods within the PodGroup: name, "
                     "subGroupSize, minSubGroups, labelSelector, matchLabelKeys, "
                     "networkTopology."),
                "SubGroupPolicy splits the PodGroup's pods into sub-groups scheduled as gangs "
                "of their own.")}});
  value pg_status =
      Obj("Status represents the current information about a pod group. This data may not be up to "
          "date.",
          {{"phase", Enum("Current phase of PodGroup.",
                          {"Pending", "Running", "Unknown", "Inqueue", "Completed"})},
           {"conditions",
            ArrayOf(Obj("PodGroupCondition contains details for the current state of this pod "
                        "group.",
                        {{"type", Str("Type is the type of the condition")},
                         {"status", Str("Status is the status of the condition.")},
                         {"transitionID", Str("The ID of condition transition.")},
                         {"lastTransitionTime",
                          Ref(kTime,
                              "Last time the phase transitioned from another to current "
                              "phase.")},
                         {"reason", Str("Unique, one-word, CamelCase reason for the phase's last "
                                        "transition.")},
                         {"message", Str("Human-readable message indicating details about last "
                                         "transition.")}}),
                    "The conditions of PodGroup.")},
           {"running", Int32("The number of actively running pods.")},
           {"succeeded", Int32("The number of pods which reached phase Succeeded.")},
           {"failed", Int32("The number of pods which reached phase Failed.")}});
  c["sh.volcano.scheduling.v1beta1.PodGroup"] =
      KindSchema("scheduling.volcano.sh", "v1beta1", "PodGroup",
                 "PodGroup is a collection of Pod; used for batch workload.",
                 {{"spec", pg_spec}, {"status", pg_status}});

  value queue_spec = Obj(
      "Specification of the desired behavior of the queue. More info: "
      "https://git.k8s.io/community/contributors/devel/api-conventions.md#spec-and-status",
      {{"weight", Int32("Weight of the queue: its share of the cluster relative to its "
                        "siblings. Defaults to 1.")},
       {"capability", QuantityMap("Capability is the upper limit of resources the queue may "
                                  "use.")},
       {"deserved", QuantityMap("The amount of resources configured by the user. This part of "
                                "resource can be shared with other queues and reclaimed "
                                "back.")},
       {"guarantee",
        Obj("Guarantee indicate configuration about resource reservation",
            {{"resource", QuantityMap("The amount of cluster resource reserved for queue. Just "
                                      "set either `percentage` or `resource`")}})},
       {"reclaimable", Bool("Reclaimable indicate whether the queue can be reclaimed by other "
                            "queue")},
       {"parent", Str("Parent define the parent of queue")},
       {"priority", Int32("Priority define the priority of queue. Higher values are prioritized "
                          "for scheduling and considered later during reclamation.")},
       {"dequeueStrategy", Enum("DequeueStrategy defines how jobs leave the queue: fifo blocks "
                                "behind the head job, traverse (the default) skips it.",
                                {"fifo", "traverse"})},
       {"type", Str("Type define the type of queue")},
       {"affinity", Free("If specified, the pod owned by the queue will be scheduled with "
                         "constraint")},
       {"extendClusters",
        ArrayOf(Free("CluterSpec represents the template of Cluster"),
                "extendCluster indicate the jobs in this Queue will be dispatched to these "
                "clusters.")}});
  value queue_status =
      Obj("The status of queue.",
          {{"state", Enum("State is state of queue", {"Open", "Closed", "Closing", "Unknown"})},
           {"allocated", QuantityMap("Allocated is allocated resources in queue")},
           {"reservation",
            Obj("Reservation is the profile of resource reservation for queue",
                {{"nodes", StrArray("Nodes are Locked nodes for queue")},
                 {"resource", QuantityMap("Resource is a list of total idle resource in locked "
                                          "nodes.")}})},
           {"pending", Int32("The number of 'Pending' PodGroup in this queue.")},
           {"running", Int32("The number of 'Running' PodGroup in this queue.")},
           {"inqueue", Int32("The number of `Inqueue` PodGroup in this queue.")},
           {"unknown", Int32("The number of 'Unknown' PodGroup in this queue.")},
           {"completed", Int32("The number of `Completed` PodGroup in this queue.")}});
  c["sh.volcano.scheduling.v1beta1.Queue"] =
      KindSchema("scheduling.volcano.sh", "v1beta1", "Queue", "Queue is a queue of PodGroup.",
                 {{"spec", queue_spec}, {"status", queue_status}});
}

// kubectl 1.32 takes strategic-merge patch keys from OpenAPI v3: without them it treats these
// lists as atomic and `apply` of an unchanged object reports "configured". Keys as upstream
// (k8s.io/api core/v1 patchMergeKey/patchStrategy tags); they match src/api/patch.cc's table.
void AddPatchStrategies(Catalog& c) {
  struct Rule {
    std::string schema;
    std::string_view field;
    std::string_view merge_key;  // empty: a set-like list of scalars
  };
  const Rule rules[] = {
      {Core("PodSpec"), "containers", "name"},
      {Core("PodSpec"), "initContainers", "name"},
      {Core("PodSpec"), "ephemeralContainers", "name"},
      {Core("PodSpec"), "volumes", "name"},
      {Core("PodSpec"), "imagePullSecrets", "name"},
      {Core("PodSpec"), "hostAliases", "ip"},
      {Core("PodSpec"), "topologySpreadConstraints", "topologyKey"},
      {Core("Container"), "env", "name"},
      {Core("Container"), "ports", "containerPort"},
      {Core("Container"), "volumeMounts", "mountPath"},
      {Core("Container"), "volumeDevices", "devicePath"},
      {Core("PodSpec"), "schedulingGates", "name"},
      {Core("PodSpec"), "resourceClaims", "name"},
      {Core("PodStatus"), "conditions", "type"},
      {Core("PodStatus"), "podIPs", "ip"},
      {Core("PodStatus"), "hostIPs", "ip"},
      {Core("NodeSpec"), "podCIDRs", ""},
      {Core("NodeStatus"), "conditions", "type"},
      {Core("NodeStatus"), "addresses", "type"},
      {Core("NamespaceStatus"), "conditions", "type"},
      {Core("ServiceSpec"), "ports", "port"},
      {std::string(kObjectMeta), "ownerReferences", "uid"},
      {std::string(kObjectMeta), "finalizers", ""},
  };
  for (const Rule& r : rules) {
    auto it = c.find(r.schema);
    if (it == c.end() || !it->second.is_object()) continue;
    object& schema = it->second.as_object();
    auto* props = schema.if_contains("properties");
    if (!props || !props->is_object()) continue;
    auto* field = props->as_object().if_contains(r.field);
    if (!field || !field->is_object()) continue;
    object& f = field->as_object();
    f["x-kubernetes-patch-strategy"] = "merge";
    if (!r.merge_key.empty()) {
      f["x-kubernetes-patch-merge-key"] = r.merge_key;
      f["x-kubernetes-list-type"] = "map";
      f["x-kubernetes-list-map-keys"] = array{r.merge_key};
    } else {
      f["x-kubernetes-list-type"] = "set";
    }
  }
}

// Every named schema: the catalogue above, plus a list kind for every served resource and a
// generic kind schema for any served resource the catalogue does not describe.
Catalog BuildCatalog() {
  Catalog c;
  AddMetaSchemas(c);
  AddSchedulingConstraintSchemas(c);
  AddContainerSchemas(c);
  AddPodSpecSchemas(c);
  AddPodStatusSchemas(c);
  AddNodeSchemas(c);
  AddOtherCoreSchemas(c);
  AddSchedulingAndCoordinationSchemas(c);
  AddReviewSchemas(c);
  AddVolcanoJobSchemas(c);
  AddVolcanoSchedulingSchemas(c);
  AddPatchStrategies(c);
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

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char b : bytes) {
    hash ^= b;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::vector<OpenApiDocument> BuildAllDocuments() {
  std::vector<OpenApiDocument> docs;
  for (const GroupVersion& gv : ServedGroupVersions()) {
    OpenApiDocument doc;
    doc.path = DocumentPath(gv.group, gv.version);
    doc.json = boost::json::serialize(BuildOpenApiDocument(gv.group, gv.version));
    doc.hash = fmt::format("{:016X}", Fnv1a64(doc.json));
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
  std::vector<const ResourceInfo*> infos = ResourcesIn(group, version);
  if (infos.empty()) return nullptr;
  object paths;
  std::vector<std::string> pending;
  for (const ResourceInfo* info : infos) {
    AddResourcePaths(*info, paths);
    pending.push_back(SchemaName(*info));
    if (!info->review) pending.push_back(SchemaName(*info, /*list=*/true));
  }
  CollectRefs(paths, pending);

  // The schemas the paths name, and everything they refer to, sorted by name.
  const Catalog& catalog = SchemaCatalog();
  std::set<std::string> included;
  while (!pending.empty()) {
    std::string name = std::move(pending.back());
    pending.pop_back();
    if (included.contains(name)) continue;
    auto it = catalog.find(name);
    if (it == catalog.end()) continue;
    included.insert(name);
    CollectRefs(it->second, pending);
  }
  object schemas;
  for (const std::string& name : included) schemas[name] = catalog.find(name)->second;

  return object{{"openapi", "3.0.0"},
                {"info", object{{"title", "Kubernetes"}, {"version", "v1.32.0"}}},
                {"paths", std::move(paths)},
                {"components", object{{"schemas", std::move(schemas)}}}};
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
