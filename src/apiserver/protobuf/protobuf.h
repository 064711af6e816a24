#pragma once

// Kubernetes' protobuf request bodies (application/vnd.kubernetes.protobuf), which kubectl sends
// for the built-in kinds its generators make (`create configmap`, `create priorityclass`, `create
// service`, `create namespace`, `debug --copy-to`, `auth can-i`, drain's Eviction), read into the
// JSON object kube would have made of them, so that the handlers see one encoding.
//
// The bytes are "k8s\0" + runtime.Unknown{typeMeta{apiVersion, kind}, raw, contentEncoding,
// contentType}; raw is the object's message, k8s.io.api.<group>.<version>.<Kind> (the group's
// first label, "core" for ""; DeleteOptions and the other option kinds from meta/v1). It is read
// against Kubernetes' own .proto files (kube_schemas.cmake) with DynamicMessage and turned into
// JSON by reflection as Go's encoding/json writes the Go types: field names as in the .proto
// (they are the Go JSON names), 64-bit integers as numbers, bytes in base64, maps as objects
// (keys sorted), and the types with JSON of their own: meta/v1 Time and MicroTime as RFC 3339
// text, Duration as Go writes a time.Duration, resource.Quantity as its string, IntOrString as a
// number or a string, RawExtension, FieldsV1 and apiextensions' JSON as the JSON they hold (or a
// nested envelope), ExtraValue and Verbs as arrays.
//
// gogo's marshaller writes every non-pointer field, empty or not, where encoding/json leaves out
// the empty ones it tags omitempty. So empty strings and zero Times are left out (Go writes a zero
// Time as null), and so are empty bytes; numbers and bools are kept, zero or not; an empty
// message stays {} (as encoding/json writes an empty struct). Map values and array elements are
// kept whatever they hold.
//
// Limits: the object may nest 32 levels deep, the depth Boost.JSON (and so every JSON body and
// stored object of muster's) allows.
//
// Thread-safety: every function is thread-safe. The schemas are loaded on first use.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "boost/json/object.hpp"

namespace muster::apiserver {

inline constexpr std::string_view kProtobufContentType = "application/vnd.kubernetes.protobuf";

// The object in `body` as JSON, with "kind" and "apiVersion" from the envelope first.
//
// Errors:
//   InvalidArgument  the body is not well-formed: no "k8s\0" magic, bytes that are not protobuf
//                    (a truncated varint or length, a field of the wrong wire type, nesting too
//                    deep), a contentEncoding (kube never compresses request bodies), a value Go
//                    could not write as JSON (an IntOrString of unknown type, a Time past year
//                    9999), RawExtension bytes that are neither JSON nor an envelope. The message
//                    says what and where, for a 400 Bad Request.
//   Unimplemented    a well-formed envelope of a kind these schemas do not hold (apps/v1
//                    Deployment, a custom resource): for a 415, asking for JSON instead.
//   Internal         the embedded schemas did not load (a build defect).
absl::StatusOr<boost::json::object> DecodeProtobufObject(std::string_view body);

}  // namespace muster::apiserver
