#pragma once

// Objects as admission reads them: JSON, not the typed model, so that fields muster does not
// model survive admission untouched. Reader notes the type mistakes the upstream decoder would
// refuse (encoding/json's UnmarshalTypeError for built-in kinds, apiextensions-apiserver's
// structural schema for Volcano's CRDs, resource.ErrFormatWrong for quantities); the rest are
// Go's zero-value defaulting and apimachinery's semantic equality approximated on JSON.

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "api/json_access.h"
#include "boost/json.hpp"
#include "common/quantity.h"
#include "fmt/format.h"

namespace muster::apiserver::admission {

namespace json = boost::json;

// resource.ErrFormatWrong, the decoder's refusal of an unparsable quantity.
inline constexpr char kQuantityFormatError[] =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

// What a typed decoder (built-in kinds) or a CRD schema (Volcano kinds) would refuse.
struct TypeProblem {
  std::string path;
  std::string go_got;       // encoding/json's name of the JSON type: string, number, bool, ...
  std::string schema_got;   // OpenAPI's: string, integer, number, boolean, array, object
  std::string go_want;      // "int32", "[]v1.Container", ...
  std::string schema_want;  // "integer", "array", ...
  bool quantity = false;    // an unparsable quantity; go_got holds the text
};

// encoding/json's name of the JSON type of `v`.
std::string GoJsonKind(const json::value& v);
// OpenAPI's name of the JSON type of `v`.
std::string SchemaJsonKind(const json::value& v);

using api::View;

// Integral numbers, including 2.0; nullopt otherwise.
std::optional<int64_t> AsInt(const json::value& v);

bool IsAbsent(const json::value* v);

// Readers that note type problems and report absent (or null) members as nullopt/nullptr.
class Reader {
 public:
  explicit Reader(std::vector<TypeProblem>& problems) : problems_(problems) {}

  std::optional<std::string> Str(const json::object& o, std::string_view key,
                                 const std::string& path) {
    const json::value* v = o.if_contains(key);
    if (IsAbsent(v)) return std::nullopt;
    if (const json::string* s = v->if_string()) return std::string(View(*s));
    Problem(path, *v, "string", "string");
    return std::nullopt;
  }
  // "" when absent or of the wrong type.
  std::string StrOr(const json::object& o, std::string_view key, const std::string& path) {
    return Str(o, key, path).value_or("");
  }
  // An integer of Go type `go_type`, "int32" or "int64": a number that is no integer, or one
  // beyond the type's range (99999999999999999999999, which boost::json keeps as a double), is
  // a problem, never a zero.
  std::optional<int64_t> Int(const json::object& o, std::string_view key, const std::string& path,
                             std::string_view go_type = "int32") {
    const json::value* v = o.if_contains(key);
    if (IsAbsent(v)) return std::nullopt;
    std::optional<int64_t> i = AsInt(*v);
    if (i && (go_type != "int32" || (*i >= std::numeric_limits<int32_t>::min() &&
                                     *i <= std::numeric_limits<int32_t>::max()))) {
      return i;
    }
    Problem(path, *v, std::string(go_type), "integer");
    if (v->is_number()) {
      // encoding/json names a number it cannot store with its text: "json: cannot unmarshal
      // number 3000000000 into Go struct field ... of type int32" (literalStore).
      TypeProblem& p = problems_.back();
      const std::string text = v->is_double()   ? fmt::format("{}", v->get_double())
                               : v->is_uint64() ? std::to_string(v->get_uint64())
                                                : std::to_string(v->get_int64());
      p.go_got = "number " + text;
      if (v->is_double() && std::trunc(v->get_double()) != v->get_double()) return std::nullopt;
      // An integer out of range: unverified: go-openapi's IsValueValidAgainstRange words it
      // `<path> in body must be of type int32: "<value>"`.
      p.schema_got = text;
      p.schema_want = std::string(go_type);
    }
    return std::nullopt;
  }
  std::optional<bool> Bool(const json::object& o, std::string_view key, const std::string& path) {
    const json::value* v = o.if_contains(key);
    if (IsAbsent(v)) return std::nullopt;
    if (const bool* b = v->if_bool()) return *b;
    Problem(path, *v, "bool", "boolean");
    return std::nullopt;
  }
  json::object* Obj(json::object& o, std::string_view key, const std::string& path,
                    std::string_view go_type) {
    json::value* v = o.if_contains(key);
    if (IsAbsent(v)) return nullptr;
    if (json::object* obj = v->if_object()) return obj;
    Problem(path, *v, std::string(go_type), "object");
    return nullptr;
  }
  json::array* Arr(json::object& o, std::string_view key, const std::string& path,
                   std::string_view go_type) {
    json::value* v = o.if_contains(key);
    if (IsAbsent(v)) return nullptr;
    if (json::array* arr = v->if_array()) return arr;
    Problem(path, *v, std::string(go_type), "array");
    return nullptr;
  }
  // A quantity given as a string or a number.
  std::optional<common::Quantity> Quantity(const json::value& v, const std::string& path) {
    std::string text;
    if (const json::string* s = v.if_string()) {
      text = std::string(View(*s));
    } else if (std::optional<int64_t> i = AsInt(v)) {
      text = std::to_string(*i);
    } else if (const double* d = v.if_double()) {
      text = fmt::format("{}", *d);
    } else {
      Problem(path, v, "resource.Quantity", "string");
      return std::nullopt;
    }
    absl::StatusOr<common::Quantity> q = common::Quantity::Parse(text);
    if (!q.ok()) {
      TypeProblem p;
      p.path = path;
      p.go_got = text;
      p.quantity = true;
      problems_.push_back(std::move(p));
      return std::nullopt;
    }
    return *q;
  }
  void Problem(const std::string& path, const json::value& got, std::string go_want,
               std::string schema_want) {
    problems_.push_back(
        {path, GoJsonKind(got), SchemaJsonKind(got), std::move(go_want), std::move(schema_want)});
  }

 private:
  std::vector<TypeProblem>& problems_;
};

// Sets `key` to `value` when the member is absent, null or an empty string (Go's zero value).
void DefaultString(json::object& o, std::string_view key, std::string_view value);

// Sets `key` to `value` when the member is absent or null.
void DefaultValue(json::object& o, std::string_view key, json::value value);

// The member as an object, made one when absent or null; nullptr when it is something else.
json::object* EnsureObject(json::object& o, std::string_view key);

// The member as an object; nullptr when absent or not an object.
const json::object* FindObject(const json::object& o, std::string_view key);

// The member as a string; "" when absent or not a string.
std::string StringAt(const json::object& o, std::string_view key);

// Go's semantic equality approximated on JSON: absent, null and zero values are the same.
json::value Normalize(const json::value& v);

bool SemanticEqual(const json::value& a, const json::value& b);

}  // namespace muster::apiserver::admission
