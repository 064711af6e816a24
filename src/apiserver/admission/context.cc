#include "apiserver/admission/context.h"

// The request context's shared steps (context.h): the refusal of type problems (the typed
// decoder's 400 for built-in kinds, the CRD schema's 422 for Volcano's) and store lookups.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "api/json_parse.h"
#include "api/text.h"
#include "boost/json.hpp"
#include "fmt/format.h"

namespace muster::apiserver::admission {

// The first type problem as the refusal its kind gets; nullopt when there is none.
std::optional<ApiError> TypeProblemsError(const Context& c) {
  if (c.problems.empty()) return std::nullopt;
  if (c.res.builtin) {
    const TypeProblem& p = c.problems.front();
    if (p.quantity) return DecodeError(c.res, kQuantityFormatError);
    // unverified: encoding/json names the Go struct ("PodSpec.spec.containers"); we name the path.
    return DecodeError(c.res, fmt::format("json: cannot unmarshal {} into Go struct field {} of "
                                          "type {}",
                                          p.go_got, p.path, p.go_want));
  }
  // CRD structural schema errors (apiextensions-apiserver): 422 with every problem.
  std::vector<FieldError> errors;
  for (const TypeProblem& p : c.problems) {
    if (p.quantity) {
      errors.push_back({ErrorType::kInvalid, p.path, api::GoQuote(p.go_got), kQuantityFormatError});
    } else {
      errors.push_back({ErrorType::kInvalid, p.path, api::GoQuote(p.schema_got),
                        fmt::format("{} in body must be of type {}: {}", p.path, p.schema_want,
                                    api::GoQuote(p.schema_got))});
    }
  }
  return InvalidError(c.res, c.name, errors);
}

// --- Store lookups -------------------------------------------------------------------------------

std::optional<json::object> GetObject(const store::Store* st, const std::string& resource,
                                      const std::string& ns, const std::string& name) {
  if (st == nullptr) return std::nullopt;
  absl::StatusOr<store::Object> got = st->Get(store::Key{resource, ns, name});
  if (!got.ok() || got->json == nullptr) return std::nullopt;
  boost::system::error_code ec;
  json::value v = api::ParseJsonText(*got->json, ec);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.as_object());
}

std::vector<json::object> ListObjects(const store::Store* st, const std::string& resource) {
  std::vector<json::object> out;
  if (st == nullptr) return out;
  store::ListResult list = st->List(resource, "");
  for (const store::Object& item : list.items) {
    if (item.json == nullptr) continue;
    boost::system::error_code ec;
    json::value v = api::ParseJsonText(*item.json, ec);
    if (!ec && v.is_object()) out.push_back(std::move(v.as_object()));
  }
  return out;
}

std::string NestedString(const json::object& o, std::string_view a, std::string_view b) {
  const json::object* inner = FindObject(o, a);
  return inner == nullptr ? "" : StringAt(*inner, b);
}

}  // namespace muster::apiserver::admission
