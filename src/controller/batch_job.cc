// Decoding and encoding of batch/v1 Jobs and their pods (batch_job.h), after k8s.io/api
// batch/v1 types.go.

#include "controller/batch_job.h"

#include <algorithm>
#include <utility>

#include "api/batch_indexes.h"
#include "api/json_access.h"
#include "api/time.h"
#include "boost/json/array.hpp"
#include "boost/json/value.hpp"

namespace muster::controller {

namespace json = boost::json;

namespace {

using api::ObjectAt;
using api::StringAt;

std::optional<int32_t> Int32At(const json::object* o, std::string_view key) {
  if (o == nullptr) return std::nullopt;
  const json::value* v = o->if_contains(key);
  if (v == nullptr || v->is_null()) return std::nullopt;
  std::optional<int64_t> n = api::TruncatedInt64(*v);
  if (!n) return std::nullopt;
  return static_cast<int32_t>(*n);
}

bool BoolAt(const json::object* o, std::string_view key) {
  const json::value* v = o == nullptr ? nullptr : o->if_contains(key);
  return v != nullptr && v->is_bool() && v->get_bool();
}

int64_t TimeAt(const json::object* o, std::string_view key) {
  const std::string text = StringAt(o, key);
  return text.empty() ? 0 : api::ParseUnixTime(text).value_or(0);
}

std::map<std::string, std::string> StringMapAt(const json::object* o) {
  std::map<std::string, std::string> out;
  if (o == nullptr) return out;
  for (const auto& kv : *o) {
    if (kv.value().is_string()) out[std::string(kv.key())] = std::string(kv.value().get_string());
  }
  return out;
}

PodFailureRule DecodeRule(const json::object& rule) {
  PodFailureRule r;
  r.action = StringAt(rule, "action");
  if (const json::object* codes = ObjectAt(rule, "onExitCodes")) {
    r.on_exit_codes = true;
    if (const json::value* name = codes->if_contains("containerName"); name && name->is_string()) {
      r.container = std::string(name->get_string());
    }
    r.in = StringAt(*codes, "operator") != "NotIn";
    if (const json::array* values = api::ArrayAt(*codes, "values")) {
      for (const json::value& v : *values) {
        if (std::optional<int64_t> n = api::TruncatedInt64(v)) {
          r.values.push_back(static_cast<int32_t>(*n));
        }
      }
    }
  }
  if (const json::array* patterns = api::ArrayAt(rule, "onPodConditions")) {
    for (const json::value& p : *patterns) {
      if (!p.is_object()) continue;
      std::string status = StringAt(p.get_object(), "status");
      r.conditions.emplace_back(StringAt(p.get_object(), "type"),
                                status.empty() ? "True" : status);
    }
  }
  return r;
}

BatchJobStatus DecodeStatus(const json::object* status) {
  BatchJobStatus s;
  if (status == nullptr) return s;
  s.active = Int32At(status, "active").value_or(0);
  s.succeeded = Int32At(status, "succeeded").value_or(0);
  s.failed = Int32At(status, "failed").value_or(0);
  s.ready = Int32At(status, "ready");
  s.terminating = Int32At(status, "terminating");
  s.start_time = TimeAt(status, "startTime");
  s.completion_time = TimeAt(status, "completionTime");
  s.completed_indexes = StringAt(status, "completedIndexes");
  if (const json::value* f = status->if_contains("failedIndexes"); f && f->is_string()) {
    s.failed_indexes = std::string(f->get_string());
  }
  const json::object* uncounted = ObjectAt(status, "uncountedTerminatedPods");
  s.uncounted_succeeded = api::StringsAt(uncounted, "succeeded");
  s.uncounted_failed = api::StringsAt(uncounted, "failed");
  if (const json::array* conds = api::ArrayAt(*status, "conditions")) {
    for (const json::value& v : *conds) {
      if (!v.is_object()) continue;
      const json::object& c = v.get_object();
      s.conditions.push_back({StringAt(c, "type"), StringAt(c, "status"), StringAt(c, "reason"),
                              StringAt(c, "message"), TimeAt(&c, "lastProbeTime"),
                              TimeAt(&c, "lastTransitionTime")});
    }
  }
  return s;
}

const json::object* BatchControllerRefOf(const json::object& pod) {
  const json::object* meta = ObjectAt(pod, "metadata");
  const json::array* refs = meta == nullptr ? nullptr : api::ArrayAt(*meta, "ownerReferences");
  if (refs == nullptr) return nullptr;
  for (const json::value& r : *refs) {
    if (!r.is_object()) continue;
    const json::object& ref = r.get_object();
    const json::value* controller = ref.if_contains("controller");
    if (controller == nullptr || !controller->is_bool() || !controller->get_bool()) continue;
    if (StringAt(ref, "apiVersion") == kBatchApiVersion && StringAt(ref, "kind") == "Job") {
      return &ref;
    }
    return nullptr;
  }
  return nullptr;
}

}  // namespace

const BatchJobCondition* BatchJobStatus::Find(std::string_view type) const {
  for (const BatchJobCondition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool BatchJobStatus::IsTrue(std::string_view type) const {
  const BatchJobCondition* c = Find(type);
  return c != nullptr && c->status == "True";
}

absl::StatusOr<BatchJob> DecodeBatchJob(const json::object& object) {
  const json::object* meta = ObjectAt(object, "metadata");
  const json::object* spec = ObjectAt(object, "spec");
  if (meta == nullptr || spec == nullptr) {
    return absl::InvalidArgumentError("a Job needs metadata and spec");
  }
  BatchJob job;
  job.ns = StringAt(*meta, "namespace");
  job.name = StringAt(*meta, "name");
  job.uid = StringAt(*meta, "uid");
  job.resource_version = StringAt(*meta, "resourceVersion");
  job.deleting = !StringAt(*meta, "deletionTimestamp").empty();
  job.annotations = StringMapAt(ObjectAt(*meta, "annotations"));
  job.completions = Int32At(spec, "completions");
  job.parallelism = Int32At(spec, "parallelism").value_or(1);
  job.indexed = StringAt(*spec, "completionMode") == "Indexed";
  job.backoff_limit_per_index = Int32At(spec, "backoffLimitPerIndex");
  job.backoff_limit =
      Int32At(spec, "backoffLimit").value_or(job.backoff_limit_per_index ? 2147483647 : 6);
  job.max_failed_indexes = Int32At(spec, "maxFailedIndexes");
  const json::value* ads = spec->if_contains("activeDeadlineSeconds");
  if (ads != nullptr && ads->is_number()) {
    job.active_deadline_seconds = api::TruncatedInt64(*ads);
  }
  job.ttl_seconds_after_finished = Int32At(spec, "ttlSecondsAfterFinished");
  job.suspend = BoolAt(spec, "suspend");
  job.replace_only_failed = StringAt(*spec, "podReplacementPolicy") == "Failed";
  if (const json::object* policy = ObjectAt(*spec, "podFailurePolicy")) {
    job.has_pod_failure_policy = true;
    if (const json::array* rules = api::ArrayAt(*policy, "rules")) {
      for (const json::value& r : *rules) {
        if (r.is_object()) job.pod_failure_rules.push_back(DecodeRule(r.get_object()));
      }
    }
  }
  if (const json::object* success = ObjectAt(*spec, "successPolicy")) {
    if (const json::array* rules = api::ArrayAt(*success, "rules")) {
      for (const json::value& r : *rules) {
        if (!r.is_object()) continue;
        SuccessRule rule;
        rule.count = Int32At(&r.get_object(), "succeededCount");
        if (const json::value* idx = r.get_object().if_contains("succeededIndexes");
            idx != nullptr && idx->is_string()) {
          absl::StatusOr<std::set<int32_t>> parsed =
              api::ParseIndexes(std::string(idx->get_string()), job.completions.value_or(0));
          rule.indexes = parsed.ok() ? *parsed : std::set<int32_t>{};
        }
        job.success_rules.push_back(std::move(rule));
      }
    }
  }
  if (const json::object* selector = ObjectAt(*spec, "selector")) job.selector = *selector;
  if (const json::object* tmpl = ObjectAt(*spec, "template")) {
    job.pod_template = *tmpl;
    job.restart_policy = StringAt(ObjectAt(*tmpl, "spec"), "restartPolicy");
  }
  job.status = DecodeStatus(ObjectAt(object, "status"));
  return job;
}

BatchPod DecodeBatchPod(const json::object& pod) {
  BatchPod p;
  const json::object* meta = ObjectAt(pod, "metadata");
  p.name = StringAt(meta, "name");
  p.uid = StringAt(meta, "uid");
  p.terminating = !StringAt(meta, "deletionTimestamp").empty();
  p.created = TimeAt(meta, "creationTimestamp");
  for (const std::string& f : api::StringsAt(meta, "finalizers")) {
    if (f == kJobTrackingFinalizer) p.tracked = true;
  }
  const std::map<std::string, std::string> annotations = StringMapAt(ObjectAt(meta, "annotations"));
  auto number = [](const std::string& text) -> std::optional<int32_t> {
    if (text.empty() || text.size() > 9) return std::nullopt;
    int32_t v = 0;
    for (char ch : text) {
      if (ch < '0' || ch > '9') return std::nullopt;
      v = v * 10 + (ch - '0');
    }
    return v;
  };
  if (auto it = annotations.find(kCompletionIndexKey); it != annotations.end()) {
    p.index = number(it->second);
  }
  if (auto it = annotations.find(kIndexFailureCountKey); it != annotations.end()) {
    p.index_failures = number(it->second).value_or(0);
  }
  const json::object* status = ObjectAt(pod, "status");
  p.phase = StringAt(status, "phase");
  if (p.phase.empty()) p.phase = "Pending";
  const json::array* conds = status == nullptr ? nullptr : api::ArrayAt(*status, "conditions");
  if (conds != nullptr) {
    for (const json::value& v : *conds) {
      if (!v.is_object()) continue;
      const std::string type = StringAt(v.get_object(), "type");
      const std::string value = StringAt(v.get_object(), "status");
      p.conditions.emplace_back(type, value);
      if (type == "Ready" && value == "True") p.ready = true;
    }
  }
  for (const char* list : {"containerStatuses", "initContainerStatuses"}) {
    const json::array* statuses = status == nullptr ? nullptr : api::ArrayAt(*status, list);
    if (statuses == nullptr) continue;
    for (const json::value& v : *statuses) {
      if (!v.is_object()) continue;
      const json::object& cs = v.get_object();
      p.restarts += Int32At(&cs, "restartCount").value_or(0);
      const json::object* terminated = ObjectAt(ObjectAt(cs, "state"), "terminated");
      if (terminated == nullptr) continue;
      p.exits.push_back({StringAt(cs, "name"), Int32At(terminated, "exitCode").value_or(0)});
      p.finished = std::max(p.finished, TimeAt(terminated, "finishedAt"));
    }
  }
  return p;
}

std::string BatchJobOwnerUid(const json::object& pod) {
  const json::object* ref = BatchControllerRefOf(pod);
  return ref == nullptr ? "" : StringAt(*ref, "uid");
}

std::string BatchJobOwnerName(const json::object& pod) {
  const json::object* ref = BatchControllerRefOf(pod);
  return ref == nullptr ? "" : StringAt(*ref, "name");
}

json::object EncodeBatchJobStatus(const BatchJobStatus& s) {
  json::object out;
  if (!s.conditions.empty()) {
    json::array conds;
    for (const BatchJobCondition& c : s.conditions) {
      json::object o{{"type", c.type}, {"status", c.status}};
      if (c.last_probe_time != 0) o["lastProbeTime"] = api::FormatUnixTime(c.last_probe_time);
      if (c.last_transition_time != 0) {
        o["lastTransitionTime"] = api::FormatUnixTime(c.last_transition_time);
      }
      if (!c.reason.empty()) o["reason"] = c.reason;
      if (!c.message.empty()) o["message"] = c.message;
      conds.push_back(std::move(o));
    }
    out["conditions"] = std::move(conds);
  }
  if (s.start_time != 0) out["startTime"] = api::FormatUnixTime(s.start_time);
  if (s.completion_time != 0) out["completionTime"] = api::FormatUnixTime(s.completion_time);
  if (s.active != 0) out["active"] = s.active;
  if (s.succeeded != 0) out["succeeded"] = s.succeeded;
  if (s.failed != 0) out["failed"] = s.failed;
  if (s.terminating) out["terminating"] = *s.terminating;
  if (!s.completed_indexes.empty()) out["completedIndexes"] = s.completed_indexes;
  if (s.failed_indexes) out["failedIndexes"] = *s.failed_indexes;
  // kube always writes the (possibly empty) uncountedTerminatedPods.
  json::object uncounted;
  auto list = [](const std::vector<std::string>& uids) {
    json::array a;
    for (const std::string& u : uids) a.emplace_back(u);
    return a;
  };
  if (!s.uncounted_succeeded.empty()) uncounted["succeeded"] = list(s.uncounted_succeeded);
  if (!s.uncounted_failed.empty()) uncounted["failed"] = list(s.uncounted_failed);
  out["uncountedTerminatedPods"] = std::move(uncounted);
  if (s.ready) out["ready"] = *s.ready;
  return out;
}

}  // namespace muster::controller
