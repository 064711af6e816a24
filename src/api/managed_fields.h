#pragma once

// Field ownership: metadata.managedFields, kept as kube-apiserver keeps it, so that server-side
// apply by several field managers shares an object the way it does on a real cluster.
//
// Every write through the API records who set which fields. An entry names a manager (the
// fieldManager query parameter, else the User-Agent's product token), an operation (Apply for a
// server-side apply, Update for create, PUT and the other patches), the apiVersion, the
// subresource, the time, and the fields in the FieldsV1 encoding: a tree of "f:<field>" (a map
// member), "k:<json>" (the element of a keyed list whose merge key has that value), "v:<json>"
// (an element of a set of primitives) and "." (the node itself, beside its children):
//
//   {"f:data":{"f:a":{}},"f:spec":{"f:containers":{"k:{\"name\":\"main\"}":{".":{},"f:image":{}}}}}
//
// An apply by manager M of configuration C (structured-merge-diff's semantics, simplified):
//   - M's Apply entry becomes exactly the fields C sets;
//   - a field C sets that another entry owns and whose value the apply changes is a conflict; any
//     conflict refuses the apply (409) unless it is forced, when the others lose those fields;
//     setting a field to the value it has shares it without conflict;
//   - a field M applied before, dropped from C and owned by no one else is removed;
//   - fields that no longer exist leave every entry, and entries left empty are dropped.
// An update by manager M takes every field it adds or changes from every other entry and adds it
// to M's Update entry. managedFields sent with an update replace the stored ones (kube's reset:
// `[{}]` clears them); sent absent or unchanged, the stored ones are kept. A write that changes
// nothing leaves managedFields byte for byte as they were.
//
// Keys of keyed lists come from the strategic merge table (api/patch.h ListMergeKey), so a list
// kube keys by two fields (container ports: containerPort and protocol) is keyed here by the
// first. Maps are never marked with "." (kube marks maps, not structs, in Update entries). Server-
// owned metadata (name, namespace, uid, resourceVersion, generation, creationTimestamp,
// deletionTimestamp, deletionGracePeriodSeconds, selfLink, managedFields), apiVersion and kind are
// never owned; neither is .status in writes to the main resource of a kind with a status
// subresource, while a write to /status owns only .status.
//
// Stored managedFields that do not decode (an update may send anything) count as none. Thread-
// safety: all functions are pure.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "boost/json/object.hpp"
#include "boost/json/storage_ptr.hpp"
#include "boost/json/value.hpp"

namespace muster::api {

// Who writes, and how.
struct FieldManager {
  std::string manager;      // "kubectl", "manager-a"; may be empty for an update
  bool apply = false;       // operation Apply; else Update
  std::string api_version;  // "v1", "batch.volcano.sh/v1alpha1"
  std::string subresource;  // "" or "status"
  // Whether .status of the main resource is set through a subresource only (then never owned).
  bool status_is_subresource = false;
};

// A field another manager owns that an apply would change.
struct FieldConflict {
  std::string manager;  // as kube prints it: `"manager-a"`, `"kubectl-edit" using v1`
  std::string field;  // as kube prints a field path: `.data.a`, `.spec.containers[name="x"].image`
};

struct OwnedApply {
  // The live object with the configuration applied and managedFields updated; the live object
  // unchanged when there are conflicts and the apply is not forced.
  boost::json::value object;
  std::vector<FieldConflict> conflicts;  // found, forced or not
};

// An apply in two steps, so that what admission defaults counts as the object's (the API server
// runs admission between them):
//
// MergeApplied: `config` applied to `live` (`{}` or null for a create) by `who` (an Apply
// manager), the fields `who` applied before, dropped from `config` and owned by no one else
// removed. Errors are those of ApplyServerSideApply (api/patch.h).
absl::StatusOr<boost::json::value> MergeApplied(const boost::json::value& live,
                                                const boost::json::value& config,
                                                std::string_view kind, const FieldManager& who);
// RecordApply: the conflicts of the apply that turns `live` into `next`, and, where there are
// none or `force`, `next`'s managedFields updated at RFC 3339 time `now` (`next` is untouched
// otherwise).
std::vector<FieldConflict> RecordApply(const boost::json::value& live, boost::json::value& next,
                                       const boost::json::value& config, std::string_view kind,
                                       const FieldManager& who, bool force, std::string_view now);

// Both steps at once, without admission between them.
absl::StatusOr<OwnedApply> ApplyWithOwnership(const boost::json::value& live,
                                              const boost::json::value& config,
                                              std::string_view kind, const FieldManager& who,
                                              bool force, std::string_view now);

// Records in `next`'s metadata.managedFields the update by `who` (an Update manager) from `live`
// (an empty object for a create) to `next`, at RFC 3339 time `now`.
void RecordUpdate(const boost::json::object& live, boost::json::object& next, std::string_view kind,
                  const FieldManager& who, std::string_view now);

// RecordUpdate from a `live` state kept without its field ownership, which is `stored` (null
// when it has none): the write paths read the store's shared parsed state, which leaves
// managedFields out, instead of copying it. Returns whether `next`'s managedFields differ from
// `stored`.
bool RecordUpdate(const boost::json::object& live, const boost::json::value* stored,
                  boost::json::object& next, std::string_view kind, const FieldManager& who,
                  std::string_view now);

// Whether `a` and `b` are the same state once metadata.managedFields is left out of both (an
// absent metadata counts as `{}`).
bool SameBesideManagedFields(const boost::json::object& a, const boost::json::object& b);

// A copy of `object` without metadata.managedFields: for a component that keeps its own copies of
// objects it watches (the node agent's pods) and never reads field ownership, as kube-scheduler's
// and kube-controller-manager's informers drop it. On a pod that is often the larger part.
boost::json::object WithoutManagedFields(const boost::json::object& object);

// metadata.managedFields of a stored object's text (`json`, a JSON object as the store writes
// it), parsed; nullopt when it has none or `json` is not such an object. The store's parsed states
// leave field ownership out (store::Object::parsed); a write takes it back from the text with this,
// which reads only that member (simdjson On Demand skips the rest), instead of parsing it all.
std::optional<boost::json::value> ManagedFieldsInText(std::string_view json);

// Field ownership as the store keeps it: the JSON text of metadata.managedFields's value
// (store::Object::ManagedFieldsText), which a write hands back to the store as text
// (store::Op::managed_fields). Parsed: nullopt when empty, not JSON, or not a list (which counts
// as none, as above); `storage` holds what it allocates.
std::optional<boost::json::value> ParseManagedFieldsText(std::string_view text,
                                                         boost::json::storage_ptr storage = {});

// RecordUpdate for a `next` that holds no metadata.managedFields of its own (an update built on
// the store's parsed state, which leaves it out: a patch, a PUT that sends none), from `live`
// whose stored ownership is the text `stored` (empty: none). Returns what RecordUpdate records,
// as the managedFields text to store with `next` (empty: none): byte for byte
// boost::json::serialize's text of it, given a `stored` text as the store writes one. Entries the
// write leaves to their owners are neither decoded nor serialised again: they keep their text,
// and an update that changes nobody's fields returns `stored` as it is.
std::string RecordUpdateText(const boost::json::object& live, std::string_view stored,
                             const boost::json::object& next, std::string_view kind,
                             const FieldManager& who, std::string_view now);

// kube-apiserver's message for a refused apply: `Apply failed with 1 conflict: conflict with
// "manager-a": .data.a`, or, for several, one "conflicts with <manager>:" line per manager (sorted)
// followed by "- <field>" lines.
std::string ConflictMessage(const std::vector<FieldConflict>& conflicts);

// The User-Agent's product token, kube's default field manager: "kubectl" for
// "kubectl/v1.32.0 (linux/amd64) kubernetes/abc", at most 128 bytes.
std::string ManagerFromUserAgent(std::string_view user_agent);

}  // namespace muster::api
