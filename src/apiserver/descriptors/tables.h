#pragma once

// Server-side `kubectl get` tables (meta.k8s.io/v1 Table), as kube-apiserver prints them:
// built-in kinds with the columns of pkg/printers/internalversion/printers.go, custom resources
// with their CRDs' additionalPrinterColumns (tableconvertor.go), anything else Name + Age.
// The server always fills every column, priority-1 ("-o wide") ones included; kubectl hides
// those unless asked. Ages are formatted by the server, from `now_unix`.
//
// Every function is pure (time comes in as `now_unix`) and thread-safe.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/descriptors/resources.h"
#include "boost/json/array.hpp"
#include "boost/json/value.hpp"

namespace muster::apiserver {

// What each row's `object` holds (the `includeObject` query parameter).
enum class IncludeObject {
  kMetadata,  // PartialObjectMetadata: kind, apiVersion, metadata (the default)
  kObject,    // the whole object
  kNone,      // no `object`
};

struct TableOptions {
  IncludeObject include_object = IncludeObject::kMetadata;
  // Leave out columnDefinitions (watch events after the first may; kubectl keeps the header).
  bool no_headers = false;
  // Copied to metadata.continue when non-empty (a paged list).
  std::string continue_token;
};

// A Table of `objects` (each a full object of `resource`), metadata.resourceVersion set to
// `list_resource_version`. For a watch event or a single GET, pass one object. The objects are
// taken: a row's object (or its metadata) is moved out of them, not copied.
boost::json::value ToTable(const ResourceInfo& resource, std::vector<boost::json::value> objects,
                           const std::string& list_resource_version, int64_t now_unix);
boost::json::value ToTable(const ResourceInfo& resource, std::vector<boost::json::value> objects,
                           const std::string& list_resource_version, int64_t now_unix,
                           const TableOptions& options);

// The columnDefinitions of `resource` and the cells of one of its objects, in the same order.
boost::json::array TableColumns(const ResourceInfo& resource);
boost::json::array TableCells(const ResourceInfo& resource, const boost::json::value& object,
                              int64_t now_unix);

// True when an Accept header asks for a meta.k8s.io Table (`as=Table;g=meta.k8s.io;v=v1` or
// `v1beta1`, as kubectl get sends it).
bool AcceptsTable(std::string_view accept_header);
// The `includeObject` query parameter; empty or unknown means kMetadata.
IncludeObject ParseIncludeObject(std::string_view value);

// kube's duration.HumanDuration: "0s" … "119s", "2m" … "9m59s" (as "3m2s"), "10m" … "179m",
// "3h" … "7h59m", "8h" … "47h", "2d" … "7d23h", "8d" … "729d", "2y" … "7y364d", "8y" …; for
// negative durations "0s" down to -1s and "<invalid>" below.
std::string HumanDuration(int64_t seconds);
// An age cell: HumanDuration(now - timestamp), "<unknown>" when the timestamp is missing or empty
// and "<invalid>" when it is malformed.
std::string AgeCell(const boost::json::value* timestamp, int64_t now_unix);

// The value at a simple JSONPath (".status.state.phase", ".spec.tasks[0].name",
// "{.spec.queue}", and the filter CRDs' printer columns use:
// `.status.conditions[?(@.type=="Ready")].status`, the first match) in `object`; nullptr when any
// step is missing.
const boost::json::value* LookupJsonPath(const boost::json::value& object, std::string_view path);

}  // namespace muster::apiserver
