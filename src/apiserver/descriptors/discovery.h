#pragma once

// Discovery documents, built from the resource registry (resources.h): aggregated discovery
// (apidiscovery.k8s.io/v2, one request each for /api and /apis, what kubectl 1.32 asks for first),
// the legacy per-group-version documents it falls back to, and /version.
//
// Every function is pure and deterministic (same registry, same bytes). Thread-safe. Those without
// a ResourceSet describe the compiled-in table; a server passes what it serves now.

#include <optional>
#include <string_view>

#include "apiserver/descriptors/resources.h"
#include "boost/json/value.hpp"

namespace muster::apiserver {

// The Content-Type an aggregated discovery reply must carry. Sent as plain application/json the
// same body is read as legacy discovery and kubectl reports `doesn't have a resource type`.
inline constexpr std::string_view kAggregatedDiscoveryContentType =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

// True when an Accept header asks for apidiscovery.k8s.io/v2 APIGroupDiscoveryList (kubectl and
// client-go send it ahead of plain application/json). Answer legacy discovery otherwise.
bool AcceptsAggregatedDiscovery(std::string_view accept_header);

// APIGroupDiscoveryList for `GET /api` (core_group: the "" group) or `GET /apis` (all others).
boost::json::value AggregatedDiscovery(bool core_group);
boost::json::value AggregatedDiscovery(const ResourceSet& set, bool core_group);

// Legacy `GET /api`: APIVersions. `server_address` is host:port as the client reached us.
boost::json::value LegacyApiVersions(std::string_view server_address);
// Legacy `GET /apis`: APIGroupList of every non-core group.
boost::json::value LegacyApiGroupList();
boost::json::value LegacyApiGroupList(const ResourceSet& set);
// `GET /apis/<group>` (legacy): one APIGroup; nullopt when the group is not served.
std::optional<boost::json::value> LegacyApiGroup(std::string_view group);
std::optional<boost::json::value> LegacyApiGroup(const ResourceSet& set, std::string_view group);
// `GET /api/v1` (group "") or `GET /apis/<group>/<version>`: APIResourceList, subresources as
// "pods/status" entries; nullopt when the group-version is not served.
std::optional<boost::json::value> ApiResourceList(std::string_view group, std::string_view version);
std::optional<boost::json::value> ApiResourceList(const ResourceSet& set, std::string_view group,
                                                  std::string_view version);

// `GET /version`. Minor "32": the gcloud kubectl dispatcher picks kubectl.1.<minor> from it.
boost::json::value VersionInfo();

}  // namespace muster::apiserver
