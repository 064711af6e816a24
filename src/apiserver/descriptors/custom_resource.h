#pragma once

// The resources a CustomResourceDefinition (apiextensions.k8s.io/v1) makes the API server serve:
// one ResourceInfo per served version, carrying what only a CRD says (CustomResourceSpec): the
// version's structural schema (structural_schema.h), the status and scale subresources, the
// storage version its objects are kept in. The dynamic registry (apiserver/resource_registry.h)
// builds them from the stored CRDs; admission (admission/custom_resources.cc) prunes, defaults
// and validates through them, OpenAPI publishes their schemas.
//
// Conversion is `None` only: every served version reads and writes the same stored object, its
// apiVersion rewritten (kube's nopConverter); a `Webhook` strategy is refused by CRD validation.

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apiserver/descriptors/resources.h"
#include "apiserver/descriptors/structural_schema.h"
#include "boost/json/object.hpp"
#include "boost/json/value.hpp"

namespace muster::apiserver {

inline constexpr std::string_view kCrdGroup = "apiextensions.k8s.io";
inline constexpr std::string_view kCrdResource = "customresourcedefinitions";
// The store resource of CRDs ("customresourcedefinitions.apiextensions.k8s.io").
inline constexpr std::string_view kCrdStoreResource =
    "customresourcedefinitions.apiextensions.k8s.io";
// Held on every CRD until its custom resources are gone (kube's CRD finalizer controller).
inline constexpr std::string_view kCrdCleanupFinalizer =
    "customresourcecleanup.apiextensions.k8s.io";

// The scale subresource's paths (CustomResourceSubresourceScale).
struct ScaleSubresource {
  std::string spec_replicas_path;    // ".spec.replicas"
  std::string status_replicas_path;  // ".status.replicas"
  std::string label_selector_path;   // "" when not set
};

struct CustomResourceSpec {
  std::string crd_name;         // "widgets.example.com"
  std::string crd_uid;          // the CRD object's uid, for ownership and change detection
  std::string storage_version;  // the version objects are stored as ("v1")
  // The version's openAPIV3Schema as written (OpenAPI publishes it) and parsed.
  boost::json::object schema_json;
  std::shared_ptr<const StructuralSchema> schema;
  bool status = false;  // the status subresource
  std::optional<ScaleSubresource> scale;
  // Whether the CRD is being deleted: its resources are still read and deleted, not created.
  bool terminating = false;
};

// Kube's version order (k8s.io/apimachinery version.CompareKubeAwareVersionStrings): GA before
// beta before alpha, higher numbers first, anything else last by name. True when `a` sorts first.
bool KubeVersionBefore(std::string_view a, std::string_view b);

// The resources an accepted CRD serves: one per served version, in kube's version order (the
// first is the group's preferred version); empty unless its Established condition is True.
std::vector<ResourceInfo> CustomResourcesOf(const boost::json::object& crd);

// `obj` (a stored custom resource, in the storage version) as `resource` serves it: apiVersion
// rewritten to the resource's version when it differs. Returns whether it changed.
bool ConvertToServedVersion(const ResourceInfo& resource, boost::json::object& obj);

}  // namespace muster::apiserver
