#pragma once

// What every kind's admission step works with: the request context (the object, its name and
// namespace, the type problems and field errors found so far), the refusal its type problems
// get, the name rules of apimachinery pkg/util/validation (api/names.h), and lookups of other
// objects in the store (the admission plugins' listers).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/names.h"
#include "apiserver/admission/admission.h"
#include "apiserver/admission/field_errors.h"
#include "apiserver/admission/json_access.h"
#include "apiserver/api_error.h"
#include "apiserver/descriptors/resources.h"
#include "boost/json.hpp"
#include "store/store.h"

namespace muster::apiserver::admission {

inline constexpr char kNamespacesResource[] = "namespaces";

// --- Name rules (apimachinery util/validation; api/names.h) -------------------------------------

using api::Dns1035LabelErrors;
using api::Dns1123LabelErrors;
using api::Dns1123SubdomainErrors;
using api::LabelValueErrors;
using api::QualifiedNameErrors;

// --- Request context -----------------------------------------------------------------------------

struct Context {
  const AdmissionRequest& req;
  const ResourceInfo& res;
  json::object& obj;
  std::string name;
  std::string ns;
  std::vector<TypeProblem> problems;
  Reader reader{problems};
  Errors errs;

  Context(const AdmissionRequest& r, json::object& o) : req(r), res(*r.resource), obj(o) {}
  bool create() const { return req.old == nullptr; }
  bool main_resource() const { return req.subresource.empty(); }
};

// The first type problem as the refusal its kind gets; nullopt when there is none.
std::optional<ApiError> TypeProblemsError(const Context& c);

// --- Store lookups -------------------------------------------------------------------------------

// The stored object, parsed; nullopt when there is no store, no such object or no JSON.
std::optional<json::object> GetObject(const store::Store* st, const std::string& resource,
                                      const std::string& ns, const std::string& name);

// Every stored object of `resource`, in all namespaces.
std::vector<json::object> ListObjects(const store::Store* st, const std::string& resource);

// o[a][b] as a string; "" when absent.
std::string NestedString(const json::object& o, std::string_view a, std::string_view b);

}  // namespace muster::apiserver::admission
