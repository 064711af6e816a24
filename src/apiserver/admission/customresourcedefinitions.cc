#include "apiserver/admission/kinds.h"

// CustomResourceDefinitions (apiextensions.k8s.io/v1): the defaults of
// pkg/apis/apiextensions/v1/defaults.go, the validation of pkg/apis/apiextensions/validation
// (ValidateCustomResourceDefinition and ...Update, with its messages: `metadata.name: Invalid
// value: "x": must be spec.names.plural+"."+spec.group`, `spec.versions: Invalid value: ...: must
// have exactly one version marked as storage version`, the schema checks of
// descriptors/structural_schema.h), then muster's own rules:
//   - a CRD may not redefine a resource muster serves as built in (leases.coordination.k8s.io);
//     one for a Volcano kind muster serves itself (jobs.batch.volcano.sh, as `kubectl apply -f`
//     of Volcano's or muster's CRDs installs) is accepted when it names the same kind and scope,
//     and stored without changing what is served;
//   - conversion webhooks are not called: a CRD serving several versions must use `None`.
// The status the naming and establishing controllers would write is set at once
// (customresourcedefinition_status.cc).

#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <utility>

#include "apiserver/admission/context.h"
#include "apiserver/descriptors/custom_resource.h"
#include "apiserver/descriptors/structural_schema.h"
#include "fmt/format.h"

namespace muster::apiserver::admission {

// customresourcedefinition_status.cc
void SetCustomResourceDefinitionStatus(Context& c);

namespace {

const json::object* CrdField(const json::object* o, std::string_view key) {
  if (o == nullptr) return nullptr;
  const json::value* v = o->if_contains(key);
  return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
}

std::string CrdText(const json::object* o, std::string_view key) {
  if (o == nullptr) return "";
  const json::value* v = o->if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : "";
}

bool CrdFlag(const json::object* o, std::string_view key) {
  if (o == nullptr) return false;
  const json::value* v = o->if_contains(key);
  return v != nullptr && v->is_bool() && v->get_bool();
}

std::string LowerCase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

std::string JoinedProblems(const std::vector<std::string>& messages) {
  std::string out;
  for (const std::string& m : messages) {
    if (!out.empty()) out += ",";
    out += m;
  }
  return out;
}

// SetDefaults_CustomResourceDefinitionSpec: singular and listKind from the kind, conversion None.
void DefaultSpec(json::object& spec) {
  if (json::value* names = spec.if_contains("names"); names != nullptr && names->is_object()) {
    json::object& n = names->get_object();
    const std::string kind = CrdText(&n, "kind");
    if (CrdText(&n, "singular").empty() && !kind.empty()) n["singular"] = LowerCase(kind);
    if (CrdText(&n, "listKind").empty() && !kind.empty()) n["listKind"] = kind + "List";
  }
  json::value* conversion = spec.if_contains("conversion");
  if (conversion == nullptr || conversion->is_null()) {
    spec["conversion"] = json::object{{"strategy", "None"}};
  } else if (conversion->is_object() && CrdText(&conversion->get_object(), "strategy").empty()) {
    conversion->get_object()["strategy"] = "None";
  }
}

// The spec.versions value as field errors print it (a short form of Go's %#v).
std::string VersionsValue(const json::array& versions) {
  std::string out = "[]apiextensions.CustomResourceDefinitionVersion{";
  for (size_t i = 0; i < versions.size(); ++i) {
    const json::object* v = versions[i].if_object();
    if (i > 0) out += ", ";
    out += fmt::format("{{Name:\"{}\", Served:{}, Storage:{}}}", CrdText(v, "name"),
                       CrdFlag(v, "served"), CrdFlag(v, "storage"));
  }
  return out + "}";
}

void ValidateNames(Errors& errs, const json::object* names, const std::string& path) {
  auto dns1035 = [&](std::string_view key, const std::string& value, const std::string& prefix) {
    if (value.empty()) return;
    std::vector<std::string> problems = Dns1035LabelErrors(key == "kind" || key == "listKind"
                                                               ? LowerCase(value)
                                                               : value);
    if (!problems.empty()) {
      errs.InvalidString(fmt::format("{}.{}", path, key), value, prefix + JoinedProblems(problems));
    }
  };
  dns1035("plural", CrdText(names, "plural"), "");
  dns1035("singular", CrdText(names, "singular"), "");
  const std::string kind = CrdText(names, "kind");
  const std::string list_kind = CrdText(names, "listKind");
  dns1035("kind", kind, "may have mixed case, but should otherwise match: ");
  dns1035("listKind", list_kind, "may have mixed case, but should otherwise match: ");
  for (std::string_view key : {"shortNames", "categories"}) {
    const json::value* list = names != nullptr ? names->if_contains(key) : nullptr;
    if (list == nullptr || !list->is_array()) continue;
    for (size_t i = 0; i < list->get_array().size(); ++i) {
      const json::value& item = list->get_array()[i];
      const std::string value = item.is_string() ? std::string(item.get_string()) : "";
      std::vector<std::string> problems = Dns1035LabelErrors(value);
      if (!problems.empty()) {
        errs.InvalidString(fmt::format("{}.{}[{}]", path, key, i), value, JoinedProblems(problems));
      }
    }
  }
  if (!kind.empty() && kind == list_kind) {
    errs.InvalidString(path + ".listKind", list_kind, "kind and listKind may not be the same");
  }
}

// validateSimpleJSONPath, and the prefix a scale path must have.
void ValidateJsonPath(Errors& errs, const std::string& field, const std::string& value,
                      std::string_view under) {
  if (value.empty()) {
    errs.InvalidString(field, value, "must not be empty");
  } else if (value[0] != '.') {
    errs.InvalidString(field, value, "must be a simple json path starting with .");
  } else if (under == ".spec. or .status.") {
    if (!value.starts_with(".spec.") && !value.starts_with(".status.")) {
      errs.InvalidString(field, value, "should be a json path under either .spec or .status");
    }
  } else if (!under.empty() && !value.starts_with(under)) {
    errs.InvalidString(
        field, value,
        fmt::format("should be a json path under {}", under.substr(0, under.size() - 1)));
  }
}

void ValidateSubresources(Errors& errs, const json::object* subresources, const std::string& path) {
  const json::object* scale = CrdField(subresources, "scale");
  if (scale == nullptr) return;
  const std::string spec_path = CrdText(scale, "specReplicasPath");
  if (spec_path.empty()) {
    errs.Required(path + ".scale.specReplicasPath");
  } else {
    ValidateJsonPath(errs, path + ".scale.specReplicasPath", spec_path, ".spec.");
  }
  const std::string status_path = CrdText(scale, "statusReplicasPath");
  if (status_path.empty()) {
    errs.Required(path + ".scale.statusReplicasPath");
  } else {
    ValidateJsonPath(errs, path + ".scale.statusReplicasPath", status_path, ".status.");
  }
  if (const std::string selector = CrdText(scale, "labelSelectorPath"); !selector.empty()) {
    ValidateJsonPath(errs, path + ".scale.labelSelectorPath", selector, ".spec. or .status.");
  }
}

void ValidateColumns(Errors& errs, const json::value* columns, const std::string& path) {
  if (columns == nullptr || !columns->is_array()) return;
  static const std::set<std::string_view> kTypes{"boolean", "date", "integer", "number",
                                                 "string"};
  static const std::set<std::string_view> kFormats{"byte",  "date",  "date-time", "double",
                                                   "float", "int32", "int64",     "password"};
  const json::array& list = columns->get_array();
  for (size_t i = 0; i < list.size(); ++i) {
    const json::object* col = list[i].if_object();
    const std::string at = fmt::format("{}[{}]", path, i);
    if (CrdText(col, "name").empty()) errs.Required(at + ".name");
    const std::string type = CrdText(col, "type");
    if (type.empty()) {
      errs.Required(at + ".type", "must be one of boolean,date,integer,number,string");
    } else if (!kTypes.contains(type)) {
      errs.InvalidString(at + ".type", type, "must be one of boolean,date,integer,number,string");
    }
    if (const std::string format = CrdText(col, "format");
        !format.empty() && !kFormats.contains(format)) {
      errs.InvalidString(at + ".format", format,
                         "must be one of byte,date,date-time,double,float,int32,int64,password");
    }
    const std::string json_path = CrdText(col, "jsonPath");
    if (json_path.empty()) {
      errs.Required(at + ".jsonPath");
    } else {
      ValidateJsonPath(errs, at + ".jsonPath", json_path, "");
    }
  }
}

void ValidateVersions(Context& c, const json::object& spec) {
  const json::value* versions = spec.if_contains("versions");
  const json::array empty;
  const json::array& list = versions != nullptr && versions->is_array() ? versions->get_array()
                                                                         : empty;
  int storage = 0;
  int served = 0;
  std::set<std::string> seen;
  bool unique = true;
  for (size_t i = 0; i < list.size(); ++i) {
    const json::object* version = list[i].if_object();
    const std::string path = fmt::format("spec.versions[{}]", i);
    const std::string name = CrdText(version, "name");
    if (CrdFlag(version, "storage")) ++storage;
    if (CrdFlag(version, "served")) ++served;
    if (!seen.insert(name).second) unique = false;
    if (std::vector<std::string> problems = Dns1035LabelErrors(name); !problems.empty()) {
      c.errs.InvalidString(path + ".name", name, JoinedProblems(problems));
    }
    const json::object* subresources = CrdField(version, "subresources");
    const json::object* schema = CrdField(version, "schema");
    const json::value* open_api = schema != nullptr ? schema->if_contains("openAPIV3Schema")
                                                    : nullptr;
    AppendSchemaViolations(c.errs, CheckCrdSchema(open_api != nullptr ? *open_api : json::value(),
                                                  path + ".schema.openAPIV3Schema",
                                                  CrdField(subresources, "status") != nullptr));
    ValidateSubresources(c.errs, subresources, path + ".subresources");
    ValidateColumns(c.errs, version != nullptr ? version->if_contains("additionalPrinterColumns")
                                               : nullptr,
                    path + ".additionalPrinterColumns");
  }
  if (!unique) {
    c.errs.Invalid("spec.versions", VersionsValue(list), "must contain unique version names");
  }
  if (storage != 1) {
    c.errs.Invalid("spec.versions", VersionsValue(list),
                   "must have exactly one version marked as storage version");
  }
  const json::object* conversion = CrdField(&spec, "conversion");
  const std::string strategy = CrdText(conversion, "strategy");
  if (strategy.empty()) {
    c.errs.Required("spec.conversion.strategy");
  } else if (strategy != "None" && strategy != "Webhook") {
    c.errs.NotSupported("spec.conversion.strategy", strategy, {"None", "Webhook"});
  } else if (strategy == "Webhook" && served > 1) {
    c.errs.Forbidden("spec.conversion.strategy",
                     "muster does not call conversion webhooks: a CustomResourceDefinition that "
                     "serves several versions must use the strategy None");
  }
}

// What muster serves itself under the CRD's group and plural: a built-in kind is refused, a
// Volcano kind accepted when the CRD says the same kind and scope.
void CheckServedNatively(Context& c, const std::string& group, const json::object* names,
                         const std::string& scope) {
  const std::string plural = CrdText(names, "plural");
  for (const ResourceInfo& native : AllResources()) {
    if (native.group != group || native.resource != plural) continue;
    const std::string served = fmt::format("{}.{}", plural, group);
    if (native.builtin) {
      c.errs.Forbidden("spec.names.plural",
                       fmt::format("{} is a built-in resource that muster serves; a "
                                   "CustomResourceDefinition may not redefine it",
                                   served));
      return;
    }
    const std::string native_scope = native.namespaced ? "Namespaced" : "Cluster";
    if (CrdText(names, "kind") != native.kind || scope != native_scope) {
      c.errs.Forbidden("spec.names.kind",
                       fmt::format("muster serves {} itself, as kind {} ({}); a "
                                   "CustomResourceDefinition for it must name the same kind and "
                                   "scope",
                                   served, native.kind, native_scope));
    }
    return;
  }
}

void ValidateUpdate(Context& c, const json::object& spec, const json::object& old) {
  const json::object* old_spec = CrdField(&old, "spec");
  auto immutable = [&](const std::string& field, const std::string& now, const std::string& was) {
    if (now != was) c.errs.InvalidString(field, now, "field is immutable");
  };
  immutable("spec.group", CrdText(&spec, "group"), CrdText(old_spec, "group"));
  immutable("spec.names.plural", CrdText(CrdField(&spec, "names"), "plural"),
            CrdText(CrdField(old_spec, "names"), "plural"));
  bool established = false;
  if (const json::object* status = CrdField(&old, "status")) {
    if (const json::value* conditions = status->if_contains("conditions");
        conditions != nullptr && conditions->is_array()) {
      for (const json::value& cond : conditions->get_array()) {
        const json::object* o = cond.if_object();
        if (CrdText(o, "type") == "Established" && CrdText(o, "status") == "True") {
          established = true;
        }
      }
    }
  }
  if (established) {
    immutable("spec.scope", CrdText(&spec, "scope"), CrdText(old_spec, "scope"));
    immutable("spec.names.kind", CrdText(CrdField(&spec, "names"), "kind"),
              CrdText(CrdField(old_spec, "names"), "kind"));
  }
}

}  // namespace

std::optional<ApiError> AdmitCustomResourceDefinition(Context& c) {
  json::value* spec_value = c.obj.if_contains("spec");
  if (spec_value == nullptr || !spec_value->is_object()) {
    c.errs.Required("spec");
    return std::nullopt;
  }
  json::object& spec = spec_value->get_object();
  DefaultSpec(spec);

  const std::string group = CrdText(&spec, "group");
  const json::object* names = CrdField(&spec, "names");
  const std::string plural = CrdText(names, "plural");
  if (c.name != fmt::format("{}.{}", plural, group)) {
    c.errs.InvalidString("metadata.name", c.name, R"(must be spec.names.plural+"."+spec.group)");
  }
  if (group.empty()) {
    c.errs.Required("spec.group");
  } else if (std::vector<std::string> problems = Dns1123SubdomainErrors(group);
             !problems.empty()) {
    c.errs.InvalidString("spec.group", group, JoinedProblems(problems));
  } else if (group.find('.') == std::string::npos) {
    c.errs.InvalidString("spec.group", group, "should be a domain with at least one dot");
  }
  // Kubernetes' own groups need API review (kube's apiapproval).
  const bool protected_group = group == "k8s.io" || group == "kubernetes.io" ||
                               group.ends_with(".k8s.io") || group.ends_with(".kubernetes.io");
  if (protected_group) {
    const json::object* meta = CrdField(&c.obj, "metadata");
    if (CrdText(CrdField(meta, "annotations"), "api-approved.kubernetes.io").empty()) {
      c.errs.Required("metadata.annotations[api-approved.kubernetes.io]",
                      "protected groups must have approval annotation "
                      "\"api-approved.kubernetes.io\", see "
                      "https://github.com/kubernetes/enhancements/pull/1111");
    }
  }
  const std::string scope = CrdText(&spec, "scope");
  if (scope.empty()) {
    c.errs.Required("spec.scope");
  } else if (scope != "Cluster" && scope != "Namespaced") {
    c.errs.NotSupported("spec.scope", scope, {"Cluster", "Namespaced"});
  }
  ValidateVersions(c, spec);
  for (std::string_view key : {"plural", "singular", "kind", "listKind"}) {
    if (CrdText(names, key).empty()) c.errs.Required(fmt::format("spec.names.{}", key));
  }
  ValidateNames(c.errs, names, "spec.names");
  if (!c.create()) ValidateUpdate(c, spec, *c.req.old);
  if (!group.empty() && !plural.empty()) CheckServedNatively(c, group, names, scope);
  if (!c.errs.empty()) return std::nullopt;
  SetCustomResourceDefinitionStatus(c);
  return std::nullopt;
}

}  // namespace muster::apiserver::admission
