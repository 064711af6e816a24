// The tables of the built-in kinds outside the core group (table_support.h), after kube's
// pkg/printers/internalversion/printers.go: printPriorityClass, printLease,
// printPodDisruptionBudget; and apiextensions' CustomResourceDefinition, through the default
// table convertor of k8s.io/apiserver pkg/registry/rest/table.go.

#include <string>

#include "api/json_access.h"
#include "apiserver/descriptors/tables.h"
#include "apiserver/descriptors/table_support.h"

namespace muster::apiserver::table {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;

const object* ObjectOf(const value& v) { return v.if_object(); }

std::string_view NameOf(const value& v) {
  return api::StringViewAt(api::ObjectAt(ObjectOf(v), "metadata"), "name");
}

std::string CreatedAgo(const value& v, int64_t now_unix) {
  const object* meta = api::ObjectAt(ObjectOf(v), "metadata");
  return AgeCell(meta == nullptr ? nullptr : meta->if_contains("creationTimestamp"), now_unix);
}

// IntOrString.String(): the integer in decimal or the string as it is; "N/A" when unset.
std::string IntOrStringCell(const object* spec, std::string_view key) {
  const value* v = spec == nullptr ? nullptr : spec->if_contains(key);
  if (v == nullptr || v->is_null()) return "N/A";
  if (v->is_string()) return std::string(v->get_string());
  if (std::optional<int64_t> n = api::TruncatedInt64(*v)) return std::to_string(*n);
  return "N/A";
}

}  // namespace

array PriorityClassColumns() {
  return array{
      NameColumn(),
      ColumnDef("Value", "integer",
                "value represents the integer value of this priority class. This is the actual "
                "priority that pods receive when they have the name of this class in their pod "
                "spec."),
      ColumnDef("Global-Default", "boolean",
                "globalDefault specifies whether this PriorityClass should be considered as the "
                "default priority for pods that do not have any priority class."),
      AgeColumn(),
      ColumnDef("PreemptionPolicy", "string",
                "preemptionPolicy is the Policy for preempting pods with lower priority."),
  };
}

array PriorityClassCells(const value& pc, int64_t now_unix) {
  const object* obj = ObjectOf(pc);
  std::string_view policy = api::StringViewAt(obj, "preemptionPolicy");
  const value* global = obj == nullptr ? nullptr : obj->if_contains("globalDefault");
  const value* priority = obj == nullptr ? nullptr : obj->if_contains("value");
  return array{NameOf(pc),
               priority == nullptr ? 0 : api::TruncatedInt64(*priority).value_or(0),
               global != nullptr && global->is_bool() && global->get_bool(),
               CreatedAgo(pc, now_unix),
               policy.empty() ? std::string_view("<unset>") : policy};
}

array LeaseColumns() {
  return array{NameColumn(),
               ColumnDef("Holder", "string",
                         "holderIdentity contains the identity of the holder of a current "
                         "lease."),
               AgeColumn()};
}

array LeaseCells(const value& lease, int64_t now_unix) {
  return array{NameOf(lease),
               api::StringViewAt(api::ObjectAt(ObjectOf(lease), "spec"), "holderIdentity"),
               CreatedAgo(lease, now_unix)};
}

array PodDisruptionBudgetColumns() {
  return array{
      NameColumn(),
      ColumnDef("Min Available", "string", "The minimum number of pods that must be available."),
      ColumnDef("Max Unavailable", "string",
                "The maximum number of pods that may be unavailable."),
      ColumnDef("Allowed Disruptions", "integer",
                "Calculated number of pods that may be disrupted at this time."),
      AgeColumn(),
  };
}

array PodDisruptionBudgetCells(const value& pdb, int64_t now_unix) {
  const object* spec = api::ObjectAt(ObjectOf(pdb), "spec");
  const object* status = api::ObjectAt(ObjectOf(pdb), "status");
  const value* allowed = status == nullptr ? nullptr : status->if_contains("disruptionsAllowed");
  return array{NameOf(pdb), IntOrStringCell(spec, "minAvailable"),
               IntOrStringCell(spec, "maxUnavailable"),
               allowed == nullptr ? 0 : api::TruncatedInt64(*allowed).value_or(0),
               CreatedAgo(pdb, now_unix)};
}

array CustomResourceDefinitionColumns() {
  return array{NameColumn(),
               ColumnDef("Created At", "date",
                         "CreationTimestamp is a timestamp representing the server time when this "
                         "object was created. It is not guaranteed to be set in happens-before "
                         "order across separate operations. Clients may not set this value. It "
                         "is represented in RFC3339 form and is in UTC.")};
}

array CustomResourceDefinitionCells(const value& crd) {
  const object* meta = api::ObjectAt(ObjectOf(crd), "metadata");
  return array{NameOf(crd), api::StringViewAt(meta, "creationTimestamp")};
}

}  // namespace muster::apiserver::table
