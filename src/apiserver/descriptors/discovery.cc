#include "apiserver/descriptors/discovery.h"

#include <string>
#include <vector>

#include "apiserver/descriptors/resources.h"
#include "boost/json/array.hpp"
#include "boost/json/object.hpp"

namespace muster::apiserver {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;

array Strings(const std::vector<std::string>& strings) {
  array result;
  for (const std::string& s : strings) result.emplace_back(s);
  return result;
}

object GroupVersionKind(std::string_view group, std::string_view version, std::string_view kind) {
  return object{{"group", group}, {"version", version}, {"kind", kind}};
}

// One apidiscovery.k8s.io/v2 APIResourceDiscovery.
object ResourceDiscovery(const ResourceInfo& info) {
  object resource{
      {"resource", info.resource},
      {"responseKind", GroupVersionKind(info.group, info.version, info.kind)},
      {"scope", info.namespaced ? "Namespaced" : "Cluster"},
      {"singularResource", info.singular},
      {"verbs", Strings(info.verbs)},
  };
  if (!info.short_names.empty()) resource["shortNames"] = Strings(info.short_names);
  if (!info.categories.empty()) resource["categories"] = Strings(info.categories);
  if (!info.subresources.empty()) {
    array subresources;
    for (const std::string& name : info.subresources) {
      SubresourceInfo sub = DescribeSubresource(info, name);
      subresources.emplace_back(object{
          {"subresource", name},
          {"responseKind", GroupVersionKind(sub.group, sub.version, sub.kind)},
          {"verbs", Strings(sub.verbs)},
      });
    }
    resource["subresources"] = std::move(subresources);
  }
  return resource;
}

object GroupDiscovery(const ResourceSet& set, const std::string& group,
                      const std::vector<GroupVersion>& versions) {
  array version_list;
  for (const GroupVersion& gv : versions) {
    array resources;
    for (const ResourceInfo* info : set.In(gv.group, gv.version)) {
      resources.emplace_back(ResourceDiscovery(*info));
    }
    version_list.emplace_back(object{
        {"version", gv.version},
        {"resources", std::move(resources)},
        {"freshness", "Current"},
    });
  }
  return object{{"metadata", object{{"name", group}}}, {"versions", std::move(version_list)}};
}

// Non-core groups in registry order, each with its versions (the first is preferred).
std::vector<std::pair<std::string, std::vector<GroupVersion>>> NonCoreGroups(
    const ResourceSet& set) {
  std::vector<std::pair<std::string, std::vector<GroupVersion>>> groups;
  for (const GroupVersion& gv : set.GroupVersions()) {
    if (gv.group.empty()) continue;
    auto it = groups.begin();
    while (it != groups.end() && it->first != gv.group) ++it;
    if (it == groups.end()) {
      groups.emplace_back(gv.group, std::vector<GroupVersion>{});
      it = groups.end() - 1;
    }
    it->second.push_back(gv);
  }
  return groups;
}

object ApiGroup(const std::string& name, const std::vector<GroupVersion>& versions) {
  array version_list;
  for (const GroupVersion& gv : versions) {
    version_list.emplace_back(
        object{{"groupVersion", gv.group + "/" + gv.version}, {"version", gv.version}});
  }
  value preferred = version_list.front();
  return object{{"name", name},
                {"versions", std::move(version_list)},
                {"preferredVersion", std::move(preferred)}};
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool AcceptsAggregatedDiscovery(std::string_view accept_header) {
  while (!accept_header.empty()) {
    size_t comma = accept_header.find(',');
    std::string_view range = accept_header.substr(0, comma);
    accept_header =
        comma == std::string_view::npos ? std::string_view{} : accept_header.substr(comma + 1);
    bool group = false;
    bool version = false;
    bool as = false;
    size_t semicolon = range.find(';');
    if (semicolon == std::string_view::npos) continue;
    std::string_view params = range.substr(semicolon + 1);
    while (!params.empty()) {
      size_t next = params.find(';');
      std::string_view param = Trim(params.substr(0, next));
      params = next == std::string_view::npos ? std::string_view{} : params.substr(next + 1);
      if (param == "g=apidiscovery.k8s.io") group = true;
      if (param == "v=v2") version = true;
      if (param == "as=APIGroupDiscoveryList") as = true;
    }
    if (group && version && as) return true;
  }
  return false;
}

value AggregatedDiscovery(bool core_group) {
  return AggregatedDiscovery(*BuiltinResources(), core_group);
}

value AggregatedDiscovery(const ResourceSet& set, bool core_group) {
  array items;
  if (core_group) {
    std::vector<GroupVersion> core;
    for (const GroupVersion& gv : set.GroupVersions()) {
      if (gv.group.empty()) core.push_back(gv);
    }
    items.emplace_back(GroupDiscovery(set, "", core));
  } else {
    for (const auto& [group, versions] : NonCoreGroups(set)) {
      items.emplace_back(GroupDiscovery(set, group, versions));
    }
  }
  return object{{"kind", "APIGroupDiscoveryList"},
                {"apiVersion", "apidiscovery.k8s.io/v2"},
                {"metadata", object{}},
                {"items", std::move(items)}};
}

value LegacyApiVersions(std::string_view server_address) {
  array versions;
  for (const GroupVersion& gv : ServedGroupVersions()) {
    if (gv.group.empty()) versions.emplace_back(gv.version);
  }
  return object{
      {"kind", "APIVersions"},
      {"versions", std::move(versions)},
      {"serverAddressByClientCIDRs",
       array{object{{"clientCIDR", "0.0.0.0/0"}, {"serverAddress", server_address}}}},
  };
}

value LegacyApiGroupList() { return LegacyApiGroupList(*BuiltinResources()); }

value LegacyApiGroupList(const ResourceSet& set) {
  array groups;
  for (const auto& [group, versions] : NonCoreGroups(set))
    groups.emplace_back(ApiGroup(group, versions));
  return object{{"kind", "APIGroupList"}, {"apiVersion", "v1"}, {"groups", std::move(groups)}};
}

std::optional<value> LegacyApiGroup(std::string_view group) {
  return LegacyApiGroup(*BuiltinResources(), group);
}

std::optional<value> LegacyApiGroup(const ResourceSet& set, std::string_view group) {
  for (const auto& [name, versions] : NonCoreGroups(set)) {
    if (name != group) continue;
    object result{{"kind", "APIGroup"}, {"apiVersion", "v1"}};
    object group_fields = ApiGroup(name, versions);
    for (auto& field : group_fields) result[field.key()] = std::move(field.value());
    return value(std::move(result));
  }
  return std::nullopt;
}

std::optional<value> ApiResourceList(std::string_view group, std::string_view version) {
  return ApiResourceList(*BuiltinResources(), group, version);
}

std::optional<value> ApiResourceList(const ResourceSet& set, std::string_view group,
                                     std::string_view version) {
  std::vector<const ResourceInfo*> infos = set.In(group, version);
  if (infos.empty()) return std::nullopt;
  array resources;
  for (const ResourceInfo* info : infos) {
    object resource{
        {"name", info->resource},         {"singularName", info->singular},
        {"namespaced", info->namespaced}, {"kind", info->kind},
        {"verbs", Strings(info->verbs)},
    };
    if (!info->short_names.empty()) resource["shortNames"] = Strings(info->short_names);
    if (!info->categories.empty()) resource["categories"] = Strings(info->categories);
    resources.emplace_back(std::move(resource));
    for (const std::string& name : info->subresources) {
      SubresourceInfo sub = DescribeSubresource(*info, name);
      object entry{
          {"name", info->resource + "/" + name}, {"singularName", ""},
          {"namespaced", info->namespaced},      {"kind", sub.kind},
          {"verbs", Strings(sub.verbs)},
      };
      // A subresource answering with another group's kind names it (pods/binding: core Binding).
      if (sub.group != info->group || sub.version != info->version) {
        entry["group"] = sub.group;
        entry["version"] = sub.version;
      }
      resources.emplace_back(std::move(entry));
    }
  }
  std::string group_version =
      group.empty() ? std::string(version) : std::string(group) + "/" + std::string(version);
  return value(object{{"kind", "APIResourceList"},
                      {"apiVersion", "v1"},
                      {"groupVersion", group_version},
                      {"resources", std::move(resources)}});
}

value VersionInfo() {
#if defined(__aarch64__)
  constexpr std::string_view kPlatform = "linux/arm64";
#else
  constexpr std::string_view kPlatform = "linux/amd64";
#endif
  return object{
      {"major", "1"},
      {"minor", "32"},
      {"gitVersion", "v1.32.0"},
      {"gitCommit", "0000000000000000000000000000000000000000"},
      {"gitTreeState", "clean"},
      {"buildDate", "2024-12-11T00:00:00Z"},
      {"goVersion", "go1.23"},
      {"compiler", "gc"},
      {"platform", kPlatform},
  };
}

}  // namespace muster::apiserver
