#include "apiserver/admission/kinds.h"

// Pod defaulting and mutating admission: pkg/apis/core/v1/defaults.go (SetDefaults_Pod,
// SetDefaults_PodSpec, SetDefaults_Container; parsers.ParseImageName for the pull policy),
// plugin/pkg/admission/priority (the priority from the PriorityClass) and
// defaulttolerationseconds, and the status PrepareForCreate sets (phase, qos.GetPodQOS). AdmitPod
// then runs pods_validate.cc's checks.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "common/quantity.h"
#include "fmt/format.h"

namespace muster::apiserver::admission {
namespace {

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

// plugin/pkg/admission/priority on pod create.
// plugin/pkg/admission/serviceaccount: the ServiceAccount a pod names must exist (serviceAccount,
// the deprecated spelling, counts when serviceAccountName is empty). A pod naming none is left
// as it is: muster mounts no token, which is what the plugin's defaulting is for.
std::optional<ApiError> AdmitPodServiceAccount(Context& c, json::object& spec) {
  std::string account = StringAt(spec, "serviceAccountName");
  if (account.empty()) account = StringAt(spec, "serviceAccount");
  if (account.empty() || c.req.store == nullptr) return std::nullopt;
  if (GetObject(c.req.store, "serviceaccounts", c.ns, account)) return std::nullopt;
  return ForbiddenError(c.res, c.name,
                        fmt::format("error looking up service account {}/{}: serviceaccount "
                                    "\"{}\" not found",
                                    c.ns, account, account));
}

std::optional<ApiError> AdmitPodPriority(Context& c, json::object& spec) {
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

}  // namespace

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

std::optional<ApiError> AdmitPod(Context& c) {
  if (!c.main_resource()) return std::nullopt;  // status and binding change no spec
  json::object* spec = c.reader.Obj(c.obj, "spec", "spec", "v1.PodSpec");
  if (spec == nullptr) {
    if (!c.problems.empty()) return std::nullopt;
    c.obj["spec"] = json::object();
    spec = &c.obj["spec"].as_object();
  }
  DefaultPodSpec(*spec, /*is_pod=*/true);
  if (std::optional<ApiError> err = TypeProblemsError(c)) return err;

  if (c.create()) {
    if (std::optional<ApiError> err = AdmitPodServiceAccount(c, *spec)) return err;
    if (std::optional<ApiError> err = AdmitPodPriority(c, *spec)) return err;
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

}  // namespace muster::apiserver::admission
