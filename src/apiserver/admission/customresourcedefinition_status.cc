// The status of a CustomResourceDefinition, set as it is written rather than by controllers a
// moment later (kube's naming controller, pkg/controller/status/naming_controller.go, and its
// establishing controller): the names are accepted unless another CRD of the group (or a
// resource muster serves in it) already uses one, `NamesAccepted` and `Established` say so with
// kube's reasons and messages, and status.storedVersions gains the storage version. A CRD is
// therefore established in the reply to its create, which is what `kubectl wait
// --for=condition=established` and operators look for.

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/json_access.h"
#include "api/time.h"
#include "apiserver/admission/kinds.h"
#include "apiserver/descriptors/custom_resource.h"
#include "fmt/format.h"

namespace muster::apiserver::admission {
namespace {

const json::object* StatusField(const json::object* o, std::string_view key) {
  if (o == nullptr) return nullptr;
  const json::value* v = o->if_contains(key);
  return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
}

bool NameTaken(const std::vector<std::string>& list, const std::string& s) {
  return !s.empty() && std::find(list.begin(), list.end(), s) != list.end();
}

// The names something else of the group already holds.
struct TakenNames {
  std::vector<std::string> plurals, singulars, short_names, kinds, list_kinds;
};

// kube's naming controller: the first conflict, as its condition reason and message.
std::optional<std::pair<std::string, std::string>> NameConflict(const json::object& names,
                                                                const TakenNames& taken) {
  auto in_use = [](const std::string& name) {
    return fmt::format("\"{}\" is already in use", name);
  };
  const std::string plural = api::StringAt(&names, "plural");
  if (NameTaken(taken.plurals, plural)) return std::make_pair("PluralConflict", in_use(plural));
  const std::string singular = api::StringAt(&names, "singular");
  if (NameTaken(taken.singulars, singular)) {
    return std::make_pair("SingularConflict", in_use(singular));
  }
  for (const std::string& s : api::StringsAt(&names, "shortNames")) {
    if (NameTaken(taken.short_names, s) || NameTaken(taken.plurals, s) ||
        NameTaken(taken.singulars, s)) {
      return std::make_pair("ShortNamesConflict", in_use(s));
    }
  }
  const std::string kind = api::StringAt(&names, "kind");
  if (NameTaken(taken.kinds, kind)) return std::make_pair("KindConflict", in_use(kind));
  const std::string list_kind = api::StringAt(&names, "listKind");
  if (NameTaken(taken.list_kinds, list_kind)) {
    return std::make_pair("ListKindConflict", in_use(list_kind));
  }
  return std::nullopt;
}

void AddNames(TakenNames& taken, const json::object& names) {
  taken.plurals.push_back(api::StringAt(&names, "plural"));
  taken.singulars.push_back(api::StringAt(&names, "singular"));
  for (std::string& s : api::StringsAt(&names, "shortNames")) taken.short_names.push_back(s);
  taken.kinds.push_back(api::StringAt(&names, "kind"));
  taken.list_kinds.push_back(api::StringAt(&names, "listKind"));
}

TakenNames TakenInGroup(const Context& c, const std::string& group, const std::string& plural) {
  TakenNames taken;
  for (const json::object& other : ListObjects(c.req.store, std::string(kCrdStoreResource))) {
    if (api::StringAt(StatusField(&other, "metadata"), "name") == c.name) continue;
    if (api::StringAt(StatusField(&other, "spec"), "group") != group) continue;
    if (const json::object* accepted = StatusField(StatusField(&other, "status"), "acceptedNames");
        accepted != nullptr) {
      AddNames(taken, *accepted);
    }
  }
  for (const ResourceInfo& native : AllResources()) {
    // A Volcano kind's own CRD takes over its names (CheckServedNatively made sure they match).
    if (native.group != group || native.resource == plural) continue;
    taken.plurals.push_back(native.resource);
    taken.singulars.push_back(native.singular);
    for (const std::string& s : native.short_names) taken.short_names.push_back(s);
    taken.kinds.push_back(native.kind);
    taken.list_kinds.push_back(native.list_kind);
  }
  return taken;
}

// A CustomResourceDefinitionCondition set as apiextensions' SetCRDCondition does: the transition
// time moves only when the status does.
void SetCondition(json::array& conditions, std::string_view type, std::string_view status,
                  std::string_view reason, std::string_view message, const std::string& now) {
  for (json::value& existing : conditions) {
    json::object* o = existing.if_object();
    if (o == nullptr || api::StringAt(o, "type") != type) continue;
    if (api::StringAt(o, "status") != status) (*o)["lastTransitionTime"] = now;
    (*o)["status"] = status;
    (*o)["reason"] = reason;
    (*o)["message"] = message;
    return;
  }
  conditions.push_back(json::object{{"type", type},
                                    {"status", status},
                                    {"lastTransitionTime", now},
                                    {"reason", reason},
                                    {"message", message}});
}

bool ConditionIsTrue(const json::array& conditions, std::string_view type) {
  for (const json::value& existing : conditions) {
    const json::object* o = existing.if_object();
    if (o != nullptr && api::StringAt(o, "type") == type) return api::StringAt(o, "status") == "True";
  }
  return false;
}

}  // namespace

void SetCustomResourceDefinitionStatus(Context& c) {
  const json::object& spec = c.obj.at("spec").get_object();
  const std::string group = api::StringAt(&spec, "group");
  const json::object* names = StatusField(&spec, "names");
  json::object status;
  if (const json::value* s = c.obj.if_contains("status"); s != nullptr && s->is_object()) {
    status = s->get_object();
  }
  json::array conditions;
  if (const json::value* list = status.if_contains("conditions"); list && list->is_array()) {
    conditions = list->get_array();
  }
  const std::string now = api::FormatUnixTime(c.req.now_unix);

  std::optional<std::pair<std::string, std::string>> conflict =
      NameConflict(*names, TakenInGroup(c, group, api::StringAt(names, "plural")));
  if (conflict) {
    SetCondition(conditions, "NamesAccepted", "False", conflict->first, conflict->second, now);
    if (!ConditionIsTrue(conditions, "Established")) {
      SetCondition(conditions, "Established", "False", "NotAccepted", "not all names are accepted",
                   now);
    }
    if (!status.contains("acceptedNames")) {
      status["acceptedNames"] = json::object{{"plural", ""}, {"kind", ""}};
    }
  } else {
    status["acceptedNames"] = *names;
    SetCondition(conditions, "NamesAccepted", "True", "NoConflicts", "no conflicts found", now);
    if (!ConditionIsTrue(conditions, "Established")) {
      SetCondition(conditions, "Established", "True", "InitialNamesAccepted",
                   "the initial names have been accepted", now);
    }
  }
  status["conditions"] = std::move(conditions);

  // Every version objects were ever stored in, the storage version included.
  std::vector<std::string> stored = api::StringsAt(&status, "storedVersions");
  std::string storage;
  std::vector<std::string> declared;
  if (const json::value* versions = spec.if_contains("versions");
      versions != nullptr && versions->is_array()) {
    for (const json::value& v : versions->get_array()) {
      const json::object* version = v.if_object();
      declared.push_back(api::StringAt(version, "name"));
      const json::value* flag = version != nullptr ? version->if_contains("storage") : nullptr;
      if (flag != nullptr && flag->is_bool() && flag->get_bool()) {
        storage = api::StringAt(version, "name");
      }
    }
  }
  if (c.main_resource() && !storage.empty() && !NameTaken(stored, storage)) {
    stored.push_back(storage);
  }
  if (stored.empty()) {
    c.errs.Invalid("status.storedVersions", "[]string{}", "must have at least one stored version");
  }
  if (!storage.empty() && !stored.empty() && !NameTaken(stored, storage)) {
    c.errs.Invalid("status.storedVersions", api::GoQuote(storage),
                   "must have the storage version " + storage);
  }
  json::array stored_json;
  for (size_t i = 0; i < stored.size(); ++i) {
    if (!NameTaken(declared, stored[i])) {
      c.errs.InvalidString(fmt::format("status.storedVersions[{}]", i), stored[i],
                           "must appear in spec.versions");
    }
    stored_json.emplace_back(stored[i]);
  }
  status["storedVersions"] = std::move(stored_json);
  c.obj["status"] = std::move(status);
}

}  // namespace muster::apiserver::admission
