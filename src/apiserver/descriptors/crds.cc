#include "apiserver/descriptors/crds.h"

#include <string>
#include <string_view>

#include "apiserver/descriptors/openapi.h"
#include "fmt/format.h"

namespace muster::apiserver {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;

constexpr int kMaxDepth = 32;

// The x- extensions a CRD's JSONSchemaProps has; anything else (x-kubernetes-group-version-kind,
// patch strategies) is refused by strict decoding of the CRD.
bool AllowedExtension(std::string_view key) {
  return key == "x-kubernetes-preserve-unknown-fields" || key == "x-kubernetes-int-or-string" ||
         key == "x-kubernetes-embedded-resource" || key == "x-kubernetes-list-type" ||
         key == "x-kubernetes-list-map-keys" || key == "x-kubernetes-map-type" ||
         key == "x-kubernetes-validations";
}

std::string_view RefName(const object& schema) {
  const value* ref = schema.if_contains("$ref");
  if (ref == nullptr || !ref->is_string()) return {};
  std::string_view name = ref->as_string();
  if (name.starts_with(kSchemaRefPrefix)) name.remove_prefix(kSchemaRefPrefix.size());
  return name;
}

class Structural {
 public:
  explicit Structural(const object& schemas) : schemas_(schemas) {}

  // `schema` with every reference inlined and made structural.
  object Convert(const object& schema, int depth) const {
    // {"allOf": [{"$ref": X}], "description": D} and {"$ref": X}: the referenced schema, described.
    if (const value* all_of = schema.if_contains("allOf");
        all_of != nullptr && all_of->is_array() && all_of->as_array().size() == 1 &&
        all_of->as_array()[0].is_object()) {
      object resolved = Resolve(RefName(all_of->as_array()[0].as_object()), depth);
      if (const value* d = schema.if_contains("description")) resolved["description"] = *d;
      return resolved;
    }
    if (std::string_view name = RefName(schema); !name.empty()) return Resolve(name, depth);

    object out;
    for (const auto& [key, v] : schema) {
      if (key.starts_with("x-") && !AllowedExtension(key)) continue;
      if (key == "uniqueItems") continue;
      if (key == "properties" && v.is_object()) {
        object props;
        for (const auto& [name, field] : v.as_object()) {
          props[name] = field.is_object() ? Convert(field.as_object(), depth + 1) : field;
        }
        out[key] = std::move(props);
      } else if ((key == "items" || key == "additionalProperties") && v.is_object()) {
        out[key] = Convert(v.as_object(), depth + 1);
      } else if (key == "oneOf" || key == "anyOf") {
        // Only the quantity's oneOf appears in the catalogue; a CRD says it with int-or-string.
        out["x-kubernetes-int-or-string"] = true;
        out["anyOf"] = array{object{{"type", "integer"}}, object{{"type", "string"}}};
      } else {
        out[key] = v;
      }
    }
    if (!out.contains("type") && !out.contains("x-kubernetes-int-or-string") &&
        !out.contains("x-kubernetes-preserve-unknown-fields")) {
      out["type"] = "object";
      out["x-kubernetes-preserve-unknown-fields"] = true;
    }
    return out;
  }

 private:
  object Resolve(std::string_view name, int depth) const {
    if (name == kQuantitySchema) {
      return object{{"anyOf", array{object{{"type", "integer"}}, object{{"type", "string"}}}},
                    {"pattern",
                     "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE]("
                     "\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$"},
                    {"x-kubernetes-int-or-string", true}};
    }
    if (name == kObjectMetaSchema) return object{{"type", "object"}};
    // Core kinds (a task's pod template and what it holds) are kept whole, not pruned to what
    // muster describes; as is anything nested too deep or not in the document.
    const value* target = schemas_.if_contains(name);
    if (name.starts_with("io.k8s.api.") || target == nullptr || !target->is_object() ||
        depth >= kMaxDepth) {
      return object{{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
    }
    return Convert(target->as_object(), depth + 1);
  }

  const object& schemas_;
};

array Columns(const ResourceInfo& info) {
  array columns;
  for (const PrinterColumn& c : info.columns) {
    object column{{"name", c.name}, {"type", c.type}, {"jsonPath", c.json_path}};
    if (!c.description.empty()) column["description"] = c.description;
    if (c.priority != 0) column["priority"] = c.priority;
    columns.push_back(std::move(column));
  }
  return columns;
}

}  // namespace

value CustomResourceDefinition(const ResourceInfo& info) {
  if (info.builtin) return nullptr;
  value document = BuildOpenApiDocument(info.group, info.version);
  const object* schemas = nullptr;
  if (const value* components = document.as_object().if_contains("components")) {
    if (const value* s = components->as_object().if_contains("schemas")) {
      schemas = &s->as_object();
    }
  }
  if (schemas == nullptr) return nullptr;
  const value* kind_schema = schemas->if_contains(SchemaName(info));
  if (kind_schema == nullptr || !kind_schema->is_object()) return nullptr;
  object schema = Structural(*schemas).Convert(kind_schema->as_object(), 0);
  // The API server allows nothing but the type at the top level's metadata.
  if (value* props = schema.if_contains("properties"); props != nullptr && props->is_object()) {
    props->as_object()["metadata"] = object{{"type", "object"}};
  }

  object names{{"kind", info.kind},
               {"listKind", info.list_kind},
               {"plural", info.resource},
               {"singular", info.singular}};
  if (!info.short_names.empty()) {
    array shorts;
    for (const std::string& s : info.short_names) shorts.emplace_back(s);
    names["shortNames"] = std::move(shorts);
  }
  if (!info.categories.empty()) {
    array categories;
    for (const std::string& c : info.categories) categories.emplace_back(c);
    names["categories"] = std::move(categories);
  }

  object version{{"name", info.version}, {"served", true}, {"storage", true}};
  if (!info.columns.empty()) version["additionalPrinterColumns"] = Columns(info);
  version["schema"] = object{{"openAPIV3Schema", std::move(schema)}};
  // As Volcano's CRDs: a status subresource for jobs and queues; a PodGroup's status is written
  // with the object (muster's own server also serves podgroups/status, which is additional).
  if (!info.status_with_object) {
    for (const std::string& sub : info.subresources) {
      if (sub == "status") version["subresources"] = object{{"status", object{}}};
    }
  }

  object metadata{{"name", fmt::format("{}.{}", info.resource, info.group)},
                  {"labels", object{{"app.kubernetes.io/part-of", "muster"}}}};
  return object{{"apiVersion", "apiextensions.k8s.io/v1"},
                {"kind", "CustomResourceDefinition"},
                {"metadata", std::move(metadata)},
                {"spec", object{{"group", info.group},
                                {"names", std::move(names)},
                                {"scope", info.namespaced ? "Namespaced" : "Cluster"},
                                {"versions", array{std::move(version)}}}}};
}

std::vector<value> CustomResourceDefinitions() {
  std::vector<value> result;
  for (const ResourceInfo& info : AllResources()) {
    if (info.builtin) continue;
    value crd = CustomResourceDefinition(info);
    if (!crd.is_null()) result.push_back(std::move(crd));
  }
  return result;
}

}  // namespace muster::apiserver
