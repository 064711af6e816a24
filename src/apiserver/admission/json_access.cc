#include "apiserver/admission/json_access.h"

// JSON access for admission (json_access.h).

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "boost/json.hpp"

namespace muster::apiserver::admission {

std::string GoJsonKind(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return "string";
    case json::kind::bool_:
      return "bool";
    case json::kind::array:
      return "array";
    case json::kind::object:
      return "object";
    case json::kind::null:
      return "null";
    default:
      return "number";
  }
}

std::string SchemaJsonKind(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return "string";
    case json::kind::bool_:
      return "boolean";
    case json::kind::array:
      return "array";
    case json::kind::object:
      return "object";
    case json::kind::null:
      return "null";
    case json::kind::double_:
      return "number";
    default:
      return "integer";
  }
}

// Integral numbers, including 2.0; nullopt otherwise.
std::optional<int64_t> AsInt(const json::value& v) {
  if (const int64_t* i = v.if_int64()) return *i;
  if (const uint64_t* u = v.if_uint64()) {
    if (*u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return static_cast<int64_t>(*u);
    }
    return std::nullopt;
  }
  if (const double* d = v.if_double()) {
    if (std::isfinite(*d) && std::floor(*d) == *d && std::fabs(*d) < 9.2e18) {
      return static_cast<int64_t>(*d);
    }
  }
  return std::nullopt;
}

bool IsAbsent(const json::value* v) { return v == nullptr || v->is_null(); }

// Sets `key` to `value` when the member is absent, null or an empty string (Go's zero value).
void DefaultString(json::object& o, std::string_view key, std::string_view value) {
  json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null() || (v->is_string() && v->get_string().empty())) {
    o[key] = json::string(value);
  }
}

void DefaultValue(json::object& o, std::string_view key, json::value value) {
  json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) o[key] = std::move(value);
}

// The member as an object, made one when absent or null; nullptr when it is something else.
json::object* EnsureObject(json::object& o, std::string_view key) {
  json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) {
    o[key] = json::object();
    return &o[key].as_object();
  }
  return v->if_object();
}

const json::object* FindObject(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v == nullptr ? nullptr : v->if_object();
}

std::string StringAt(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) return "";
  return std::string(View(v->get_string()));
}

// Go's semantic equality approximated on JSON: absent, null and zero values are the same.
json::value Normalize(const json::value& v) {
  if (const json::object* o = v.if_object()) {
    json::object out;
    for (const auto& [key, member] : *o) {
      json::value n = Normalize(member);
      bool zero = n.is_null() || (n.is_string() && n.get_string().empty()) ||
                  (n.is_bool() && !n.get_bool()) || (n.is_array() && n.get_array().empty()) ||
                  (n.is_object() && n.get_object().empty()) ||
                  (AsInt(n).has_value() && *AsInt(n) == 0);
      if (!zero) out[key] = std::move(n);
    }
    return out;
  }
  if (const json::array* a = v.if_array()) {
    json::array out;
    for (const json::value& e : *a) out.push_back(Normalize(e));
    return out;
  }
  return v;
}

bool SemanticEqual(const json::value& a, const json::value& b) {
  return Normalize(a) == Normalize(b);
}

}  // namespace muster::apiserver::admission
