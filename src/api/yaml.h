#pragma once

// YAML to JSON conversion with the scalar typing of sigs.k8s.io/yaml, which is what kubectl and
// the Kubernetes API server use: YAML is read as YAML 1.1 (go-yaml v2) and converted to JSON, and
// the typed decoders (json_codec.h) then read the JSON. So a manifest means the same here as it
// does to kubectl: unquoted `true`, `yes`, `on` are booleans (a label value `yes` must be quoted),
// `010` is the octal 8, `1.0` is a float, and anything quoted is a string.
//
// Plain (unquoted, untagged) scalars resolve as go-yaml v2 resolves them:
//   null, Null, NULL, ~ and the empty scalar     -> null
//   y Y yes Yes YES true True TRUE on On ON      -> true   (n/no/false/off likewise -> false)
//   integers in Go base-0 syntax (0x1F, 0o17, 017, 0b101, 1_000, +5) within int64 -> int64,
//     larger positive ones within uint64 -> uint64
//   decimal floats ([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?) -> double
//   .inf/.nan and friends -> an error, as JSON has no such numbers
//   anything else (timestamps included) -> string
// Quoted and block scalars are strings; explicit tags !!str, !!int, !!float, !!bool, !!null are
// honoured (a mismatch such as `!!int abc` is an error); other tags are ignored (scalar -> string).
// Map keys become strings (`1: x` has key "1", `true: x` has key "true"); null and collection keys
// are errors. Merge keys (`<<: *base`) are expanded, explicit keys taking precedence. A repeated
// key keeps its last value.
//
// Errors are absl::InvalidArgumentError whose message starts with the 1-based YAML line,
// "line 12: ...".

#include <cstddef>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "boost/json/value.hpp"
#include "yaml-cpp/node/node.h"

namespace muster::api {

struct YamlLimits {
  // The most JSON values that alias expansion may add to one document: the JSON values made for
  // a map or sequence met again through an alias (or merge key), counted with everything inside
  // them. Without a bound a few lines of nested aliases ("billion laughs") expand exponentially;
  // go-yaml bounds them too. Plain documents, however large, never count against it.
  size_t max_alias_values = size_t{1} << 20;
};

// Converts one parsed YAML node (a whole document or any part of it) to JSON.
absl::StatusOr<boost::json::value> YamlToJson(const YAML::Node& node,
                                              const YamlLimits& limits = {});

// Parses a YAML stream of one or more "---"-separated documents and converts each to JSON, in
// order. Empty and null documents (a stray "---", a file of comments) are skipped, so an empty
// stream gives an empty vector. Thread-safe; never throws.
absl::StatusOr<std::vector<boost::json::value>> ParseYamlDocuments(std::string_view text,
                                                                   const YamlLimits& limits = {});

}  // namespace muster::api
