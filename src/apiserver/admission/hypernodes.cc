#include "apiserver/admission/kinds.h"

// Volcano HyperNodes (topology.volcano.sh/v1alpha1): the CRD schema's checks
// (config/crd/volcano/bases/topology.volcano.sh_hypernodes.yaml: tier required and at least 0,
// at least one member, a member's type Node or HyperNode, its selector exactly one of exactMatch,
// regexMatch and labelMatch, as the schema's x-kubernetes-validations word it), then the
// webhook's (pkg/webhooks/admission/hypernodes/validate/admit_hypernode.go: a regexMatch pattern
// must compile; its message with the C++ library's reason instead of Go's). muster's own: a
// member HyperNode named exactly must not close a cycle through the stored HyperNodes' exact
// HyperNode members. A selector matching no node is accepted, as Volcano accepts it (a rack
// whose nodes have not joined yet).

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "api/names.h"
#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "fmt/format.h"

namespace muster::apiserver::admission {
namespace {

constexpr char kHyperNodesResource[] = "hypernodes.topology.volcano.sh";
constexpr char kHyperNodeWebhook[] = "validatehypernode.volcano.sh";

// The names of the HyperNodes `hn` names exactly as HyperNode members.
std::vector<std::string> ExactChildren(const json::object& hn) {
  std::vector<std::string> out;
  const json::object* spec = FindObject(hn, "spec");
  const json::value* members = spec != nullptr ? spec->if_contains("members") : nullptr;
  if (members == nullptr || !members->is_array()) return out;
  for (const json::value& m : members->get_array()) {
    if (!m.is_object() || StringAt(m.get_object(), "type") != "HyperNode") continue;
    const json::object* sel = FindObject(m.get_object(), "selector");
    const json::object* exact = sel != nullptr ? FindObject(*sel, "exactMatch") : nullptr;
    if (exact != nullptr) out.push_back(StringAt(*exact, "name"));
  }
  return out;
}

}  // namespace

std::optional<ApiError> AdmitHyperNode(Context& c) {
  if (!c.main_resource()) return std::nullopt;
  json::object* spec = c.reader.Obj(c.obj, "spec", "spec", "v1alpha1.HyperNodeSpec");
  std::optional<int64_t> tier;
  json::array* members = nullptr;
  if (spec != nullptr) {
    tier = c.reader.Int(*spec, "tier", "spec.tier");
    c.reader.Str(*spec, "tierName", "spec.tierName");
    members = c.reader.Arr(*spec, "members", "spec.members", "[]v1alpha1.MemberSpec");
  }
  if (std::optional<ApiError> err = TypeProblemsError(c)) return err;
  if (spec == nullptr) {
    c.errs.Required("spec", "");
    return std::nullopt;
  }
  if (!spec->contains("tier")) {
    c.errs.Required("spec.tier", "");
  } else if (tier && *tier < 0) {
    // unverified: the CRD schema's minimum as apiextensions words it.
    c.errs.InvalidInt("spec.tier", *tier, "spec.tier in body should be greater than or equal to 0");
  }
  if (members == nullptr || members->empty()) {
    c.errs.Invalid("spec.members", members == nullptr ? "null" : "0",
                   "spec.members in body should have at least 1 items");
  }
  struct Pattern {
    std::string path, text;
  };
  std::vector<Pattern> patterns;
  std::vector<std::pair<std::string, std::string>> child_names;  // path, name
  for (size_t i = 0; members != nullptr && i < members->size(); ++i) {
    const std::string p = fmt::format("spec.members[{}]", i);
    json::object* m = (*members)[i].if_object();
    if (m == nullptr) {
      c.errs.Invalid(p, api::GoQuote(json::serialize((*members)[i])),
                     p + " in body must be of type object");
      continue;
    }
    std::string type = StringAt(*m, "type");
    if (!m->contains("type")) {
      c.errs.Required(p + ".type", "");
    } else if (type != "Node" && type != "HyperNode") {
      c.errs.NotSupported(p + ".type", type, {"Node", "HyperNode"});
    }
    const json::object* sel = FindObject(*m, "selector");
    const json::object* exact = sel != nullptr ? FindObject(*sel, "exactMatch") : nullptr;
    const json::object* regex = sel != nullptr ? FindObject(*sel, "regexMatch") : nullptr;
    const bool label = sel != nullptr && FindObject(*sel, "labelMatch") != nullptr;
    const int given = (exact != nullptr) + (regex != nullptr) + label;
    if (given == 0) {
      c.errs.Invalid(p + ".selector", "\"object\"",
                     "Either ExactMatch or RegexMatch or LabelMatch must be specified");
    } else if (given > 1) {
      c.errs.Invalid(p + ".selector", "\"object\"",
                     "Only one of ExactMatch, RegexMatch, or LabelMatch can be specified");
    }
    if (exact != nullptr) {
      std::string name = StringAt(*exact, "name");
      if (!api::IsDns1123Subdomain(name)) {
        c.errs.InvalidString(p + ".selector.exactMatch.name", name,
                             fmt::format("spec.members[{}].selector.exactMatch.name in body should "
                                         "match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
                                         "[a-z0-9])?)*$'",
                                         i));
      } else if (type == "HyperNode") {
        child_names.emplace_back(p + ".selector.exactMatch.name", name);
      }
    }
    if (regex != nullptr) {
      std::string pattern = StringAt(*regex, "pattern");
      if (pattern.empty()) {
        c.errs.Required(p + ".selector.regexMatch.pattern", "");
      } else {
        patterns.push_back({"spec.members.selector.regexMatch.pattern", pattern});
      }
    }
  }
  if (!c.errs.empty()) return std::nullopt;

  // validatehypernode.volcano.sh: patterns must compile.
  std::vector<FieldError> errors;
  for (const Pattern& pat : patterns) {
    try {
      std::regex compiled(pat.text, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      errors.push_back({ErrorType::kInvalid, pat.path, api::GoQuote(pat.text),
                        fmt::format("member regexMatch pattern is invalid: {}", e.what())});
    }
  }
  if (!errors.empty()) return WebhookDenied(kHyperNodeWebhook, AggregateFieldErrors(errors));

  // No cycle: no HyperNode below a member may be this one. Followed through exact names.
  std::map<std::string, std::vector<std::string>> children;
  for (const json::object& hn : ListObjects(c.req.store, kHyperNodesResource)) {
    children[NestedString(hn, "metadata", "name")] = ExactChildren(hn);
  }
  children[c.name] = ExactChildren(c.obj);
  for (const auto& [path, first] : child_names) {
    std::vector<std::string> chain = {c.name, first};
    std::set<std::string> seen;
    // Depth first from `first`, keeping the chain to report.
    std::function<bool(const std::string&)> reaches = [&](const std::string& at) {
      if (at == c.name) return true;
      if (!seen.insert(at).second) return false;
      for (const std::string& next : children[at]) {
        chain.push_back(next);
        if (reaches(next)) return true;
        chain.pop_back();
      }
      return false;
    };
    if (reaches(first)) {
      std::string shown;
      for (const std::string& n : chain) shown += (shown.empty() ? "" : " -> ") + n;
      c.errs.InvalidString(path, first, "HyperNode members must not form a cycle: " + shown);
    }
  }
  return std::nullopt;
}

}  // namespace muster::apiserver::admission
