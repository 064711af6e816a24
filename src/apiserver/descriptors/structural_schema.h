#pragma once

// Structural schemas of CustomResourceDefinitions (apiextensions.k8s.io/v1
// `openAPIV3Schema`), after k8s.io/apiextensions-apiserver pkg/apiserver/schema: the checks a
// CRD's schema must pass (CheckCrdSchema, as validation.go and schema/validation.go make them),
// and what the API server does with a custom resource through its version's schema: pruning of
// unknown fields (schema/pruning), defaulting (schema/defaulting) and validation with
// kube-openapi's messages (`spec.replicas: Invalid value: "string": spec.replicas in body must
// be of type integer: "string"`).
//
// Not done: CEL rules (x-kubernetes-validations are accepted and not evaluated), `format`
// checks (date-time, int32, ...), list-type uniqueness (x-kubernetes-list-type), defaults applied
// on read. Patterns are RE2, as Go's regexp.
//
// Everything here is pure; a parsed StructuralSchema is immutable and may be shared by threads.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/value.hpp"

namespace re2 {
class RE2;
}

namespace muster::apiserver {

// One field error, as k8s.io/apimachinery's field.Error: the admission layer renders it
// (admission/field_errors.h).
struct SchemaViolation {
  enum class Type { kRequired, kInvalid, kNotSupported, kForbidden, kTooLong, kTooMany };
  Type type = Type::kInvalid;
  std::string field;                 // "spec.replicas", "spec.versions[0].schema..."
  std::optional<std::string> value;  // already rendered as Go prints it
  std::string detail;
};

// A node of a structural schema. Nested value validations (allOf, anyOf, oneOf, not) are nodes
// too, that carry only value constraints.
struct StructuralSchema {
  std::string type;  // "", "object", "array", "string", "integer", "number", "boolean"
  bool nullable = false;
  bool preserve_unknown_fields = false;
  bool int_or_string = false;
  bool embedded_resource = false;
  std::map<std::string, StructuralSchema, std::less<>> properties;
  std::shared_ptr<const StructuralSchema> items;
  // additionalProperties: a schema for every value, or `true` (anything); absent when neither.
  std::shared_ptr<const StructuralSchema> additional_properties;
  bool additional_properties_any = false;
  std::optional<boost::json::value> default_value;

  // Value validation.
  std::vector<std::string> required;
  std::optional<boost::json::array> enum_values;
  std::optional<double> minimum;
  std::optional<double> maximum;
  bool exclusive_minimum = false;
  bool exclusive_maximum = false;
  std::optional<double> multiple_of;
  std::optional<int64_t> min_length, max_length;
  std::optional<int64_t> min_items, max_items;
  std::optional<int64_t> min_properties, max_properties;
  std::string pattern;
  std::shared_ptr<const re2::RE2> compiled_pattern;  // null when `pattern` is empty or invalid
  std::vector<StructuralSchema> all_of, any_of, one_of;
  std::shared_ptr<const StructuralSchema> not_schema;
};

// Reads an `openAPIV3Schema` object (CheckCrdSchema found nothing wrong with it; anything it
// cannot read is left unconstrained).
StructuralSchema ParseStructuralSchema(const boost::json::object& schema);

// The checks of one version's schema at `path` ("spec.versions[0].schema.openAPIV3Schema"):
// structural (types everywhere, object at the root, items for arrays, properties and
// additionalProperties apart, metadata only name and generateName, nothing structural inside
// allOf/anyOf/oneOf/not), what apiextensions does not support ($ref, uniqueItems, definitions,
// ...), valid patterns, defaults that pass their own schema. `status_subresource` restricts the
// root to what may sit beside a status schema.
std::vector<SchemaViolation> CheckCrdSchema(const boost::json::value& schema, std::string_view path,
                                            bool status_subresource);

// Drops from `obj` (a whole custom resource) the fields its schema does not know, as kube's
// pruning does: apiVersion, kind and metadata stay at the root and in embedded resources, and
// nothing under x-kubernetes-preserve-unknown-fields goes. Returns the dropped fields' paths
// ("spec.foo", "spec.items[0].bar"), for fieldValidation.
std::vector<std::string> PruneUnknownFields(const StructuralSchema& schema,
                                            boost::json::object& obj);

// Fills in the schema's defaults where a field of `obj` (a whole custom resource) is missing (or
// null and not nullable), outside in, as kube's structural defaulting does.
void ApplyDefaults(const StructuralSchema& schema, boost::json::object& obj);

// Validates a whole custom resource against its schema (the root's apiVersion, kind and metadata
// are the API server's to check). Violations in the order found, properties by name.
std::vector<SchemaViolation> ValidateCustomResource(const StructuralSchema& schema,
                                                    const boost::json::object& obj);

// Go's %v of a JSON number or string as field errors print it: 5, 1.5, 1e+06, "text".
std::string GoValue(const boost::json::value& value);
// Go's %v of a float64: 1, 1.5, 1e+06, 1e-05.
std::string GoFloat(double f);

}  // namespace muster::apiserver
