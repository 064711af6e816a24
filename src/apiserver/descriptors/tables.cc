#include "apiserver/descriptors/tables.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <string>
#include <utility>

#include "api/json_access.h"
#include "api/time.h"
#include "apiserver/descriptors/table_support.h"
#include "boost/json/object.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"

namespace muster::apiserver {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;

using table::AgeColumn;
using table::ArrayAt;
using table::BoolAt;
using table::ColumnDef;
using table::Get;
using table::IntAt;
using table::CronJobCells;
using table::CronJobColumns;
using table::JobCells;
using table::JobColumns;
using table::LeaseCells;
using table::LeaseColumns;
using table::Lower;
using table::NameColumn;
using table::NodeCells;
using table::NodeColumns;
using table::Path;
using table::PodCells;
using table::PodColumns;
using table::PodDisruptionBudgetCells;
using table::PodDisruptionBudgetColumns;
using table::PriorityClassCells;
using table::CustomResourceDefinitionCells;
using table::CustomResourceDefinitionColumns;
using table::PriorityClassColumns;
using table::Since;
using table::StrAt;

array NamespaceColumns() {
  return array{NameColumn(), ColumnDef("Status", "string", "The status of the namespace"),
               AgeColumn()};
}

// Upstream orders the wide cells between the default ones; columns and cells follow it.
array EventColumns() {
  return array{
      ColumnDef("Last Seen", "string",
                "The time at which the most recent occurrence of this event was recorded."),
      ColumnDef("Type", "string",
                "Type of this event (Normal, Warning), new types could be added in the future"),
      ColumnDef("Reason", "string",
                "This should be a short, machine understandable string that gives the reason "
                "for the transition into the object's current status."),
      ColumnDef("Object", "string", "The object that this event is about."),
      ColumnDef("Subobject", "string",
                "If referring to a piece of an object instead of an entire object, this string "
                "should contain a valid JSON/Go field access statement.",
                1),
      ColumnDef("Source", "string",
                "The component reporting this event. Should be a short machine understandable "
                "string.",
                1),
      ColumnDef("Message", "string",
                "A human-readable description of the status of this operation."),
      ColumnDef("First Seen", "string",
                "The time at which the event was first recorded. (Time of server receipt is in "
                "TypeMeta.)",
                1),
      ColumnDef("Count", "string", "The number of times this event has occurred.", 1),
      NameColumn(1),
  };
}

// printers.go serviceColumnDefinitions (descriptions shortened from ServiceSpec's).
array ServiceColumns() {
  return array{
      NameColumn(),
      ColumnDef("Type", "string",
                "type determines how the Service is exposed. Defaults to ClusterIP. Valid options "
                "are ExternalName, ClusterIP, NodePort, and LoadBalancer."),
      ColumnDef("Cluster-IP", "string",
                "clusterIP is the IP address of the service and is usually assigned randomly."),
      ColumnDef("External-IP", "string",
                "externalIPs is a list of IP addresses for which nodes in the cluster will also "
                "accept traffic for this service."),
      ColumnDef("Port(s)", "string", "The list of ports that are exposed by this service."),
      AgeColumn(),
      ColumnDef("Selector", "string",
                "Route service traffic to pods with label keys and values matching this "
                "selector.",
                1),
  };
}

// printers.go secretColumnDefinitions and serviceAccountColumnDefinitions.
array SecretColumns() {
  return array{NameColumn(), ColumnDef("Type", "string", "The type of the secret"),
               ColumnDef("Data", "string", "The number of entries in the secret"), AgeColumn()};
}

array ServiceAccountColumns() {
  return array{NameColumn(),
               ColumnDef("Secrets", "string", "The number of secrets in the service account"),
               AgeColumn()};
}

array CustomColumns(const ResourceInfo& resource) {
  array columns{NameColumn()};
  for (const PrinterColumn& column : resource.columns) {
    columns.emplace_back(
        ColumnDef(column.name, column.type, column.description, column.priority, column.format));
  }
  return columns;
}

array DefaultColumns() { return array{NameColumn(), AgeColumn()}; }

// --- Cells ---------------------------------------------------------------------------------------

array NamespaceCells(const value& ns, int64_t now_unix) {
  return array{StrAt(Path(ns, {"metadata", "name"})), StrAt(Path(ns, {"status", "phase"})),
               Since(ns, {"metadata", "creationTimestamp"}, now_unix)};
}

bool IsSet(const value* v) { return v != nullptr && v->is_string() && !v->get_string().empty(); }

// printEvent: timestamps fall back from the legacy fields to eventTime and series.
array EventCells(const value& event, int64_t now_unix) {
  std::string first_seen = IsSet(Get(&event, "firstTimestamp"))
                               ? AgeCell(Get(&event, "firstTimestamp"), now_unix)
                               : AgeCell(Get(&event, "eventTime"), now_unix);
  std::string last_seen = IsSet(Get(&event, "lastTimestamp"))
                              ? AgeCell(Get(&event, "lastTimestamp"), now_unix)
                              : first_seen;
  int64_t count = IntAt(Get(&event, "count"));
  if (const value* series = Get(&event, "series"); series != nullptr && series->is_object()) {
    last_seen = AgeCell(Get(series, "lastObservedTime"), now_unix);
    count = IntAt(Get(series, "count"));
  } else if (count == 0) {
    count = 1;
  }
  const value* involved = Get(&event, "involvedObject");
  std::string target = Lower(StrAt(Get(involved, "kind")));
  if (std::string_view name = StrAt(Get(involved, "name")); !name.empty()) {
    target = fmt::format("{}/{}", target, name);
  }
  std::string component(StrAt(Path(event, {"source", "component"})));
  if (component.empty()) component = StrAt(Get(&event, "reportingComponent"));
  std::string host(StrAt(Path(event, {"source", "host"})));
  if (host.empty()) host = StrAt(Get(&event, "reportingInstance"));
  std::string source = host.empty() ? component : fmt::format("{}, {}", component, host);
  std::string message(StrAt(Get(&event, "message")));
  const auto space = [](char ch) { return std::isspace(static_cast<unsigned char>(ch)) != 0; };
  message.erase(message.begin(), std::find_if_not(message.begin(), message.end(), space));
  message.erase(std::find_if_not(message.rbegin(), message.rend(), space).base(), message.end());
  return array{last_seen,
               StrAt(Get(&event, "type")),
               StrAt(Get(&event, "reason")),
               target,
               StrAt(Get(involved, "fieldPath")),
               source,
               message,
               first_seen,
               count,
               StrAt(Path(event, {"metadata", "name"}))};
}

// printService: the first cluster IP, the external address by type (getServiceExternalIP), the
// ports as "80/TCP" or "80:30080/TCP" (makePortString), the selector as labels.FormatLabels.
array ServiceCells(const value& svc, int64_t now_unix) {
  const value* spec = Get(&svc, "spec");
  const std::string_view type = StrAt(Get(spec, "type"));
  auto join = [](std::string& out, std::string_view part) {
    if (part.empty()) return;
    if (!out.empty()) out += ",";
    out += part;
  };
  std::string cluster_ip, external, ports, selector;
  for (const value& ip : ArrayAt(Get(spec, "clusterIPs"))) {
    if (cluster_ip.empty()) cluster_ip = StrAt(&ip);
  }
  if (type == "LoadBalancer") {
    for (const value& i : ArrayAt(Path(svc, {"status", "loadBalancer", "ingress"}))) {
      join(external, StrAt(Get(&i, StrAt(Get(&i, "ip")).empty() ? "hostname" : "ip")));
    }
  }
  for (const value& ip : ArrayAt(Get(spec, "externalIPs"))) join(external, StrAt(&ip));
  if (type == "ExternalName") external = std::string(StrAt(Get(spec, "externalName")));
  if (external.empty()) external = type == "LoadBalancer" ? "<pending>" : "<none>";
  for (const value& p : ArrayAt(Get(spec, "ports"))) {
    const int64_t node_port = IntAt(Get(&p, "nodePort"));
    join(ports, fmt::format("{}{}/{}", IntAt(Get(&p, "port")),
                            node_port > 0 ? fmt::format(":{}", node_port) : "",
                            StrAt(Get(&p, "protocol"))));
  }
  if (const value* sel = Get(spec, "selector"); sel != nullptr && sel->is_object()) {
    std::map<std::string_view, std::string_view> sorted;
    for (const auto& kv : sel->get_object()) sorted[kv.key()] = StrAt(&kv.value());
    for (const auto& [k, v] : sorted) join(selector, fmt::format("{}={}", k, v));
  }
  auto or_none = [](std::string s) { return s.empty() ? std::string("<none>") : s; };
  return array{StrAt(Path(svc, {"metadata", "name"})), type, or_none(cluster_ip), external,
               or_none(ports), Since(svc, {"metadata", "creationTimestamp"}, now_unix),
               or_none(selector)};
}

// printSecret (the number of keys in data) and printServiceAccount (of secrets).
array SecretCells(const value& secret, int64_t now_unix) {
  const value* data = Get(&secret, "data");
  const int64_t keys = data != nullptr && data->is_object()
                           ? static_cast<int64_t>(data->get_object().size())
                           : 0;
  return array{StrAt(Path(secret, {"metadata", "name"})), StrAt(Get(&secret, "type")), keys,
               Since(secret, {"metadata", "creationTimestamp"}, now_unix)};
}

array ServiceAccountCells(const value& sa, int64_t now_unix) {
  return array{StrAt(Path(sa, {"metadata", "name"})),
               static_cast<int64_t>(ArrayAt(Get(&sa, "secrets")).size()),
               Since(sa, {"metadata", "creationTimestamp"}, now_unix)};
}

// `v` with every object's keys in order, as encoding/json marshals a map.
value SortedKeys(const value& v) {
  if (v.is_array()) {
    array out;
    for (const value& item : v.get_array()) out.push_back(SortedKeys(item));
    return out;
  }
  if (!v.is_object()) return v;
  std::map<std::string_view, const value*> sorted;
  for (const auto& [key, item] : v.get_object()) sorted[key] = &item;
  boost::json::object out;
  for (const auto& [key, item] : sorted) out[key] = SortedKeys(*item);
  return out;
}

// tableconvertor.go cellForJSONValue: a missing or mistyped value is null.
value CustomCell(const PrinterColumn& column, const value* v, int64_t now_unix) {
  if (v == nullptr || v->is_null()) return nullptr;
  if (column.type == "integer") {
    if (v->is_int64() || v->is_uint64() || v->is_double()) return IntAt(v);
    return nullptr;
  }
  if (column.type == "number") {
    if (v->is_double()) return v->get_double();
    if (v->is_int64() || v->is_uint64()) return static_cast<double>(IntAt(v));
    return nullptr;
  }
  if (column.type == "boolean") return v->is_bool() ? value(v->get_bool()) : value(nullptr);
  if (column.type == "date") {
    if (!v->is_string()) return nullptr;
    return value(AgeCell(v, now_unix));
  }
  // "string" (and unknown types): strings as they are, other values printed as JSONPath would
  // (maps and lists as Go's json.Marshal writes them: keys sorted).
  if (v->is_string()) return v->get_string();
  if (v->is_bool()) return v->get_bool() ? "true" : "false";
  if (v->is_int64() || v->is_uint64()) return value(std::to_string(IntAt(v)));
  return value(boost::json::serialize(SortedKeys(*v)));
}

array CustomCells(const ResourceInfo& resource, const value& obj, int64_t now_unix) {
  array cells{StrAt(Path(obj, {"metadata", "name"}))};
  for (const PrinterColumn& column : resource.columns) {
    cells.emplace_back(CustomCell(column, LookupJsonPath(obj, column.json_path), now_unix));
  }
  return cells;
}

array DefaultCells(const value& obj, int64_t now_unix) {
  return array{StrAt(Path(obj, {"metadata", "name"})),
               Since(obj, {"metadata", "creationTimestamp"}, now_unix)};
}

bool Is(const ResourceInfo& r, std::string_view group, std::string_view resource) {
  return r.group == group && r.resource == resource;
}

value RowObject(value&& obj, IncludeObject include) {
  if (include == IncludeObject::kObject) return std::move(obj);
  object partial{{"kind", "PartialObjectMetadata"}, {"apiVersion", "meta.k8s.io/v1"}};
  value* metadata = obj.is_object() ? obj.get_object().if_contains("metadata") : nullptr;
  partial["metadata"] = metadata != nullptr ? std::move(*metadata) : value(object{});
  return partial;
}

}  // namespace

std::string HumanDuration(int64_t seconds) {
  if (seconds < -1) return "<invalid>";
  if (seconds < 0) return "0s";
  if (seconds < 60 * 2) return fmt::format("{}s", seconds);
  const int64_t minutes = seconds / 60;
  if (minutes < 10) {
    const int64_t s = seconds % 60;
    return s == 0 ? fmt::format("{}m", minutes) : fmt::format("{}m{}s", minutes, s);
  }
  if (minutes < 60 * 3) return fmt::format("{}m", minutes);
  const int64_t hours = seconds / 3600;
  if (hours < 8) {
    const int64_t m = minutes % 60;
    return m == 0 ? fmt::format("{}h", hours) : fmt::format("{}h{}m", hours, m);
  }
  if (hours < 48) return fmt::format("{}h", hours);
  if (hours < 24 * 8) {
    const int64_t h = hours % 24;
    return h == 0 ? fmt::format("{}d", hours / 24) : fmt::format("{}d{}h", hours / 24, h);
  }
  if (hours < 24 * 365 * 2) return fmt::format("{}d", hours / 24);
  if (hours < 24 * 365 * 8) {
    const int64_t dy = (hours / 24) % 365;
    return dy == 0 ? fmt::format("{}y", hours / 24 / 365)
                   : fmt::format("{}y{}d", hours / 24 / 365, dy);
  }
  return fmt::format("{}y", hours / 24 / 365);
}

std::string AgeCell(const value* timestamp, int64_t now_unix) {
  if (timestamp == nullptr || timestamp->is_null() ||
      (timestamp->is_string() && timestamp->get_string().empty())) {
    return "<unknown>";
  }
  if (!timestamp->is_string()) return "<invalid>";
  std::optional<int64_t> t = api::ParseUnixTime(timestamp->get_string());
  if (!t) return "<invalid>";
  return HumanDuration(now_unix - *t);
}

const value* LookupJsonPath(const value& obj, std::string_view path) {
  if (path.starts_with("{") && path.ends_with("}")) path = path.substr(1, path.size() - 2);
  const value* v = &obj;
  size_t pos = 0;
  while (pos < path.size() && v != nullptr) {
    if (path[pos] == '.') {
      ++pos;
      size_t end = path.find_first_of(".[", pos);
      if (end == std::string_view::npos) end = path.size();
      if (end > pos) v = Get(v, path.substr(pos, end - pos));
      pos = end;
    } else if (path.substr(pos).starts_with("[?(@.")) {
      // A filter, as CRDs' printer columns use it: [?(@.type=="Ready")], the first match.
      const size_t close = path.find(")]", pos);
      if (close == std::string_view::npos || !v->is_array()) return nullptr;
      const std::string_view filter = path.substr(pos + 5, close - pos - 5);
      const size_t eq = filter.find("==");
      if (eq == std::string_view::npos) return nullptr;
      std::string_view want = filter.substr(eq + 2);
      if (want.size() < 2 || (want.front() != '"' && want.front() != '\'') ||
          want.back() != want.front()) {
        return nullptr;
      }
      want = want.substr(1, want.size() - 2);
      const std::string field = "." + std::string(filter.substr(0, eq));
      const value* match = nullptr;
      for (const value& item : v->get_array()) {
        const value* got = LookupJsonPath(item, field);
        if (got != nullptr && got->is_string() && got->get_string() == want) {
          match = &item;
          break;
        }
      }
      v = match;
      pos = close + 2;
    } else if (path[pos] == '[') {
      size_t close = path.find(']', pos);
      if (close == std::string_view::npos) return nullptr;
      size_t index = 0;
      std::string_view digits = path.substr(pos + 1, close - pos - 1);
      auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
      if (ec != std::errc() || ptr != digits.data() + digits.size() || !v->is_array() ||
          index >= v->get_array().size()) {
        return nullptr;
      }
      v = &v->get_array()[index];
      pos = close + 1;
    } else {
      size_t end = path.find_first_of(".[", pos);
      if (end == std::string_view::npos) end = path.size();
      v = Get(v, path.substr(pos, end - pos));
      pos = end;
    }
  }
  return v;
}

array TableColumns(const ResourceInfo& r) {
  if (!r.columns.empty()) return CustomColumns(r);
  if (Is(r, "", "pods")) return PodColumns();
  if (Is(r, "", "nodes")) return NodeColumns();
  if (Is(r, "", "namespaces")) return NamespaceColumns();
  if (Is(r, "", "events")) return EventColumns();
  if (Is(r, "", "services")) return ServiceColumns();
  if (Is(r, "", "secrets")) return SecretColumns();
  if (Is(r, "", "serviceaccounts")) return ServiceAccountColumns();
  if (Is(r, "scheduling.k8s.io", "priorityclasses")) return PriorityClassColumns();
  if (Is(r, "coordination.k8s.io", "leases")) return LeaseColumns();
  if (Is(r, "policy", "poddisruptionbudgets")) return PodDisruptionBudgetColumns();
  if (Is(r, "batch", "jobs")) return JobColumns();
  if (Is(r, "batch", "cronjobs")) return CronJobColumns();
  if (Is(r, "apiextensions.k8s.io", "customresourcedefinitions")) {
    return CustomResourceDefinitionColumns();
  }
  return DefaultColumns();
}

array TableCells(const ResourceInfo& r, const value& obj, int64_t now_unix) {
  if (!r.columns.empty()) return CustomCells(r, obj, now_unix);
  if (Is(r, "", "pods")) return PodCells(obj, now_unix);
  if (Is(r, "", "nodes")) return NodeCells(obj, now_unix);
  if (Is(r, "", "namespaces")) return NamespaceCells(obj, now_unix);
  if (Is(r, "", "events")) return EventCells(obj, now_unix);
  if (Is(r, "", "services")) return ServiceCells(obj, now_unix);
  if (Is(r, "", "secrets")) return SecretCells(obj, now_unix);
  if (Is(r, "", "serviceaccounts")) return ServiceAccountCells(obj, now_unix);
  if (Is(r, "scheduling.k8s.io", "priorityclasses")) return PriorityClassCells(obj, now_unix);
  if (Is(r, "coordination.k8s.io", "leases")) return LeaseCells(obj, now_unix);
  if (Is(r, "policy", "poddisruptionbudgets")) return PodDisruptionBudgetCells(obj, now_unix);
  if (Is(r, "batch", "jobs")) return JobCells(obj, now_unix);
  if (Is(r, "batch", "cronjobs")) return CronJobCells(obj, now_unix);
  if (Is(r, "apiextensions.k8s.io", "customresourcedefinitions")) {
    return CustomResourceDefinitionCells(obj);
  }
  return DefaultCells(obj, now_unix);
}

value ToTable(const ResourceInfo& resource, std::vector<value> objects,
              const std::string& list_resource_version, int64_t now_unix) {
  return ToTable(resource, std::move(objects), list_resource_version, now_unix, TableOptions{});
}

value ToTable(const ResourceInfo& resource, std::vector<value> objects,
              const std::string& list_resource_version, int64_t now_unix,
              const TableOptions& options) {
  object metadata{{"resourceVersion", list_resource_version}};
  if (!options.continue_token.empty()) metadata["continue"] = options.continue_token;
  array rows;
  rows.reserve(objects.size());
  for (value& obj : objects) {
    object row{{"cells", TableCells(resource, obj, now_unix)}};
    // printPod marks finished pods; kubectl uses it to tell them apart.
    if (resource.group.empty() && resource.resource == "pods") {
      std::string_view phase = StrAt(Path(obj, {"status", "phase"}));
      if (phase == "Succeeded" || phase == "Failed") {
        row["conditions"] =
            array{object{{"type", "Completed"},
                         {"status", "True"},
                         {"reason", phase},
                         {"message", phase == "Succeeded" ? "The pod has completed successfully."
                                                          : "The pod failed."}}};
      }
    }
    if (options.include_object != IncludeObject::kNone) {
      row["object"] = RowObject(std::move(obj), options.include_object);
    }
    rows.emplace_back(std::move(row));
  }
  object table{
      {"kind", "Table"}, {"apiVersion", "meta.k8s.io/v1"}, {"metadata", std::move(metadata)}};
  table["columnDefinitions"] = options.no_headers ? array{} : TableColumns(resource);
  table["rows"] = std::move(rows);
  return table;
}

bool AcceptsTable(std::string_view accept_header) {
  while (!accept_header.empty()) {
    size_t comma = accept_header.find(',');
    std::string_view range = accept_header.substr(0, comma);
    accept_header =
        comma == std::string_view::npos ? std::string_view{} : accept_header.substr(comma + 1);
    bool as_table = false;
    bool group = false;
    bool version = false;
    size_t semicolon = range.find(';');
    while (semicolon != std::string_view::npos) {
      range = range.substr(semicolon + 1);
      semicolon = range.find(';');
      std::string_view param = range.substr(0, semicolon);
      while (!param.empty() && param.front() == ' ') param.remove_prefix(1);
      while (!param.empty() && param.back() == ' ') param.remove_suffix(1);
      if (param == "as=Table") as_table = true;
      if (param == "g=meta.k8s.io") group = true;
      if (param == "v=v1" || param == "v=v1beta1") version = true;
    }
    if (as_table && group && version) return true;
  }
  return false;
}

IncludeObject ParseIncludeObject(std::string_view v) {
  if (v == "Object") return IncludeObject::kObject;
  if (v == "None") return IncludeObject::kNone;
  return IncludeObject::kMetadata;
}

}  // namespace muster::apiserver
