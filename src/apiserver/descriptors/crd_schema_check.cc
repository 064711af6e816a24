// The checks a CustomResourceDefinition's openAPIV3Schema must pass (structural_schema.h
// CheckCrdSchema), with kube's messages: apiextensions-apiserver pkg/apis/apiextensions/validation
// (ValidateCustomResourceDefinitionOpenAPISchema, the v3 spec validator, root restrictions with a
// status subresource) and pkg/apiserver/schema/validation.go (ValidateStructural: types, items,
// metadata, int-or-string, embedded resources, value validations that stay non-structural).

#include <set>
#include <string>
#include <utility>

#include "apiserver/descriptors/structural_schema.h"
#include "fmt/format.h"
#include "re2/re2.h"

namespace muster::apiserver {
namespace {

namespace json = boost::json;

using Type = SchemaViolation::Type;

enum class Level { kRoot, kItem, kField };

const std::set<std::string_view>& SchemaTypes() {
  static const auto* const types = new std::set<std::string_view>{
      "array", "boolean", "integer", "number", "object", "string"};
  return *types;
}

// The keys of JSONSchemaProps that may sit at the root beside a status subresource.
bool AllowedAtRootWithStatus(std::string_view key) {
  static const auto* const keys = new std::set<std::string_view>{
      "description", "type",      "format",   "title",     "maximum",
      "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength",
      "pattern",     "maxItems",  "minItems", "uniqueItems", "multipleOf",
      "required",    "items",     "properties", "externalDocs", "example",
      "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
      "x-kubernetes-int-or-string", "x-kubernetes-validations"};
  return keys->contains(key);
}

std::string CheckKey(const std::string& path, std::string_view key) {
  return fmt::format("{}[{}]", path, key);
}

std::string CheckChild(const std::string& path, std::string_view name) {
  return fmt::format("{}.{}", path, name);
}

bool CheckFlag(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_bool() && v->get_bool();
}

std::string_view CheckType(const json::object& o) {
  const json::value* t = o.if_contains("type");
  return t != nullptr && t->is_string() ? std::string_view(t->get_string()) : std::string_view();
}

class CrdSchemaChecker {
 public:
  explicit CrdSchemaChecker(std::vector<SchemaViolation>& out) : out_(out) {}

  void Check(const json::object& s, Level level, const std::string& path) {
    Unsupported(s, path);
    const std::string_view type = CheckType(s);
    const bool int_or_string = CheckFlag(s, "x-kubernetes-int-or-string");
    const bool preserve = CheckFlag(s, "x-kubernetes-preserve-unknown-fields");
    const bool embedded = CheckFlag(s, "x-kubernetes-embedded-resource");
    if (const json::value* t = s.if_contains("type"); t != nullptr && !t->is_string()) {
      Add(Type::kInvalid, CheckChild(path, "type"), "", "must be a string");
    } else if (type == "null") {
      Add(Type::kForbidden, CheckChild(path, "type"), std::nullopt, "type cannot be set to null");
    } else if (!type.empty() && !SchemaTypes().contains(type)) {
      Add(Type::kNotSupported, CheckChild(path, "type"), Quote(type),
          R"(supported values: "array", "boolean", "integer", "number", "object", "string")");
    }
    if (const json::value* p = s.if_contains("x-kubernetes-preserve-unknown-fields");
        p != nullptr && !(p->is_bool() && p->get_bool())) {
      Add(Type::kInvalid, CheckChild(path, "x-kubernetes-preserve-unknown-fields"), "false",
          "must be true or undefined");
    }
    if (int_or_string && preserve) {
      Add(Type::kInvalid, CheckChild(path, "x-kubernetes-preserve-unknown-fields"), "true",
          "must be false if x-kubernetes-int-or-string is true");
    }
    if (int_or_string && embedded) {
      Add(Type::kInvalid, CheckChild(path, "x-kubernetes-embedded-resource"), "true",
          "must be false if x-kubernetes-int-or-string is true");
    }
    if (embedded && type != "object") {
      if (type.empty()) {
        Add(Type::kRequired, CheckChild(path, "type"), std::nullopt,
            "must be object if x-kubernetes-embedded-resource is true");
      } else {
        Add(Type::kInvalid, CheckChild(path, "type"), Quote(type),
            "must be object if x-kubernetes-embedded-resource is true");
      }
    } else if (type.empty() && !int_or_string && !preserve) {
      const char* detail = "must not be empty for specified object fields";
      if (level == Level::kRoot) detail = "must not be empty at the root";
      if (level == Level::kItem) detail = "must not be empty for specified array items";
      Add(Type::kRequired, CheckChild(path, "type"), std::nullopt, detail);
    }
    if (level == Level::kRoot && !type.empty() && type != "object") {
      Add(Type::kInvalid, CheckChild(path, "type"), Quote(type), "must be object at the root");
    }

    const json::value* props = s.if_contains("properties");
    const bool has_props = props != nullptr && props->is_object() && !props->get_object().empty();
    if (const json::value* extra = s.if_contains("additionalProperties")) {
      if (level == Level::kRoot) {
        Add(Type::kForbidden, CheckChild(path, "additionalProperties"), std::nullopt,
            "must not be used at the root");
      }
      if (embedded) {
        Add(Type::kForbidden, CheckChild(path, "additionalProperties"), std::nullopt,
            "must not be used if x-kubernetes-embedded-resource is set");
      }
      if (has_props && (extra->is_object() || (extra->is_bool() && !extra->get_bool()))) {
        Add(Type::kForbidden, CheckChild(path, "additionalProperties"), std::nullopt,
            "additionalProperties and properties are mutual exclusive");
      }
      if (extra->is_object()) {
        Check(extra->get_object(), Level::kField, CheckChild(path, "additionalProperties"));
      }
    }
    if (type == "array") {
      const json::value* items = s.if_contains("items");
      if (items == nullptr) {
        Add(Type::kRequired, CheckChild(path, "items"), std::nullopt, "must be specified");
      }
    }
    if (const json::value* items = s.if_contains("items")) {
      if (items->is_array()) {
        Add(Type::kForbidden, CheckChild(path, "items"), std::nullopt,
            "items must be a schema object and not an array");
      } else if (items->is_object()) {
        Check(items->get_object(), Level::kItem, CheckChild(path, "items"));
      }
    }
    if (has_props) {
      for (const auto& [name, field] : props->get_object()) {
        const std::string child = CheckKey(CheckChild(path, "properties"), name);
        if (!field.is_object()) {
          Add(Type::kInvalid, child, "", "must be a schema object");
          continue;
        }
        Check(field.get_object(), Level::kField, child);
      }
      Metadata(props->get_object(), level == Level::kRoot || embedded, level == Level::kRoot,
               path);
    }
    if (embedded && !preserve && !has_props) {
      Add(Type::kRequired, CheckChild(path, "properties"), std::nullopt,
          "must not be empty if x-kubernetes-embedded-resource is true without "
          "x-kubernetes-preserve-unknown-fields");
    }
    Pattern(s, path);
    Default(s, path);
    for (std::string_view junctor : {"allOf", "anyOf", "oneOf"}) {
      const json::value* list = s.if_contains(junctor);
      if (list == nullptr || !list->is_array()) continue;
      // x-kubernetes-int-or-string says its two types in an anyOf, which stays allowed.
      if (int_or_string && junctor == "anyOf") continue;
      const json::array& parts = list->get_array();
      for (size_t i = 0; i < parts.size(); ++i) {
        if (parts[i].is_object()) {
          Nested(parts[i].get_object(), fmt::format("{}.{}[{}]", path, junctor, i));
        }
      }
    }
    if (const json::value* n = s.if_contains("not"); n != nullptr && n->is_object()) {
      Nested(n->get_object(), CheckChild(path, "not"));
    }
  }

  void RootWithStatus(const json::object& s, const std::string& path) {
    if (std::string_view type = CheckType(s); !type.empty() && type != "object") {
      Add(Type::kInvalid, CheckChild(path, "type"), Quote(type),
          R"(only "object" is allowed as the type at the root of the schema if the status )"
          "subresource is enabled");
      return;
    }
    for (const auto& [key, v] : s) {
      if (!AllowedAtRootWithStatus(key)) {
        Add(Type::kInvalid, path, "", fmt::format(
            "only [Description Type Format Title Maximum ExclusiveMaximum Minimum "
            "ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf "
            "Required Items Properties ExternalDocs Example] fields are allowed at the root of the "
            "schema if the status subresource is enabled (found {})",
            key));
        return;
      }
    }
  }

 private:
  static std::string Quote(std::string_view s) { return fmt::format("\"{}\"", s); }

  void Add(Type type, std::string field, std::optional<std::string> value, std::string detail) {
    out_.push_back({type, std::move(field), std::move(value), std::move(detail)});
  }

  // What the v3 spec validator and the CRD decoder refuse outright.
  void Unsupported(const json::object& s, const std::string& path) {
    for (auto [key, what] : std::initializer_list<std::pair<std::string_view, std::string_view>>{
             {"$ref", "$ref is not supported"},
             {"id", "id is not supported"},
             {"additionalItems", "additionalItems is not supported"},
             {"patternProperties", "patternProperties is not supported"},
             {"definitions", "definitions is not supported"},
             {"dependencies", "dependencies is not supported"}}) {
      if (s.contains(key)) {
        Add(Type::kForbidden, CheckChild(path, key), std::nullopt, std::string(what));
      }
    }
    if (CheckFlag(s, "uniqueItems")) {
      Add(Type::kForbidden, CheckChild(path, "uniqueItems"), std::nullopt,
          "uniqueItems cannot be set to true since the runtime complexity becomes quadratic");
    }
  }

  // At the root (and in embedded resources) apiVersion and kind are strings, metadata an object
  // that may only restrict name and generateName.
  void Metadata(const json::object& props, bool check, bool root, const std::string& path) {
    if (!check) return;
    const std::string properties = CheckChild(path, "properties");
    for (std::string_view key : {"kind", "apiVersion"}) {
      const json::value* field = props.if_contains(key);
      if (field == nullptr || !field->is_object()) continue;
      if (std::string_view t = CheckType(field->get_object()); t != "string") {
        Add(Type::kInvalid, CheckChild(CheckKey(properties, key), "type"), Quote(t),
            "must be string");
      }
    }
    const json::value* meta = props.if_contains("metadata");
    if (meta == nullptr || !meta->is_object()) return;
    const json::object& m = meta->get_object();
    if (std::string_view t = CheckType(m); t != "object") {
      Add(Type::kInvalid, CheckChild(CheckKey(properties, "metadata"), "type"), Quote(t),
          "must be object");
    }
    if (!root) return;
    for (const auto& [key, v] : m) {
      bool allowed = key == "type" || key == "description";
      if (key == "properties" && v.is_object()) {
        allowed = true;
        for (const auto& [name, sub] : v.get_object()) {
          if (name != "name" && name != "generateName") allowed = false;
        }
      }
      if (!allowed) {
        Add(Type::kForbidden, CheckKey(properties, "metadata"), std::nullopt,
            "must not specify anything other than name and generateName, but metadata is "
            "implicitly specified");
        return;
      }
    }
  }

  void Pattern(const json::object& s, const std::string& path) {
    const json::value* p = s.if_contains("pattern");
    if (p == nullptr || !p->is_string()) return;
    RE2::Options options;
    options.set_log_errors(false);
    re2::RE2 re(std::string(p->get_string()), options);
    if (!re.ok()) {
      Add(Type::kInvalid, CheckChild(path, "pattern"), GoValue(*p),
          fmt::format("must be a valid regular expression, but isn't: error parsing regexp: {}",
                      re.error()));
    }
  }

  // A default must pass its own schema (pruned and validated as kube does).
  void Default(const json::object& s, const std::string& path) {
    const json::value* d = s.if_contains("default");
    if (d == nullptr) return;
    StructuralSchema parsed = ParseStructuralSchema(s);
    parsed.default_value.reset();
    json::object holder{{"default", *d}};
    StructuralSchema wrapper;
    wrapper.properties.emplace("default", std::move(parsed));
    for (SchemaViolation v : ValidateCustomResource(wrapper, holder)) {
      v.field = CheckChild(path, v.field);
      out_.push_back(std::move(v));
    }
  }

  // Inside allOf/anyOf/oneOf/not only value validations may appear.
  void Nested(const json::object& s, const std::string& path) {
    for (auto [key, detail] : std::initializer_list<std::pair<std::string_view, std::string_view>>{
             {"type", "must be empty to be structural"},
             {"additionalProperties", "must be undefined to be structural"},
             {"default", "must be undefined to be structural"},
             {"title", "must be empty to be structural"},
             {"description", "must be empty to be structural"},
             {"nullable", "must be false to be structural"},
             {"x-kubernetes-preserve-unknown-fields", "must be false to be structural"},
             {"x-kubernetes-embedded-resource", "must be false to be structural"},
             {"x-kubernetes-int-or-string", "must be false to be structural"},
             {"x-kubernetes-list-map-keys", "must be empty to be structural"},
             {"x-kubernetes-list-type", "must be undefined to be structural"}}) {
      if (s.contains(key)) {
        Add(Type::kForbidden, CheckChild(path, key), std::nullopt, std::string(detail));
      }
    }
    if (const json::value* props = s.if_contains("properties"); props && props->is_object()) {
      for (const auto& [name, field] : props->get_object()) {
        const std::string child = CheckKey(CheckChild(path, "properties"), name);
        if (name == "metadata") {
          Add(Type::kForbidden, child, std::nullopt, "must not be specified in a nested context");
        }
        if (field.is_object()) Nested(field.get_object(), child);
      }
    }
    if (const json::value* items = s.if_contains("items"); items && items->is_object()) {
      Nested(items->get_object(), CheckChild(path, "items"));
    }
  }

  std::vector<SchemaViolation>& out_;
};

}  // namespace

std::vector<SchemaViolation> CheckCrdSchema(const json::value& schema, std::string_view path,
                                            bool status_subresource) {
  std::vector<SchemaViolation> out;
  const std::string root(path);
  if (!schema.is_object()) {
    out.push_back({Type::kRequired, root, std::nullopt, "schemas are required"});
    return out;
  }
  CrdSchemaChecker checker(out);
  if (status_subresource) checker.RootWithStatus(schema.get_object(), root);
  checker.Check(schema.get_object(), Level::kRoot, root);
  return out;
}

}  // namespace muster::apiserver
