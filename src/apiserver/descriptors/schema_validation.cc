// Validation of a custom resource against its version's structural schema
// (structural_schema.h), with the messages kube-openapi's validator gives and apiextensions turns
// into field errors (pkg/apiserver/validation: ValidateCustomResource): a wrong type is
// `Invalid value: "<found type>": <path> in body must be of type <type>: "<found type>"`, a bound
// `<path> in body should be greater than or equal to 0`, an enum `Unsupported value`.

#include <cmath>
#include <string>
#include <utility>

#include "apiserver/descriptors/structural_schema.h"
#include "fmt/format.h"
#include "re2/re2.h"

namespace muster::apiserver {
namespace {

namespace json = boost::json;

using Type = SchemaViolation::Type;

// The JSON type of a value as the validator names it.
std::string_view TypeOfValue(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null:
      return "null";
    case json::kind::bool_:
      return "boolean";
    case json::kind::int64:
    case json::kind::uint64:
      return "integer";
    case json::kind::double_:
      return "number";
    case json::kind::string:
      return "string";
    case json::kind::array:
      return "array";
    case json::kind::object:
      return "object";
  }
  return "object";
}

bool IsIntegral(const json::value& v) {
  if (v.is_int64() || v.is_uint64()) return true;
  return v.is_double() && std::isfinite(v.get_double()) &&
         std::floor(v.get_double()) == v.get_double();
}

std::optional<double> AsNumber(const json::value& v) {
  if (v.is_int64()) return static_cast<double>(v.get_int64());
  if (v.is_uint64()) return static_cast<double>(v.get_uint64());
  if (v.is_double()) return v.get_double();
  return std::nullopt;
}

bool TypeMatches(std::string_view type, const json::value& v) {
  if (type == "integer") return IsIntegral(v);
  if (type == "number") return v.is_number();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_bool();
  if (type == "array") return v.is_array();
  if (type == "object") return v.is_object();
  return true;
}

// The number of UTF-8 characters (Go's utf8.RuneCountInString).
int64_t RuneCount(std::string_view s) {
  int64_t n = 0;
  for (char c : s) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

std::string FieldIndex(const std::string& path, size_t i) { return fmt::format("{}[{}]", path, i); }

std::string FieldChild(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : fmt::format("{}.{}", path, name);
}

class SchemaValidator {
 public:
  explicit SchemaValidator(std::vector<SchemaViolation>& out) : out_(out) {}

  void Validate(const StructuralSchema& s, const json::value& v, const std::string& path,
                bool root) {
    if (v.is_null()) {
      if (s.nullable || s.type.empty()) return;
      TypeError(path, s.type, v);
      return;
    }
    if (s.int_or_string) {
      if (!IsIntegral(v) && !v.is_string()) {
        TypeError(path, "integer,string", v);
        return;
      }
    } else if (!s.type.empty() && !TypeMatches(s.type, v)) {
      TypeError(path, s.type, v);
      return;
    }
    ValueChecks(s, v, path);
    if (v.is_object()) {
      Fields(s, v.get_object(), path, root);
    } else if (v.is_array() && s.items != nullptr) {
      const json::array& a = v.get_array();
      for (size_t i = 0; i < a.size(); ++i) Validate(*s.items, a[i], FieldIndex(path, i), false);
    }
  }

  // An object's required fields and fields; at the root apiVersion, kind and metadata are the
  // API server's.
  void Fields(const StructuralSchema& s, const json::object& o, const std::string& path,
              bool root) {
    for (const std::string& name : s.required) {
      if (!o.contains(name)) Add(Type::kRequired, FieldChild(path, name), std::nullopt, "");
    }
    for (const auto& [name, prop] : s.properties) {
      if (root && (name == "metadata" || name == "apiVersion" || name == "kind")) continue;
      if (const json::value* child = o.if_contains(name)) {
        Validate(prop, *child, FieldChild(path, name), false);
      }
    }
    if (s.additional_properties != nullptr) {
      for (const auto& [key, child] : o) {
        if (s.properties.contains(key)) continue;
        Validate(*s.additional_properties, child, FieldChild(path, key), false);
      }
    }
  }

 private:
  void Add(Type type, std::string field, std::optional<std::string> value, std::string detail) {
    out_.push_back({type, std::move(field), std::move(value), std::move(detail)});
  }

  void TypeError(const std::string& path, std::string_view want, const json::value& v) {
    const std::string found = fmt::format("\"{}\"", TypeOfValue(v));
    Add(Type::kInvalid, path, found,
        fmt::format("{} in body must be of type {}: {}", path, want, found));
  }

  // The constraints that do not walk into children: enum, bounds, lengths, pattern, the
  // nested allOf/anyOf/oneOf/not.
  void ValueChecks(const StructuralSchema& s, const json::value& v, const std::string& path) {
    if (s.enum_values && !s.enum_values->empty()) {
      bool found = false;
      for (const json::value& e : *s.enum_values) {
        if (e == v || (AsNumber(e) && AsNumber(v) && *AsNumber(e) == *AsNumber(v))) found = true;
      }
      if (!found) {
        std::string supported = "supported values: ";
        for (size_t i = 0; i < s.enum_values->size(); ++i) {
          if (i > 0) supported += ", ";
          supported += GoValue((*s.enum_values)[i]);
        }
        Add(Type::kNotSupported, path, GoValue(v), std::move(supported));
      }
    }
    if (std::optional<double> n = AsNumber(v)) {
      if (s.minimum && (s.exclusive_minimum ? *n <= *s.minimum : *n < *s.minimum)) {
        Add(Type::kInvalid, path, GoValue(v),
            fmt::format("{} in body should be greater than {}{}", path,
                        s.exclusive_minimum ? "" : "or equal to ", GoFloat(*s.minimum)));
      }
      if (s.maximum && (s.exclusive_maximum ? *n >= *s.maximum : *n > *s.maximum)) {
        Add(Type::kInvalid, path, GoValue(v),
            fmt::format("{} in body should be less than {}{}", path,
                        s.exclusive_maximum ? "" : "or equal to ", GoFloat(*s.maximum)));
      }
      if (s.multiple_of && *s.multiple_of > 0) {
        const double q = *n / *s.multiple_of;
        if (std::fabs(q - std::round(q)) > 1e-9) {
          Add(Type::kInvalid, path, GoValue(v),
              fmt::format("{} in body should be a multiple of {}", path, GoFloat(*s.multiple_of)));
        }
      }
    }
    if (v.is_string()) {
      const std::string_view text = v.get_string();
      const int64_t length = RuneCount(text);
      if (s.max_length && length > *s.max_length) {
        Add(Type::kTooLong, path, std::nullopt,
            fmt::format("may not be more than {} bytes", *s.max_length));
      }
      if (s.min_length && length < *s.min_length) {
        Add(Type::kInvalid, path, GoValue(v),
            fmt::format("{} in body should be at least {} chars long", path, *s.min_length));
      }
      if (s.compiled_pattern != nullptr &&
          !re2::RE2::PartialMatch(re2::StringPiece(text.data(), text.size()),
                                  *s.compiled_pattern)) {
        Add(Type::kInvalid, path, GoValue(v),
            fmt::format("{} in body should match '{}'", path, s.pattern));
      }
    }
    if (v.is_array()) {
      const auto count = static_cast<int64_t>(v.get_array().size());
      if (s.max_items && count > *s.max_items) {
        Add(Type::kTooMany, path, std::to_string(count),
            fmt::format("must have at most {} items", *s.max_items));
      }
      if (s.min_items && count < *s.min_items) {
        Add(Type::kInvalid, path, std::to_string(count),
            fmt::format("{} in body should have at least {} items", path, *s.min_items));
      }
    }
    if (v.is_object()) {
      const auto count = static_cast<int64_t>(v.get_object().size());
      if (s.max_properties && count > *s.max_properties) {
        Add(Type::kTooMany, path, std::to_string(count),
            fmt::format("must have at most {} items", *s.max_properties));
      }
      if (s.min_properties && count < *s.min_properties) {
        Add(Type::kInvalid, path, std::to_string(count),
            fmt::format("{} in body should have at least {} properties", path,
                        *s.min_properties));
      }
    }
    for (const StructuralSchema& part : s.all_of) Validate(part, v, path, false);
    if (!s.any_of.empty() && !s.int_or_string) {
      bool any = false;
      for (const StructuralSchema& part : s.any_of) any = any || Passes(part, v, path);
      if (!any) {
        Add(Type::kInvalid, path, GoValue(v),
            fmt::format("{} in body must validate at least one schema (anyOf)", path));
      }
    }
    if (!s.one_of.empty()) {
      int passing = 0;
      for (const StructuralSchema& part : s.one_of) passing += Passes(part, v, path) ? 1 : 0;
      if (passing != 1) {
        Add(Type::kInvalid, path, GoValue(v),
            fmt::format("{} in body must validate one and only one schema (oneOf)", path));
      }
    }
    if (s.not_schema != nullptr && Passes(*s.not_schema, v, path)) {
      Add(Type::kInvalid, path, GoValue(v),
          fmt::format("{} in body must not validate the schema (not)", path));
    }
  }

  static bool Passes(const StructuralSchema& s, const json::value& v, const std::string& path) {
    std::vector<SchemaViolation> found;
    SchemaValidator(found).Validate(s, v, path, false);
    return found.empty();
  }

  std::vector<SchemaViolation>& out_;
};

}  // namespace

std::vector<SchemaViolation> ValidateCustomResource(const StructuralSchema& schema,
                                                    const json::object& obj) {
  std::vector<SchemaViolation> out;
  SchemaValidator(out).Fields(schema, obj, "", /*root=*/true);
  return out;
}

}  // namespace muster::apiserver
