// Field ownership on parsed managedFields (managed_fields.h): kube's fieldmanager
// (k8s.io/apimachinery/pkg/util/managedfields/internal) over structured-merge-diff's set
// algebra (field_set.h), in the small part an API server of kube's built-in kinds and CRDs needs.

#include "api/managed_fields.h"

#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/field_set.h"
#include "api/managed_fields_internal.h"
#include "api/json_access.h"
#include "api/patch.h"
#include "boost/json/array.hpp"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/string.hpp"
#include "fmt/format.h"

namespace muster::api {
namespace {

namespace json = boost::json;

using field_set::Decode;
using field_set::ContainsAll;
using field_set::Encode;
using field_set::ExistsWritten;
using field_set::FieldSet;
using field_set::ForEachMember;
using field_set::Insert;
using field_set::Intersect;
using field_set::Locate;
using field_set::Minus;
using field_set::Overlaps;
using field_set::OverlapsEncoded;
using field_set::Path;
using field_set::Prune;
using field_set::RemoveUnowned;
using field_set::RestrictToExisting;
using field_set::RestrictWritten;
using field_set::Step;
using field_set::Union;
using field_set::Unchanged;

// --- The fields an object sets ---------------------------------------------------------------

std::string Join(std::string_view parent, std::string_view field) {
  std::string out;
  out.reserve(parent.size() + field.size() + 1);
  if (!parent.empty()) out.append(parent).push_back('.');
  out.append(field);
  return out;
}

// The "k:" key of `element` in a list keyed by `merge_key`; nullopt when it lacks the key.
std::optional<std::string> ElementKey(const json::value& element, std::string_view merge_key) {
  if (merge_key.empty()) {
    if (element.is_object() || element.is_array()) return std::nullopt;
    return "v:" + json::serialize(element);
  }
  if (!element.is_object()) return std::nullopt;
  const json::value* key = element.get_object().if_contains(merge_key);
  if (key == nullptr) return std::nullopt;
  json::object identity;
  identity[merge_key] = *key;
  return "k:" + json::serialize(identity);
}

// Adds to `node` the fields `value`, placed at `node`, sets. `schema` is the strategic merge
// table's path of the value ("spec.containers[].ports").
void AddValue(FieldSet& node, const json::value& value, std::string_view kind,
              const std::string& schema) {
  if (value.is_object() && !value.get_object().empty()) {
    for (const auto& [key, member] : value.get_object()) {
      if (member.is_null()) continue;
      AddValue(node.children["f:" + std::string(key)], member, kind, Join(schema, key));
    }
    return;
  }
  if (value.is_array() && !value.get_array().empty()) {
    std::optional<std::string_view> merge_key = ListMergeKey(kind, schema);
    if (merge_key) {
      std::vector<std::pair<std::string, const json::value*>> elements;
      for (const json::value& element : value.get_array()) {
        std::optional<std::string> key = ElementKey(element, *merge_key);
        if (!key) {
          elements.clear();
          break;
        }
        elements.emplace_back(std::move(*key), &element);
      }
      if (!elements.empty()) {
        for (const auto& [key, element] : elements) {
          FieldSet& item = node.children[key];
          item.member = true;
          if (!merge_key->empty()) AddValue(item, *element, kind, schema + "[]");
        }
        // An element's own fields without "." for a leaf: the element is the member.
        return;
      }
    }
  }
  node.member = true;  // a scalar, an empty map or list, or an atomic list
}

void AddChanges(FieldSet& node, const json::value* old, const json::value& now,
                std::string_view kind, const std::string& schema);

// AddChanges for the member `key` of a map. A member equal to its old value sets nothing new,
// and is passed over without a node: most of an update's object is what was stored.
void AddMemberChange(FieldSet& node, const json::object& old, std::string_view key,
                     const json::value& member, std::string_view kind, const std::string& schema) {
  if (member.is_null()) return;
  const json::value* before = old.if_contains(key);
  if (before != nullptr && *before == member) return;
  FieldSet child;
  AddChanges(child, before, member, kind, Join(schema, key));
  if (!child.empty()) node.children.insert_or_assign("f:" + std::string(key), std::move(child));
}

// AddChanges for the members of a map.
void AddMemberChanges(FieldSet& node, const json::object& old, const json::object& now,
                      std::string_view kind, const std::string& schema) {
  for (const auto& [key, member] : now) AddMemberChange(node, old, key, member, kind, schema);
}

// Adds to `node` the fields set in `now` that are absent from or differ in `old`.
void AddChanges(FieldSet& node, const json::value* old, const json::value& now,
                std::string_view kind, const std::string& schema) {
  if (old == nullptr) {
    AddValue(node, now, kind, schema);
    return;
  }
  if (now.is_object() && old->is_object() && !now.get_object().empty()) {
    AddMemberChanges(node, old->get_object(), now.get_object(), kind, schema);
    return;
  }
  if (now.is_array() && old->is_array() && !now.get_array().empty()) {
    std::optional<std::string_view> merge_key = ListMergeKey(kind, schema);
    bool keyed = merge_key.has_value();
    for (const json::value& element : now.get_array()) {
      keyed = keyed && ElementKey(element, *merge_key).has_value();
    }
    if (keyed) {
      for (const json::value& element : now.get_array()) {
        std::string key = *ElementKey(element, *merge_key);
        const json::value* before = Step(*old, key);
        FieldSet& item = node.children[key];
        if (before == nullptr) {
          item.member = true;
          if (!merge_key->empty()) AddValue(item, element, kind, schema + "[]");
        } else if (!merge_key->empty()) {
          AddChanges(item, before, element, kind, schema + "[]");
        }
      }
      return;
    }
  }
  if (*old != now) node.member = true;
}

// Leaves out of `set` what no manager owns: apiVersion, kind, the server's metadata, and .status
// or everything but .status as `who` writes the main resource or /status.
void Strip(FieldSet& set, const FieldManager& who) {
  if (who.subresource == "status") {
    auto status = set.children.find("f:status");
    FieldSet only;
    if (status != set.children.end()) only.children.emplace("f:status", std::move(status->second));
    set = std::move(only);
    return;
  }
  set.member = false;
  set.children.erase("f:apiVersion");
  set.children.erase("f:kind");
  if (who.status_is_subresource) set.children.erase("f:status");
  auto meta = set.children.find("f:metadata");
  if (meta == set.children.end()) return;
  for (std::string_view key : {"f:name", "f:namespace", "f:uid", "f:resourceVersion",
                               "f:generation", "f:creationTimestamp", "f:deletionTimestamp",
                               "f:deletionGracePeriodSeconds", "f:selfLink", "f:managedFields"}) {
    meta->second.children.erase(std::string(key));
  }
  meta->second.member = false;
  if (meta->second.empty()) set.children.erase(meta);
}

// Whether Strip keeps the top-level member `key` of what `who` writes.
bool Owned(std::string_view key, const FieldManager& who) {
  if (who.subresource == "status") return key == "status";
  if (key == "apiVersion" || key == "kind") return false;
  return key != "status" || !who.status_is_subresource;
}

}  // namespace

// --- managedFields entries -------------------------------------------------------------------

namespace managed_internal {

bool ReadHeader(const json::value& item, Entry& e, const json::object*& fields) {
  const json::object* o = item.if_object();
  if (o == nullptr) return false;
  e.manager = StringAt(*o, "manager");
  e.operation = StringAt(*o, "operation");
  e.api_version = StringAt(*o, "apiVersion");
  e.time = StringAt(*o, "time");
  e.subresource = StringAt(*o, "subresource");
  const json::value* encoded = o->if_contains("fieldsV1");
  if ((e.operation != "Apply" && e.operation != "Update") ||
      StringAt(*o, "fieldsType") != "FieldsV1" || encoded == nullptr || !encoded->is_object()) {
    return false;
  }
  fields = &encoded->get_object();
  return true;
}

std::optional<std::vector<Entry>> DecodeEntries(const json::value* managed, bool stored) {
  std::vector<Entry> entries;
  if (managed == nullptr || managed->is_null()) return entries;
  if (!managed->is_array()) return std::nullopt;
  for (const json::value& item : managed->get_array()) {
    Entry e;
    const json::object* fields = nullptr;
    if (!ReadHeader(item, e, fields)) return std::nullopt;
    e.fields = Decode(*fields);
    Prune(e.fields);
    if (stored) e.stored = &item;
    entries.push_back(std::move(e));
  }
  return entries;
}

json::object EncodeEntry(const Entry& e, const json::object* fields) {
  json::object o;
  o["manager"] = e.manager;
  o["operation"] = e.operation;
  o["apiVersion"] = e.api_version;
  if (!e.time.empty()) o["time"] = e.time;
  o["fieldsType"] = "FieldsV1";
  if (fields != nullptr) {
    o["fieldsV1"] = *fields;
  } else {
    o["fieldsV1"] = Encode(e.fields);
  }
  if (!e.subresource.empty()) o["subresource"] = e.subresource;
  return o;
}

bool IsWho(const Entry& e, const FieldManager& who) {
  if (e.manager != who.manager || e.subresource != who.subresource) return false;
  if (who.apply) return e.operation == "Apply";
  return e.operation == "Update" && e.api_version == who.api_version;
}

Changes ChangesOf(const json::object& live, const json::object& next, std::string_view kind,
                  const FieldManager& who) {
  Changes out;
  // The top-level members the write left as they were are neither compared again nor looked
  // into (a pod's spec on a /status write). A change of managedFields itself is no one's field:
  // Strip leaves it out, as it leaves out what it does not own at the top.
  out.unchanged = Unchanged(live, next);
  for (const auto& [key, member] : next) {
    if (member.is_null() || !Owned(key, who)) continue;
    if (std::find(out.unchanged.begin(), out.unchanged.end(), key) != out.unchanged.end()) {
      continue;
    }
    FieldSet child;
    AddChanges(child, live.if_contains(key), member, kind, std::string(key));
    if (!child.empty()) out.changed.children.emplace("f:" + std::string(key), std::move(child));
  }
  Strip(out.changed, who);
  Prune(out.changed);
  return out;
}

}  // namespace managed_internal

namespace {

using managed_internal::DecodeEntries;
using managed_internal::Entry;
using managed_internal::IsWho;

json::array EncodeEntries(const std::vector<Entry>& entries) {
  json::array out;
  out.reserve(entries.size());
  for (const Entry& e : entries) {
    if (e.stored != nullptr) {
      out.push_back(*e.stored);
      continue;
    }
    out.push_back(managed_internal::EncodeEntry(e));
  }
  return out;
}

// kube's printManager.
std::string Printed(const Entry& e) {
  std::string out = fmt::format("\"{}\"", e.manager);
  if (!e.subresource.empty()) out += fmt::format(" with subresource \"{}\"", e.subresource);
  if (e.operation == "Update") out += fmt::format(" using {}", e.api_version);
  return out;
}

// structured-merge-diff's Path.String(): .data.a, .spec.containers[name="main"].image, [="x"].
std::string PrintedPath(const Path& path) {
  std::string out;
  for (const std::string& key : path) {
    std::string_view rest = std::string_view(key).substr(std::min<size_t>(2, key.size()));
    if (key.starts_with("f:")) {
      out += fmt::format(".{}", rest);
    } else if (key.starts_with("v:")) {
      out += fmt::format("[={}]", rest);
    } else if (key.starts_with("i:")) {
      out += fmt::format("[{}]", rest);
    } else {
      json::error_code ec;
      json::value identity = json::parse(rest, ec);
      std::string fields;
      if (!ec && identity.is_object()) {
        for (const auto& [k, v] : identity.get_object()) {
          fields += fmt::format("{}{}={}", fields.empty() ? "" : ",", View(k), json::serialize(v));
        }
      }
      out += fmt::format("[{}]", fields);
    }
  }
  return out;
}

json::object* MetaIn(json::value& object) {
  if (!object.is_object()) return nullptr;
  json::value& meta = object.get_object()["metadata"];
  if (!meta.is_object()) meta = json::object();
  return &meta.get_object();
}

const json::value* ManagedOf(const json::object& object) {
  const json::value* meta = object.if_contains("metadata");
  if (meta == nullptr || !meta->is_object()) return nullptr;
  return meta->get_object().if_contains("managedFields");
}

const json::value* ManagedIn(const json::value& object) {
  return object.is_object() ? ManagedOf(object.get_object()) : nullptr;
}

// Whether `a` and `b` have the same members, `skip` aside.
bool SameMembersBeside(const json::object& a, const json::object& b, std::string_view skip) {
  size_t counted = 0;
  for (const auto& [key, value] : a) {
    if (key == skip) continue;
    const json::value* other = b.if_contains(key);
    if (other == nullptr || *other != value) return false;
    ++counted;
  }
  return counted + (b.contains(skip) ? 1 : 0) == b.size();
}

// Whether a write changed anything beside managedFields (an absent metadata counts as `{}`).
bool SameObjectsBesideManaged(const json::object& x, const json::object& y) {
  if (!SameMembersBeside(x, y, "metadata")) return false;
  const json::value* mx = x.if_contains("metadata");
  const json::value* my = y.if_contains("metadata");
  if ((mx != nullptr && !mx->is_object()) || (my != nullptr && !my->is_object())) {
    return mx != nullptr && my != nullptr && *mx == *my;
  }
  const json::object none;
  return SameMembersBeside(mx != nullptr ? mx->get_object() : none,
                           my != nullptr ? my->get_object() : none, "managedFields");
}

bool SameBesideManaged(const json::value& a, const json::value& b) {
  if (!a.is_object() || !b.is_object()) return a == b;
  return SameObjectsBesideManaged(a.get_object(), b.get_object());
}

// Stores `entries` as `object`'s managedFields, or none when there are none.
void Store(json::value& object, const std::vector<Entry>& entries) {
  json::object* meta = MetaIn(object);
  if (meta == nullptr) return;
  if (entries.empty()) {
    meta->erase("managedFields");
  } else {
    (*meta)["managedFields"] = EncodeEntries(entries);
  }
}

void DropEmpty(std::vector<Entry>& entries) {
  std::erase_if(entries, [](const Entry& e) { return e.fields.empty(); });
}

// The fields an apply of `config` by `who` owns.
FieldSet AppliedFields(const json::value& config, std::string_view kind, const FieldManager& who) {
  FieldSet applied;
  AddValue(applied, config, kind, "");
  Strip(applied, who);
  Prune(applied);
  return applied;
}

// The common update, found without decoding the stored entries (`stored`, as EncodeEntries
// wrote them): `who` has an entry that owns every field the write `changed` already, no other
// entry owns any of them, and every field any entry owns is still in `next` (a pod's status
// written again by its node agent, a bind, a controller's status). Then nothing changes hands,
// and the result is `stored` with `who`'s time set to `now` where the write changed something:
// what the general path computes, at the cost of a copy. nullopt when the write is not such.
std::optional<json::value> KeptHands(const json::value& stored, const FieldSet& changed,
                                     const json::object& next,
                                     const std::vector<std::string_view>& unchanged,
                                     const FieldManager& who, std::string_view now) {
  const json::array* items = stored.if_array();
  if (items == nullptr || items->empty()) return std::nullopt;
  std::ptrdiff_t mine = -1;
  for (size_t i = 0; i < items->size(); ++i) {
    const json::object* o = (*items)[i].if_object();
    if (o == nullptr) return std::nullopt;
    const std::string_view operation = StringViewAt(o, "operation");
    const json::value* fields = o->if_contains("fieldsV1");
    if ((operation != "Apply" && operation != "Update") ||
        StringViewAt(o, "fieldsType") != "FieldsV1" || fields == nullptr || !fields->is_object() ||
        fields->get_object().empty()) {
      return std::nullopt;
    }
    const json::object& encoded = fields->get_object();
    const bool is_who = StringViewAt(o, "manager") == who.manager &&
                        StringViewAt(o, "subresource") == who.subresource &&
                        operation == "Update" && StringViewAt(o, "apiVersion") == who.api_version;
    if (is_who) {
      // Two entries of one manager: the general path merges them.
      if (mine >= 0 || !o->contains("time")) return std::nullopt;
      if (!ContainsAll(encoded, changed)) return std::nullopt;
      mine = static_cast<std::ptrdiff_t>(i);
    } else if (OverlapsEncoded(encoded, changed)) {
      return std::nullopt;
    }
    if (!ExistsWritten(encoded, next, unchanged)) return std::nullopt;
  }
  if (mine < 0 && !changed.empty()) return std::nullopt;
  json::value out = stored;
  if (!changed.empty()) out.get_array()[static_cast<size_t>(mine)].get_object()["time"] = now;
  return out;
}

}  // namespace

absl::StatusOr<json::value> MergeApplied(const json::value& live, const json::value& config,
                                         std::string_view kind, const FieldManager& who) {
  const json::value empty_object = json::object();
  const json::value& base = live.is_object() ? live : empty_object;
  absl::StatusOr<json::value> merged = ApplyServerSideApply(base, config, kind);
  if (!merged.ok()) return merged.status();
  FieldSet applied = AppliedFields(config, kind, who);
  FieldSet others;
  FieldSet previous;
  for (const Entry& e : DecodeEntries(ManagedIn(base)).value_or(std::vector<Entry>())) {
    if (IsWho(e, who)) {
      previous = e.fields;
    } else {
      Union(others, e.fields);
    }
  }
  RemoveUnowned(*merged, Minus(previous, applied), &others);
  return merged;
}

std::vector<FieldConflict> RecordApply(const json::value& live, json::value& next,
                                       const json::value& config, std::string_view kind,
                                       const FieldManager& who, bool force, std::string_view now) {
  const json::value empty_object = json::object();
  const json::value& base = live.is_object() ? live : empty_object;
  FieldSet applied = AppliedFields(config, kind, who);
  const json::value* stored = ManagedIn(base);
  const std::optional<std::vector<Entry>> before = DecodeEntries(stored);
  std::vector<Entry> entries = before.value_or(std::vector<Entry>());
  std::vector<FieldConflict> conflicts;
  std::vector<FieldSet> lost(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (IsWho(entries[i], who)) continue;
    FieldSet shared = Intersect(entries[i].fields, applied);
    Path path;
    ForEachMember(shared, path, [&](const Path& p, const FieldSet&) {
      const json::value* before = Locate(base, p);
      const json::value* after = Locate(next, p);
      bool changed = (before == nullptr) != (after == nullptr);
      // A list element is owned as being there; its fields are compared one by one.
      const bool element = !p.empty() && !p.back().starts_with("f:");
      if (!changed && before != nullptr && !element) changed = *before != *after;
      if (!changed) return;
      conflicts.push_back({Printed(entries[i]), PrintedPath(p)});
      Insert(lost[i], p);
    });
  }
  if (!conflicts.empty() && !force) return conflicts;

  auto mine = entries.end();
  for (size_t i = 0; i < entries.size(); ++i) {
    if (IsWho(entries[i], who)) {
      mine = entries.begin() + static_cast<std::ptrdiff_t>(i);
    } else {
      entries[i].fields = Minus(entries[i].fields, lost[i]);
    }
  }
  if (mine == entries.end()) {
    Entry e;
    e.manager = who.manager;
    e.operation = "Apply";
    e.subresource = who.subresource;
    entries.push_back(std::move(e));
    mine = std::prev(entries.end());
  }
  const bool object_changed = !SameBesideManaged(next, base);
  if (object_changed || mine->fields != applied || mine->time.empty()) {
    mine->time = std::string(now);
  }
  mine->fields = std::move(applied);
  mine->api_version = who.api_version;
  for (Entry& e : entries) RestrictToExisting(e.fields, next);
  DropEmpty(entries);

  if (!object_changed && before && *before == entries) {
    // Nothing changed hands: managedFields exactly as stored.
    json::object* meta = MetaIn(next);
    if (meta != nullptr && stored != nullptr) (*meta)["managedFields"] = *stored;
  } else {
    Store(next, entries);
  }
  return conflicts;
}

absl::StatusOr<OwnedApply> ApplyWithOwnership(const json::value& live, const json::value& config,
                                              std::string_view kind, const FieldManager& who,
                                              bool force, std::string_view now) {
  absl::StatusOr<json::value> merged = MergeApplied(live, config, kind, who);
  if (!merged.ok()) return merged.status();
  OwnedApply out;
  out.conflicts = RecordApply(live, *merged, config, kind, who, force, now);
  if (!out.conflicts.empty() && !force) {
    out.object = live.is_object() ? live : json::value(json::object());
  } else {
    out.object = *std::move(merged);
  }
  return out;
}

void RecordUpdate(const json::object& live, json::object& next, std::string_view kind,
                  const FieldManager& who, std::string_view now) {
  RecordUpdate(live, ManagedOf(live), next, kind, who, now);
}

bool SameBesideManagedFields(const json::object& a, const json::object& b) {
  return SameObjectsBesideManaged(a, b);
}

bool RecordUpdate(const json::object& live, const json::value* stored, json::object& next,
                  std::string_view kind, const FieldManager& who, std::string_view now) {
  json::value next_value(std::move(next));
  if (stored != nullptr && stored->is_null()) stored = nullptr;
  const json::value* sent = ManagedIn(next_value);
  const bool sent_some = sent != nullptr && sent->is_array() && !sent->get_array().empty();
  // An update that sends managedFields other than the stored ones replaces them.
  const bool reset = sent_some && (stored == nullptr || *sent != *stored);

  managed_internal::Changes changes =
      managed_internal::ChangesOf(live, next_value.get_object(), kind, who);
  FieldSet& changed = changes.changed;
  const std::vector<std::string_view>& unchanged = changes.unchanged;

  if (!reset && stored != nullptr) {
    if (std::optional<json::value> kept =
            KeptHands(*stored, changed, next_value.get_object(), unchanged, who, now)) {
      const bool differ = !changed.empty();
      (*MetaIn(next_value))["managedFields"] = std::move(*kept);
      next = std::move(next_value.get_object());
      return differ;
    }
  }

  std::optional<std::vector<Entry>> decoded =
      reset ? DecodeEntries(sent) : DecodeEntries(stored, true);
  // Whether the entries differ from the stored ones (unreadable ones are dropped).
  bool differ = reset || !decoded;
  std::vector<Entry> entries = std::move(decoded).value_or(std::vector<Entry>());

  auto mine = entries.end();
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    if (IsWho(*it, who)) {
      mine = it;
    } else if (Overlaps(it->fields, changed)) {
      it->fields = Minus(it->fields, changed);
      it->stored = nullptr;
      differ = true;
    }
  }
  // A new entry of `who` holds what the write changed alone, all of it in `next`.
  const Entry* fresh = nullptr;
  if (mine == entries.end() && !changed.empty()) {
    Entry e;
    e.manager = who.manager;
    e.operation = "Update";
    e.api_version = who.api_version;
    e.subresource = who.subresource;
    e.time = std::string(now);
    e.fields = std::move(changed);
    entries.push_back(std::move(e));
    mine = std::prev(entries.end());
    fresh = &*mine;
    differ = true;
  } else if (mine != entries.end() && !changed.empty()) {
    Union(mine->fields, changed);
    mine->time = std::string(now);
    mine->stored = nullptr;
    differ = true;
  }
  // A client's own managedFields may name anything; stored ones need a look only where the
  // write changed something.
  const std::vector<std::string_view> kept =
      reset ? std::vector<std::string_view>() : unchanged;
  for (Entry& e : entries) {
    if (&e == fresh) continue;
    if (RestrictWritten(e.fields, next_value.get_object(), kept)) {
      e.stored = nullptr;
      differ = true;
    }
  }
  const size_t before_drop = entries.size();
  DropEmpty(entries);
  differ = differ || entries.size() != before_drop;

  if (!differ) {
    // Nothing changed hands: managedFields exactly as stored (what the write sent is those).
    json::object* meta = MetaIn(next_value);
    if (stored == nullptr) {
      meta->erase("managedFields");
    } else if (!sent_some) {
      (*meta)["managedFields"] = *stored;
    }
  } else {
    Store(next_value, entries);
  }
  next = std::move(next_value.get_object());
  return differ;
}

std::string ConflictMessage(const std::vector<FieldConflict>& conflicts) {
  if (conflicts.size() == 1) {
    return fmt::format("Apply failed with 1 conflict: conflict with {}: {}", conflicts[0].manager,
                       conflicts[0].field);
  }
  std::map<std::string, std::vector<std::string>> by_manager;
  for (const FieldConflict& c : conflicts) by_manager[c.manager].push_back(c.field);
  std::vector<std::string> lines;
  for (const auto& [manager, fields] : by_manager) {
    lines.push_back(fmt::format("conflicts with {}:", manager));
    for (const std::string& field : fields) lines.push_back(fmt::format("- {}", field));
  }
  return fmt::format("Apply failed with {} conflicts: {}", conflicts.size(),
                     fmt::join(lines, "\n"));
}

json::object WithoutManagedFields(const json::object& object) {
  const json::value* meta = object.if_contains("metadata");
  if (meta == nullptr || !meta->is_object() || !meta->get_object().contains("managedFields")) {
    return object;
  }
  json::object out(object.storage());
  out.reserve(object.size());
  for (const auto& [key, value] : object) {
    if (key != "metadata") {
      out.emplace(key, value);
      continue;
    }
    json::object& copy = out[key].emplace_object();
    copy.reserve(meta->get_object().size());
    for (const auto& [meta_key, meta_value] : meta->get_object()) {
      if (meta_key != "managedFields") copy.emplace(meta_key, meta_value);
    }
  }
  return out;
}

std::string ManagerFromUserAgent(std::string_view user_agent) {
  std::string_view token = user_agent.substr(0, user_agent.find('/'));
  return std::string(token.substr(0, 128));
}

}  // namespace muster::api
