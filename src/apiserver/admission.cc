#include "apiserver/admission.h"

// Rationale. Every message here is the one kube-apiserver or Volcano's admission webhook prints
// for the same mistake, because people read them through the real kubectl and search for them:
//   - field errors:   k8s.io/apimachinery/pkg/util/validation/field (Error, ErrorBody, ToAggregate)
//   - 422 bodies:     apierrors.NewInvalid ("<Kind>[.<group>] "<name>" is invalid: ...")
//   - name rules:     apimachinery util/validation (IsDNS1123Label, IsQualifiedName, ...)
//   - metadata:       apimachinery ValidateObjectMeta / ValidateObjectMetaUpdate, rest.BeforeUpdate
//   - pods:           pkg/apis/core/v1/defaults.go, pkg/apis/core/validation (ValidatePodSpec,
//                     ValidatePodUpdate), plugin/pkg/admission/priority, defaulttolerationseconds,
//                     namespace/lifecycle
//   - priority:       pkg/apis/scheduling/validation
//   - Volcano:        pkg/webhooks/admission/{jobs,podgroups,queues}/{mutate,validate}
// A webhook refusal reaches kubectl as kube-apiserver renders it: code 400, no reason, message
// `admission webhook "<name>" denied the request: <text>` (webhookerrors.ToStatusErr).
// Where a message could not be checked against the upstream source it is marked "unverified".
//
// Objects are handled as JSON, not decoded into the typed model, so that fields muster does not
// model survive admission untouched. Type mistakes in fields that admission reads are refused the
// way the upstream decoder (built-in kinds: 400) or CRD schema (Volcano kinds: 422) would.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/names.h"
#include "api/text.h"
#include "api/selector.h"
#include "boost/json.hpp"
#include "common/quantity.h"
#include "fmt/format.h"

namespace muster::apiserver {
namespace {

namespace json = boost::json;

constexpr char kPriorityClassesResource[] = "priorityclasses.scheduling.k8s.io";
constexpr char kQueuesResource[] = "queues.scheduling.volcano.sh";
constexpr char kNamespacesResource[] = "namespaces";

constexpr char kJobWebhook[] = "validatejob.volcano.sh";
constexpr char kQueueWebhook[] = "validatequeue.volcano.sh";
constexpr char kPodGroupWebhook[] = "validatepodgroup.volcano.sh";

constexpr int64_t kHighestUserDefinablePriority = 1000000000;
constexpr int64_t kSystemClusterCritical = 2000000000;
constexpr int64_t kSystemNodeCritical = 2000001000;

// resource.ErrFormatWrong, the decoder's refusal of an unparsable quantity.
constexpr char kQuantityFormatError[] =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

// --- Go text -------------------------------------------------------------------------------------

// Go's %v of a []string: "[a b c]".
std::string GoList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ' ';
    out += items[i];
  }
  return out + "]";
}

// Go's %#v of a []string: `[]string{"a", "b"}`.
std::string GoStringSlice(const std::vector<std::string>& items) {
  std::string out = "[]string{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += api::GoQuote(items[i]);
  }
  return out + "}";
}

// --- Field errors --------------------------------------------------------------------------------

enum class ErrorType { kRequired, kInvalid, kNotSupported, kForbidden, kDuplicate, kTooLong };

struct FieldError {
  ErrorType type = ErrorType::kInvalid;
  std::string field;
  std::optional<std::string> value;  // already rendered as Go prints it
  std::string detail;

  // field.ErrorType's text and the StatusCause reason it maps to.
  struct TypeNames {
    std::string_view text, reason;
  };
  TypeNames Names() const {
    switch (type) {
      case ErrorType::kRequired:
        return {"Required value", "FieldValueRequired"};
      case ErrorType::kInvalid:
        return {"Invalid value", "FieldValueInvalid"};
      case ErrorType::kNotSupported:
        return {"Unsupported value", "FieldValueNotSupported"};
      case ErrorType::kForbidden:
        return {"Forbidden", "FieldValueForbidden"};
      case ErrorType::kDuplicate:
        return {"Duplicate value", "FieldValueDuplicate"};
      case ErrorType::kTooLong:
        return {"Too long", "FieldValueTooLong"};
    }
    return {"Invalid value", "FieldValueInvalid"};
  }
  std::string_view TypeText() const { return Names().text; }
  std::string_view Reason() const { return Names().reason; }
  // field.Error.ErrorBody: required, forbidden and too-long errors do not print the value.
  std::string Body() const {
    std::string s(TypeText());
    bool show_value = value.has_value() && type != ErrorType::kRequired &&
                      type != ErrorType::kForbidden && type != ErrorType::kTooLong;
    if (show_value) s += ": " + *value;
    if (!detail.empty()) s += ": " + detail;
    return s;
  }
  std::string Error() const { return field + ": " + Body(); }
};

class Errors {
 public:
  void Required(std::string field, std::string detail = "") {
    list_.push_back({ErrorType::kRequired, std::move(field), std::nullopt, std::move(detail)});
  }
  void Invalid(std::string field, std::string rendered_value, std::string detail) {
    list_.push_back(
        {ErrorType::kInvalid, std::move(field), std::move(rendered_value), std::move(detail)});
  }
  void InvalidString(std::string field, std::string_view value, std::string detail) {
    Invalid(std::move(field), api::GoQuote(value), std::move(detail));
  }
  void InvalidInt(std::string field, int64_t value, std::string detail) {
    Invalid(std::move(field), std::to_string(value), std::move(detail));
  }
  void NotSupported(std::string field, std::string_view value,
                    const std::vector<std::string_view>& supported) {
    std::string detail;
    if (!supported.empty()) {
      detail = "supported values: ";
      for (size_t i = 0; i < supported.size(); ++i) {
        if (i > 0) detail += ", ";
        detail += api::GoQuote(supported[i]);
      }
    }
    list_.push_back({ErrorType::kNotSupported, std::move(field), api::GoQuote(value), std::move(detail)});
  }
  void Forbidden(std::string field, std::string detail) {
    list_.push_back({ErrorType::kForbidden, std::move(field), std::nullopt, std::move(detail)});
  }
  void Duplicate(std::string field, std::string_view value) {
    list_.push_back({ErrorType::kDuplicate, std::move(field), api::GoQuote(value), ""});
  }
  void TooLong(std::string field, size_t max_bytes) {
    list_.push_back({ErrorType::kTooLong, std::move(field), std::nullopt,
                     fmt::format("may not be more than {} bytes", max_bytes)});
  }
  void Append(std::vector<FieldError> more) {
    for (FieldError& e : more) list_.push_back(std::move(e));
  }

  bool empty() const { return list_.empty(); }
  const std::vector<FieldError>& list() const { return list_; }
  std::vector<FieldError>& mutable_list() { return list_; }

 private:
  std::vector<FieldError> list_;
};

// utilerrors.NewAggregate(...).Error(): one message as is, several deduplicated in brackets.
std::string Aggregate(const std::vector<std::string>& messages) {
  std::vector<std::string> seen;
  for (const std::string& m : messages) {
    if (std::find(seen.begin(), seen.end(), m) == seen.end()) seen.push_back(m);
  }
  if (seen.size() == 1) return seen[0];
  std::string out = "[";
  for (size_t i = 0; i < seen.size(); ++i) {
    if (i > 0) out += ", ";
    out += seen[i];
  }
  return out + "]";
}

std::string AggregateFieldErrors(const std::vector<FieldError>& errors) {
  std::vector<std::string> messages;
  messages.reserve(errors.size());
  for (const FieldError& e : errors) messages.push_back(e.Error());
  return Aggregate(messages);
}

std::string QualifiedKind(const ResourceInfo& res) {
  return res.group.empty() ? res.kind : res.kind + "." + res.group;
}

AdmissionError InvalidError(const ResourceInfo& res, std::string_view name,
                            const std::vector<FieldError>& errors) {
  AdmissionError err;
  err.code = 422;
  err.reason = "Invalid";
  err.message = fmt::format("{} {} is invalid: {}", QualifiedKind(res), api::GoQuote(name),
                            AggregateFieldErrors(errors));
  for (const FieldError& e : errors) {
    err.causes.push_back({std::string(e.Reason()), e.Body(), e.field});
  }
  return err;
}

// admission.NewForbidden: `<resource>[.<group>] "<name>" is forbidden: <why>`.
AdmissionError ForbiddenError(const ResourceInfo& res, std::string_view name,
                              std::string_view why) {
  AdmissionError err;
  err.code = 403;
  err.reason = "Forbidden";
  err.message = fmt::format("{} {} is forbidden: {}", res.StoreResource(), api::GoQuote(name), why);
  return err;
}

// A validating webhook's refusal as kube-apiserver passes it on: 400 with no reason.
AdmissionError WebhookDenied(std::string_view webhook, std::string_view message) {
  AdmissionError err;
  err.code = 400;
  err.reason = "";
  err.message = fmt::format("admission webhook {} denied the request: {}", api::GoQuote(webhook), message);
  return err;
}

// A body the typed decoder refuses: `Pod in version "v1" cannot be handled as a Pod: <why>`.
AdmissionError DecodeError(const ResourceInfo& res, std::string_view why) {
  AdmissionError err;
  err.code = 400;
  err.reason = "BadRequest";
  err.message = fmt::format("{} in version {} cannot be handled as a {}: {}", res.kind,
                            api::GoQuote(res.version), res.kind, why);
  return err;
}

// --- Name rules (apimachinery util/validation; api/names.h) -------------------------------------

using api::Dns1035LabelErrors;
using api::Dns1123LabelErrors;
using api::Dns1123SubdomainErrors;
using api::LabelValueErrors;
using api::QualifiedNameErrors;

constexpr size_t kTotalAnnotationSizeLimit = 256 * 1024;

// The object-name rule of each kind (ValidateObjectMeta's nameFn).
std::vector<std::string> NameErrors(const ResourceInfo& res, std::string_view name) {
  if (res.group.empty() && res.resource == "namespaces") return Dns1123LabelErrors(name);
  if (res.group.empty() && res.resource == "services") return Dns1035LabelErrors(name);
  return Dns1123SubdomainErrors(name);
}

// --- JSON access ---------------------------------------------------------------------------------

// What a typed decoder (built-in kinds) or a CRD schema (Volcano kinds) would refuse.
struct TypeProblem {
  std::string path;
  std::string go_got;       // encoding/json's name of the JSON type: string, number, bool, ...
  std::string schema_got;   // OpenAPI's: string, integer, number, boolean, array, object
  std::string go_want;      // "int32", "[]v1.Container", ...
  std::string schema_want;  // "integer", "array", ...
  bool quantity = false;    // an unparsable quantity; go_got holds the text
};

std::string GoJsonKind(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return "string";
    case json::kind::bool_:
      return "bool";
    case json::kind::array:
      return "array";
    case json::kind::object:
      return "object";
    case json::kind::null:
      return "null";
    default:
      return "number";
  }
}

std::string SchemaJsonKind(const json::value& v) {
  switch (v.kind()) {
    case json::kind::string:
      return "string";
    case json::kind::bool_:
      return "boolean";
    case json::kind::array:
      return "array";
    case json::kind::object:
      return "object";
    case json::kind::null:
      return "null";
    case json::kind::double_:
      return "number";
    default:
      return "integer";
  }
}

std::string_view View(const json::string& s) { return std::string_view(s.data(), s.size()); }

// Integral numbers, including 2.0; nullopt otherwise.
std::optional<int64_t> AsInt(const json::value& v) {
  if (const int64_t* i = v.if_int64()) return *i;
  if (const uint64_t* u = v.if_uint64()) {
    if (*u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return static_cast<int64_t>(*u);
    }
    return std::nullopt;
  }
  if (const double* d = v.if_double()) {
    if (std::isfinite(*d) && std::floor(*d) == *d && std::fabs(*d) < 9.2e18) {
      return static_cast<int64_t>(*d);
    }
  }
  return std::nullopt;
}

bool IsAbsent(const json::value* v) { return v == nullptr || v->is_null(); }

// Readers that note type problems and report absent (or null) members as nullopt/nullptr.
class Reader {
 public:
  explicit Reader(std::vector<TypeProblem>& problems) : problems_(problems) {}

  std::optional<std::string> Str(const json::object& o, std::string_view key,
                                 const std::string& path) {
    const json::value* v = o.if_contains(key);
    if (IsAbsent(v)) return std::nullopt;
    if (const json::string* s = v->if_string()) return std::string(View(*s));
    Problem(path, *v, "string", "string");
    return std::nullopt;
  }
  // "" when absent or of the wrong type.
  std::string StrOr(const json::object& o, std::string_view key, const std::string& path) {
    return Str(o, key, path).value_or("");
  }
  // An integer of Go type `go_type`, "int32" or "int64": a number that is no integer, or one
  // beyond the type's range (99999999999999999999999, which boost::json keeps as a double), is
  // a problem, never a zero.
  std::optional<int64_t> Int(const json::object& o, std::string_view key, const std::string& path,
                             std::string_view go_type = "int32") {
    const json::value* v = o.if_contains(key);
    if (IsAbsent(v)) return std::nullopt;
    std::optional<int64_t> i = AsInt(*v);
    if (i && (go_type != "int32" || (*i >= std::numeric_limits<int32_t>::min() &&
                                     *i <= std::numeric_limits<int32_t>::max()))) {
      return i;
    }
    Problem(path, *v, std::string(go_type), "integer");
    if (v->is_number()) {
      // encoding/json names a number it cannot store with its text: "json: cannot unmarshal
      // number 3000000000 into Go struct field ... of type int32" (literalStore).
      TypeProblem& p = problems_.back();
      const std::string text = v->is_double()   ? fmt::format("{}", v->get_double())
                               : v->is_uint64() ? std::to_string(v->get_uint64())
                                                : std::to_string(v->get_int64());
      p.go_got = "number " + text;
      if (v->is_double() && std::trunc(v->get_double()) != v->get_double()) return std::nullopt;
      // An integer out of range: unverified: go-openapi's IsValueValidAgainstRange words it
      // `<path> in body must be of type int32: "<value>"`.
      p.schema_got = text;
      p.schema_want = std::string(go_type);
    }
    return std::nullopt;
  }
  std::optional<bool> Bool(const json::object& o, std::string_view key, const std::string& path) {
    const json::value* v = o.if_contains(key);
    if (IsAbsent(v)) return std::nullopt;
    if (const bool* b = v->if_bool()) return *b;
    Problem(path, *v, "bool", "boolean");
    return std::nullopt;
  }
  json::object* Obj(json::object& o, std::string_view key, const std::string& path,
                    std::string_view go_type) {
    json::value* v = o.if_contains(key);
    if (IsAbsent(v)) return nullptr;
    if (json::object* obj = v->if_object()) return obj;
    Problem(path, *v, std::string(go_type), "object");
    return nullptr;
  }
  json::array* Arr(json::object& o, std::string_view key, const std::string& path,
                   std::string_view go_type) {
    json::value* v = o.if_contains(key);
    if (IsAbsent(v)) return nullptr;
    if (json::array* arr = v->if_array()) return arr;
    Problem(path, *v, std::string(go_type), "array");
    return nullptr;
  }
  // A quantity given as a string or a number.
  std::optional<common::Quantity> Quantity(const json::value& v, const std::string& path) {
    std::string text;
    if (const json::string* s = v.if_string()) {
      text = std::string(View(*s));
    } else if (std::optional<int64_t> i = AsInt(v)) {
      text = std::to_string(*i);
    } else if (const double* d = v.if_double()) {
      text = fmt::format("{}", *d);
    } else {
      Problem(path, v, "resource.Quantity", "string");
      return std::nullopt;
    }
    absl::StatusOr<common::Quantity> q = common::Quantity::Parse(text);
    if (!q.ok()) {
      TypeProblem p;
      p.path = path;
      p.go_got = text;
      p.quantity = true;
      problems_.push_back(std::move(p));
      return std::nullopt;
    }
    return *q;
  }
  void Problem(const std::string& path, const json::value& got, std::string go_want,
               std::string schema_want) {
    problems_.push_back(
        {path, GoJsonKind(got), SchemaJsonKind(got), std::move(go_want), std::move(schema_want)});
  }

 private:
  std::vector<TypeProblem>& problems_;
};

// Sets `key` to `value` when the member is absent, null or an empty string (Go's zero value).
void DefaultString(json::object& o, std::string_view key, std::string_view value) {
  json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null() || (v->is_string() && v->get_string().empty())) {
    o[key] = json::string(value);
  }
}

void DefaultValue(json::object& o, std::string_view key, json::value value) {
  json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) o[key] = std::move(value);
}

// The member as an object, made one when absent or null; nullptr when it is something else.
json::object* EnsureObject(json::object& o, std::string_view key) {
  json::value* v = o.if_contains(key);
  if (v == nullptr || v->is_null()) {
    o[key] = json::object();
    return &o[key].as_object();
  }
  return v->if_object();
}

const json::object* FindObject(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v == nullptr ? nullptr : v->if_object();
}

std::string StringAt(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  if (v == nullptr || !v->is_string()) return "";
  return std::string(View(v->get_string()));
}

// Go's semantic equality approximated on JSON: absent, null and zero values are the same.
json::value Normalize(const json::value& v) {
  if (const json::object* o = v.if_object()) {
    json::object out;
    for (const auto& [key, member] : *o) {
      json::value n = Normalize(member);
      bool zero = n.is_null() || (n.is_string() && n.get_string().empty()) ||
                  (n.is_bool() && !n.get_bool()) || (n.is_array() && n.get_array().empty()) ||
                  (n.is_object() && n.get_object().empty()) ||
                  (AsInt(n).has_value() && *AsInt(n) == 0);
      if (!zero) out[key] = std::move(n);
    }
    return out;
  }
  if (const json::array* a = v.if_array()) {
    json::array out;
    for (const json::value& e : *a) out.push_back(Normalize(e));
    return out;
  }
  return v;
}

bool SemanticEqual(const json::value& a, const json::value& b) {
  return Normalize(a) == Normalize(b);
}

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
std::optional<AdmissionError> TypeProblemsError(const Context& c) {
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
  json::value v = json::parse(*got->json, ec);
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
    json::value v = json::parse(*item.json, ec);
    if (!ec && v.is_object()) out.push_back(std::move(v.as_object()));
  }
  return out;
}

std::string NestedString(const json::object& o, std::string_view a, std::string_view b) {
  const json::object* inner = FindObject(o, a);
  return inner == nullptr ? "" : StringAt(*inner, b);
}

// --- Metadata ------------------------------------------------------------------------------------

void ValidateLabels(Context& c, const json::object& parent, std::string_view key,
                    const std::string& path) {
  json::value const* v = parent.if_contains(key);
  if (IsAbsent(v)) return;
  const json::object* labels = v->if_object();
  if (labels == nullptr) {
    c.reader.Problem(path, *v, "map[string]string", "object");
    return;
  }
  std::map<std::string, const json::value*> sorted;
  for (const auto& [k, val] : *labels) sorted[std::string(k)] = &val;
  for (const auto& [k, val] : sorted) {
    // selector.h holds the verdict; the text is apimachinery's.
    if (!api::ValidateLabelKey(k).ok()) {
      for (const std::string& msg : QualifiedNameErrors(k)) c.errs.InvalidString(path, k, msg);
    }
    if (val->is_null()) continue;
    if (!val->is_string()) {
      c.reader.Problem(path + "." + k, *val, "string", "string");
      continue;
    }
    std::string_view value = View(val->get_string());
    if (!api::ValidateLabelValue(value).ok()) {
      for (const std::string& msg : LabelValueErrors(value)) {
        c.errs.InvalidString(path, value, msg);
      }
    }
  }
}

void ValidateAnnotations(Context& c, const json::object& meta) {
  const std::string path = "metadata.annotations";
  const json::value* v = meta.if_contains("annotations");
  if (IsAbsent(v)) return;
  const json::object* annotations = v->if_object();
  if (annotations == nullptr) {
    c.reader.Problem(path, *v, "map[string]string", "object");
    return;
  }
  std::map<std::string, const json::value*> sorted;
  for (const auto& [k, val] : *annotations) sorted[std::string(k)] = &val;
  size_t total = 0;
  for (const auto& [k, val] : sorted) {
    std::string lower = k;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    for (const std::string& msg : QualifiedNameErrors(lower)) c.errs.InvalidString(path, k, msg);
    total += k.size();
    if (val->is_string()) {
      total += val->get_string().size();
    } else if (!val->is_null()) {
      c.reader.Problem(path + "." + k, *val, "string", "string");
    }
  }
  if (total > kTotalAnnotationSizeLimit) c.errs.TooLong(path, kTotalAnnotationSizeLimit);
}

void ValidateOwnerReferences(Context& c, json::object& meta) {
  const std::string path = "metadata.ownerReferences";
  json::array* refs = c.reader.Arr(meta, "ownerReferences", path, "[]v1.OwnerReference");
  if (refs == nullptr) return;
  std::string first_controller;
  for (json::value& rv : *refs) {
    json::object* ref = rv.if_object();
    if (ref == nullptr) {
      c.reader.Problem(path, rv, "v1.OwnerReference", "object");
      continue;
    }
    std::string api_version = c.reader.StrOr(*ref, "apiVersion", path + ".apiVersion");
    std::string kind = c.reader.StrOr(*ref, "kind", path + ".kind");
    std::string name = c.reader.StrOr(*ref, "name", path + ".name");
    std::string uid = c.reader.StrOr(*ref, "uid", path + ".uid");
    // schema.FromAPIVersionAndKind: the version is what follows the last '/'.
    size_t slash = api_version.rfind('/');
    std::string version = slash == std::string::npos ? api_version : api_version.substr(slash + 1);
    if (version.empty()) {
      c.errs.InvalidString(path + ".apiVersion", api_version, "version must not be empty");
    }
    if (kind.empty()) c.errs.InvalidString(path + ".kind", kind, "kind must not be empty");
    if (name.empty()) c.errs.InvalidString(path + ".name", name, "name must not be empty");
    if (uid.empty()) c.errs.InvalidString(path + ".uid", uid, "uid must not be empty");
    if (c.reader.Bool(*ref, "controller", path + ".controller").value_or(false)) {
      std::string current = kind + "/" + name;
      if (!first_controller.empty()) {
        // unverified: Go prints the whole []metav1.OwnerReference (%#v); we print the JSON.
        c.errs.Invalid(path, json::serialize(*refs),
                       fmt::format("Only one reference can have Controller set to true. Found "
                                   "\"true\" in references for {} and {}",
                                   first_controller, current));
      } else {
        first_controller = current;
      }
    }
  }
}

std::vector<std::string> StringList(Context& c, json::object& o, std::string_view key,
                                    const std::string& path) {
  std::vector<std::string> out;
  json::array* arr = c.reader.Arr(o, key, path, "[]string");
  if (arr == nullptr) return out;
  for (json::value& v : *arr) {
    if (const json::string* s = v.if_string()) {
      out.emplace_back(View(*s));
    } else {
      c.reader.Problem(path, v, "string", "string");
    }
  }
  return out;
}

void ValidateFinalizers(Context& c, json::object& meta) {
  const std::string path = "metadata.finalizers";
  std::vector<std::string> finalizers = StringList(c, meta, "finalizers", path);
  bool orphan = false;
  bool foreground = false;
  for (const std::string& f : finalizers) {
    for (const std::string& msg : QualifiedNameErrors(f)) c.errs.InvalidString(path, f, msg);
    orphan = orphan || f == "orphan";
    foreground = foreground || f == "foregroundDeletion";
  }
  if (orphan && foreground) {
    c.errs.Invalid(path, GoStringSlice(finalizers),
                   "finalizer orphan and foregroundDeletion cannot be both set");
  }
}

// ValidateObjectMeta, plus what rest.BeforeCreate / BeforeUpdate do to system fields.
void AdmitMetadata(Context& c) {
  json::object* meta = EnsureObject(c.obj, "metadata");
  if (meta == nullptr) {
    c.reader.Problem("metadata", c.obj["metadata"], "v1.ObjectMeta", "object");
    return;
  }
  c.name = c.reader.StrOr(*meta, "name", "metadata.name");
  if (c.name.empty()) {
    c.errs.Required("metadata.name", "name or generateName is required");
  } else {
    for (const std::string& msg : NameErrors(c.res, c.name)) {
      c.errs.InvalidString("metadata.name", c.name, msg);
    }
  }
  if (c.res.namespaced) {
    c.ns = c.reader.StrOr(*meta, "namespace", "metadata.namespace");
    if (c.ns.empty()) {
      c.errs.Required("metadata.namespace");
    } else {
      for (const std::string& msg : Dns1123LabelErrors(c.ns)) {
        c.errs.InvalidString("metadata.namespace", c.ns, msg);
      }
    }
  } else {
    // EnsureObjectNamespaceMatchesRequestNamespace clears it for cluster-scoped kinds.
    meta->erase("namespace");
  }
  if (std::optional<int64_t> gen =
          c.reader.Int(*meta, "generation", "metadata.generation", "int64");
      gen && *gen < 0) {
    c.errs.InvalidInt("metadata.generation", *gen, "must be greater than or equal to 0");
  }
  ValidateLabels(c, *meta, "labels", "metadata.labels");
  ValidateAnnotations(c, *meta);
  ValidateOwnerReferences(c, *meta);
  ValidateFinalizers(c, *meta);

  if (c.create()) {
    meta->erase("deletionTimestamp");
    meta->erase("deletionGracePeriodSeconds");
    return;
  }

  // Update: ValidateObjectMetaUpdate and rest.BeforeUpdate.
  const json::object* old_meta = FindObject(*c.req.old, "metadata");
  static const json::object kEmpty;
  if (old_meta == nullptr) old_meta = &kEmpty;
  std::string old_name = StringAt(*old_meta, "name");
  std::string old_ns = StringAt(*old_meta, "namespace");
  if (c.name != old_name) c.errs.InvalidString("metadata.name", c.name, "field is immutable");
  if (c.res.namespaced && c.ns != old_ns) {
    c.errs.InvalidString("metadata.namespace", c.ns, "field is immutable");
  }
  std::string uid = StringAt(*meta, "uid");
  std::string old_uid = StringAt(*old_meta, "uid");
  if (uid.empty() && !old_uid.empty()) {
    (*meta)["uid"] = old_uid;
  } else if (uid != old_uid) {
    c.errs.InvalidString("metadata.uid", uid, "field is immutable");
  }
  for (std::string_view key :
       {"creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"}) {
    if (const json::value* old_value = old_meta->if_contains(key)) {
      (*meta)[key] = *old_value;
    } else {
      meta->erase(key);
    }
  }
  if (old_meta->contains("deletionTimestamp")) {
    std::set<std::string> old_finalizers;
    if (const json::value* of = old_meta->if_contains("finalizers"); of && of->is_array()) {
      for (const json::value& f : of->get_array()) {
        if (f.is_string()) old_finalizers.insert(std::string(View(f.get_string())));
      }
    }
    std::set<std::string> added;
    if (const json::value* nf = meta->if_contains("finalizers"); nf && nf->is_array()) {
      for (const json::value& f : nf->get_array()) {
        if (f.is_string() && !old_finalizers.contains(std::string(View(f.get_string())))) {
          added.insert(std::string(View(f.get_string())));
        }
      }
    }
    if (!added.empty()) {
      c.errs.Forbidden("metadata.finalizers",
                       fmt::format("no new finalizers can be added if the object is being "
                                   "deleted, found new finalizers {}",
                                   GoStringSlice({added.begin(), added.end()})));
    }
  }
}

// NamespaceLifecycle: nothing new in a namespace that is being deleted.
std::optional<AdmissionError> CheckNamespaceLifecycle(const Context& c) {
  if (!c.create() || !c.res.namespaced || c.ns.empty()) return std::nullopt;
  std::optional<json::object> ns = GetObject(c.req.store, kNamespacesResource, "", c.ns);
  if (!ns) return std::nullopt;  // a missing namespace is the handler's 404
  const json::object* ns_meta = FindObject(*ns, "metadata");
  bool terminating = NestedString(*ns, "status", "phase") == "Terminating" ||
                     (ns_meta != nullptr && ns_meta->contains("deletionTimestamp"));
  if (!terminating) return std::nullopt;
  AdmissionError err = ForbiddenError(
      c.res, c.name,
      fmt::format("unable to create new content in namespace {} because it is being terminated",
                  c.ns));
  err.causes.push_back({"NamespaceTerminating",
                        fmt::format("namespace {} is being terminated", c.ns),
                        "metadata.namespace"});
  return err;
}

// --- Pods ----------------------------------------------------------------------------------------

bool IsNativeResource(std::string_view name) {
  return name.find('/') == std::string_view::npos ||
         name.find("kubernetes.io/") != std::string_view::npos;
}
bool IsHugePageResource(std::string_view name) { return name.starts_with("hugepages-"); }
bool IsStandardContainerResource(std::string_view name) {
  return name == "cpu" || name == "memory" || name == "ephemeral-storage" ||
         IsHugePageResource(name);
}
// helper.IsOvercommitAllowed: native resources except huge pages.
bool IsOvercommitAllowed(std::string_view name) {
  return IsNativeResource(name) && !IsHugePageResource(name);
}
// helper.IsIntegerResourceName: extended resources (and a few native object counts).
bool IsIntegerResource(std::string_view name) {
  return !IsNativeResource(name) && !name.starts_with("requests.");
}

// parsers.ParseImageName: an image without tag or digest is ":latest".
std::string DefaultPullPolicy(std::string_view image) {
  bool has_digest = image.find('@') != std::string_view::npos;
  std::string_view last =
      image.substr(image.rfind('/') == std::string_view::npos ? 0 : image.rfind('/') + 1);
  if (size_t at = last.find('@'); at != std::string_view::npos) last = last.substr(0, at);
  size_t colon = last.find(':');
  std::string_view tag = colon == std::string_view::npos ? "" : last.substr(colon + 1);
  if (tag.empty() && !has_digest) tag = "latest";
  return tag == "latest" ? "Always" : "IfNotPresent";
}

void DefaultContainers(json::object& spec, std::string_view key, bool requests_from_limits) {
  json::value* v = spec.if_contains(key);
  if (v == nullptr || !v->is_array()) return;
  for (json::value& cv : v->get_array()) {
    json::object* c = cv.if_object();
    if (c == nullptr) continue;
    DefaultString(*c, "terminationMessagePath", "/dev/termination-log");
    DefaultString(*c, "terminationMessagePolicy", "File");
    if (const json::value* image = c->if_contains("image"); image && image->is_string()) {
      DefaultString(*c, "imagePullPolicy", DefaultPullPolicy(View(image->get_string())));
    }
    if (json::value* ports = c->if_contains("ports"); ports && ports->is_array()) {
      for (json::value& p : ports->get_array()) {
        if (json::object* port = p.if_object()) DefaultString(*port, "protocol", "TCP");
      }
    }
    // SetDefaults_Pod: a limit without a request requests the limit.
    if (!requests_from_limits) continue;
    json::value* resources = c->if_contains("resources");
    if (resources == nullptr || !resources->is_object()) continue;
    // Beyond upstream: a resource that cannot be overcommitted (nvidia.com/gpu) requested without
    // a limit gets its request as the limit, instead of "Limit must be set". The seed's blocker
    // pod asks for a GPU this way; Kubernetes would refuse it, muster runs it unchanged.
    if (const json::value* req = resources->get_object().if_contains("requests");
        req != nullptr && req->is_object()) {
      const json::object requested = req->get_object();
      json::object* lims = nullptr;
      for (const auto& [name, q] : requested) {
        if (IsOvercommitAllowed(std::string_view(name.data(), name.size()))) continue;
        if (lims == nullptr) lims = EnsureObject(resources->get_object(), "limits");
        if (lims != nullptr && !lims->contains(name)) (*lims)[name] = q;
      }
    }
    const json::value* limits_value = resources->get_object().if_contains("limits");
    if (limits_value == nullptr || !limits_value->is_object()) continue;
    // A copy: making "requests" may move the members of "resources".
    const json::object limits = limits_value->get_object();
    if (limits.empty()) continue;
    json::object* requests = EnsureObject(resources->get_object(), "requests");
    if (requests == nullptr) continue;
    for (const auto& [name, q] : limits) {
      if (!requests->contains(name)) (*requests)[name] = q;
    }
  }
}

// SetDefaults_PodSpec and SetDefaults_Container (and, for pods, SetDefaults_Pod).
void DefaultPodSpec(json::object& spec, bool is_pod) {
  DefaultString(spec, "dnsPolicy", "ClusterFirst");
  DefaultString(spec, "restartPolicy", "Always");
  DefaultValue(spec, "terminationGracePeriodSeconds", 30);
  DefaultString(spec, "schedulerName", "default-scheduler");
  DefaultValue(spec, "securityContext", json::object());
  if (is_pod) DefaultValue(spec, "enableServiceLinks", true);
  DefaultContainers(spec, "containers", is_pod);
  DefaultContainers(spec, "initContainers", is_pod);
}

void ValidateResources(Context& c, json::object& container, const std::string& path) {
  json::object* resources = c.reader.Obj(container, "resources", path, "v1.ResourceRequirements");
  if (resources == nullptr) return;
  const std::string lim_path = path + ".limits";
  const std::string req_path = path + ".requests";
  // One resource list, sorted by name (Go walks the map in random order); each quantity is
  // checked as validateContainerResourceName and ValidateResourceQuantityValue do, and `also`
  // runs after the checks of each entry.
  auto walk = [&](std::string_view key, const std::string& list_path, auto&& also) {
    std::map<std::string, common::Quantity> out;
    json::object* list = c.reader.Obj(*resources, key, list_path, "v1.ResourceList");
    if (list == nullptr) return out;
    std::map<std::string, const json::value*> sorted;
    for (const auto& [name, q] : *list) sorted[std::string(name)] = &q;
    for (const auto& [name, q] : sorted) {
      std::string item_path = fmt::format("{}[{}]", list_path, name);
      if (q->is_null()) continue;
      std::optional<common::Quantity> quantity = c.reader.Quantity(*q, item_path);
      if (!quantity) continue;
      for (const std::string& msg : QualifiedNameErrors(name)) {
        c.errs.InvalidString(item_path, name, msg);
      }
      if (name.find('/') == std::string::npos && !IsStandardContainerResource(name)) {
        c.errs.InvalidString(item_path, name, "must be a standard resource for containers");
      }
      if (quantity->MilliValue() < 0) {
        c.errs.InvalidString(item_path, quantity->ToString(), "must be greater than or equal to 0");
      }
      if (IsIntegerResource(name) && quantity->MilliValue() % 1000 != 0) {
        c.errs.InvalidString(item_path, quantity->ToString(), "must be an integer");
      }
      also(name, *quantity);
      out[name] = *quantity;
    }
    return out;
  };
  std::map<std::string, common::Quantity> limits =
      walk("limits", lim_path, [](const std::string&, common::Quantity) {});
  walk("requests", req_path, [&](const std::string& name, common::Quantity request) {
    auto limit = limits.find(name);
    if (limit != limits.end()) {
      // Requests of resources that cannot be overcommitted must equal their limits.
      if (request != limit->second && !IsOvercommitAllowed(name)) {
        c.errs.InvalidString(
            req_path, request.ToString(),
            fmt::format("must be equal to {} limit of {}", name, limit->second.ToString()));
      } else if (request > limit->second) {
        c.errs.InvalidString(req_path, request.ToString(),
                             fmt::format("must be less than or equal to {} limit of {}", name,
                                         limit->second.ToString()));
      }
    } else if (!IsOvercommitAllowed(name)) {
      c.errs.Required(lim_path, "Limit must be set for non overcommitable resources");
    }
  });
}

void ValidateContainerList(Context& c, json::object& spec, std::string_view key,
                           const std::string& path, std::set<std::string>& names, bool required) {
  json::array* containers = c.reader.Arr(spec, key, path, "[]v1.Container");
  if (containers == nullptr || containers->empty()) {
    if (required && (containers != nullptr || IsAbsent(spec.if_contains(key)))) {
      c.errs.Required(path);
    }
    return;
  }
  for (size_t i = 0; i < containers->size(); ++i) {
    std::string item = fmt::format("{}[{}]", path, i);
    json::object* ctr = (*containers)[i].if_object();
    if (ctr == nullptr) {
      c.reader.Problem(item, (*containers)[i], "v1.Container", "object");
      continue;
    }
    std::string name = c.reader.StrOr(*ctr, "name", item + ".name");
    if (name.empty()) {
      c.errs.Required(item + ".name");
    } else {
      for (const std::string& msg : Dns1123LabelErrors(name)) {
        c.errs.InvalidString(item + ".name", name, msg);
      }
    }
    if (c.reader.StrOr(*ctr, "image", item + ".image").empty()) c.errs.Required(item + ".image");
    if (std::optional<std::string> policy =
            c.reader.Str(*ctr, "imagePullPolicy", item + ".imagePullPolicy");
        policy && !policy->empty() && *policy != "Always" && *policy != "IfNotPresent" &&
        *policy != "Never") {
      c.errs.NotSupported(item + ".imagePullPolicy", *policy, {"Always", "IfNotPresent", "Never"});
    }
    ValidateResources(c, *ctr, item + ".resources");
    if (!names.insert(name).second) c.errs.Duplicate(item + ".name", name);
  }
}

void ValidateTolerations(Context& c, json::array& tolerations, const std::string& path) {
  for (size_t i = 0; i < tolerations.size(); ++i) {
    std::string item = fmt::format("{}[{}]", path, i);
    json::object* t = tolerations[i].if_object();
    if (t == nullptr) {
      c.reader.Problem(item, tolerations[i], "v1.Toleration", "object");
      continue;
    }
    std::string key = c.reader.StrOr(*t, "key", item + ".key");
    std::string op = c.reader.StrOr(*t, "operator", item + ".operator");
    std::string value = c.reader.StrOr(*t, "value", item + ".value");
    std::string effect = c.reader.StrOr(*t, "effect", item + ".effect");
    std::optional<int64_t> seconds =
        c.reader.Int(*t, "tolerationSeconds", item + ".tolerationSeconds", "int64");
    if (!key.empty()) {
      for (const std::string& msg : QualifiedNameErrors(key)) {
        c.errs.InvalidString(item + ".key", key, msg);
      }
    }
    if (key.empty() && op != "Exists") {
      c.errs.InvalidString(item + ".operator", op,
                           "operator must be Exists when `key` is empty, which means \"match all "
                           "values and all keys\"");
    }
    if (seconds && effect != "NoExecute") {
      c.errs.InvalidString(item + ".effect", effect,
                           "effect must be 'NoExecute' when `tolerationSeconds` is set");
    }
    if (op == "Equal" || op.empty()) {
      for (const std::string& msg : LabelValueErrors(value)) {
        c.errs.InvalidString(item + ".operator", value, msg);
      }
    } else if (op == "Exists") {
      if (!value.empty()) {
        // unverified: Go prints the whole toleration struct (%#v); we print the value.
        c.errs.InvalidString(item + ".operator", value,
                             "value must be empty when `operator` is 'Exists'");
      }
    } else {
      c.errs.NotSupported(item + ".operator", op, {"Equal", "Exists"});
    }
    if (!effect.empty() && effect != "NoSchedule" && effect != "PreferNoSchedule" &&
        effect != "NoExecute") {
      c.errs.NotSupported(item + ".effect", effect,
                          {"NoSchedule", "PreferNoSchedule", "NoExecute"});
    }
  }
}

// ValidatePodSpec for the fields muster reads. `path` is "spec" or "template.spec".
void ValidatePodSpec(Context& c, json::object& spec, const std::string& path) {
  std::set<std::string> names;
  ValidateContainerList(c, spec, "containers", path + ".containers", names, true);
  ValidateContainerList(c, spec, "initContainers", path + ".initContainers", names, false);

  std::string restart = c.reader.StrOr(spec, "restartPolicy", path + ".restartPolicy");
  if (restart != "Always" && restart != "OnFailure" && restart != "Never") {
    if (restart.empty()) {
      c.errs.Required(path + ".restartPolicy");
    } else {
      c.errs.NotSupported(path + ".restartPolicy", restart, {"Always", "OnFailure", "Never"});
    }
  }
  std::string dns = c.reader.StrOr(spec, "dnsPolicy", path + ".dnsPolicy");
  if (!dns.empty() && dns != "ClusterFirstWithHostNet" && dns != "ClusterFirst" &&
      dns != "Default" && dns != "None") {
    c.errs.NotSupported(path + ".dnsPolicy", dns,
                        {"ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"});
  }
  ValidateLabels(c, spec, "nodeSelector", path + ".nodeSelector");
  if (std::string node = c.reader.StrOr(spec, "nodeName", path + ".nodeName"); !node.empty()) {
    for (const std::string& msg : Dns1123SubdomainErrors(node)) {
      c.errs.InvalidString(path + ".nodeName", node, msg);
    }
  }
  if (std::optional<int64_t> deadline =
          c.reader.Int(spec, "activeDeadlineSeconds", path + ".activeDeadlineSeconds", "int64");
      deadline && (*deadline < 1 || *deadline > std::numeric_limits<int32_t>::max())) {
    c.errs.InvalidInt(path + ".activeDeadlineSeconds", *deadline,
                      "must be between 1 and 2147483647, inclusive");
  }
  c.reader.Int(spec, "terminationGracePeriodSeconds", path + ".terminationGracePeriodSeconds",
               "int64");
  c.reader.Int(spec, "priority", path + ".priority");
  c.reader.Str(spec, "priorityClassName", path + ".priorityClassName");
  c.reader.Str(spec, "schedulerName", path + ".schedulerName");
  if (std::optional<std::string> pp =
          c.reader.Str(spec, "preemptionPolicy", path + ".preemptionPolicy");
      pp && *pp != "PreemptLowerPriority" && *pp != "Never") {
    c.errs.NotSupported(path + ".preemptionPolicy", *pp, {"PreemptLowerPriority", "Never"});
  }
  if (json::array* tolerations =
          c.reader.Arr(spec, "tolerations", path + ".tolerations", "[]v1.Toleration")) {
    ValidateTolerations(c, *tolerations, path + ".tolerations");
  }
}

// qos.GetPodQOS over the (defaulted) spec.
std::string PodQosClass(const json::object& spec) {
  std::map<std::string, common::Quantity> requests;
  std::map<std::string, common::Quantity> limits;
  bool guaranteed = true;
  auto visit = [&](std::string_view key) {
    const json::value* list = spec.if_contains(key);
    if (list == nullptr || !list->is_array()) return;
    for (const json::value& cv : list->get_array()) {
      const json::object* ctr = cv.if_object();
      if (ctr == nullptr) continue;
      const json::object* res = FindObject(*ctr, "resources");
      std::set<std::string> limit_found;
      for (std::string_view which : {"requests", "limits"}) {
        const json::object* rl = res == nullptr ? nullptr : FindObject(*res, which);
        if (rl == nullptr) continue;
        for (const auto& [name, qv] : *rl) {
          if (name != "cpu" && name != "memory") continue;
          std::string text = qv.is_string() ? std::string(View(qv.get_string()))
                                            : (AsInt(qv) ? std::to_string(*AsInt(qv)) : "");
          absl::StatusOr<common::Quantity> q = common::Quantity::Parse(text);
          if (!q.ok() || q->MilliValue() <= 0) continue;
          auto& sums = which == "requests" ? requests : limits;
          sums[std::string(name)] += *q;
          if (which == "limits") limit_found.insert(std::string(name));
        }
      }
      if (!limit_found.contains("cpu") || !limit_found.contains("memory")) guaranteed = false;
    }
  };
  visit("containers");
  visit("initContainers");
  if (requests.empty() && limits.empty()) return "BestEffort";
  if (guaranteed) {
    for (const auto& [name, q] : requests) {
      auto it = limits.find(name);
      if (it == limits.end() || it->second != q) guaranteed = false;
    }
    if (requests.size() != limits.size()) guaranteed = false;
  }
  return guaranteed ? "Guaranteed" : "Burstable";
}

// plugin/pkg/admission/defaulttolerationseconds.
void AddDefaultTolerations(json::object& spec) {
  bool not_ready = false;
  bool unreachable = false;
  json::value* v = spec.if_contains("tolerations");
  if (v != nullptr && v->is_array()) {
    for (const json::value& tv : v->get_array()) {
      const json::object* t = tv.if_object();
      if (t == nullptr) continue;
      std::string key = StringAt(*t, "key");
      std::string effect = StringAt(*t, "effect");
      bool no_execute = effect.empty() || effect == "NoExecute";
      not_ready =
          not_ready || ((key.empty() || key == "node.kubernetes.io/not-ready") && no_execute);
      unreachable =
          unreachable || ((key.empty() || key == "node.kubernetes.io/unreachable") && no_execute);
    }
  }
  if (not_ready && unreachable) return;
  if (v == nullptr || !v->is_array()) {
    spec["tolerations"] = json::array();
    v = spec.if_contains("tolerations");
  }
  auto toleration = [](std::string_view key) {
    return json::object{
        {"key", key}, {"operator", "Exists"}, {"effect", "NoExecute"}, {"tolerationSeconds", 300}};
  };
  if (!not_ready) v->get_array().push_back(toleration("node.kubernetes.io/not-ready"));
  if (!unreachable) v->get_array().push_back(toleration("node.kubernetes.io/unreachable"));
}

struct PriorityClassInfo {
  std::string name;
  int64_t value = 0;
  std::string preemption_policy;
};

std::optional<PriorityClassInfo> FindPriorityClass(const store::Store* st,
                                                   const std::string& name) {
  if (std::optional<json::object> pc = GetObject(st, kPriorityClassesResource, "", name)) {
    PriorityClassInfo info{name, 0, StringAt(*pc, "preemptionPolicy")};
    if (const json::value* v = pc->if_contains("value")) info.value = AsInt(*v).value_or(0);
    return info;
  }
  // kube-apiserver creates these two at start-up; muster may not have stored them.
  if (name == "system-cluster-critical") return PriorityClassInfo{name, kSystemClusterCritical, ""};
  if (name == "system-node-critical") return PriorityClassInfo{name, kSystemNodeCritical, ""};
  return std::nullopt;
}

// getDefaultPriorityClass: the global default with the lowest value.
std::optional<PriorityClassInfo> DefaultPriorityClass(const store::Store* st) {
  std::optional<PriorityClassInfo> best;
  for (const json::object& pc : ListObjects(st, kPriorityClassesResource)) {
    const json::value* global = pc.if_contains("globalDefault");
    if (global == nullptr || !global->is_bool() || !global->get_bool()) continue;
    PriorityClassInfo info{NestedString(pc, "metadata", "name"), 0,
                           StringAt(pc, "preemptionPolicy")};
    if (const json::value* v = pc.if_contains("value")) info.value = AsInt(*v).value_or(0);
    if (!best || info.value < best->value) best = info;
  }
  return best;
}

// plugin/pkg/admission/priority on pod create.
std::optional<AdmissionError> AdmitPodPriority(Context& c, json::object& spec) {
  std::string class_name = StringAt(spec, "priorityClassName");
  std::optional<PriorityClassInfo> pc;
  if (class_name.empty()) {
    pc = DefaultPriorityClass(c.req.store);
    if (pc) spec["priorityClassName"] = pc->name;
  } else {
    pc = FindPriorityClass(c.req.store, class_name);
    if (!pc) {
      return ForbiddenError(c.res, c.name,
                            fmt::format("no PriorityClass with name {} was found", class_name));
    }
  }
  int64_t priority = pc ? pc->value : 0;
  std::string policy =
      pc && !pc->preemption_policy.empty() ? pc->preemption_policy : "PreemptLowerPriority";
  if (const json::value* given = spec.if_contains("priority"); !IsAbsent(given)) {
    // What the typed decoder refuses fails before the plugin runs, never as a computed 0.
    std::optional<int64_t> value = c.reader.Int(spec, "priority", "spec.priority");
    if (!value) return TypeProblemsError(c);
    if (*value != priority) {
      return ForbiddenError(
          c.res, c.name,
          fmt::format("the integer value of priority ({}) must not be provided in pod spec; "
                      "priority admission controller computed {} from the given PriorityClass "
                      "name",
                      *value, priority));
    }
  }
  spec["priority"] = priority;
  std::string given_policy = StringAt(spec, "preemptionPolicy");
  if (!given_policy.empty() && given_policy != policy) {
    return ForbiddenError(
        c.res, c.name,
        fmt::format("the string value of PreemptionPolicy ({}) must not be provided in pod spec; "
                    "priority admission controller computed {} from the given PriorityClass name",
                    given_policy, policy));
  }
  spec["preemptionPolicy"] = policy;
  return std::nullopt;
}

// Top-level spec fields whose values differ, for the update refusal's diff.
std::string SpecDiff(const json::object& old_spec, const json::object& new_spec) {
  json::value a = Normalize(old_spec);
  json::value b = Normalize(new_spec);
  std::set<std::string> keys;
  for (const auto& [k, v] : a.get_object()) keys.insert(std::string(k));
  for (const auto& [k, v] : b.get_object()) keys.insert(std::string(k));
  std::string out = "  core.PodSpec{\n";
  for (const std::string& k : keys) {
    const json::value* x = a.get_object().if_contains(k);
    const json::value* y = b.get_object().if_contains(k);
    if (x != nullptr && y != nullptr && *x == *y) continue;
    if (x != nullptr) out += fmt::format("-\t{}: {},\n", k, json::serialize(*x));
    if (y != nullptr) out += fmt::format("+\t{}: {},\n", k, json::serialize(*y));
  }
  return out + "  }\n";
}

// ValidatePodUpdate's immutability rules.
void ValidatePodSpecUpdate(Context& c, json::object& spec, const json::object& old_spec) {
  json::value* containers = spec.if_contains("containers");
  const json::value* old_containers = old_spec.if_contains("containers");
  size_t n = containers != nullptr && containers->is_array() ? containers->get_array().size() : 0;
  size_t old_n = old_containers != nullptr && old_containers->is_array()
                     ? old_containers->get_array().size()
                     : 0;
  if (n != old_n) {
    c.errs.Forbidden("spec.containers", "pod updates may not add or remove containers");
    return;
  }
  for (size_t i = 0; i < n; ++i) {
    const json::object* ctr = containers->get_array()[i].if_object();
    std::string image = ctr == nullptr ? "" : StringAt(*ctr, "image");
    std::string trimmed = image;
    trimmed.erase(0, trimmed.find_first_not_of(" \t\n\r"));
    trimmed.erase(trimmed.find_last_not_of(" \t\n\r") + 1);
    if (!image.empty() && trimmed.size() != image.size()) {
      c.errs.InvalidString(fmt::format("spec.containers[{}].image", i), image,
                           "must not have leading or trailing whitespace");
    }
  }
  std::optional<int64_t> deadline;
  std::optional<int64_t> old_deadline;
  if (const json::value* v = spec.if_contains("activeDeadlineSeconds"); !IsAbsent(v)) {
    deadline = AsInt(*v);
  }
  if (const json::value* v = old_spec.if_contains("activeDeadlineSeconds"); !IsAbsent(v)) {
    old_deadline = AsInt(*v);
  }
  if (deadline) {
    if (old_deadline && *old_deadline < *deadline) {
      c.errs.InvalidInt("spec.activeDeadlineSeconds", *deadline,
                        "must be less than or equal to previous value");
      return;
    }
  } else if (old_deadline) {
    c.errs.Invalid("spec.activeDeadlineSeconds", "null",
                   "must not update from a positive integer to nil value");
  }
  // Only additions to tolerations (an existing one may change only its tolerationSeconds).
  if (const json::value* old_tolerations = old_spec.if_contains("tolerations");
      old_tolerations != nullptr && old_tolerations->is_array()) {
    const json::value* new_tolerations = spec.if_contains("tolerations");
    for (const json::value& ot : old_tolerations->get_array()) {
      if (!ot.is_object()) continue;
      json::object old_clone = ot.get_object();
      old_clone.erase("tolerationSeconds");
      bool found = false;
      if (new_tolerations != nullptr && new_tolerations->is_array()) {
        for (const json::value& nt : new_tolerations->get_array()) {
          if (!nt.is_object()) continue;
          json::object new_clone = nt.get_object();
          new_clone.erase("tolerationSeconds");
          if (SemanticEqual(old_clone, new_clone)) {
            found = true;
            break;
          }
        }
      }
      if (!found) {
        c.errs.Forbidden("spec.tolerations",
                         "existing toleration can not be modified except its tolerationSeconds");
        break;
      }
    }
  }
  if (SemanticEqual(spec, old_spec)) return;

  json::object munged = spec;
  for (std::string_view key : {"containers", "initContainers"}) {
    json::value* list = munged.if_contains(key);
    const json::value* old_list = old_spec.if_contains(key);
    if (list == nullptr || old_list == nullptr || !list->is_array() || !old_list->is_array()) {
      continue;
    }
    for (size_t i = 0; i < list->get_array().size() && i < old_list->get_array().size(); ++i) {
      json::object* ctr = list->get_array()[i].if_object();
      const json::object* old_ctr = old_list->get_array()[i].if_object();
      if (ctr == nullptr || old_ctr == nullptr) continue;
      if (const json::value* image = old_ctr->if_contains("image")) {
        (*ctr)["image"] = *image;
      } else {
        ctr->erase("image");
      }
    }
  }
  for (std::string_view key : {"activeDeadlineSeconds", "tolerations"}) {
    if (const json::value* v = old_spec.if_contains(key)) {
      munged[key] = *v;
    } else {
      munged.erase(key);
    }
  }
  if (const json::value* old_grace = old_spec.if_contains("terminationGracePeriodSeconds");
      old_grace != nullptr && AsInt(*old_grace).value_or(0) < 0) {
    if (const json::value* grace = munged.if_contains("terminationGracePeriodSeconds");
        grace != nullptr && AsInt(*grace) == 1) {
      munged["terminationGracePeriodSeconds"] = *old_grace;
    }
  }
  if (!SemanticEqual(munged, old_spec)) {
    // unverified: kube appends cmp.Diff of the typed specs; ours lists the differing fields.
    c.errs.Forbidden(
        "spec",
        "pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
        "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
        "set to 1 if it was previously negative)\n" +
            SpecDiff(old_spec, munged));
  }
}

std::optional<AdmissionError> AdmitPod(Context& c) {
  if (!c.main_resource()) return std::nullopt;  // status and binding change no spec
  json::object* spec = c.reader.Obj(c.obj, "spec", "spec", "v1.PodSpec");
  if (spec == nullptr) {
    if (!c.problems.empty()) return std::nullopt;
    c.obj["spec"] = json::object();
    spec = &c.obj["spec"].as_object();
  }
  DefaultPodSpec(*spec, /*is_pod=*/true);
  if (std::optional<AdmissionError> err = TypeProblemsError(c)) return err;

  if (c.create()) {
    if (std::optional<AdmissionError> err = AdmitPodPriority(c, *spec)) return err;
    AddDefaultTolerations(*spec);
    // PrepareForCreate: the status is the server's.
    std::string qos = PodQosClass(*spec);
    c.obj["status"] = json::object{{"phase", "Pending"}, {"qosClass", qos}};
    spec = &c.obj["spec"].as_object();  // the insert may have moved it
  } else {
    // The priority plugin keeps what it set on create.
    const json::object* old_spec = FindObject(*c.req.old, "spec");
    if (old_spec != nullptr) {
      for (std::string_view key : {"priority", "preemptionPolicy"}) {
        if (IsAbsent(spec->if_contains(key)) && old_spec->contains(key)) {
          (*spec)[key] = old_spec->at(key);
        }
      }
    }
  }
  ValidatePodSpec(c, *spec, "spec");
  if (!c.create()) {
    const json::object* old_spec = FindObject(*c.req.old, "spec");
    static const json::object kEmpty;
    ValidatePodSpecUpdate(c, *spec, old_spec != nullptr ? *old_spec : kEmpty);
  }
  return std::nullopt;
}

// --- Other core kinds ----------------------------------------------------------------------------

std::optional<AdmissionError> AdmitNamespace(Context& c) {
  json::object* meta = EnsureObject(c.obj, "metadata");
  if (meta != nullptr && !c.name.empty()) {
    // The NamespaceDefaultLabelName feature (GA in 1.22): the name as a label.
    if (json::object* labels = EnsureObject(*meta, "labels")) {
      (*labels)["kubernetes.io/metadata.name"] = c.name;
    }
  }
  if (c.create()) {
    json::object* spec = EnsureObject(c.obj, "spec");
    if (spec != nullptr && IsAbsent(spec->if_contains("finalizers"))) {
      (*spec)["finalizers"] = json::array{"kubernetes"};
    }
    c.obj["status"] = json::object{{"phase", "Active"}};
  }
  return std::nullopt;
}

std::optional<AdmissionError> AdmitEvent(Context& c) {
  json::object* involved =
      c.reader.Obj(c.obj, "involvedObject", "involvedObject", "v1.ObjectReference");
  if (involved == nullptr) {
    // unverified: kube has no such check (an empty involvedObject passes); muster needs one.
    if (c.problems.empty()) c.errs.Required("involvedObject");
    return std::nullopt;
  }
  // legacyValidateEvent for events without eventTime.
  std::string involved_ns = c.reader.StrOr(*involved, "namespace", "involvedObject.namespace");
  if (involved_ns.empty()) {
    if (!c.ns.empty() && c.ns != "default") {
      c.errs.InvalidString("involvedObject.namespace", involved_ns,
                           "does not match event.namespace");
    }
  } else if (involved_ns != c.ns) {
    c.errs.InvalidString("involvedObject.namespace", involved_ns, "does not match event.namespace");
  }
  return std::nullopt;
}

std::optional<AdmissionError> AdmitPriorityClass(Context& c) {
  DefaultString(c.obj, "preemptionPolicy", "PreemptLowerPriority");
  const json::value* value_json = c.obj.if_contains("value");
  std::optional<int64_t> value = c.reader.Int(c.obj, "value", "value");
  std::optional<bool> global = c.reader.Bool(c.obj, "globalDefault", "globalDefault");
  std::string policy = c.reader.StrOr(c.obj, "preemptionPolicy", "preemptionPolicy");
  if (std::optional<AdmissionError> err = TypeProblemsError(c)) return err;

  // unverified: upstream `value` is a plain int32 (absent reads as 0); muster requires it.
  if (IsAbsent(value_json)) c.errs.Required("value");
  if (c.name.starts_with("system-")) {
    std::optional<int64_t> known;
    if (c.name == "system-cluster-critical") known = kSystemClusterCritical;
    if (c.name == "system-node-critical") known = kSystemNodeCritical;
    std::string why;
    if (!known) {
      why = fmt::format("{} is not a known system priority class", c.name);
    } else if (value && *value != *known) {
      why = fmt::format("value of {} PriorityClass must be {}", c.name, *known);
    }
    if (!why.empty()) {
      c.errs.Forbidden("metadata.name",
                       "priority class names with 'system-' prefix are reserved for system use "
                       "only. error: " +
                           why);
    }
  } else if (value && *value > kHighestUserDefinablePriority) {
    c.errs.Forbidden("value", fmt::format("maximum allowed value of a user defined priority is {}",
                                          kHighestUserDefinablePriority));
  }
  if (policy != "PreemptLowerPriority" && policy != "Never") {
    c.errs.NotSupported("preemptionPolicy", policy, {"PreemptLowerPriority", "Never"});
  }
  if (!c.create()) {
    const json::value* old_value = c.req.old->if_contains("value");
    std::optional<int64_t> old =
        old_value == nullptr ? std::optional<int64_t>(0) : AsInt(*old_value);
    if (value.value_or(0) != old.value_or(0)) {
      c.errs.Forbidden("value", "may not be changed in an update.");
    }
    std::string old_policy = StringAt(*c.req.old, "preemptionPolicy");
    if (old_policy.empty()) old_policy = "PreemptLowerPriority";
    if (policy != old_policy)
      c.errs.InvalidString("preemptionPolicy", policy, "field is immutable");
  }
  if (!c.errs.empty()) return std::nullopt;

  // The priority admission plugin: a single global default.
  if (global.value_or(false)) {
    std::optional<PriorityClassInfo> current = DefaultPriorityClass(c.req.store);
    if (current && (c.create() || current->name != c.name)) {
      return ForbiddenError(c.res, c.name,
                            fmt::format("PriorityClass {} is already marked as default. Only one "
                                        "default can exist",
                                        current->name));
    }
  }
  return std::nullopt;
}

// --- Volcano -------------------------------------------------------------------------------------

// State of a queue for the webhooks' checks; nullopt when it does not exist.
std::optional<std::string> QueueState(const store::Store* st, const std::string& name) {
  std::optional<json::object> queue = GetObject(st, kQueuesResource, "", name);
  if (!queue) return std::nullopt;
  std::string state = NestedString(*queue, "status", "state");
  // muster has no queue controller to fill in the state: a queue that was never given one was
  // never closed either.
  return state.empty() ? "Open" : state;
}

std::string QueueNotFound(const std::string& name) {
  return fmt::format("queues.scheduling.volcano.sh {} not found", api::GoQuote(name));
}

// pkg/webhooks/admission/jobs/validate/util.go: policyEventMap and policyActionMap entries open
// to users, in declaration order (Go prints them in map order, which varies).
const std::vector<std::string>& ValidPolicyEvents() {
  static const auto* const events =
      new std::vector<std::string>{"*",       "PodPending",    "PodFailed",  "PodEvicted",
                                   "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated"};
  return *events;
}
const std::vector<std::string>& ValidPolicyActions() {
  static const auto* const actions =
      new std::vector<std::string>{"AbortJob",         "RestartJob",   "RestartTask", "RestartPod",
                                   "RestartPartition", "TerminateJob", "CompleteJob", "ResumeJob"};
  return *actions;
}

// go-multierror's text for a list of errors.
std::string MultiError(const std::vector<std::string>& errors) {
  if (errors.size() == 1) return fmt::format("1 error occurred:\n\t* {}\n\n", errors[0]);
  std::string points;
  for (size_t i = 0; i < errors.size(); ++i) {
    if (i > 0) points += "\n\t";
    points += "* " + errors[i];
  }
  return fmt::format("{} errors occurred:\n\t{}\n\n", errors.size(), points);
}

// validatePolicies; "" when the policies are valid.
std::string ValidatePolicies(const json::value* policies_json, const std::string& path) {
  if (policies_json == nullptr || !policies_json->is_array()) return "";
  std::vector<std::string> errors;
  std::set<std::string> events_seen;
  std::set<int64_t> exit_codes;
  const auto& valid_events = ValidPolicyEvents();
  const auto& valid_actions = ValidPolicyActions();
  for (const json::value& pv : policies_json->get_array()) {
    const json::object* policy = pv.if_object();
    if (policy == nullptr) continue;
    std::string event = StringAt(*policy, "event");
    std::vector<std::string> events;
    if (const json::value* ev = policy->if_contains("events"); ev && ev->is_array()) {
      for (const json::value& e : ev->get_array()) {
        if (e.is_string()) events.emplace_back(View(e.get_string()));
      }
    }
    std::optional<int64_t> exit_code;
    if (const json::value* ec = policy->if_contains("exitCode"); !IsAbsent(ec)) {
      exit_code = AsInt(*ec);
    }
    std::string action = StringAt(*policy, "action");
    if ((!event.empty() || !events.empty()) && exit_code) {
      errors.push_back("must not specify event and exitCode simultaneously");
      break;
    }
    if (event.empty() && events.empty() && !exit_code) {
      errors.push_back("either event and exitCode should be specified");
      break;
    }
    if (!event.empty() || !events.empty()) {
      // getEventList: events, then event, without duplicates.
      std::vector<std::string> list;
      for (const std::string& e : events) {
        if (std::find(list.begin(), list.end(), e) == list.end()) list.push_back(e);
      }
      if (!event.empty() && std::find(list.begin(), list.end(), event) == list.end()) {
        list.push_back(event);
      }
      bool stop = false;
      for (const std::string& e : list) {
        if (std::find(valid_events.begin(), valid_events.end(), e) == valid_events.end()) {
          errors.push_back(
              fmt::format("{}: Invalid value: {}: invalid policy event", path, api::GoQuote(e)));
          stop = true;
          break;
        }
        if (std::find(valid_actions.begin(), valid_actions.end(), action) == valid_actions.end()) {
          errors.push_back(
              fmt::format("{}: Invalid value: {}: invalid policy action", path, api::GoQuote(action)));
          stop = true;
          break;
        }
        if (!events_seen.insert(e).second) {
          errors.push_back(fmt::format("duplicate event {}  across different policy", e));
          stop = true;
          break;
        }
      }
      if (stop) break;
    } else {
      if (*exit_code == 0) {
        errors.push_back("0 is not a valid error code");
        break;
      }
      if (!exit_codes.insert(*exit_code).second) {
        errors.push_back(fmt::format("duplicate exitCode {}", *exit_code));
        break;
      }
    }
  }
  if (events_seen.contains("*") && events_seen.size() > 1) {
    errors.push_back("if there's * here, no other policy should be here");
  }
  if (errors.empty()) return "";
  return MultiError(errors);
}

// Job plugins the controller knows (plugins.GetPluginBuilder).
bool IsKnownJobPlugin(std::string_view name) {
  static const std::set<std::string_view> kPlugins = {"env",        "svc",     "ssh", "mpi",
                                                      "tensorflow", "pytorch", "ray", "hcclrank"};
  return kPlugins.contains(name);
}

// The task template checked the way validateTaskTemplate does: defaulted copy, pod template
// validation, each error as "spec.task[<i>].<error>. ".
std::string ValidateTaskTemplate(const AdmissionRequest& req, const json::object& task,
                                 size_t index) {
  json::object tmpl;
  if (const json::object* t = FindObject(task, "template")) tmpl = *t;
  json::object spec;
  if (const json::object* s = FindObject(tmpl, "spec")) spec = *s;
  DefaultPodSpec(spec, /*is_pod=*/false);
  Context sub(req, tmpl);
  if (const json::object* meta = FindObject(tmpl, "metadata")) {
    ValidateLabels(sub, *meta, "labels", "template.labels");
  }
  ValidatePodSpec(sub, spec, "template.spec");
  std::vector<FieldError> errors = sub.errs.list();
  for (const TypeProblem& p : sub.problems) {
    // unverified: the CRD schema would refuse these before the webhook runs.
    errors.push_back(
        {ErrorType::kInvalid, p.path, api::GoQuote(p.quantity ? p.go_got : p.schema_got),
         p.quantity ? kQuantityFormatError : fmt::format("must be of type {}", p.schema_want)});
  }
  if (errors.empty()) return "";
  std::string msg = fmt::format("spec.task[{}].", index);
  for (const FieldError& e : errors) msg += e.Error() + ". ";
  return msg;
}

// The per-task defaults of mutatejob.volcano.sh (name, minAvailable = replicas, dnsPolicy with
// hostNetwork) plus the template scheduler inheritance. Each fills only an absent field, so
// running it again over a defaulted spec changes nothing. Returns the sum of the tasks'
// minAvailable.
//
// Unlike the webhook, this runs on update too: `kubectl apply` sends a custom resource a JSON
// merge patch, which replaces the whole `tasks` list with the manifest's, dropping what creation
// filled in. Without defaulting again, re-applying an unchanged manifest would look like a change
// of `tasks[*].template` and be refused, and the stored template would lose its schedulerName.
int64_t DefaultJobTasks(json::object& spec) {
  json::value* tasks = spec.if_contains("tasks");
  if (tasks == nullptr || !tasks->is_array()) return 0;
  std::string scheduler = StringAt(spec, "schedulerName");
  if (scheduler.empty()) scheduler = "volcano";
  int64_t job_min = 0;
  json::array& list = tasks->get_array();
  for (size_t i = 0; i < list.size(); ++i) {
    json::object* task = list[i].if_object();
    if (task == nullptr) continue;
    DefaultString(*task, "name", fmt::format("default{}", i));
    int64_t replicas = 0;
    if (const json::value* r = task->if_contains("replicas")) replicas = AsInt(*r).value_or(0);
    if (IsAbsent(task->if_contains("minAvailable"))) (*task)["minAvailable"] = replicas;
    job_min += AsInt(task->at("minAvailable")).value_or(0);
    json::object* tmpl = EnsureObject(*task, "template");
    json::object* pod_spec = tmpl == nullptr ? nullptr : EnsureObject(*tmpl, "spec");
    if (pod_spec == nullptr) continue;
    if (const json::value* hn = pod_spec->if_contains("hostNetwork");
        hn != nullptr && hn->is_bool() && hn->get_bool()) {
      DefaultString(*pod_spec, "dnsPolicy", "ClusterFirstWithHostNet");
    }
    // The job controller gives pods the job's scheduler when the template names none.
    DefaultString(*pod_spec, "schedulerName", scheduler);
  }
  return job_min;
}

// Webhook mutatejob.volcano.sh (create only), plus the template scheduler inheritance.
void MutateJob(json::object& spec) {
  DefaultString(spec, "queue", "default");
  DefaultString(spec, "schedulerName", "volcano");
  if (const json::value* retry = spec.if_contains("maxRetry");
      IsAbsent(retry) || AsInt(*retry).value_or(0) == 0) {
    spec["maxRetry"] = 3;
  }
  const int64_t job_min = DefaultJobTasks(spec);
  if (const json::value* m = spec.if_contains("minAvailable");
      IsAbsent(m) || AsInt(*m).value_or(0) == 0) {
    spec["minAvailable"] = job_min;
  }
  // patchDefaultPlugins: tensorflow, mpi and pytorch need svc; mpi needs ssh.
  if (json::value* plugins = spec.if_contains("plugins"); plugins && plugins->is_object()) {
    json::object& p = plugins->get_object();
    if (p.contains("tensorflow") || p.contains("mpi") || p.contains("pytorch")) {
      if (!p.contains("svc")) p["svc"] = json::array();
    }
    if (p.contains("mpi") && !p.contains("ssh")) p["ssh"] = json::array();
  }
}

// Webhook validatejob.volcano.sh on create (validateJobCreate); "" when allowed.
std::string ValidateJobCreate(const Context& c, const json::object& spec) {
  auto int_at = [](const json::object& o, std::string_view key) -> std::optional<int64_t> {
    const json::value* v = o.if_contains(key);
    return IsAbsent(v) ? std::nullopt : AsInt(*v);
  };
  int64_t min_available = int_at(spec, "minAvailable").value_or(0);
  if (min_available < 0) return "job 'minAvailable' must be >= 0.";
  if (int_at(spec, "maxRetry").value_or(0) < 0) return "'maxRetry' cannot be less than zero.";
  if (std::optional<int64_t> ttl = int_at(spec, "ttlSecondsAfterFinished"); ttl && *ttl < 0) {
    return "'ttlSecondsAfterFinished' cannot be less than zero.";
  }
  const json::value* tasks_json = spec.if_contains("tasks");
  if (tasks_json == nullptr || !tasks_json->is_array() || tasks_json->get_array().empty()) {
    return "No task specified in job spec";
  }
  std::string msg;
  std::set<std::string> task_names;
  int64_t total_replicas = 0;
  bool has_dependencies = false;
  const json::array& tasks = tasks_json->get_array();
  for (size_t index = 0; index < tasks.size(); ++index) {
    const json::object* task = tasks[index].if_object();
    if (task == nullptr) continue;
    std::string name = StringAt(*task, "name");
    if (const json::value* d = task->if_contains("dependsOn"); !IsAbsent(d)) {
      has_dependencies = true;
    }
    int64_t replicas = int_at(*task, "replicas").value_or(0);
    if (replicas < 0) msg += fmt::format(" 'replicas' < 0 in task: {};", name);
    if (std::optional<int64_t> task_min = int_at(*task, "minAvailable");
        task_min && *task_min > replicas) {
      msg += fmt::format(" 'minAvailable' is greater than 'replicas' in task: {}, job: {}", name,
                         c.name);
    }
    total_replicas += replicas;
    if (std::vector<std::string> errs = Dns1123LabelErrors(name); !errs.empty()) {
      msg += fmt::format(" {};", GoList(errs));
    }
    if (!task_names.insert(name).second) {
      msg += fmt::format(" duplicated task name {};", name);
      break;
    }
    if (std::string err = ValidatePolicies(task->if_contains("policies"), "spec.tasks.policies");
        !err.empty()) {
      msg += err + fmt::format(" valid events are {}, valid actions are {}",
                               GoList(ValidPolicyEvents()), GoList(ValidPolicyActions()));
    }
    // jobhelpers.MakePodName: <job>-<task>-<index>.
    std::string pod_name = fmt::format("{}-{}-{}", c.name, name, index);
    if (std::vector<std::string> errs = QualifiedNameErrors(pod_name); !errs.empty()) {
      msg += fmt::format("create pod with name {} validate failed {};", pod_name, GoList(errs));
    }
    msg += ValidateTaskTemplate(c.req, *task, index);
  }
  if (std::vector<std::string> errs = QualifiedNameErrors(c.name); !errs.empty()) {
    msg += fmt::format("create job with name {} validate failed {}", c.name, GoList(errs));
  }
  if (total_replicas < min_available) {
    msg += "job 'minAvailable' should not be greater than total replicas in tasks;";
  }
  if (std::string err = ValidatePolicies(spec.if_contains("policies"), "spec.policies");
      !err.empty()) {
    msg += err + fmt::format(" valid events are {}, valid actions are {};",
                             GoList(ValidPolicyEvents()), GoList(ValidPolicyActions()));
  }
  if (const json::value* plugins = spec.if_contains("plugins"); plugins && plugins->is_object()) {
    std::set<std::string> sorted;
    for (const auto& [name, args] : plugins->get_object()) sorted.insert(std::string(name));
    for (const std::string& name : sorted) {
      if (!IsKnownJobPlugin(name)) msg += fmt::format(" unable to find job plugin: {}", name);
    }
  }
  // validateIO
  if (const json::value* volumes = spec.if_contains("volumes"); volumes && volumes->is_array()) {
    std::set<std::string> mounts;
    for (const json::value& vv : volumes->get_array()) {
      const json::object* volume = vv.if_object();
      if (volume == nullptr) continue;
      std::string mount = StringAt(*volume, "mountPath");
      bool has_claim = !IsAbsent(volume->if_contains("volumeClaim"));
      std::string claim_name = StringAt(*volume, "volumeClaimName");
      if (mount.empty()) {
        msg += " mountPath is required;";
        break;
      }
      if (!mounts.insert(mount).second) {
        msg += fmt::format(" duplicated mountPath: {};", mount);
        break;
      }
      if (!has_claim && claim_name.empty()) {
        msg += " either VolumeClaim or VolumeClaimName must be specified;";
        break;
      }
      if (!claim_name.empty() && has_claim) {
        msg +=
            "conflict: If you want to use an existing PVC, just specify VolumeClaimName.If you "
            "want to create a new PVC, you do not need to specify VolumeClaimName";
        break;
      }
    }
  }
  std::string queue = StringAt(spec, "queue");
  if (std::optional<std::string> state = QueueState(c.req.store, queue); !state) {
    msg += fmt::format(" unable to find job queue: {}", QueueNotFound(queue));
  } else if (*state != "Open") {
    msg += fmt::format("can only submit job to queue with state `Open`, queue `{}` status is `{}`",
                       queue, *state);
  }
  if (has_dependencies) {
    // topoSort: Kahn's algorithm over dependsOn.name edges.
    std::map<std::string, int> in_degree;
    std::map<std::string, std::vector<std::string>> out_edges;
    for (const json::value& tv : tasks) {
      const json::object* task = tv.if_object();
      if (task == nullptr) continue;
      std::string name = StringAt(*task, "name");
      in_degree.try_emplace(name, 0);
      const json::object* depends = FindObject(*task, "dependsOn");
      const json::value* names = depends == nullptr ? nullptr : depends->if_contains("name");
      if (names == nullptr || !names->is_array()) continue;
      for (const json::value& d : names->get_array()) {
        if (!d.is_string()) continue;
        out_edges[std::string(View(d.get_string()))].push_back(name);
        ++in_degree[name];
      }
    }
    std::vector<std::string> ready;
    for (const auto& [name, degree] : in_degree) {
      if (degree == 0) ready.push_back(name);
    }
    size_t sorted = 0;
    while (!ready.empty()) {
      std::string next = ready.back();
      ready.pop_back();
      ++sorted;
      for (const std::string& to : out_edges[next]) {
        if (--in_degree[to] == 0) ready.push_back(to);
      }
    }
    if (sorted != tasks.size()) {
      msg += "job has dependencies between tasks, but doesn't form a directed acyclic graph(DAG)";
    }
  }
  return msg;
}

// Webhook validatejob.volcano.sh on update (validateJobUpdate); "" when allowed.
std::string ValidateJobUpdate(const json::object& spec, const json::object& old_spec) {
  auto int_at = [](const json::object& o, std::string_view key) -> std::optional<int64_t> {
    const json::value* v = o.if_contains(key);
    return IsAbsent(v) ? std::nullopt : AsInt(*v);
  };
  static const json::array kNoTasks;
  const json::value* tv = spec.if_contains("tasks");
  const json::array& tasks = tv != nullptr && tv->is_array() ? tv->get_array() : kNoTasks;
  const json::value* otv = old_spec.if_contains("tasks");
  const json::array& old_tasks = otv != nullptr && otv->is_array() ? otv->get_array() : kNoTasks;
  int64_t total_replicas = 0;
  for (const json::value& t : tasks) {
    const json::object* task = t.if_object();
    if (task == nullptr) continue;
    std::string name = StringAt(*task, "name");
    int64_t replicas = int_at(*task, "replicas").value_or(0);
    if (replicas < 0) return fmt::format("'replicas' must be >= 0 in task: {}", name);
    if (std::optional<int64_t> task_min = int_at(*task, "minAvailable");
        task_min && *task_min > replicas) {
      return fmt::format("'minAvailable' must be <= 'replicas' in task: {};", name);
    }
    total_replicas += replicas;
  }
  int64_t min_available = int_at(spec, "minAvailable").value_or(0);
  if (min_available > total_replicas) {
    return "job 'minAvailable' must not be greater than total replicas";
  }
  if (min_available < 0) return "job 'minAvailable' must be >= 0";
  if (tasks.size() != old_tasks.size()) return "job updates may not add or remove tasks";

  json::object munged = spec;
  for (std::string_view key : {"minAvailable", "priorityClassName"}) {
    if (const json::value* v = old_spec.if_contains(key)) {
      munged[key] = *v;
    } else {
      munged.erase(key);
    }
  }
  if (json::value* mt = munged.if_contains("tasks"); mt != nullptr && mt->is_array()) {
    for (size_t i = 0; i < mt->get_array().size(); ++i) {
      json::object* task = mt->get_array()[i].if_object();
      const json::object* old_task = old_tasks[i].if_object();
      if (task == nullptr || old_task == nullptr) continue;
      for (std::string_view key : {"replicas", "minAvailable"}) {
        if (const json::value* v = old_task->if_contains(key)) {
          (*task)[key] = *v;
        } else {
          task->erase(key);
        }
      }
    }
  }
  // The job controller fills in volumeClaimName for claims it creates.
  auto strip_claim_names = [](json::object& s) {
    if (json::value* volumes = s.if_contains("volumes"); volumes && volumes->is_array()) {
      for (json::value& v : volumes->get_array()) {
        if (json::object* volume = v.if_object();
            volume != nullptr && !IsAbsent(volume->if_contains("volumeClaim"))) {
          volume->erase("volumeClaimName");
        }
      }
    }
  };
  json::object old_copy = old_spec;
  strip_claim_names(munged);
  strip_claim_names(old_copy);
  if (!SemanticEqual(munged, old_copy)) {
    return "job updates may not change fields other than `minAvailable`, `tasks[*].replicas "
           "under spec`";
  }
  return "";
}

// CRD schema checks of the Job fields the webhooks read.
void CheckJobSchema(Context& c, json::object& spec) {
  c.reader.Int(spec, "minAvailable", "spec.minAvailable");
  c.reader.Int(spec, "maxRetry", "spec.maxRetry");
  c.reader.Int(spec, "ttlSecondsAfterFinished", "spec.ttlSecondsAfterFinished");
  c.reader.Str(spec, "queue", "spec.queue");
  c.reader.Str(spec, "schedulerName", "spec.schedulerName");
  c.reader.Str(spec, "priorityClassName", "spec.priorityClassName");
  if (std::optional<int64_t> min_success = c.reader.Int(spec, "minSuccess", "spec.minSuccess");
      min_success && *min_success < 1) {
    // unverified: the CRD's `minimum: 1` as apiextensions words it.
    c.errs.InvalidInt("spec.minSuccess", *min_success,
                      "spec.minSuccess in body should be greater than or equal to 1");
  }
  c.reader.Obj(spec, "plugins", "spec.plugins", "map[string][]string");
  c.reader.Arr(spec, "policies", "spec.policies", "[]v1alpha1.LifecyclePolicy");
  c.reader.Arr(spec, "volumes", "spec.volumes", "[]v1alpha1.VolumeSpec");
  json::array* tasks = c.reader.Arr(spec, "tasks", "spec.tasks", "[]v1alpha1.TaskSpec");
  if (tasks == nullptr) return;
  for (size_t i = 0; i < tasks->size(); ++i) {
    std::string path = fmt::format("spec.tasks[{}]", i);
    json::object* task = (*tasks)[i].if_object();
    if (task == nullptr) {
      c.reader.Problem(path, (*tasks)[i], "v1alpha1.TaskSpec", "object");
      continue;
    }
    c.reader.Str(*task, "name", path + ".name");
    c.reader.Int(*task, "replicas", path + ".replicas");
    c.reader.Int(*task, "minAvailable", path + ".minAvailable");
    c.reader.Arr(*task, "policies", path + ".policies", "[]v1alpha1.LifecyclePolicy");
    c.reader.Obj(*task, "template", path + ".template", "v1.PodTemplateSpec");
  }
}

std::optional<AdmissionError> AdmitVolcanoJob(Context& c) {
  if (!c.main_resource()) return std::nullopt;  // the webhook does not watch jobs/status
  json::object* spec = c.reader.Obj(c.obj, "spec", "spec", "v1alpha1.JobSpec");
  if (spec == nullptr) {
    if (!c.problems.empty()) return TypeProblemsError(c);
    c.obj["spec"] = json::object();
    spec = &c.obj["spec"].as_object();
  }
  CheckJobSchema(c, *spec);
  if (std::optional<AdmissionError> err = TypeProblemsError(c)) return err;
  if (c.create()) {
    MutateJob(*spec);
    c.obj.erase("status");              // the status subresource owns it
    spec = &c.obj["spec"].as_object();  // the erase may have moved it
  } else {
    DefaultJobTasks(*spec);
  }
  if (!c.errs.empty()) return std::nullopt;  // schema errors come before the webhook
  std::string msg;
  if (c.create()) {
    msg = ValidateJobCreate(c, *spec);
  } else {
    const json::object* old_spec = FindObject(*c.req.old, "spec");
    static const json::object kEmpty;
    msg = ValidateJobUpdate(*spec, old_spec != nullptr ? *old_spec : kEmpty);
  }
  // strings.TrimSpace
  size_t first = msg.find_first_not_of(" \t\n\r");
  if (first == std::string::npos) return std::nullopt;
  msg = msg.substr(first, msg.find_last_not_of(" \t\n\r") - first + 1);
  return WebhookDenied(kJobWebhook, msg);
}

std::optional<AdmissionError> AdmitPodGroup(Context& c) {
  json::object* spec = c.reader.Obj(c.obj, "spec", "spec", "v1beta1.PodGroupSpec");
  if (spec == nullptr) {
    if (!c.problems.empty()) return TypeProblemsError(c);
    c.obj["spec"] = json::object();
    spec = &c.obj["spec"].as_object();
  }
  std::optional<int64_t> min_member = c.reader.Int(*spec, "minMember", "spec.minMember");
  c.reader.Str(*spec, "queue", "spec.queue");
  if (std::optional<AdmissionError> err = TypeProblemsError(c)) return err;
  if (min_member && *min_member < 0) {
    // unverified: the CRD schema's minimum as apiextensions words it.
    c.errs.InvalidInt("spec.minMember", *min_member,
                      "spec.minMember in body should be greater than or equal to 0");
  }
  if (!c.create() || !c.main_resource()) return std::nullopt;

  // mutatepodgroup.volcano.sh: the namespace's queue annotation, else "default".
  if (StringAt(*spec, "queue").empty()) {
    std::string queue = "default";
    if (std::optional<json::object> ns = GetObject(c.req.store, kNamespacesResource, "", c.ns)) {
      if (const json::object* meta = FindObject(*ns, "metadata")) {
        if (const json::object* annotations = FindObject(*meta, "annotations")) {
          std::string annotated = StringAt(*annotations, "scheduling.volcano.sh/queue-name");
          if (!annotated.empty()) queue = annotated;
        }
      }
    }
    (*spec)["queue"] = queue;
  }
  if (json::object* status = EnsureObject(c.obj, "status"))
    DefaultString(*status, "phase", "Pending");
  spec = &c.obj["spec"].as_object();  // the insert may have moved it
  if (!c.errs.empty()) return std::nullopt;

  // validatepodgroup.volcano.sh (create only).
  std::string queue = StringAt(*spec, "queue");
  std::optional<std::string> state = QueueState(c.req.store, queue);
  if (!state) {
    return WebhookDenied(kPodGroupWebhook,
                         fmt::format("unable to find queue: {}", QueueNotFound(queue)));
  }
  if (*state != "Open") {
    return WebhookDenied(kPodGroupWebhook,
                         fmt::format("can only submit PodGroup to queue with state `Open`, queue "
                                     "`{}` status is `{}`.",
                                     queue, *state));
  }
  return std::nullopt;
}

std::optional<AdmissionError> AdmitQueue(Context& c) {
  if (!c.main_resource()) return std::nullopt;  // the webhook does not watch queues/status
  json::object* spec = c.reader.Obj(c.obj, "spec", "spec", "v1beta1.QueueSpec");
  if (spec == nullptr) {
    if (!c.problems.empty()) return TypeProblemsError(c);
    c.obj["spec"] = json::object();
    spec = &c.obj["spec"].as_object();
  }
  std::optional<int64_t> weight = c.reader.Int(*spec, "weight", "spec.weight");
  c.reader.Bool(*spec, "reclaimable", "spec.reclaimable");
  c.reader.Str(*spec, "parent", "spec.parent");
  if (std::optional<AdmissionError> err = TypeProblemsError(c)) return err;

  if (c.create()) {
    // mutatequeue.volcano.sh
    DefaultValue(*spec, "reclaimable", true);
    if (weight.value_or(0) == 0) (*spec)["weight"] = 1;
    // The queue controller opens new queues; the status subresource owns the rest.
    c.obj["status"] = json::object{{"state", "Open"}};
    spec = &c.obj["spec"].as_object();  // the insert may have moved it
  } else if (!weight) {
    (*spec)["weight"] = 1;  // the CRD's structural default
  }
  weight = AsInt((*spec)["weight"]);
  if (weight && *weight > 65535) {
    // unverified: the CRD's `maximum: 65535` as apiextensions words it.
    c.errs.InvalidInt("spec.weight", *weight,
                      "spec.weight in body should be less than or equal to 65535");
  }
  if (!c.errs.empty()) return std::nullopt;

  // validatequeue.volcano.sh (create and update).
  std::vector<FieldError> errors;
  std::string state;
  if (const json::object* status = FindObject(c.obj, "status")) state = StringAt(*status, "state");
  if (!state.empty() && state != "Open" && state != "Closed") {
    errors.push_back({ErrorType::kInvalid, "requestBody.spec.state", api::GoQuote(state),
                      "queue state must be in [Open Closed]"});
  }
  if (weight.value_or(0) <= 0) {
    errors.push_back({ErrorType::kInvalid, "requestBody.spec.weight",
                      std::to_string(weight.value_or(0)),
                      "queue weight must be a positive integer"});
  }
  if (!errors.empty()) return WebhookDenied(kQueueWebhook, AggregateFieldErrors(errors));
  return std::nullopt;
}

}  // namespace

std::optional<AdmissionError> Admit(const AdmissionRequest& req, boost::json::object& obj) {
  if (req.resource == nullptr) {
    AdmissionError err;
    err.code = 500;
    err.reason = "InternalError";
    err.message = "admission: no resource given";
    return err;
  }
  Context c(req, obj);
  AdmitMetadata(c);
  if (std::optional<AdmissionError> err = TypeProblemsError(c)) return err;
  if (std::optional<AdmissionError> err = CheckNamespaceLifecycle(c)) return err;

  const ResourceInfo& res = *req.resource;
  std::optional<AdmissionError> refused;
  if (res.group.empty()) {
    if (res.resource == "pods") refused = AdmitPod(c);
    if (res.resource == "namespaces") refused = AdmitNamespace(c);
    if (res.resource == "events") refused = AdmitEvent(c);
  } else if (res.group == "scheduling.k8s.io" && res.resource == "priorityclasses") {
    refused = AdmitPriorityClass(c);
  } else if (res.group == "batch.volcano.sh" && res.resource == "jobs") {
    refused = AdmitVolcanoJob(c);
  } else if (res.group == "scheduling.volcano.sh" && res.resource == "podgroups") {
    refused = AdmitPodGroup(c);
  } else if (res.group == "scheduling.volcano.sh" && res.resource == "queues") {
    refused = AdmitQueue(c);
  }
  if (refused) return refused;
  if (std::optional<AdmissionError> err = TypeProblemsError(c)) return err;
  if (!c.errs.empty()) return InvalidError(res, c.name, c.errs.list());
  return std::nullopt;
}

}  // namespace muster::apiserver
