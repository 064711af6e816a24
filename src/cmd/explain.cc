// `muster explain <vcjob|podgroup|job|pod>/<name>` (also `kubectl muster explain`, through the
// kubectl-muster link beside the binary): why a gang waits and when it will start. Reads the
// cluster through the API as the scheduler sees it (scheduler::ClusterMirror), finds the
// object's PodGroup, and prints core::Explain's answer (core/explain/explain.h) as text, JSON or
// YAML. A running pod without an expected runtime is expected to end by its
// activeDeadlineSeconds, else to last as long as the finished runs of the same job did.

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/json_codec.h"
#include "api/time.h"
#include "api/yaml_write.h"
#include "boost/json.hpp"
#include "client/client.h"
#include "cmd/commands.h"
#include "cmd/process.h"
#include "common/files.h"
#include "controller/job.h"
#include "controller/job_pods.h"
#include "controller/job_state.h"
#include "core/explain/explain.h"
#include "core/framework/conf.h"
#include "fmt/format.h"
#include "scheduler/cluster_mirror.h"

namespace muster::cmd {
namespace {

struct ExplainFlags {
  std::string target;
  std::string ns = "default";
  std::string output = "text";
  std::string kubeconfig;
  std::string context;
  std::string scheduler_conf;
};

enum class TargetKind { kVolcanoJob, kPodGroup, kBatchJob, kPod };

// kubectl's names for the kinds explain takes.
std::optional<TargetKind> ParseKind(const std::string& kind) {
  for (const char* k : {"vcjob", "vcjobs", "vj", "job.batch.volcano.sh", "jobs.batch.volcano.sh"}) {
    if (kind == k) return TargetKind::kVolcanoJob;
  }
  for (const char* k : {"podgroup", "podgroups", "pg", "podgroup.scheduling.volcano.sh",
                        "podgroups.scheduling.volcano.sh"}) {
    if (kind == k) return TargetKind::kPodGroup;
  }
  for (const char* k : {"job", "jobs", "job.batch", "jobs.batch"}) {
    if (kind == k) return TargetKind::kBatchJob;
  }
  for (const char* k : {"pod", "pods", "po"}) {
    if (kind == k) return TargetKind::kPod;
  }
  return std::nullopt;
}

int Fail(const std::string& message) {
  fmt::print(stderr, "error: {}\n", message);
  return 1;
}

// The object, or the message to exit with: "not found" for a 404.
absl::StatusOr<boost::json::object> GetObject(client::Client& c, const client::Resource& r,
                                              const std::string& kind, const std::string& ns,
                                              const std::string& name) {
  auto got = c.Get(r, ns, name);
  if (absl::IsNotFound(got.status())) {
    return absl::NotFoundError(
        fmt::format("{} \"{}\" not found in namespace \"{}\"", kind, name, ns));
  }
  return got;
}

template <typename T, typename Decode, typename Upsert>
absl::Status ListInto(client::Client& c, const client::Resource& r, Decode decode, Upsert upsert) {
  auto list = c.List(r, "");
  if (!list.ok()) {
    return absl::Status(list.status().code(),
                        fmt::format("listing {}: {}", r.plural,
                                    std::string(list.status().message())));
  }
  for (const boost::json::object& item : list->items) {
    auto obj = decode(boost::json::value(item));
    if (obj.ok()) upsert(std::move(*obj));
  }
  return absl::OkStatus();
}

// Which job a pod ran for, across its runs: "ns/<Volcano Job>", "ns/<batch Job>" or
// "ns/<owner>"; "" for a pod of no job.
std::string RunKey(const api::ObjectMeta& meta) {
  for (const char* label : {"volcano.sh/job-name", "batch.kubernetes.io/job-name", "job-name"}) {
    auto it = meta.labels.find(label);
    if (it != meta.labels.end()) return meta.namespace_ + "/" + it->second;
  }
  for (const api::OwnerReference& o : meta.owner_references) {
    if (o.controller) return meta.namespace_ + "/" + o.name;
  }
  return "";
}

// How long the earlier runs of each job lasted: finished pods' start time to their containers'
// last finish, averaged per RunKey; and the pods' activeDeadlineSeconds. What a running pod
// without muster.dev/expected-runtime is expected to run (core::ExplainOptions::runtime_history).
struct RunHistory {
  std::map<std::string, std::pair<double, int>> seconds;  // sum, runs

  void Add(const boost::json::object& pod, const api::ObjectMeta& meta) {
    std::string key = RunKey(meta);
    const boost::json::value* status = pod.if_contains("status");
    if (key.empty() || status == nullptr || !status->is_object()) return;
    const boost::json::value* start = status->as_object().if_contains("startTime");
    const boost::json::value* containers = status->as_object().if_contains("containerStatuses");
    if (start == nullptr || !start->is_string() || containers == nullptr ||
        !containers->is_array()) {
      return;
    }
    std::optional<int64_t> began = api::ParseUnixTime(start->as_string());
    std::optional<int64_t> ended;
    for (const boost::json::value& cs : containers->as_array()) {
      const boost::json::value* at = nullptr;
      if (cs.is_object()) {
        if (auto* state = cs.as_object().if_contains("state"); state && state->is_object()) {
          auto* term = state->as_object().if_contains("terminated");
          if (term && term->is_object()) at = term->as_object().if_contains("finishedAt");
        }
      }
      if (at == nullptr || !at->is_string()) continue;
      std::optional<int64_t> t = api::ParseUnixTime(at->as_string());
      if (t && (!ended || *t > *ended)) ended = t;
    }
    if (!began || !ended || *ended < *began) return;
    auto& [sum, runs] = seconds[key];
    sum += static_cast<double>(*ended - *began);
    ++runs;
  }
  // spec.activeDeadlineSeconds by pod key: the kubelet ends the pod by then.
  std::map<std::string, double> deadlines;

  void AddDeadline(const boost::json::object& pod, const api::ObjectMeta& meta) {
    const boost::json::value* spec = pod.if_contains("spec");
    if (spec == nullptr || !spec->is_object()) return;
    const boost::json::value* d = spec->as_object().if_contains("activeDeadlineSeconds");
    if (d != nullptr && d->is_int64() && d->as_int64() > 0) {
      deadlines[meta.namespace_ + "/" + meta.name] = static_cast<double>(d->as_int64());
    }
  }
  // activeDeadlineSeconds, else the job's earlier runs, else -1.
  double Of(const core::TaskInfo& t) const {
    if (!t.pod) return -1;
    if (auto d = deadlines.find(t.key); d != deadlines.end()) return d->second;
    auto it = seconds.find(RunKey(t.pod->meta));
    return it == seconds.end() ? -1 : it->second.first / it->second.second;
  }
};

// The scheduler's view of the cluster, read once, and the history of finished runs.
absl::Status LoadMirror(client::Client& c, scheduler::ClusterMirror& mirror, RunHistory& history) {
  auto add_class = [&](api::PriorityClass p) { mirror.UpsertPriorityClass(p); };
  if (auto s = ListInto<api::PriorityClass>(c, client::PriorityClasses(),
                                            api::DecodePriorityClass, add_class);
      !s.ok()) {
    return s;
  }
  if (auto s = ListInto<api::Queue>(c, client::Queues(), api::DecodeQueue,
                                    [&](api::Queue q) { mirror.UpsertQueue(q); });
      !s.ok()) {
    return s;
  }
  if (auto s = ListInto<api::Node>(c, client::Nodes(), api::DecodeNode,
                                   [&](api::Node n) { mirror.UpsertNode(n); });
      !s.ok()) {
    return s;
  }
  if (auto s = ListInto<api::PodGroup>(c, client::PodGroups(), api::DecodePodGroup,
                                       [&](api::PodGroup g) { mirror.UpsertPodGroup(g); });
      !s.ok()) {
    return s;
  }
  auto pods = c.List(client::Pods(), "");
  if (!pods.ok()) {
    return absl::Status(pods.status().code(),
                        fmt::format("listing pods: {}", std::string(pods.status().message())));
  }
  for (const boost::json::object& item : pods->items) {
    auto pod = api::DecodePod(boost::json::value(item));
    if (!pod.ok()) continue;
    // Finished pods hold nothing; the successful ones say how long their job runs.
    if (pod->status.phase == "Succeeded") history.Add(item, pod->meta);
    if (pod->status.phase == "Succeeded" || pod->status.phase == "Failed") continue;
    history.AddDeadline(item, pod->meta);
    mirror.UpsertPod(*std::move(pod));
  }
  return absl::OkStatus();
}

// What a target resolves to: its PodGroup's name and the pods its controller will make.
struct Resolved {
  std::string pod_group;
  std::vector<api::Pod> planned;
};

absl::StatusOr<Resolved> Resolve(client::Client& c, TargetKind kind, const std::string& kind_text,
                                 const std::string& ns, const std::string& name) {
  Resolved out;
  switch (kind) {
    case TargetKind::kPodGroup: {
      auto pg = GetObject(c, client::PodGroups(), kind_text, ns, name);
      if (!pg.ok()) return pg.status();
      out.pod_group = name;
      return out;
    }
    case TargetKind::kVolcanoJob: {
      auto obj = GetObject(c, client::VolcanoJobs(), kind_text, ns, name);
      if (!obj.ok()) return obj.status();
      auto job = controller::DecodeJob(*obj);
      if (!job.ok()) return job.status();
      out.pod_group = controller::PodGroupName(*job);
      // The pods the job controller makes once the PodGroup is admitted.
      for (size_t t = 0; t < job->spec.tasks.size(); ++t) {
        for (int i = 0; i < job->spec.tasks[t].replicas; ++i) {
          auto pod = api::DecodePod(boost::json::value(controller::MakePod(*job, t, i)));
          if (pod.ok()) out.planned.push_back(std::move(*pod));
        }
      }
      return out;
    }
    case TargetKind::kBatchJob: {
      auto obj = GetObject(c, client::BatchJobs(), kind_text, ns, name);
      if (!obj.ok()) return obj.status();
      auto uid = obj->at("metadata").as_object().if_contains("uid");
      std::string group =
          uid && uid->is_string() ? "podgroup-" + std::string(uid->as_string()) : "";
      if (group.empty() || !c.Get(client::PodGroups(), ns, group).ok()) {
        return absl::FailedPreconditionError(fmt::format(
            "job \"{}\" has no PodGroup: its pods are not gang-scheduled by muster (explain one "
            "of its pods with pod/NAME)",
            name));
      }
      out.pod_group = group;
      return out;
    }
    case TargetKind::kPod: {
      auto obj = GetObject(c, client::Pods(), kind_text, ns, name);
      if (!obj.ok()) return obj.status();
      auto pod = api::DecodePod(boost::json::value(*obj));
      if (!pod.ok()) return pod.status();
      auto g = pod->meta.annotations.find(api::kGroupNameAnnotation);
      if (g == pod->meta.annotations.end()) {
        if (!pod->spec.node_name.empty()) {
          return absl::FailedPreconditionError(
              fmt::format("pod \"{}\" is bound to {} and names no PodGroup", name,
                          pod->spec.node_name));
        }
        // A plain pod: the scheduler's mirror gives it a group of its own.
        out.pod_group = std::string(scheduler::kDefaultGroupPrefix) + name;
        return out;
      }
      out.pod_group = g->second;
      return out;
    }
  }
  return absl::InternalError("unknown kind");
}

int RunExplain(const ExplainFlags& flags) {
  if (flags.output != "text" && flags.output != "json" && flags.output != "yaml") {
    return Fail(
        fmt::format("unsupported output format \"{}\": use text, json or yaml", flags.output));
  }
  size_t slash = flags.target.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == flags.target.size()) {
    return Fail(fmt::format("\"{}\" is not KIND/NAME (e.g. vcjob/gang-tf-job)", flags.target));
  }
  std::string kind_text = flags.target.substr(0, slash);
  std::string name = flags.target.substr(slash + 1);
  auto kind = ParseKind(kind_text);
  if (!kind) {
    return Fail(fmt::format(
        "cannot explain kind \"{}\": muster explains vcjob, podgroup, job and pod", kind_text));
  }
  core::SchedulerConf conf = core::DefaultSchedulerConf();
  if (!flags.scheduler_conf.empty()) {
    auto text = common::ReadFile(flags.scheduler_conf);
    if (!text) return Fail(fmt::format("--scheduler-conf: cannot read {}", flags.scheduler_conf));
    auto parsed = core::ParseSchedulerConf(*text);
    if (!parsed.ok()) {
      return Fail(fmt::format("--scheduler-conf {}: {}", flags.scheduler_conf,
                              std::string(parsed.status().message())));
    }
    conf = std::move(*parsed);
  }
  auto remote = Connect(flags.kubeconfig, flags.context);
  if (!remote.ok()) return Fail(std::string(remote.status().message()));
  client::Client c(remote->transport);
  auto resolved = Resolve(c, *kind, kind_text, flags.ns, name);
  if (!resolved.ok()) return Fail(std::string(resolved.status().message()));

  scheduler::MirrorOptions mirror_options;
  mirror_options.serve_default_scheduler = true;
  scheduler::ClusterMirror mirror(mirror_options);
  RunHistory history;
  if (auto s = LoadMirror(c, mirror, history); !s.ok()) return Fail(std::string(s.message()));

  core::ExplainOptions options;
  options.now_unix = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  options.planned_pods = std::move(resolved->planned);
  options.runtime_history = [&history](const core::TaskInfo& t) { return history.Of(t); };
  const std::string key = flags.ns + "/" + resolved->pod_group;
  const bool plain_pod = resolved->pod_group.starts_with(scheduler::kDefaultGroupPrefix);
  const core::SchedulerConf& used = plain_pod ? core::KubeSchedulerConf() : conf;
  auto e = core::Explain(mirror.cluster(), used, key, options);
  if (!e.ok()) {
    if (absl::IsNotFound(e.status())) {
      return Fail(fmt::format("{} \"{}\" has no PodGroup {} yet (not found): its controller "
                              "has not made it",
                              kind_text, name, resolved->pod_group));
    }
    return Fail(std::string(e.status().message()));
  }
  std::string object = fmt::format("{}/{}", kind_text, name);
  if (flags.output == "text") {
    fmt::print("Object:     {} (namespace {})\n{}", object, flags.ns, core::ExplanationText(*e));
    return 0;
  }
  boost::json::value json = core::ExplanationJson(*e);
  json.as_object()["object"] = object;
  json.as_object()["namespace"] = flags.ns;
  if (flags.output == "json") {
    fmt::print("{}\n", boost::json::serialize(json));
  } else {
    fmt::print("{}", api::JsonToYaml(json));
  }
  return 0;
}

}  // namespace

Subcommand AddExplainCommand(CLI::App& parent) {
  auto flags = std::make_shared<ExplainFlags>();
  auto* app = parent.add_subcommand(
      "explain",
      "Why a gang waits and when it will start: its queue and position, the admission verdict, "
      "the fewest running pods whose end would let it fit, and an estimated start from a "
      "simulation through the engine. Also `kubectl muster explain` (kubectl-muster).");
  app->add_option("target", flags->target, "vcjob/NAME, podgroup/NAME, job/NAME or pod/NAME")
      ->required();
  app->add_option("-n,--namespace", flags->ns, "namespace of the object (default: default)");
  app->add_option("-o,--output", flags->output, "text (default), json or yaml");
  app->add_option("--kubeconfig", flags->kubeconfig, "kubeconfig file (default: $KUBECONFIG)");
  app->add_option("--context", flags->context, "kubeconfig context (default: its current one)");
  app->add_option("--scheduler-conf", flags->scheduler_conf,
                  "the scheduler's volcano-scheduler.conf, to simulate with the configuration it "
                  "runs (default: Volcano's default, which muster up runs without one)");
  return {app, [flags] { return RunExplain(*flags); }};
}

}  // namespace muster::cmd
