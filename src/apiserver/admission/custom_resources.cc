#include "apiserver/admission/kinds.h"

// Custom resources (the kinds of stored CustomResourceDefinitions) as apiextensions-apiserver's
// customResourceStrategy handles them (pkg/registry/customresource/strategy.go): the object pruned
// to its version's structural schema, defaulted, then validated against it, the violations 422
// with kube-openapi's messages (descriptors/structural_schema.h). The stored object carries the
// CRD's storage version (conversion None: only apiVersion changes).

#include <optional>
#include <string>
#include <utility>

#include "apiserver/admission/context.h"
#include "apiserver/descriptors/custom_resource.h"
#include "apiserver/descriptors/structural_schema.h"

namespace muster::apiserver::admission {
namespace {

ErrorType FieldErrorTypeOf(SchemaViolation::Type type) {
  switch (type) {
    case SchemaViolation::Type::kRequired:
      return ErrorType::kRequired;
    case SchemaViolation::Type::kInvalid:
      return ErrorType::kInvalid;
    case SchemaViolation::Type::kNotSupported:
      return ErrorType::kNotSupported;
    case SchemaViolation::Type::kForbidden:
      return ErrorType::kForbidden;
    case SchemaViolation::Type::kTooLong:
      return ErrorType::kTooLong;
    case SchemaViolation::Type::kTooMany:
      return ErrorType::kTooMany;
  }
  return ErrorType::kInvalid;
}

}  // namespace

void AppendSchemaViolations(Errors& errs, std::vector<SchemaViolation> violations) {
  std::vector<FieldError> fields;
  fields.reserve(violations.size());
  for (SchemaViolation& v : violations) {
    fields.push_back({FieldErrorTypeOf(v.type), std::move(v.field), std::move(v.value),
                      std::move(v.detail)});
  }
  errs.Append(std::move(fields));
}

std::optional<ApiError> AdmitCustomResource(Context& c) {
  const CustomResourceSpec& custom = *c.res.custom;
  PruneUnknownFields(*custom.schema, c.obj);
  ApplyDefaults(*custom.schema, c.obj);
  AppendSchemaViolations(c.errs, ValidateCustomResource(*custom.schema, c.obj));
  c.obj["apiVersion"] = c.res.group + "/" + custom.storage_version;
  return std::nullopt;
}

}  // namespace muster::apiserver::admission
