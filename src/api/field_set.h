#pragma once

// The set algebra under field ownership (managed_fields.h): a set of field paths kept as a tree,
// its FieldsV1 encoding, and where a path element lies in an object. structured-merge-diff's
// fieldpath.Set and its PathElement, in the small part kube's managedFields need. Internal to
// src/api: managed_fields.cc is its one user.
//
// Path elements are keyed as in FieldsV1: "f:<field>" (a map member), "k:<json>" (the element of
// a keyed list whose merge key has that value), "v:<json>" (an element of a set of primitives) and
// "i:<n>" (a list element by index). Thread-safety: all functions are pure.

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "boost/json/object.hpp"
#include "boost/json/value.hpp"

namespace muster::api::field_set {

// A set of field paths as a tree: a node is in the set when `member`; its children are the
// path elements below it.
struct FieldSet {
  bool member = false;
  std::map<std::string, FieldSet, std::less<>> children;

  [[nodiscard]] bool empty() const { return !member && children.empty(); }
  bool operator==(const FieldSet&) const = default;
};

using Path = std::vector<std::string>;

// FieldsV1 read and written (a node with children that is itself a member carries ".").
FieldSet Decode(const boost::json::object& fields);
boost::json::object Encode(const FieldSet& set);

// Drops the nodes that are neither members nor above one.
void Prune(FieldSet& set);
void Union(FieldSet& into, const FieldSet& other);
FieldSet Minus(const FieldSet& a, const FieldSet& b);
FieldSet Intersect(const FieldSet& a, const FieldSet& b);
// Whether Minus(a, b) differs from `a`: some path is a member of both.
bool Overlaps(const FieldSet& a, const FieldSet& b);
void Insert(FieldSet& set, const Path& path);
// Calls fn(path, node) for every member of `set`, parents before children.
void ForEachMember(const FieldSet& set, Path& path,
                   const std::function<void(const Path&, const FieldSet&)>& fn);

// The same questions asked of a FieldsV1 encoding (`fields`, as Encode writes it) without
// decoding it, for a write that changes no one's fields but the writer's (managed_fields.cc):
// whether every member of `set` is a member of `fields`; whether some member of `set` is one of
// `fields`.
bool ContainsAll(const boost::json::object& fields, const FieldSet& set);
bool OverlapsEncoded(const boost::json::object& fields, const FieldSet& set);
// Whether RestrictWritten would leave nothing out of `fields` decoded.
bool ExistsWritten(const boost::json::object& fields, const boost::json::object& next,
                   const std::vector<std::string_view>& kept);

// The value one path element below `parent`; null when there is none.
const boost::json::value* Step(const boost::json::value& parent, std::string_view key);
boost::json::value* Step(boost::json::value& parent, std::string_view key);
// The value at `path` below `root`; null when there is none.
const boost::json::value* Locate(const boost::json::value& root, const Path& path);
// Removes the element `key` names below `parent`, if there is one.
void Erase(boost::json::value& parent, std::string_view key);

// Keeps in `set` only the paths that exist in `value`; whether it left any out.
bool RestrictToExisting(FieldSet& set, const boost::json::value& value);
// RestrictToExisting after a write, passing over the top-level members `kept` that the write left
// as they were (a pod's spec on a /status write): what an entry names there exists, as every
// stored entry was restricted to the state stored with it. Whether it left anything out.
bool RestrictWritten(FieldSet& set, const boost::json::object& next,
                     const std::vector<std::string_view>& kept);
// The top-level members a write from `live` to `next` left as they were, metadata aside: the
// server's garbage collector changes metadata without a field manager, so it is always walked.
std::vector<std::string_view> Unchanged(const boost::json::object& live,
                                        const boost::json::object& next);
// Removes from `value` the members of `remove` that nothing in `keep` lies at or below.
void RemoveUnowned(boost::json::value& value, const FieldSet& remove, const FieldSet* keep);

}  // namespace muster::api::field_set
