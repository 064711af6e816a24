// fieldValidation: finds the fields of an object that its schema does not know.
//
// The schema is the resource's OpenAPI v3 document (openapi.h), the same one `kubectl explain`
// reads, rather than the known-field tables of json_codec: the codecs decode only what the
// scheduler needs (and ignore the rest by design), while the OpenAPI catalogue describes whole
// objects. Parts the catalogue does not describe (objects without `properties`, or marked
// x-kubernetes-preserve-unknown-fields) accept anything, so a gap in the catalogue never
// refuses a valid object.

#include <map>
#include <mutex>
#include <string>

#include "apiserver/descriptors/custom_resource.h"
#include "apiserver/descriptors/openapi.h"
#include "apiserver/handlers.h"
#include "fmt/format.h"

namespace muster::apiserver {

namespace json = boost::json;

namespace {

constexpr std::string_view kRefPrefix = "#/components/schemas/";
constexpr int kMaxDepth = 64;

// Documents never change for the life of the process; parse each once.
const json::value& DocumentFor(std::string_view group, std::string_view version) {
  static std::mutex mu;
  static std::map<std::string, json::value, std::less<>> cache;
  std::string key = fmt::format("{}/{}", group, version);
  std::lock_guard lock(mu);
  auto it = cache.find(key);
  if (it == cache.end()) {
    it = cache.emplace(key, BuildOpenApiDocument(group, version)).first;
  }
  return it->second;
}

class Walker {
 public:
  Walker(const json::object* schemas, std::vector<std::string>& unknown)
      : schemas_(schemas), unknown_(unknown) {}

  void Walk(const json::value* schema, const json::value& value, const std::string& path,
            int depth) {
    schema = Resolve(schema, 0);
    if (schema == nullptr || !schema->is_object() || depth > kMaxDepth) return;
    const json::object& s = schema->get_object();
    if (const json::value* p = s.if_contains("x-kubernetes-preserve-unknown-fields");
        p != nullptr && p->is_bool() && p->get_bool()) {
      return;
    }
    if (value.is_object()) {
      const json::value* props = s.if_contains("properties");
      const json::value* extra = s.if_contains("additionalProperties");
      const bool has_props = props != nullptr && props->is_object();
      const bool extra_schema = extra != nullptr && extra->is_object();
      if (!has_props && !extra_schema) return;  // free-form
      for (const auto& [k, v] : value.get_object()) {
        std::string child = path.empty() ? std::string(k) : fmt::format("{}.{}", path, k);
        const json::value* field = has_props ? props->get_object().if_contains(k) : nullptr;
        if (field != nullptr) {
          Walk(field, v, child, depth + 1);
        } else if (extra_schema) {
          Walk(extra, v, child, depth + 1);
        } else if (extra == nullptr || !(extra->is_bool() && extra->get_bool())) {
          unknown_.push_back(std::move(child));
        }
      }
    } else if (value.is_array()) {
      const json::value* items = s.if_contains("items");
      if (items == nullptr) return;
      const json::array& a = value.get_array();
      for (size_t i = 0; i < a.size(); ++i) {
        Walk(items, a[i], fmt::format("{}[{}]", path, i), depth + 1);
      }
    }
  }

 private:
  // Follows $ref and single-element allOf wrappers to the schema that has the content.
  const json::value* Resolve(const json::value* schema, int hops) const {
    while (schema != nullptr && schema->is_object() && hops++ < 32) {
      const json::object& s = schema->get_object();
      if (const json::value* ref = s.if_contains("$ref"); ref != nullptr && ref->is_string()) {
        std::string_view r = ref->get_string();
        if (r.substr(0, kRefPrefix.size()) != kRefPrefix || schemas_ == nullptr) return nullptr;
        schema = schemas_->if_contains(r.substr(kRefPrefix.size()));
        continue;
      }
      if (const json::value* all = s.if_contains("allOf"); all != nullptr && all->is_array() &&
                                                           !all->get_array().empty() &&
                                                           !s.contains("properties")) {
        schema = &all->get_array()[0];
        continue;
      }
      return schema;
    }
    return nullptr;
  }

  const json::object* schemas_;
  std::vector<std::string>& unknown_;
};

}  // namespace

std::vector<std::string> UnknownFields(const ResourceInfo& resource, const json::object& obj) {
  // A custom resource's unknown fields are those its schema's pruning drops.
  if (resource.custom != nullptr) {
    json::object copy = obj;
    return PruneUnknownFields(*resource.custom->schema, copy);
  }
  std::vector<std::string> unknown;
  const json::value& doc = DocumentFor(resource.group, resource.version);
  if (!doc.is_object()) return unknown;
  const json::value* components = doc.get_object().if_contains("components");
  if (components == nullptr || !components->is_object()) return unknown;
  const json::value* schemas = components->get_object().if_contains("schemas");
  if (schemas == nullptr || !schemas->is_object()) return unknown;
  const json::value* root = schemas->get_object().if_contains(SchemaName(resource));
  if (root == nullptr) return unknown;
  Walker(&schemas->get_object(), unknown).Walk(root, obj, "", 0);
  return unknown;
}

}  // namespace muster::apiserver
