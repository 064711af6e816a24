#pragma once

// The patch engines behind PATCH requests, one per Content-Type (k8s.io/apiserver
// pkg/endpoints/handlers/patch.go dispatches on the same four):
//
//   merge-patch+json            ApplyMergePatch           RFC 7386
//   json-patch+json             ApplyJsonPatch            RFC 6902 (RFC 6901 pointers)
//   strategic-merge-patch+json  ApplyStrategicMergePatch  Kubernetes strategic merge
//   apply-patch+yaml            ApplyServerSideApply      the merge step of server-side apply
//                                                         (ownership: api/managed_fields.h)
//
// (each application/...).
//
// Rationale. kubectl computes its patches client-side from the Go types compiled into it, and the
// real API server applies them with apimachinery's strategicpatch package. So the rules below copy
// that package (mergeMap / mergeSlice / normalizeElementOrder), with the patch metadata
// (patchStrategy, patchMergeKey) of k8s.io/api/core/v1 kept in one table in patch.cc, keyed by
// kind and field path. A field absent from the table is an atomic list: the patch replaces it.
//
// Deliberate differences from apimachinery, all in the direction of leniency or tidiness:
//   - `$patch: delete` inside a map removes that map from its parent (upstream leaves `{}`);
//     at the top level the result is `{}`, as upstream.
//   - `$patch: merge` is accepted (and ignored) in maps and list elements; upstream rejects it.
//   - `$setElementOrder/<f>` is applied but never rejected for disagreeing with the patch list,
//     and is ignored for fields that are not merge lists.
//   - Values copied from a patch never carry directives or nulls (upstream may store them).
//   - Live list elements without the merge key are kept and never matched (upstream errors).
//
// Server-side apply here is the merge step of an apply: the applied configuration's fields win,
// maps merge recursively, lists with a merge key in the table merge element-wise by key (set-like
// primitive lists take the union), other lists are replaced, and null removes a field. Field
// ownership (who set what, conflicts, removing what a manager stopped applying) is
// api/managed_fields.h's, on top of it.
//
// Errors are absl::InvalidArgumentError (the API server maps them to 422/400). JSON patch errors
// name the 0-based operation index, the op and its path: `op 1 (replace /spec/foo): path not
// found`; strategic-merge errors name the field path: `spec.containers[]: element lacks merge key
// "name"`. Every function leaves its inputs untouched and returns a new document, so a failed
// patch never leaves a half-patched object behind.
//
// Recursion depth is the nesting depth of the inputs (boost::json::parse bounds it at 32 by
// default). Thread-safety: all functions are pure.

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "boost/json/value.hpp"

namespace muster::api {

// RFC 7386 JSON merge patch: null deletes, objects merge recursively, anything else (arrays
// included) replaces. A non-object patch replaces the whole target. Never fails; StatusOr keeps
// the four engines interchangeable.
absl::StatusOr<boost::json::value> ApplyMergePatch(const boost::json::value& target,
                                                   const boost::json::value& patch);

// RFC 6902 JSON patch: `patch` is an array of add, remove, replace, move, copy and test
// operations, applied in order to a copy of `target`. A failed `test` is an error. Members other
// than op, path, from and value are ignored.
absl::StatusOr<boost::json::value> ApplyJsonPatch(const boost::json::value& target,
                                                  const boost::json::value& patch);

// Whether `kind` is one of the built-in kinds the API server serves (Namespace, Node, Pod, Event,
// Service, ConfigMap, PriorityClass, Lease), whose strategic merge metadata is here. The API
// server answers 415 to a strategic merge patch for any other kind, as upstream does for CRDs.
bool SupportsStrategicMergePatch(std::string_view kind);

// Kubernetes strategic merge patch for the built-in kinds above; for any other kind it is
// ApplyMergePatch. `patch` must be a JSON object; a target that is not one counts as `{}`.
// Directives: `$patch` (delete | replace | merge) in maps and list elements, `$retainKeys`,
// `$setElementOrder/<field>`,
// `$deleteFromPrimitiveList/<field>`; a null value deletes the key.
absl::StatusOr<boost::json::value> ApplyStrategicMergePatch(const boost::json::value& target,
                                                            const boost::json::value& patch,
                                                            std::string_view kind);

// The merge key of the list field at `path` of `kind` ("spec.containers", "spec.containers[].ports";
// ObjectMeta's lists for every kind): "" for a set of primitives merged as a union
// (metadata.finalizers), nullopt for an atomic list. Server-side apply keys its field ownership
// (api/managed_fields.h) by the same table.
std::optional<std::string_view> ListMergeKey(std::string_view kind, std::string_view path);

// The merge of a server-side apply (see above): upserts `applied` into `live`, merging
// lists that have a merge key for `kind` by that key (the ObjectMeta lists for every kind).
// `applied` must be a JSON object, and every element of a keyed list an object carrying the key;
// a `live` that is not an object counts as `{}` (a create).
absl::StatusOr<boost::json::value> ApplyServerSideApply(const boost::json::value& live,
                                                        const boost::json::value& applied,
                                                        std::string_view kind);

}  // namespace muster::api
