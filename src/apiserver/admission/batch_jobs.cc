#include "apiserver/admission/kinds.h"

// batch/v1 Jobs: pkg/apis/batch/v1/defaults.go (SetDefaults_Job), pkg/registry/batch/job
// strategy.go (generateSelector, on create only; the status kept on writes of the object, which
// the generic handlers do), and pkg/apis/batch/validation (ValidateJob, validateJobSpec,
// ValidateJobSpecUpdate, the status counters), with kube's messages.

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/batch_indexes.h"
#include "api/json_codec.h"
#include "api/selector.h"
#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "fmt/format.h"

namespace muster::apiserver::admission {
namespace {

constexpr char kNonNegative[] = "must be greater than or equal to 0";
constexpr char kImmutable[] = "field is immutable";
constexpr char kIndexed[] = "Indexed";
constexpr char kNonIndexed[] = "NonIndexed";

// The labels generateSelector puts on the template (batch.kubernetes.io/* and the legacy ones).
constexpr char kControllerUidLabel[] = "batch.kubernetes.io/controller-uid";
constexpr char kJobNameLabel[] = "batch.kubernetes.io/job-name";
constexpr char kLegacyControllerUidLabel[] = "controller-uid";
constexpr char kLegacyJobNameLabel[] = "job-name";

// Go's %#v of a map[string]string (fmt sorts the keys).
std::string GoStringMap(const json::object* labels) {
  std::map<std::string, std::string> sorted;
  if (labels != nullptr) {
    for (const auto& kv : *labels) {
      sorted[std::string(kv.key())] = kv.value().is_string() ? std::string(kv.value().get_string())
                                                             : std::string();
    }
  }
  std::string out = "map[string]string{";
  bool first = true;
  for (const auto& [k, v] : sorted) {
    out += fmt::format("{}{}:{}", first ? "" : ", ", api::GoQuote(k), api::GoQuote(v));
    first = false;
  }
  return out + "}";
}

// A value field.Invalid prints for a struct: unverified, kube prints the internal Go type with
// %#v (pointers as addresses); muster writes the JSON it was given.
std::string StructValue(const json::value& v) { return json::serialize(v); }

void NonNegative(Context& c, json::object& spec, std::string_view key, const std::string& path,
                 std::string_view go_type = "int32") {
  const std::string field = fmt::format("{}.{}", path, key);
  if (std::optional<int64_t> n = c.reader.Int(spec, key, field, go_type); n && *n < 0) {
    c.errs.InvalidInt(field, *n, kNonNegative);
  }
}

// SetDefaults_Job.
void DefaultJobSpec(json::object& spec) {
  const bool no_completions = IsAbsent(spec.if_contains("completions"));
  if (no_completions && IsAbsent(spec.if_contains("parallelism"))) {
    spec["completions"] = 1;
    spec["parallelism"] = 1;
  }
  DefaultValue(spec, "parallelism", 1);
  if (IsAbsent(spec.if_contains("backoffLimit"))) {
    spec["backoffLimit"] = IsAbsent(spec.if_contains("backoffLimitPerIndex")) ? 6 : 2147483647;
  }
  DefaultString(spec, "completionMode", kNonIndexed);
  DefaultValue(spec, "suspend", false);
  DefaultValue(spec, "manualSelector", false);
  const bool has_failure_policy = !IsAbsent(spec.if_contains("podFailurePolicy"));
  json::object* policy = has_failure_policy ? EnsureObject(spec, "podFailurePolicy") : nullptr;
  if (policy != nullptr) {
    if (json::value* rules = policy->if_contains("rules"); rules && rules->is_array()) {
      for (json::value& rule : rules->get_array()) {
        json::value* patterns = rule.is_object() ? rule.get_object().if_contains("onPodConditions")
                                                 : nullptr;
        if (patterns == nullptr || !patterns->is_array()) continue;
        for (json::value& p : patterns->get_array()) {
          if (p.is_object()) DefaultString(p.get_object(), "status", "True");
        }
      }
    }
  }
  DefaultString(spec, "podReplacementPolicy",
                has_failure_policy ? "Failed" : "TerminatingOrFailed");
  if (json::object* tmpl = EnsureObject(spec, "template")) {
    if (json::object* pod_spec = EnsureObject(*tmpl, "spec")) DefaultPodSpec(*pod_spec, false);
  }
}

// generateSelector: the template labels job-name and controller-uid (both spellings) unless the
// user set them, and the selector on batch.kubernetes.io/controller-uid.
void GenerateSelector(json::object& spec, const std::string& name, const std::string& uid) {
  json::object* tmpl = EnsureObject(spec, "template");
  json::object* meta = tmpl == nullptr ? nullptr : EnsureObject(*tmpl, "metadata");
  json::object* labels = meta == nullptr ? nullptr : EnsureObject(*meta, "labels");
  if (labels != nullptr) {
    for (const char* key : {kLegacyJobNameLabel, kJobNameLabel}) {
      if (!labels->contains(key)) (*labels)[key] = name;
    }
    for (const char* key : {kLegacyControllerUidLabel, kControllerUidLabel}) {
      if (!labels->contains(key)) (*labels)[key] = uid;
    }
  }
  json::object* selector = EnsureObject(spec, "selector");
  json::object* match = selector == nullptr ? nullptr : EnsureObject(*selector, "matchLabels");
  if (match != nullptr && !match->contains(kControllerUidLabel)) {
    (*match)[kControllerUidLabel] = uid;
  }
}

const json::object* TemplateLabels(const json::object& spec) {
  const json::object* tmpl = FindObject(spec, "template");
  const json::object* meta = tmpl == nullptr ? nullptr : FindObject(*tmpl, "metadata");
  return meta == nullptr ? nullptr : FindObject(*meta, "labels");
}

api::StringMap LabelMap(const json::object* labels) {
  api::StringMap out;
  if (labels == nullptr) return out;
  for (const auto& kv : *labels) {
    if (kv.value().is_string()) out[std::string(kv.key())] = std::string(kv.value().get_string());
  }
  return out;
}

// apivalidation.ValidateHasLabel on the template's metadata.
void ValidateHasLabel(Context& c, const json::object* labels, std::string_view key,
                      const std::string& want) {
  const std::string path = fmt::format("spec.template.metadata.labels[{}]", key);
  const json::value* have = labels == nullptr ? nullptr : labels->if_contains(key);
  if (have == nullptr) {
    c.errs.Required(path, fmt::format("must be '{}'", want));
  } else if (!have->is_string() || have->get_string() != want) {
    c.errs.Invalid(path, GoStringMap(labels), fmt::format("must be '{}'", want));
  }
}

// validateGeneratedSelector.
void ValidateGeneratedSelector(Context& c, const json::object& spec, const std::string& uid) {
  const json::value* manual = spec.if_contains("manualSelector");
  if (manual != nullptr && manual->is_bool() && manual->get_bool()) return;
  const json::value* selector = spec.if_contains("selector");
  if (IsAbsent(selector)) return;
  if (uid.empty()) c.errs.Required("metadata.uid");
  const json::object* labels = TemplateLabels(spec);
  ValidateHasLabel(c, labels, kLegacyControllerUidLabel, uid);
  ValidateHasLabel(c, labels, kLegacyJobNameLabel, c.name);
  ValidateHasLabel(c, labels, kControllerUidLabel, uid);
  ValidateHasLabel(c, labels, kJobNameLabel, c.name);
  absl::StatusOr<api::LabelSelector> decoded = api::DecodeLabelSelector(*selector);
  const api::StringMap expected = {{kControllerUidLabel, uid},
                                   {kJobNameLabel, c.name},
                                   {kLegacyControllerUidLabel, uid},
                                   {kLegacyJobNameLabel, c.name}};
  if (decoded.ok() && !api::MatchesLabelSelector(*decoded, expected)) {
    c.errs.Invalid("spec.selector", StructValue(*selector), "`selector` not auto-generated");
  }
}

void ValidateExitCodes(Context& c, json::object& req, const std::string& path,
                       const std::set<std::string>& containers) {
  const std::string op = c.reader.StrOr(req, "operator", path + ".operator");
  if (op.empty()) {
    c.errs.Required(path + ".operator", "valid values: [\"In\" \"NotIn\"]");
  } else if (op != "In" && op != "NotIn") {
    c.errs.NotSupported(path + ".operator", op, {"In", "NotIn"});
  }
  if (std::optional<std::string> name = c.reader.Str(req, "containerName", path + ".containerName");
      name && !containers.contains(*name)) {
    c.errs.InvalidString(path + ".containerName", *name,
                         "must be one of the container or initContainer names in the pod "
                         "template");
  }
  std::vector<int64_t> values;
  if (json::array* arr = c.reader.Arr(req, "values", path + ".values", "[]int32")) {
    for (size_t i = 0; i < arr->size(); ++i) {
      if (std::optional<int64_t> v = AsInt((*arr)[i])) values.push_back(*v);
    }
  }
  if (values.empty()) {
    c.errs.Invalid(path + ".values", "[]int32(nil)", "at least one value is required");
  } else if (values.size() > 255) {
    c.errs.Invalid(path + ".values", std::to_string(values.size()), "must have at most 255 items");
  }
  std::set<int64_t> seen;
  bool ordered = true;
  for (size_t j = 0; j < values.size(); ++j) {
    const std::string item = fmt::format("{}.values[{}]", path, j);
    if (op == "In" && values[j] == 0) {
      c.errs.InvalidInt(item, 0, "must not be 0 for the In operator");
    }
    if (!seen.insert(values[j]).second) {
      c.errs.mutable_list().push_back(
          {ErrorType::kDuplicate, item, std::to_string(values[j]), ""});
    }
    if (j > 0 && values[j - 1] > values[j]) ordered = false;
  }
  if (!ordered) {
    std::string text = "[]int32{";
    for (size_t j = 0; j < values.size(); ++j) {
      text += (j > 0 ? ", " : "") + std::to_string(values[j]);
    }
    c.errs.Invalid(path + ".values", text + "}", "must be ordered");
  }
}

// validatePodFailurePolicy and its rules.
void ValidatePodFailurePolicy(Context& c, json::object& policy, const std::string& path,
                              const json::object& spec, const json::object* pod_spec) {
  std::set<std::string> containers;
  for (const char* list : {"containers", "initContainers"}) {
    const json::value* arr = pod_spec == nullptr ? nullptr : pod_spec->if_contains(list);
    if (arr == nullptr || !arr->is_array()) continue;
    for (const json::value& ct : arr->get_array()) {
      if (ct.is_object()) containers.insert(StringAt(ct.get_object(), "name"));
    }
  }
  json::array* rules =
      c.reader.Arr(policy, "rules", path + ".rules", "[]batch.PodFailurePolicyRule");
  if (rules == nullptr) return;
  if (rules->size() > 20) {
    c.errs.Invalid(path + ".rules", std::to_string(rules->size()), "must have at most 20 items");
  }
  const bool per_index = !IsAbsent(spec.if_contains("backoffLimitPerIndex"));
  for (size_t i = 0; i < rules->size(); ++i) {
    const std::string rule_path = fmt::format("{}.rules[{}]", path, i);
    json::object* rule = (*rules)[i].if_object();
    if (rule == nullptr) continue;
    const std::string action = c.reader.StrOr(*rule, "action", rule_path + ".action");
    if (action.empty()) {
      c.errs.Required(rule_path + ".action",
                      "valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]");
    } else if (action == "FailIndex") {
      if (!per_index) {
        c.errs.InvalidString(rule_path + ".action", action,
                             "requires the backoffLimitPerIndex to be set");
      }
    } else if (action != "Count" && action != "FailJob" && action != "Ignore") {
      c.errs.NotSupported(rule_path + ".action", action,
                          {"Count", "FailIndex", "FailJob", "Ignore"});
    }
    json::object* exit_codes =
        c.reader.Obj(*rule, "onExitCodes", rule_path + ".onExitCodes",
                     "batch.PodFailurePolicyOnExitCodesRequirement");
    if (exit_codes != nullptr) {
      ValidateExitCodes(c, *exit_codes, rule_path + ".onExitCodes", containers);
    }
    json::array* patterns = c.reader.Arr(*rule, "onPodConditions", rule_path + ".onPodConditions",
                                         "[]batch.PodFailurePolicyOnPodConditionsPattern");
    const bool has_patterns = patterns != nullptr && !patterns->empty();
    for (size_t j = 0; patterns != nullptr && j < patterns->size(); ++j) {
      json::object* p = (*patterns)[j].if_object();
      if (p == nullptr) continue;
      const std::string pp = fmt::format("{}.onPodConditions[{}]", rule_path, j);
      const std::string type = c.reader.StrOr(*p, "type", pp + ".type");
      for (const std::string& msg : QualifiedNameErrors(type)) {
        c.errs.InvalidString(pp + ".type", type, msg);
      }
      const std::string status = c.reader.StrOr(*p, "status", pp + ".status");
      if (status != "True" && status != "False" && status != "Unknown") {
        c.errs.NotSupported(pp + ".status", status, {"False", "True", "Unknown"});
      }
    }
    if (exit_codes != nullptr && has_patterns) {
      c.errs.mutable_list().push_back(
          {ErrorType::kInvalid, rule_path, std::nullopt,
           "specifying both OnExitCodes and OnPodConditions is not supported"});
    }
    if (exit_codes == nullptr && !has_patterns) {
      c.errs.mutable_list().push_back(
          {ErrorType::kInvalid, rule_path, std::nullopt,
           "specifying one of OnExitCodes and OnPodConditions is required"});
    }
  }
}

// validateSuccessPolicy (Indexed Jobs only; completions is set for them).
void ValidateSuccessPolicy(Context& c, json::object& policy, const std::string& path,
                           int64_t completions) {
  json::array* rules = c.reader.Arr(policy, "rules", path + ".rules", "[]batch.SuccessPolicyRule");
  if (rules == nullptr || rules->empty()) {
    c.errs.Required(path + ".rules",
                    "at least one rules must be specified when the successPolicy is specified");
    return;
  }
  if (rules->size() > 20) {
    c.errs.Invalid(path + ".rules", std::to_string(rules->size()), "must have at most 20 items");
  }
  for (size_t i = 0; i < rules->size(); ++i) {
    const std::string rule_path = fmt::format("{}.rules[{}]", path, i);
    json::object* rule = (*rules)[i].if_object();
    if (rule == nullptr) continue;
    std::optional<std::string> indexes =
        c.reader.Str(*rule, "succeededIndexes", rule_path + ".succeededIndexes");
    std::optional<int64_t> count =
        c.reader.Int(*rule, "succeededCount", rule_path + ".succeededCount");
    if (!indexes && !count) {
      c.errs.Required(rule_path,
                      "at least one of succeededCount or succeededIndexes must be specified");
    }
    size_t total = 0;
    if (indexes) {
      absl::StatusOr<std::set<int32_t>> parsed =
          api::ParseIndexes(*indexes, static_cast<int32_t>(completions));
      if (!parsed.ok()) {
        c.errs.InvalidString(rule_path + ".succeededIndexes", *indexes,
                             fmt::format("error parsing succeededIndexes: {}",
                                         std::string(parsed.status().message())));
      } else {
        total = parsed->size();
      }
    }
    if (count) {
      const std::string cp = rule_path + ".succeededCount";
      if (*count < 0) c.errs.InvalidInt(cp, *count, kNonNegative);
      if (*count > completions) {
        c.errs.InvalidInt(cp, *count,
                          fmt::format("must be less than or equal to {} (the number of specified "
                                      "completions)",
                                      completions));
      }
      if (indexes && *count > static_cast<int64_t>(total)) {
        c.errs.InvalidInt(cp, *count,
                          fmt::format("must be less than or equal to {} (the number of indexes "
                                      "in the specified succeededIndexes field)",
                                      total));
      }
    }
  }
}

}  // namespace

void ValidateBatchJobSpec(Context& c, json::object& spec, const std::string& path) {
  for (std::string_view key : {"parallelism", "completions", "backoffLimit",
                               "ttlSecondsAfterFinished", "backoffLimitPerIndex",
                               "maxFailedIndexes"}) {
    NonNegative(c, spec, key, path);
  }
  NonNegative(c, spec, "activeDeadlineSeconds", path, "int64");
  const std::optional<int64_t> completions =
      c.reader.Int(spec, "completions", path + ".completions");
  const std::optional<int64_t> parallelism =
      c.reader.Int(spec, "parallelism", path + ".parallelism");
  const std::optional<int64_t> per_index =
      c.reader.Int(spec, "backoffLimitPerIndex", path + ".backoffLimitPerIndex");
  const std::optional<int64_t> max_failed =
      c.reader.Int(spec, "maxFailedIndexes", path + ".maxFailedIndexes");
  if (max_failed && !per_index) {
    c.errs.Required(path + ".backoffLimitPerIndex", "when maxFailedIndexes is specified");
  }
  c.reader.Str(spec, "managedBy", path + ".managedBy");
  const std::optional<std::string> mode =
      c.reader.Str(spec, "completionMode", path + ".completionMode");
  const bool indexed = mode == kIndexed;
  if (mode && *mode != kIndexed && *mode != kNonIndexed) {
    c.errs.NotSupported(path + ".completionMode", *mode, {kNonIndexed, kIndexed});
  }
  if (indexed) {
    if (!completions) {
      c.errs.Required(path + ".completions", "when completion mode is Indexed");
    }
    if (parallelism && *parallelism > 100000) {
      c.errs.InvalidInt(path + ".parallelism", *parallelism,
                        "must be less than or equal to 100000 when completion mode is Indexed");
    }
    if (completions && max_failed && *max_failed > *completions) {
      c.errs.InvalidInt(path + ".maxFailedIndexes", *max_failed,
                        "must be less than or equal to completions");
    }
  } else {
    if (per_index) {
      c.errs.InvalidInt(path + ".backoffLimitPerIndex", *per_index,
                        "requires indexed completion mode");
    }
    if (max_failed) {
      c.errs.InvalidInt(path + ".maxFailedIndexes", *max_failed,
                        "requires indexed completion mode");
    }
  }
  json::object* tmpl = c.reader.Obj(spec, "template", path + ".template", "v1.PodTemplateSpec");
  json::object* pod_spec =
      tmpl == nullptr ? nullptr
                      : c.reader.Obj(*tmpl, "spec", path + ".template.spec", "v1.PodSpec");
  json::object* failure_policy = c.reader.Obj(spec, "podFailurePolicy", path + ".podFailurePolicy",
                                              "batch.PodFailurePolicy");
  if (failure_policy != nullptr) {
    ValidatePodFailurePolicy(c, *failure_policy, path + ".podFailurePolicy", spec, pod_spec);
  }
  if (json::object* success =
          c.reader.Obj(spec, "successPolicy", path + ".successPolicy", "batch.SuccessPolicy")) {
    if (!indexed) {
      c.errs.Invalid(path + ".successPolicy", StructValue(*success),
                     "requires indexed completion mode");
    } else if (completions) {
      ValidateSuccessPolicy(c, *success, path + ".successPolicy", *completions);
    }
  }
  if (std::optional<std::string> replacement =
          c.reader.Str(spec, "podReplacementPolicy", path + ".podReplacementPolicy")) {
    if (failure_policy != nullptr) {
      if (*replacement != "Failed") {
        c.errs.NotSupported(path + ".podReplacementPolicy", *replacement, {"Failed"});
      }
    } else if (*replacement != "Failed" && *replacement != "TerminatingOrFailed") {
      c.errs.NotSupported(path + ".podReplacementPolicy", *replacement,
                          {"Failed", "TerminatingOrFailed"});
    }
  }
  if (tmpl != nullptr) {
    if (const json::object* meta = FindObject(*tmpl, "metadata")) {
      ValidateLabels(c, *meta, "labels", path + ".template.metadata.labels");
    }
  }
  json::object defaulted;
  if (pod_spec == nullptr) {
    // No template spec: validated as the empty one defaulting makes (no containers).
    if (tmpl != nullptr && !IsAbsent(tmpl->if_contains("spec"))) return;
    DefaultPodSpec(defaulted, false);
    pod_spec = &defaulted;
  }
  ValidatePodSpec(c, *pod_spec, path + ".template.spec");
  const std::string restart = StringAt(*pod_spec, "restartPolicy");
  const std::string restart_path = path + ".template.spec.restartPolicy";
  if (restart == "Always" || restart.empty()) {
    c.errs.Required(restart_path, "valid values: \"OnFailure\", \"Never\"");
  } else if (restart != "OnFailure" && restart != "Never") {
    c.errs.NotSupported(restart_path, restart, {"OnFailure", "Never"});
  } else if (failure_policy != nullptr && restart != "Never") {
    c.errs.InvalidString(restart_path, restart,
                         "only \"Never\" is supported when podFailurePolicy is specified");
  }
}

namespace {

// ValidateJobSpecUpdate's rules beyond the spec's own; PrepareForUpdate keeps the status.
void ValidateBatchJobUpdate(Context& c, json::object& spec, const json::object& old_job) {
  const json::object* old_spec_ptr = FindObject(old_job, "spec");
  static const json::object kNone;
  const json::object& old_spec = old_spec_ptr != nullptr ? *old_spec_ptr : kNone;
  auto same = [&](std::string_view key) {
    const json::value* a = spec.if_contains(key);
    const json::value* b = old_spec.if_contains(key);
    return SemanticEqual(a != nullptr ? *a : json::value(), b != nullptr ? *b : json::value());
  };
  auto immutable = [&](std::string_view key) {
    if (same(key)) return;
    const json::value* v = spec.if_contains(key);
    c.errs.Invalid(fmt::format("spec.{}", key), v == nullptr ? "null" : StructValue(*v),
                   kImmutable);
  };
  // Completions: immutable, but an Indexed Job's may change together with parallelism.
  if (!same("completions")) {
    const json::value* v = spec.if_contains("completions");
    const std::string shown = v == nullptr ? "null" : StructValue(*v);
    if (StringAt(spec, "completionMode") != kIndexed) {
      c.errs.Invalid("spec.completions", shown, kImmutable);
    } else if (!IsAbsent(v)) {
      const json::value* p = spec.if_contains("parallelism");
      if (p == nullptr || !SemanticEqual(*p, *v)) {
        c.errs.Invalid("spec.completions", shown,
                       "can only be modified in tandem with spec.parallelism");
      }
    }
  }
  immutable("selector");
  // The template: immutable, except that a suspended Job that never started may change where
  // its pods go (nodeSelector, tolerations, node affinity, scheduling gates, labels and
  // annotations), as AllowMutableSchedulingDirectives allows.
  if (!same("template")) {
    const json::value* suspended = old_spec.if_contains("suspend");
    const bool was_suspended =
        suspended != nullptr && suspended->is_bool() && suspended->get_bool();
    const json::object* old_status = FindObject(old_job, "status");
    const bool started = old_status != nullptr && !IsAbsent(old_status->if_contains("startTime"));
    bool allowed = false;
    if (was_suspended && !started) {
      json::value a = spec.contains("template") ? spec.at("template") : json::value();
      json::value b = old_spec.contains("template") ? old_spec.at("template") : json::value();
      for (json::value* t : {&a, &b}) {
        if (!t->is_object()) continue;
        if (json::object* meta = EnsureObject(t->get_object(), "metadata")) {
          meta->erase("labels");
          meta->erase("annotations");
        }
        if (json::object* ps = EnsureObject(t->get_object(), "spec")) {
          for (const char* key : {"nodeSelector", "tolerations", "schedulingGates"}) ps->erase(key);
          if (json::object* aff = EnsureObject(*ps, "affinity")) aff->erase("nodeAffinity");
        }
      }
      allowed = SemanticEqual(a, b);
    }
    if (!allowed) {
      // unverified: kube prints the internal core.PodTemplateSpec with %#v.
      c.errs.Invalid("spec.template", StructValue(spec.contains("template") ? spec.at("template")
                                                                            : json::value()),
                     kImmutable);
    }
  }
  for (std::string_view key :
       {"completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy",
        "successPolicy"}) {
    immutable(key);
  }
}

// ValidateJobStatusUpdate: the counters are never negative.
void ValidateBatchJobStatus(Context& c) {
  json::object* status = c.reader.Obj(c.obj, "status", "status", "v1.JobStatus");
  if (status == nullptr) return;
  for (std::string_view key : {"active", "succeeded", "failed", "ready", "terminating"}) {
    NonNegative(c, *status, key, "status");
  }
}

}  // namespace

std::optional<ApiError> AdmitBatchJob(Context& c) {
  if (!c.main_resource()) {
    ValidateBatchJobStatus(c);
    return std::nullopt;
  }
  // PrepareForCreate: the status starts empty. (Before `spec` is taken: a member added to the
  // object may move the others.)
  if (c.create()) c.obj["status"] = json::object();
  json::object* spec = c.reader.Obj(c.obj, "spec", "spec", "v1.JobSpec");
  if (spec == nullptr) {
    if (!c.problems.empty()) return std::nullopt;
    c.obj["spec"] = json::object();
    spec = &c.obj["spec"].as_object();
  }
  DefaultJobSpec(*spec);
  if (std::optional<ApiError> err = TypeProblemsError(c)) return err;
  const json::object* meta = FindObject(c.obj, "metadata");
  const std::string uid = meta == nullptr ? "" : StringAt(*meta, "uid");
  if (c.create()) {
    const json::value* manual = spec->if_contains("manualSelector");
    if (manual == nullptr || !manual->is_bool() || !manual->get_bool()) {
      GenerateSelector(*spec, c.name, uid);
    }
  }
  // SetDefaults_Job: a Job without labels takes its template's (kube applies it whenever the
  // object is decoded, so a created Job shows the generated ones).
  if (json::object* m = EnsureObject(c.obj, "metadata")) {
    const json::value* labels = m->if_contains("labels");
    const bool none = labels == nullptr || !labels->is_object() || labels->get_object().empty();
    if (const json::object* tl = TemplateLabels(*spec); none && tl != nullptr && !tl->empty()) {
      (*m)["labels"] = *tl;
    }
  }

  ValidateGeneratedSelector(c, *spec, uid);
  ValidateBatchJobSpec(c, *spec, "spec");
  if (IsAbsent(spec->if_contains("selector"))) {
    c.errs.Required("spec.selector");
  } else {
    ValidateLabelSelector(c, *spec, "selector", "spec.selector");
    absl::StatusOr<api::LabelSelector> selector = api::DecodeLabelSelector(spec->at("selector"));
    const json::object* labels = TemplateLabels(*spec);
    if (selector.ok() && !api::MatchesLabelSelector(*selector, LabelMap(labels))) {
      c.errs.Invalid("spec.template.metadata.labels", GoStringMap(labels),
                     "`selector` does not match template `labels`");
    }
  }
  const std::optional<int64_t> completions = c.reader.Int(*spec, "completions", "spec.completions");
  if (StringAt(*spec, "completionMode") == kIndexed && completions && *completions > 0) {
    const std::string host = fmt::format("{}-{}", c.name, *completions - 1);
    if (!Dns1123LabelErrors(host).empty()) {
      c.errs.InvalidString("metadata.name", c.name,
                           fmt::format("will not able to create pod with invalid DNS label: {}",
                                       host));
    }
  }
  if (!c.create()) ValidateBatchJobUpdate(c, *spec, *c.req.old);
  return std::nullopt;
}

}  // namespace muster::apiserver::admission
