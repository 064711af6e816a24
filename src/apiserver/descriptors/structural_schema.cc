// Reading a structural schema, pruning and defaulting (structural_schema.h), after
// apiextensions-apiserver pkg/apiserver/schema (NewStructural, pruning/algorithm.go,
// defaulting/algorithm.go). Validation is schema_validation.cc, the CRD-side checks
// crd_schema_check.cc.

#include "apiserver/descriptors/structural_schema.h"

#include <charconv>
#include <cmath>
#include <string>
#include <utility>

#include "boost/json/serialize.hpp"
#include "fmt/format.h"
#include "re2/re2.h"

namespace muster::apiserver {
namespace {

namespace json = boost::json;

std::optional<double> SchemaNumberAt(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return static_cast<double>(v->get_int64());
  if (v->is_uint64()) return static_cast<double>(v->get_uint64());
  if (v->is_double()) return v->get_double();
  return std::nullopt;
}

std::optional<int64_t> SchemaCountAt(const json::object& o, std::string_view key) {
  std::optional<double> n = SchemaNumberAt(o, key);
  if (!n || *n < 0) return std::nullopt;
  return static_cast<int64_t>(*n);
}

bool SchemaFlag(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_bool() && v->get_bool();
}

std::shared_ptr<const StructuralSchema> ParseSubschema(const json::value* v) {
  if (v == nullptr || !v->is_object()) return nullptr;
  return std::make_shared<const StructuralSchema>(ParseStructuralSchema(v->get_object()));
}

std::vector<StructuralSchema> ParseSubschemas(const json::object& o, std::string_view key) {
  std::vector<StructuralSchema> out;
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_array()) return out;
  for (const json::value& item : v->get_array()) {
    if (item.is_object()) out.push_back(ParseStructuralSchema(item.get_object()));
  }
  return out;
}

std::string PruneChildPath(const std::string& parent, std::string_view name) {
  return parent.empty() ? std::string(name) : fmt::format("{}.{}", parent, name);
}

void PruneValue(const StructuralSchema& s, json::value& v, bool root, const std::string& path,
                std::vector<std::string>& pruned);

void PruneObject(const StructuralSchema& s, json::object& o, bool root, const std::string& path,
                 std::vector<std::string>& pruned) {
  const bool keep_meta = root || s.embedded_resource;
  for (auto it = o.begin(); it != o.end();) {
    const std::string_view key = it->key();
    const std::string child = PruneChildPath(path, key);
    if (keep_meta && (key == "apiVersion" || key == "kind" || key == "metadata")) {
      ++it;
      continue;
    }
    if (auto p = s.properties.find(key); p != s.properties.end()) {
      PruneValue(p->second, it->value(), false, child, pruned);
      ++it;
    } else if (s.additional_properties != nullptr) {
      PruneValue(*s.additional_properties, it->value(), false, child, pruned);
      ++it;
    } else if (s.preserve_unknown_fields || s.additional_properties_any) {
      ++it;
    } else {
      pruned.push_back(child);
      it = o.erase(it);
    }
  }
}

void PruneValue(const StructuralSchema& s, json::value& v, bool root, const std::string& path,
                std::vector<std::string>& pruned) {
  if (v.is_object()) {
    PruneObject(s, v.get_object(), root, path, pruned);
  } else if (v.is_array() && s.items != nullptr) {
    json::array& a = v.get_array();
    for (size_t i = 0; i < a.size(); ++i) {
      PruneValue(*s.items, a[i], false, fmt::format("{}[{}]", path, i), pruned);
    }
  }
}

void DefaultValue(const StructuralSchema& s, json::value& v);

void DefaultObject(const StructuralSchema& s, json::object& o) {
  for (const auto& [name, prop] : s.properties) {
    if (!prop.default_value) continue;
    json::value* present = o.if_contains(name);
    if (present == nullptr || (present->is_null() && !prop.nullable)) o[name] = *prop.default_value;
  }
  for (auto& [key, child] : o) {
    if (auto p = s.properties.find(key); p != s.properties.end()) {
      DefaultValue(p->second, child);
    } else if (s.additional_properties != nullptr) {
      DefaultValue(*s.additional_properties, child);
    }
  }
}

void DefaultValue(const StructuralSchema& s, json::value& v) {
  if (v.is_object()) {
    DefaultObject(s, v.get_object());
  } else if (v.is_array() && s.items != nullptr) {
    for (json::value& item : v.get_array()) DefaultValue(*s.items, item);
  }
}

}  // namespace

// Go's %v of a float64 (strconv.FormatFloat(f, 'g', -1, 64)): the shortest digits, with an
// exponent below 1e-4 and from 1e+06 up.
std::string GoFloat(double f) {
  if (std::isnan(f)) return "NaN";
  if (std::isinf(f)) return f > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
  if (ec != std::errc()) return fmt::format("{}", f);
  std::string sci(buf, end);  // "1.5e+06", "1e-05"
  const size_t e = sci.find('e');
  const int exponent = std::stoi(sci.substr(e + 1));
  if (exponent < -4 || exponent >= 6) {
    // Go writes at least two exponent digits: 1e+06, 1.5e-05.
    std::string mantissa = sci.substr(0, e);
    return fmt::format("{}e{}{:02d}", mantissa, exponent < 0 ? '-' : '+', std::abs(exponent));
  }
  auto [fend, fec] = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::fixed);
  return std::string(buf, fend);
}

StructuralSchema ParseStructuralSchema(const json::object& o) {
  StructuralSchema s;
  if (const json::value* t = o.if_contains("type"); t != nullptr && t->is_string()) {
    s.type = t->get_string();
  }
  s.nullable = SchemaFlag(o, "nullable");
  s.preserve_unknown_fields = SchemaFlag(o, "x-kubernetes-preserve-unknown-fields");
  s.int_or_string = SchemaFlag(o, "x-kubernetes-int-or-string");
  s.embedded_resource = SchemaFlag(o, "x-kubernetes-embedded-resource");
  if (const json::value* p = o.if_contains("properties"); p != nullptr && p->is_object()) {
    for (const auto& [name, field] : p->get_object()) {
      if (field.is_object()) s.properties.emplace(name, ParseStructuralSchema(field.get_object()));
    }
  }
  s.items = ParseSubschema(o.if_contains("items"));
  if (const json::value* a = o.if_contains("additionalProperties")) {
    if (a->is_object()) {
      s.additional_properties = ParseSubschema(a);
    } else if (a->is_bool()) {
      s.additional_properties_any = a->get_bool();
    }
  }
  if (const json::value* d = o.if_contains("default")) s.default_value = *d;
  if (const json::value* r = o.if_contains("required"); r != nullptr && r->is_array()) {
    for (const json::value& name : r->get_array()) {
      if (name.is_string()) s.required.emplace_back(name.get_string());
    }
  }
  if (const json::value* e = o.if_contains("enum"); e != nullptr && e->is_array()) {
    s.enum_values = e->get_array();
  }
  s.minimum = SchemaNumberAt(o, "minimum");
  s.maximum = SchemaNumberAt(o, "maximum");
  s.exclusive_minimum = SchemaFlag(o, "exclusiveMinimum");
  s.exclusive_maximum = SchemaFlag(o, "exclusiveMaximum");
  s.multiple_of = SchemaNumberAt(o, "multipleOf");
  s.min_length = SchemaCountAt(o, "minLength");
  s.max_length = SchemaCountAt(o, "maxLength");
  s.min_items = SchemaCountAt(o, "minItems");
  s.max_items = SchemaCountAt(o, "maxItems");
  s.min_properties = SchemaCountAt(o, "minProperties");
  s.max_properties = SchemaCountAt(o, "maxProperties");
  if (const json::value* p = o.if_contains("pattern"); p != nullptr && p->is_string()) {
    s.pattern = p->get_string();
    RE2::Options options;
    options.set_log_errors(false);
    auto re = std::make_shared<const re2::RE2>(s.pattern, options);
    if (re->ok()) s.compiled_pattern = std::move(re);
  }
  s.all_of = ParseSubschemas(o, "allOf");
  s.any_of = ParseSubschemas(o, "anyOf");
  s.one_of = ParseSubschemas(o, "oneOf");
  s.not_schema = ParseSubschema(o.if_contains("not"));
  return s;
}

std::vector<std::string> PruneUnknownFields(const StructuralSchema& schema, json::object& obj) {
  std::vector<std::string> pruned;
  PruneObject(schema, obj, /*root=*/true, "", pruned);
  return pruned;
}

void ApplyDefaults(const StructuralSchema& schema, json::object& obj) {
  DefaultObject(schema, obj);
}

std::string GoValue(const json::value& v) {
  if (v.is_string()) return boost::json::serialize(v);
  if (v.is_int64()) return std::to_string(v.get_int64());
  if (v.is_uint64()) return std::to_string(v.get_uint64());
  if (v.is_double()) return GoFloat(v.get_double());
  if (v.is_bool()) return v.get_bool() ? "true" : "false";
  if (v.is_null()) return "null";
  return boost::json::serialize(v);
}

}  // namespace muster::apiserver
