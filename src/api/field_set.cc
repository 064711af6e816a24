// The field-path set algebra (field_set.h).

#include "api/field_set.h"

#include <algorithm>
#include <cstddef>
#include <utility>

#include "boost/json/array.hpp"
#include "boost/json/parse.hpp"

namespace muster::api::field_set {

namespace json = boost::json;

// --- FieldsV1 --------------------------------------------------------------------------------

FieldSet Decode(const json::object& fields) {
  FieldSet set;
  for (const auto& [key, value] : fields) {
    if (key == ".") {
      set.member = true;
      continue;
    }
    FieldSet child = value.is_object() ? Decode(value.get_object()) : FieldSet();
    if (child.children.empty()) child.member = true;
    set.children.emplace(std::string(key), std::move(child));
  }
  return set;
}

json::object Encode(const FieldSet& set) {
  json::object out;
  out.reserve(set.children.size() + 1);
  if (set.member && !set.children.empty()) out.emplace(".", json::object());
  for (const auto& [key, child] : set.children) out.emplace(key, Encode(child));
  return out;
}

void Prune(FieldSet& set) {
  for (auto it = set.children.begin(); it != set.children.end();) {
    Prune(it->second);
    it = it->second.empty() ? set.children.erase(it) : std::next(it);
  }
}

void Union(FieldSet& into, const FieldSet& other) {
  into.member = into.member || other.member;
  for (const auto& [key, child] : other.children) Union(into.children[key], child);
}

FieldSet Minus(const FieldSet& a, const FieldSet& b) {
  FieldSet out;
  out.member = a.member && !b.member;
  for (const auto& [key, child] : a.children) {
    auto match = b.children.find(key);
    FieldSet rest = match == b.children.end() ? child : Minus(child, match->second);
    if (!rest.empty()) out.children.emplace(key, std::move(rest));
  }
  return out;
}

FieldSet Intersect(const FieldSet& a, const FieldSet& b) {
  FieldSet out;
  out.member = a.member && b.member;
  for (const auto& [key, child] : a.children) {
    auto match = b.children.find(key);
    if (match == b.children.end()) continue;
    FieldSet both = Intersect(child, match->second);
    if (!both.empty()) out.children.emplace(key, std::move(both));
  }
  return out;
}

// Whether Minus(a, b) differs from `a`: some path is a member of both.
bool Overlaps(const FieldSet& a, const FieldSet& b) {
  if (a.member && b.member) return true;
  for (const auto& [key, child] : a.children) {
    auto match = b.children.find(key);
    if (match != b.children.end() && Overlaps(child, match->second)) return true;
  }
  return false;
}

void Insert(FieldSet& set, const Path& path) {
  FieldSet* node = &set;
  for (const std::string& key : path) node = &node->children[key];
  node->member = true;
}

// Calls fn(path, node) for every member of `set`, parents before children.
void ForEachMember(const FieldSet& set, Path& path,
                   const std::function<void(const Path&, const FieldSet&)>& fn) {
  if (set.member) fn(path, set);
  for (const auto& [key, child] : set.children) {
    path.push_back(key);
    ForEachMember(child, path, fn);
    path.pop_back();
  }
}

// --- Locating a path element in an object ----------------------------------------------------

namespace {

// Whether a list element is the one a "k:" key's identity (`want`, the key's JSON) names: every
// member of the identity has the same value in the element.
bool MatchesIdentity(const json::value& element, const json::object& want) {
  if (!element.is_object()) return false;
  for (const auto& [k, v] : want) {
    const json::value* have = element.get_object().if_contains(k);
    if (have == nullptr || *have != v) return false;
  }
  return true;
}

}  // namespace

// The value one path element below `parent`; null when there is none. A "k:" or "v:" key's JSON
// is parsed once per step, not once per element it is compared with.
const json::value* Step(const json::value& parent, std::string_view key) {
  if (key.starts_with("f:")) {
    if (!parent.is_object()) return nullptr;
    return parent.get_object().if_contains(key.substr(2));
  }
  if (!parent.is_array()) return nullptr;
  const json::array& list = parent.get_array();
  if (key.starts_with("i:")) {
    size_t index = 0;
    for (char c : key.substr(2)) {
      if (c < '0' || c > '9') return nullptr;
      index = index * 10 + static_cast<size_t>(c - '0');
      if (index > list.size()) return nullptr;
    }
    return index < list.size() ? &list[index] : nullptr;
  }
  const bool keyed = key.starts_with("k:");
  if (!keyed && !key.starts_with("v:")) return nullptr;
  json::error_code ec;
  const json::value want = json::parse(key.substr(2), ec);
  if (ec || (keyed && !want.is_object())) return nullptr;
  for (const json::value& element : list) {
    if (keyed ? MatchesIdentity(element, want.get_object()) : element == want) return &element;
  }
  return nullptr;
}

json::value* Step(json::value& parent, std::string_view key) {
  return const_cast<json::value*>(Step(std::as_const(parent), key));
}

const json::value* Locate(const json::value& root, const Path& path) {
  const json::value* node = &root;
  for (const std::string& key : path) {
    node = Step(*node, key);
    if (node == nullptr) return nullptr;
  }
  return node;
}

// Removes the element `key` names below `parent`, if there is one.
void Erase(json::value& parent, std::string_view key) {
  if (key.starts_with("f:")) {
    if (parent.is_object()) parent.get_object().erase(key.substr(2));
    return;
  }
  if (!parent.is_array()) return;
  const json::value* found = Step(parent, key);
  if (found == nullptr) return;
  json::array& list = parent.get_array();
  list.erase(list.begin() + (found - list.data()));
}

// Keeps in `set` only the paths that exist in `value`; whether it left any out.
bool RestrictToExisting(FieldSet& set, const json::value& value) {
  bool removed = false;
  for (auto it = set.children.begin(); it != set.children.end();) {
    const json::value* child = Step(value, it->first);
    if (child == nullptr) {
      it = set.children.erase(it);
      removed = true;
      continue;
    }
    removed = RestrictToExisting(it->second, *child) || removed;
    it = it->second.empty() ? set.children.erase(it) : std::next(it);
  }
  return removed;
}

// RestrictToExisting after a write, passing over the top-level members `kept` that the write left
// as they were (a pod's spec on a /status write): what an entry names there exists, as every
// stored entry was restricted to the state stored with it. Whether it left anything out.
bool RestrictWritten(FieldSet& set, const json::object& next,
                     const std::vector<std::string_view>& kept) {
  bool removed = false;
  for (auto it = set.children.begin(); it != set.children.end();) {
    std::string_view key = it->first;
    const json::value* now = key.starts_with("f:") ? next.if_contains(key.substr(2)) : nullptr;
    if (now == nullptr) {
      it = set.children.erase(it);
      removed = true;
      continue;
    }
    if (std::find(kept.begin(), kept.end(), key.substr(2)) == kept.end()) {
      removed = RestrictToExisting(it->second, *now) || removed;
    }
    it = it->second.empty() ? set.children.erase(it) : std::next(it);
  }
  return removed;
}

namespace {

// Whether an encoded node is itself a member (Decode's rule: a leaf, or a node carrying ".").
bool IsEncodedMember(const json::value& node) {
  const json::object* o = node.if_object();
  return o == nullptr || o->empty() || o->contains(".");
}

// Whether every path `fields` names below `value` exists in it.
bool ExistsBelow(const json::object& fields, const json::value& value) {
  for (const auto& [key, child] : fields) {
    if (key == ".") continue;
    const json::value* now = Step(value, key);
    if (now == nullptr) return false;
    if (const json::object* below = child.if_object(); below != nullptr && !ExistsBelow(*below, *now)) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool ContainsAll(const json::object& fields, const FieldSet& set) {
  for (const auto& [key, child] : set.children) {
    const json::value* node = fields.if_contains(key);
    if (node == nullptr || (child.member && !IsEncodedMember(*node))) return false;
    if (child.children.empty()) continue;
    const json::object* below = node->if_object();
    if (below == nullptr || !ContainsAll(*below, child)) return false;
  }
  return true;
}

bool OverlapsEncoded(const json::object& fields, const FieldSet& set) {
  for (const auto& [key, child] : set.children) {
    const json::value* node = fields.if_contains(key);
    if (node == nullptr) continue;
    if (child.member && IsEncodedMember(*node)) return true;
    const json::object* below = node->if_object();
    if (below != nullptr && OverlapsEncoded(*below, child)) return true;
  }
  return false;
}

bool ExistsWritten(const json::object& fields, const json::object& next,
                   const std::vector<std::string_view>& kept) {
  for (const auto& [key, child] : fields) {
    if (key == ".") continue;
    const std::string_view k = key;
    const json::value* now = k.starts_with("f:") ? next.if_contains(k.substr(2)) : nullptr;
    if (now == nullptr) return false;
    if (std::find(kept.begin(), kept.end(), k.substr(2)) != kept.end()) continue;
    if (const json::object* below = child.if_object(); below != nullptr && !ExistsBelow(*below, *now)) {
      return false;
    }
  }
  return true;
}

// The top-level members a write from `live` to `next` left as they were, metadata aside: the
// server's garbage collector changes metadata without a field manager, so it is always walked.
std::vector<std::string_view> Unchanged(const json::object& live, const json::object& next) {
  std::vector<std::string_view> out;
  for (const auto& [key, value] : next) {
    const json::value* before = live.if_contains(key);
    if (key != "metadata" && before != nullptr && *before == value) out.push_back(key);
  }
  return out;
}

// Removes from `value` the members of `remove` that nothing in `keep` lies at or below.
void RemoveUnowned(json::value& value, const FieldSet& remove, const FieldSet* keep) {
  for (const auto& [key, child] : remove.children) {
    const FieldSet* kept = nullptr;
    if (keep != nullptr) {
      auto match = keep->children.find(key);
      if (match != keep->children.end()) kept = &match->second;
    }
    json::value* found = Step(value, key);
    if (found == nullptr) continue;
    if (child.member && (kept == nullptr || kept->empty())) {
      Erase(value, key);
    } else if (!child.children.empty()) {
      RemoveUnowned(*found, child, kept);
    }
  }
}

}  // namespace muster::api::field_set
