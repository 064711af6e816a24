#include "apiserver/admission/kinds.h"

// Pod validation: pkg/apis/core/validation/validation.go ValidatePodSpec (containers, resources
// as validateContainerResourceName / ValidateResourceRequirements do, tolerations as
// ValidateTolerations, restart and DNS policy, node selector and name, deadlines) for the fields
// muster reads, and ValidatePodUpdate's immutability rules; the resource helpers follow
// pkg/apis/core/helper.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "common/quantity.h"
#include "fmt/format.h"

namespace muster::apiserver::admission {
namespace {

bool IsNativeResource(std::string_view name) {
  return name.find('/') == std::string_view::npos ||
         name.find("kubernetes.io/") != std::string_view::npos;
}
bool IsHugePageResource(std::string_view name) { return name.starts_with("hugepages-"); }
bool IsStandardContainerResource(std::string_view name) {
  return name == "cpu" || name == "memory" || name == "ephemeral-storage" ||
         IsHugePageResource(name);
}

}  // namespace

bool IsIntegerResource(std::string_view name) {
  return !IsNativeResource(name) && !name.starts_with("requests.");
}

namespace {

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

}  // namespace

// helper.IsOvercommitAllowed: native resources except huge pages.
bool IsOvercommitAllowed(std::string_view name) {
  return IsNativeResource(name) && !IsHugePageResource(name);
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

}  // namespace muster::apiserver::admission
