// Readers for the parts of a pod object the node agent acts on (pod_spec.h).

#include "node/pod_spec.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "fmt/format.h"
#include "node/json_access.h"

namespace muster::node {

namespace json = boost::json;
using common::Quantity;

namespace {

// A quantity as the API writes it ("500m", 2); nullopt when it is not one.
std::optional<Quantity> QuantityOf(const json::value& v) {
  std::string text;
  if (v.is_string()) {
    text = std::string(v.get_string());
  } else if (v.is_int64()) {
    text = std::to_string(v.get_int64());
  } else if (v.is_uint64()) {
    text = std::to_string(v.get_uint64());
  } else if (v.is_double()) {
    text = fmt::format("{}", v.get_double());
  } else {
    return std::nullopt;
  }
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  if (!q.ok()) return std::nullopt;
  return *q;
}

}  // namespace

std::optional<Quantity> ResourceOf(const json::object& container, std::string_view kind,
                                   std::string_view resource) {
  const json::object* resources = ObjectAt(container, "resources");
  if (resources == nullptr) return std::nullopt;
  const json::object* list = ObjectAt(*resources, kind);
  if (list == nullptr) return std::nullopt;
  const json::value* v = list->if_contains(resource);
  return v == nullptr ? std::nullopt : QuantityOf(*v);
}

api::ResourceList Quantities(const json::object* list) {
  api::ResourceList out;
  if (list == nullptr) return out;
  for (const auto& [resource, v] : *list) {
    if (std::optional<Quantity> q = QuantityOf(v)) out[std::string(resource)] = *q;
  }
  return out;
}

api::ResourceList ContainerRequests(const json::object& container) {
  const json::object* resources = ObjectAt(container, "resources");
  if (resources == nullptr) return {};
  api::ResourceList requests = Quantities(ObjectAt(*resources, "requests"));
  requests.merge(Quantities(ObjectAt(*resources, "limits")));  // keeps the requests given
  return requests;
}

std::map<std::string, int> DeviceCounts(const json::object& container) {
  std::map<std::string, int> counts;
  const json::object* resources = ObjectAt(container, "resources");
  if (resources == nullptr) return counts;
  for (const char* kind : {"requests", "limits"}) {  // limits last: they win
    const json::object* list = ObjectAt(*resources, kind);
    if (list == nullptr) continue;
    for (const auto& entry : *list) {
      const std::string name(entry.key().data(), entry.key().size());
      if (name.rfind("nvidia.com/", 0) != 0) continue;
      std::optional<Quantity> q = ResourceOf(container, kind, name);
      counts[name] = q ? static_cast<int>(std::clamp<int64_t>(q->Value(), 0, 1 << 20)) : 0;
    }
  }
  std::erase_if(counts, [](const auto& c) { return c.second == 0; });
  // A GPU share is part of one device, the one the scheduler recorded: the container sees it.
  if (!counts.contains(api::kGpuResource)) {
    for (const char* kind : {"requests", "limits"}) {
      std::optional<Quantity> q = ResourceOf(container, kind, api::kGpuShareResource);
      if (q && q->MilliValue() > 0) counts[api::kGpuResource] = 1;
    }
  }
  return counts;
}

std::string LabelOrAnnotation(const json::object& pod, std::string_view map, std::string_view key) {
  const json::object* meta = ObjectAt(pod, "metadata");
  if (meta == nullptr) return "";
  const json::object* m = ObjectAt(*meta, map);
  return m == nullptr ? "" : StringAt(*m, key);
}

std::string Annotation(const json::object& pod, std::string_view key) {
  return LabelOrAnnotation(pod, "annotations", key);
}

std::string PodDescription(const std::string& ns, const std::string& name, const std::string& uid) {
  return Cat(name, "_", ns, "(", uid, ")");
}

}  // namespace muster::node
