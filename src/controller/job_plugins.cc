#include "controller/job_plugins.h"

#include <cctype>
#include <charconv>
#include <utility>

#include "absl/status/status.h"
#include "api/json_access.h"
#include "boost/json/array.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "controller/job_state.h"
#include "controller/plugin_support.h"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

namespace {

constexpr char kConfigMapMountPath[] = "/etc/volcano";

using api::EnsureArray;
using api::EnsureObject;
using api::StringAt;
using plugin_support::AddEnv;
using plugin_support::ForEachContainer;
using plugin_support::TemplateSpecString;

// "mpi-worker" -> "MPI_WORKER", as VC_<TASK>_HOSTS spells the task.
std::string EnvTaskName(std::string_view task) {
  std::string out(task);
  for (char& c : out) {
    c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

// --- env ----------------------------------------------------------------------------------------

class EnvPlugin : public JobPlugin {
 public:
  std::string_view name() const override { return "env"; }
  void OnPodCreate(const Job&, size_t, int index, json::object& pod) const override {
    const std::string value = std::to_string(index);
    ForEachContainer(pod, /*include_init=*/true, [&value](json::object& c) {
      AddEnv(c, "VK_TASK_INDEX", value);
      AddEnv(c, "VC_TASK_INDEX", value);
    });
  }
};

// --- svc ----------------------------------------------------------------------------------------

class SvcPlugin : public JobPlugin {
 public:
  SvcPlugin(bool publish_not_ready_addresses) : publish_not_ready_(publish_not_ready_addresses) {}

  std::string_view name() const override { return "svc"; }

  void OnPodCreate(const Job& job, size_t, int, json::object& pod) const override {
    json::object& spec = EnsureObject(pod, "spec");
    if (StringAt(spec, "hostname").empty()) {
      const json::value* meta = pod.if_contains("metadata");
      spec["hostname"] = meta != nullptr && meta->is_object() ? StringAt(meta->get_object(), "name")
                                                              : std::string();
    }
    if (StringAt(spec, "subdomain").empty()) spec["subdomain"] = job.name;

    const std::string cm = ConfigMapName(job);
    json::array host_env;
    for (const TaskSpec& task : job.spec.tasks) {
      const std::string t = EnvTaskName(task.name);
      for (const std::string& var : {fmt::format("VC_{}_HOSTS", t), fmt::format("VC_{}_NUM", t)}) {
        host_env.push_back(json::object{
            {"name", var},
            {"valueFrom",
             json::object{{"configMapKeyRef", json::object{{"name", cm}, {"key", var}}}}}});
      }
    }
    ForEachContainer(pod, /*include_init=*/true, [&host_env](json::object& c) {
      json::array& env = EnsureArray(c, "env");
      for (const json::value& e : host_env) env.push_back(e);
    });
    // mountConfigmap
    EnsureArray(spec, "volumes")
        .push_back(json::object{{"name", cm}, {"configMap", json::object{{"name", cm}}}});
    ForEachContainer(pod, /*include_init=*/true, [&cm](json::object& c) {
      EnsureArray(c, "volumeMounts")
          .push_back(json::object{{"mountPath", kConfigMapMountPath}, {"name", cm}});
    });
  }

  std::vector<PluginObject> Objects(const Job& job) const override {
    json::object data;
    for (const auto& [k, v] : GenerateHosts(job)) data[k] = v;
    json::object cm{
        {"apiVersion", "v1"},
        {"kind", "ConfigMap"},
        {"metadata", json::object{{"name", ConfigMapName(job)},
                                  {"namespace", job.ns},
                                  {"ownerReferences", json::array{JobOwnerReference(job)}}}},
        {"data", std::move(data)}};
    json::object service_spec{
        {"clusterIP", "None"},
        {"selector", json::object{{kJobNameKey, job.name}, {kJobNamespaceKey, job.ns}}}};
    if (publish_not_ready_) service_spec["publishNotReadyAddresses"] = true;
    service_spec["ports"] = json::array{json::object{
        {"name", "placeholder-volcano"}, {"port", 1}, {"protocol", "TCP"}, {"targetPort", 1}}};
    json::object service{
        {"apiVersion", "v1"},
        {"kind", "Service"},
        {"metadata", json::object{{"name", job.name},
                                  {"namespace", job.ns},
                                  {"ownerReferences", json::array{JobOwnerReference(job)}}}},
        {"spec", std::move(service_spec)}};
    return {{"configmaps", std::move(cm), nullptr}, {"services", std::move(service), nullptr}};
  }

 private:
  static std::string ConfigMapName(const Job& job) { return job.name + "-svc"; }

  bool publish_not_ready_ = false;
};

// --- pytorch ------------------------------------------------------------------------------------

class PytorchPlugin : public JobPlugin {
 public:
  PytorchPlugin(std::string master, std::string worker, int port)
      : master_(std::move(master)), worker_(std::move(worker)), port_(port) {}

  std::string_view name() const override { return "pytorch"; }

  void OnPodCreate(const Job& job, size_t task, int index, json::object& pod) const override {
    const int master_index = job.spec.FindTask(master_);
    if (master_index < 0) return;  // Volcano logs "job x doesn't have task master" and goes on
    const TaskSpec& master = job.spec.tasks[static_cast<size_t>(master_index)];
    const std::string master_addr = TaskHost::Of(job, master, 0).Address();
    const std::string& task_name = job.spec.tasks[task].name;
    const std::string world_size = std::to_string(job.spec.TotalReplicas());
    std::string rank;
    if (task_name == worker_) {
      rank = std::to_string(index + 1);
    } else if (task_name == master_) {
      rank = "0";
    }
    ForEachContainer(pod, /*include_init=*/false, [&](json::object& c) {
      plugin_support::OpenContainerPort(c, "pytorchjob-port", port_);
      AddEnv(c, "MASTER_ADDR", master_addr);
      AddEnv(c, "MASTER_PORT", std::to_string(port_));
      AddEnv(c, "WORLD_SIZE", world_size);
      if (!rank.empty()) AddEnv(c, "RANK", rank);
    });
  }

 private:
  std::string master_;
  std::string worker_;
  int port_;
};

// --- tensorflow ---------------------------------------------------------------------------------

class TensorflowPlugin : public JobPlugin {
 public:
  struct Roles {
    std::string ps = "ps";
    std::string worker = "worker";
    std::string chief = "chief";
    std::string evaluator = "evaluator";
    int port = 2222;
  };
  explicit TensorflowPlugin(Roles roles) : roles_(std::move(roles)) {}

  std::string_view name() const override { return "tensorflow"; }

  void OnPodCreate(const Job& job, size_t task, int index, json::object& pod) const override {
    // A stand-alone TensorFlow job needs no TF_CONFIG.
    if (job.spec.tasks.size() == 1 && job.spec.tasks[0].replicas == 1) return;
    // clusterInfo's field order: ps, worker, chief, evaluator.
    const std::vector<std::pair<std::string, std::string>> roles = {
        {"ps", roles_.ps},
        {"worker", roles_.worker},
        {"chief", roles_.chief},
        {"evaluator", roles_.evaluator}};
    json::object cluster;
    for (const auto& [role, task_of_role] : roles) {
      const int t = job.spec.FindTask(task_of_role);
      if (t < 0) continue;
      const TaskSpec& ts = job.spec.tasks[static_cast<size_t>(t)];
      if (ts.replicas <= 0) continue;
      json::array hosts;
      for (int i = 0; i < ts.replicas; ++i) {
        const TaskHost host = TaskHost::Of(job, ts, i);
        hosts.push_back(json::string(fmt::format("{}:{}", host.Address(), roles_.port)));
      }
      cluster[role] = std::move(hosts);
    }
    // getTaskType: the role's type; a task named after no role keeps its own name.
    const std::string& task_name = job.spec.tasks[task].name;
    std::string type = task_name;
    if (task_name == roles_.chief) {
      type = "chief";
    } else if (task_name == roles_.worker) {
      type = "worker";
    } else if (task_name == roles_.ps) {
      type = "ps";
    } else if (task_name == roles_.evaluator) {
      type = "evaluator";
    }
    const std::string tf_config = json::serialize(json::object{
        {"cluster", std::move(cluster)}, {"task", json::object{{"type", type}, {"index", index}}}});
    ForEachContainer(pod, /*include_init=*/false,
                     [&tf_config](json::object& c) { AddEnv(c, "TF_CONFIG", tf_config); });
  }

 private:
  Roles roles_;
};

}  // namespace

PluginBuild MakePlugin(std::string_view name, const std::vector<std::string>& arguments) {
  PluginBuild build;
  FlagSet flags;
  absl::Status parsed;
  if (name == "env") {
    build.plugin = std::make_unique<EnvPlugin>();
  } else if (name == "svc") {
    bool publish = false;
    bool disable_network_policy = false;
    flags.Bool("publish-not-ready-addresses", &publish);
    flags.Bool("disable-network-policy", &disable_network_policy);
    parsed = flags.Parse(arguments);
    build.plugin = std::make_unique<SvcPlugin>(publish);
  } else if (name == "pytorch") {
    std::string master = "master";
    std::string worker = "worker";
    int port = 23456;
    flags.String("master", &master);
    flags.String("worker", &worker);
    flags.Int("port", &port);
    parsed = flags.Parse(arguments);
    build.plugin = std::make_unique<PytorchPlugin>(master, worker, port);
  } else if (name == "tensorflow") {
    TensorflowPlugin::Roles roles;
    flags.String("ps", &roles.ps);
    flags.String("worker", &roles.worker);
    flags.String("chief", &roles.chief);
    flags.String("evaluator", &roles.evaluator);
    flags.Int("port", &roles.port);
    parsed = flags.Parse(arguments);
    build.plugin = std::make_unique<TensorflowPlugin>(std::move(roles));
  } else if (name == "ssh") {
    return MakeSshPlugin(arguments);
  } else if (name == "mpi") {
    return MakeMpiPlugin(arguments);
  } else {
    build.problem = fmt::format("job plugin {} is not supported by muster; ignored", name);
    return build;
  }
  if (!parsed.ok()) build.problem = plugin_support::ParseProblem(name, parsed);
  return build;
}

TaskHost TaskHost::Of(const Job& job, const TaskSpec& task, int index) {
  TaskHost host{TemplateSpecString(task, "hostname"), TemplateSpecString(task, "subdomain")};
  if (host.hostname.empty()) host.hostname = PodName(job.name, task.name, index);
  if (host.subdomain.empty()) host.subdomain = job.name;
  return host;
}

std::vector<TaskHost> TaskHosts(const Job& job, const TaskSpec& task) {
  std::vector<TaskHost> hosts;
  const bool fixed = !TemplateSpecString(task, "hostname").empty();
  for (int i = 0; i < task.replicas; ++i) {
    hosts.push_back(TaskHost::Of(job, task, i));
    if (fixed) break;  // every replica shares the one fixed hostname
  }
  return hosts;
}

std::map<std::string, std::string> GenerateHosts(const Job& job) {
  std::map<std::string, std::string> data;
  for (const TaskSpec& task : job.spec.tasks) {
    std::vector<std::string> hosts;
    for (const TaskHost& host : TaskHosts(job, task)) hosts.push_back(host.Address());
    std::string lines;
    std::string commas;
    for (size_t i = 0; i < hosts.size(); ++i) {
      lines += (i == 0 ? "" : "\n") + hosts[i];
      commas += (i == 0 ? "" : ",") + hosts[i];
    }
    const std::string t = EnvTaskName(task.name);
    data[task.name + ".host"] = lines;
    data[fmt::format("VC_{}_HOSTS", t)] = commas;
    data[fmt::format("VC_{}_NUM", t)] = std::to_string(hosts.size());
  }
  return data;
}

// --- FlagSet ------------------------------------------------------------------------------------

void FlagSet::String(std::string name, std::string* target) {
  flags_.push_back({std::move(name), target, nullptr, nullptr});
}
void FlagSet::Int(std::string name, int* target) {
  flags_.push_back({std::move(name), nullptr, target, nullptr});
}
void FlagSet::Bool(std::string name, bool* target) {
  flags_.push_back({std::move(name), nullptr, nullptr, target});
}

absl::Status FlagSet::Parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') return absl::OkStatus();  // first non-flag argument
    size_t dashes = 1;
    if (arg[1] == '-') {
      if (arg.size() == 2) return absl::OkStatus();  // "--" ends the flags
      dashes = 2;
    }
    std::string_view body = arg.substr(dashes);
    if (body.empty() || body[0] == '-' || body[0] == '=') {
      return absl::InvalidArgumentError(fmt::format("bad flag syntax: {}", arg));
    }
    std::string_view name = body;
    std::optional<std::string_view> value;
    if (size_t eq = body.find('='); eq != std::string_view::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
    }
    const Flag* flag = nullptr;
    for (const Flag& f : flags_) {
      if (f.name == name) flag = &f;
    }
    if (flag == nullptr) {
      return absl::InvalidArgumentError(fmt::format("flag provided but not defined: -{}", name));
    }
    if (flag->boolean != nullptr) {
      if (!value) {
        *flag->boolean = true;
        continue;
      }
      static const std::vector<std::string_view> kTrue = {"1", "t", "T", "TRUE", "true", "True"};
      static const std::vector<std::string_view> kFalse = {"0",     "f",     "F",
                                                           "FALSE", "false", "False"};
      if (std::find(kTrue.begin(), kTrue.end(), *value) != kTrue.end()) {
        *flag->boolean = true;
      } else if (std::find(kFalse.begin(), kFalse.end(), *value) != kFalse.end()) {
        *flag->boolean = false;
      } else {
        return absl::InvalidArgumentError(
            fmt::format("invalid boolean value \"{}\" for -{}: parse error", *value, name));
      }
      continue;
    }
    if (!value) {
      if (i + 1 >= args.size()) {
        return absl::InvalidArgumentError(fmt::format("flag needs an argument: -{}", name));
      }
      value = args[++i];
    }
    if (flag->str != nullptr) {
      *flag->str = std::string(*value);
      continue;
    }
    int parsed = 0;
    auto [ptr, ec] = std::from_chars(value->data(), value->data() + value->size(), parsed);
    if (ec == std::errc::result_out_of_range) {
      return absl::InvalidArgumentError(
          fmt::format("invalid value \"{}\" for flag -{}: value out of range", *value, name));
    }
    if (ec != std::errc() || ptr != value->data() + value->size() || value->empty()) {
      return absl::InvalidArgumentError(
          fmt::format("invalid value \"{}\" for flag -{}: parse error", *value, name));
    }
    *flag->num = parsed;
  }
  return absl::OkStatus();
}

}  // namespace muster::controller
