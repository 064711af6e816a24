// Pods of batch/v1 Jobs (batch_job_pods.h), after kube's pkg/controller/job
// (podGenerateNameWithIndex, addCompletionIndexEnvVariables, addCompletionIndexAnnotation, the
// job-tracking finalizer) and pkg/controller/controller_utils.go (GetPodFromTemplate).

#include "controller/batch_job_pods.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "api/json_access.h"
#include "api/model.h"
#include "boost/json/array.hpp"
#include "boost/json/value.hpp"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

namespace {

std::string AnnotationOf(const json::object& tmpl, std::string_view key) {
  return api::StringAt(api::ObjectAt(api::ObjectAt(tmpl, "metadata"), "annotations"), key);
}

// addCompletionIndexEnvVariable: JOB_COMPLETION_INDEX from the pod's index label (PodIndexLabel),
// appended to each container's env unless the container sets it itself.
void AddIndexEnv(json::object& spec, const char* list) {
  json::value* containers = spec.if_contains(list);
  if (containers == nullptr || !containers->is_array()) return;
  for (json::value& c : containers->get_array()) {
    if (!c.is_object()) continue;
    json::array& env = api::EnsureArray(c.get_object(), "env");
    const bool has = std::any_of(env.begin(), env.end(), [](const json::value& e) {
      return e.is_object() && api::StringAt(e.get_object(), "name") == kCompletionIndexEnv;
    });
    if (has) continue;
    env.push_back(json::object{
        {"name", kCompletionIndexEnv},
        {"valueFrom",
         json::object{{"fieldRef",
                       json::object{{"apiVersion", "v1"},
                                    {"fieldPath",
                                     fmt::format("metadata.labels['{}']",
                                                 kCompletionIndexKey)}}}}}});
  }
}

}  // namespace

std::optional<BatchGang> BatchJobGang(const BatchJob& job,
                                      const std::vector<std::string>& scheduler_names) {
  const std::string scheduler =
      api::StringAt(api::ObjectAt(job.pod_template, "spec"), "schedulerName");
  if (std::find(scheduler_names.begin(), scheduler_names.end(), scheduler) ==
      scheduler_names.end()) {
    return std::nullopt;
  }
  const std::string named = AnnotationOf(job.pod_template, api::kGroupNameAnnotation);
  std::optional<int32_t> min_member;
  if (auto it = job.annotations.find(kGroupMinMemberAnnotation); it != job.annotations.end()) {
    int32_t v = 0;
    const std::string& text = it->second;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec == std::errc() && ptr == text.data() + text.size() && v > 0) min_member = v;
  }
  if (named.empty() && !min_member) return std::nullopt;
  BatchGang gang;
  gang.pod_group = named.empty() ? "podgroup-" + job.uid : named;
  gang.min_member = min_member.value_or(std::max(job.parallelism, 1));
  return gang;
}

json::object MakeBatchJobPod(const BatchJob& job, const BatchPodToCreate& pod,
                             const std::optional<BatchGang>& gang) {
  json::object tmpl = job.pod_template;
  json::object meta;
  if (const json::object* m = api::ObjectAt(tmpl, "metadata")) {
    for (const char* key : {"labels", "annotations"}) {
      if (const json::value* v = m->if_contains(key); v != nullptr && v->is_object()) {
        meta[key] = *v;
      }
    }
  }
  meta["namespace"] = job.ns;
  meta["generateName"] =
      pod.index ? fmt::format("{}-{}-", job.name, *pod.index) : fmt::format("{}-", job.name);
  meta["finalizers"] = json::array{kJobTrackingFinalizer};
  meta["ownerReferences"] = json::array{json::object{{"apiVersion", kBatchApiVersion},
                                                     {"kind", "Job"},
                                                     {"name", job.name},
                                                     {"uid", job.uid},
                                                     {"controller", true},
                                                     {"blockOwnerDeletion", true}}};
  json::object spec;
  if (const json::object* s = api::ObjectAt(tmpl, "spec")) spec = *s;
  if (pod.index) {
    const std::string index = std::to_string(*pod.index);
    api::EnsureObject(meta, "annotations")[kCompletionIndexKey] = index;
    api::EnsureObject(meta, "labels")[kCompletionIndexKey] = index;
    if (job.backoff_limit_per_index) {
      api::EnsureObject(meta, "annotations")[kIndexFailureCountKey] =
          std::to_string(pod.index_failures);
    }
    spec["hostname"] = fmt::format("{}-{}", job.name, *pod.index);
    AddIndexEnv(spec, "containers");
    AddIndexEnv(spec, "initContainers");
  }
  if (gang) api::EnsureObject(meta, "annotations")[api::kGroupNameAnnotation] = gang->pod_group;
  return json::object{{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", std::move(meta)},
                      {"spec", std::move(spec)}};
}

}  // namespace muster::controller
