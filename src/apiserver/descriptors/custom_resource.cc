#include "apiserver/descriptors/custom_resource.h"
#include "api/json_access.h"

#include <algorithm>
#include <charconv>
#include <utility>

namespace muster::apiserver {
namespace {

namespace json = boost::json;

const json::object* CrdObject(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
}

std::string CrdString(const json::object* o, std::string_view key) {
  if (o == nullptr) return "";
  const json::value* v = o->if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : "";
}

bool CrdBool(const json::object* o, std::string_view key) {
  if (o == nullptr) return false;
  const json::value* v = o->if_contains(key);
  return v != nullptr && v->is_bool() && v->get_bool();
}

bool ConditionTrue(const json::object& crd, std::string_view type) {
  const json::object* status = CrdObject(crd, "status");
  if (status == nullptr) return false;
  const json::value* conditions = status->if_contains("conditions");
  if (conditions == nullptr || !conditions->is_array()) return false;
  for (const json::value& c : conditions->get_array()) {
    if (!c.is_object()) continue;
    if (CrdString(&c.get_object(), "type") == type) {
      return CrdString(&c.get_object(), "status") == "True";
    }
  }
  return false;
}

// A kube-aware version: v<major>[(alpha|beta)<minor>]; rank 3 GA, 2 beta, 1 alpha, 0 other.
struct KubeVersion {
  int rank = 0;
  int major = 0;
  int minor = 0;
};

KubeVersion ParseKubeVersion(std::string_view v) {
  KubeVersion out;
  if (v.size() < 2 || v[0] != 'v') return out;
  const char* begin = v.data() + 1;
  const char* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(begin, end, out.major);
  if (ec != std::errc() || p == begin || out.major <= 0) return KubeVersion{};
  std::string_view rest(p, static_cast<size_t>(end - p));
  if (rest.empty()) {
    out.rank = 3;
    return out;
  }
  int rank = 0;
  if (rest.starts_with("beta")) {
    rank = 2;
    rest.remove_prefix(4);
  } else if (rest.starts_with("alpha")) {
    rank = 1;
    rest.remove_prefix(5);
  } else {
    return KubeVersion{};
  }
  auto [q, ec2] = std::from_chars(rest.data(), rest.data() + rest.size(), out.minor);
  if (ec2 != std::errc() || q != rest.data() + rest.size() || out.minor <= 0) return KubeVersion{};
  out.rank = rank;
  return out;
}

PrinterColumn ColumnOf(const json::object& c) {
  PrinterColumn column;
  column.name = CrdString(&c, "name");
  column.type = CrdString(&c, "type");
  column.json_path = CrdString(&c, "jsonPath");
  column.description = CrdString(&c, "description");
  column.format = CrdString(&c, "format");
  if (const json::value* p = c.if_contains("priority"); p != nullptr && p->is_int64()) {
    column.priority = static_cast<int>(p->get_int64());
  }
  return column;
}

}  // namespace

bool KubeVersionBefore(std::string_view a, std::string_view b) {
  const KubeVersion x = ParseKubeVersion(a);
  const KubeVersion y = ParseKubeVersion(b);
  if (x.rank != y.rank) return x.rank > y.rank;
  if (x.rank == 0) return a < b;
  if (x.major != y.major) return x.major > y.major;
  return x.minor > y.minor;
}

std::vector<ResourceInfo> CustomResourcesOf(const json::object& crd) {
  std::vector<ResourceInfo> out;
  if (!ConditionTrue(crd, "Established")) return out;
  const json::object* spec = CrdObject(crd, "spec");
  if (spec == nullptr) return out;
  const json::object* metadata = CrdObject(crd, "metadata");
  // What is served is what was accepted (the names of status.acceptedNames).
  const json::object* status = CrdObject(crd, "status");
  const json::object* names = status != nullptr ? CrdObject(*status, "acceptedNames") : nullptr;
  if (names == nullptr || CrdString(names, "plural").empty()) names = CrdObject(*spec, "names");
  const json::value* versions = spec->if_contains("versions");
  if (names == nullptr || versions == nullptr || !versions->is_array()) return out;

  std::string storage_version;
  for (const json::value& v : versions->get_array()) {
    if (v.is_object() && CrdBool(&v.get_object(), "storage")) {
      storage_version = CrdString(&v.get_object(), "name");
    }
  }
  for (const json::value& v : versions->get_array()) {
    if (!v.is_object() || !CrdBool(&v.get_object(), "served")) continue;
    const json::object& version = v.get_object();
    ResourceInfo info;
    info.group = CrdString(spec, "group");
    info.version = CrdString(&version, "name");
    info.resource = CrdString(names, "plural");
    info.singular = CrdString(names, "singular");
    info.kind = CrdString(names, "kind");
    info.list_kind = CrdString(names, "listKind");
    if (info.list_kind.empty()) info.list_kind = info.kind + "List";
    info.namespaced = CrdString(spec, "scope") != "Cluster";
    info.builtin = false;
    info.short_names = api::StringsAt(names, "shortNames");
    info.categories = api::StringsAt(names, "categories");
    info.verbs = {"create", "delete", "deletecollection", "get",
                  "list",   "patch",  "update",           "watch"};

    auto custom = std::make_shared<CustomResourceSpec>();
    custom->crd_name = CrdString(metadata, "name");
    custom->crd_uid = CrdString(metadata, "uid");
    custom->storage_version = storage_version;
    custom->terminating = metadata != nullptr && metadata->contains("deletionTimestamp");
    if (const json::object* schema = CrdObject(version, "schema")) {
      if (const json::object* open_api = CrdObject(*schema, "openAPIV3Schema")) {
        custom->schema_json = *open_api;
      }
    }
    custom->schema =
        std::make_shared<const StructuralSchema>(ParseStructuralSchema(custom->schema_json));
    if (const json::object* subresources = CrdObject(version, "subresources")) {
      if (CrdObject(*subresources, "status") != nullptr) {
        custom->status = true;
        info.subresources.push_back("status");
      }
      if (const json::object* scale = CrdObject(*subresources, "scale")) {
        custom->scale = ScaleSubresource{CrdString(scale, "specReplicasPath"),
                                         CrdString(scale, "statusReplicasPath"),
                                         CrdString(scale, "labelSelectorPath")};
        info.subresources.push_back("scale");
      }
    }
    if (const json::value* columns = version.if_contains("additionalPrinterColumns");
        columns != nullptr && columns->is_array() && !columns->get_array().empty()) {
      for (const json::value& c : columns->get_array()) {
        if (c.is_object()) info.columns.push_back(ColumnOf(c.get_object()));
      }
    } else {
      // Without columns kube's table shows the age (apiextensions' default column).
      info.columns.push_back(PrinterColumn{"Age", "date", ".metadata.creationTimestamp", "", 0,
                                           ""});
    }
    info.custom = std::move(custom);
    out.push_back(std::move(info));
  }
  std::stable_sort(out.begin(), out.end(), [](const ResourceInfo& a, const ResourceInfo& b) {
    return KubeVersionBefore(a.version, b.version);
  });
  return out;
}

bool ConvertToServedVersion(const ResourceInfo& resource, json::object& obj) {
  const std::string api_version = resource.ApiVersion();
  const json::value* current = obj.if_contains("apiVersion");
  if (current != nullptr && current->is_string() && current->get_string() == api_version) {
    return false;
  }
  obj["apiVersion"] = api_version;
  return true;
}

}  // namespace muster::apiserver
