// Field selectors: which fields each resource lets `fieldSelector` name, and their values, as
// kube-apiserver defines them (pkg/registry/core/{pod,event,node,namespace}/strategy.go
// GetAttrs/ToSelectableFields; custom resources get metadata only).

#include <algorithm>
#include <array>
#include <string_view>

#include "apiserver/handlers.h"

namespace muster::apiserver {

namespace json = boost::json;

namespace {

constexpr std::array<std::string_view, 8> kPodFields = {
    "spec.nodeName",    "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
    "spec.hostNetwork", "status.phase",       "status.podIP",       "status.nominatedNodeName"};
constexpr std::array<std::string_view, 11> kEventFields = {"involvedObject.kind",
                                                           "involvedObject.namespace",
                                                           "involvedObject.name",
                                                           "involvedObject.uid",
                                                           "involvedObject.apiVersion",
                                                           "involvedObject.resourceVersion",
                                                           "involvedObject.fieldPath",
                                                           "reason",
                                                           "reportingComponent",
                                                           "source",
                                                           "type"};

bool IsCore(const ResourceInfo& r, std::string_view resource) {
  return r.group.empty() && r.resource == resource;
}

const json::value* At(const json::object& obj, std::string_view a) { return obj.if_contains(a); }

const json::value* At(const json::object& obj, std::string_view a, std::string_view b) {
  const json::value* v = obj.if_contains(a);
  if (v == nullptr || !v->is_object()) return nullptr;
  return v->get_object().if_contains(b);
}

// Of the value pointer At() finds, not an object and key as api::StringAt takes.
std::string Str(const json::value* v) {
  if (v == nullptr) return "";
  if (v->is_string()) return std::string(v->get_string());
  return "";
}

std::string Bool(const json::value* v) {
  return v != nullptr && v->is_bool() && v->get_bool() ? "true" : "false";
}

}  // namespace

bool FieldSelectable(const ResourceInfo& resource, std::string_view field) {
  if (field == "metadata.name" || field == "metadata.namespace") return true;
  if (IsCore(resource, "pods")) {
    return std::find(kPodFields.begin(), kPodFields.end(), field) != kPodFields.end();
  }
  if (IsCore(resource, "events")) {
    return std::find(kEventFields.begin(), kEventFields.end(), field) != kEventFields.end();
  }
  if (IsCore(resource, "nodes")) return field == "spec.unschedulable";
  if (IsCore(resource, "namespaces")) return field == "status.phase";
  return false;
}

std::vector<std::pair<std::string, std::string>> SelectableFields(const ResourceInfo& resource,
                                                                  const json::object& obj) {
  std::vector<std::pair<std::string, std::string>> out;
  out.emplace_back("metadata.name", Str(At(obj, "metadata", "name")));
  // Cluster-scoped objects have no namespace; kube reports "" for them.
  out.emplace_back("metadata.namespace", Str(At(obj, "metadata", "namespace")));
  if (IsCore(resource, "pods")) {
    out.emplace_back("spec.nodeName", Str(At(obj, "spec", "nodeName")));
    out.emplace_back("spec.restartPolicy", Str(At(obj, "spec", "restartPolicy")));
    out.emplace_back("spec.schedulerName", Str(At(obj, "spec", "schedulerName")));
    out.emplace_back("spec.serviceAccountName", Str(At(obj, "spec", "serviceAccountName")));
    out.emplace_back("spec.hostNetwork", Bool(At(obj, "spec", "hostNetwork")));
    out.emplace_back("status.phase", Str(At(obj, "status", "phase")));
    out.emplace_back("status.podIP", Str(At(obj, "status", "podIP")));
    out.emplace_back("status.nominatedNodeName", Str(At(obj, "status", "nominatedNodeName")));
  } else if (IsCore(resource, "events")) {
    for (std::string_view f :
         {"kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"}) {
      out.emplace_back(std::string("involvedObject.") + std::string(f),
                       Str(At(obj, "involvedObject", f)));
    }
    out.emplace_back("reason", Str(At(obj, "reason")));
    out.emplace_back("reportingComponent", Str(At(obj, "reportingComponent")));
    out.emplace_back("source", Str(At(obj, "source", "component")));
    out.emplace_back("type", Str(At(obj, "type")));
  } else if (IsCore(resource, "nodes")) {
    out.emplace_back("spec.unschedulable", Bool(At(obj, "spec", "unschedulable")));
  } else if (IsCore(resource, "namespaces")) {
    out.emplace_back("status.phase", Str(At(obj, "status", "phase")));
  }
  return out;
}

}  // namespace muster::apiserver
