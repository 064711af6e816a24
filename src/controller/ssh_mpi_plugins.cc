// Volcano's ssh plugin (pkg/controllers/job/plugins/ssh) and mpi plugin
// (pkg/controllers/job/plugins/distributed-framework/mpi); job_plugins.h says what they do.

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_join.h"
#include "boost/json/array.hpp"
#include "controller/job_plugins.h"
#include "controller/plugin_support.h"
#include "controller/ssh_keys.h"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

namespace {

using api::EnsureArray;
using api::EnsureObject;
using plugin_support::ForEachContainer;

constexpr char kSshPrivateKey[] = "id_rsa";
constexpr char kSshPublicKey[] = "id_rsa.pub";
constexpr char kSshAuthorizedKeys[] = "authorized_keys";
constexpr char kSshConfig[] = "config";
constexpr char kSshAbsolutePath[] = "/root/.ssh";
constexpr char kSshRelativePath[] = ".ssh";
constexpr int kSshKeyBits = 2048;

// generateSSHConfig: host keys are not checked, and every pod of the Job is a Host by its short
// name.
std::string SshConfig(const Job& job, int port) {
  std::string config = "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n";
  for (const TaskSpec& task : job.spec.tasks) {
    for (const TaskHost& host : TaskHosts(job, task)) {
      config += fmt::format("Host {}\n  HostName {}\n  Port {}\n", host.hostname, host.Address(),
                            port);
    }
  }
  return config;
}

class SshPlugin : public JobPlugin {
 public:
  struct Settings {
    std::string key_file_path = kSshAbsolutePath;
    std::string private_key;  // both given: used instead of a new pair
    std::string public_key;
    int port = 22;
  };
  explicit SshPlugin(Settings settings) : settings_(std::move(settings)) {}

  std::string_view name() const override { return "ssh"; }

  // mountRsaKey
  void OnPodCreate(const Job& job, size_t, int, json::object& pod) const override {
    const std::string secret = SecretName(job);
    json::array items;
    for (const char* key : {kSshPrivateKey, kSshPublicKey, kSshAuthorizedKeys, kSshConfig}) {
      items.push_back(json::object{{"key", key}, {"path", fmt::format("{}/{}", kSshRelativePath,
                                                                         key)}});
    }
    const int mode = settings_.key_file_path == kSshAbsolutePath ? 0600 : 0644;
    EnsureArray(EnsureObject(pod, "spec"), "volumes")
        .push_back(json::object{
            {"name", secret},
            {"secret", json::object{{"secretName", secret},
                                    {"items", std::move(items)},
                                    {"defaultMode", mode}}}});
    ForEachContainer(pod, /*include_init=*/true, [&](json::object& c) {
      EnsureArray(c, "volumeMounts")
          .push_back(json::object{{"mountPath", settings_.key_file_path},
                                  {"subPath", kSshRelativePath},
                                  {"name", secret}});
    });
  }

  // OnJobAdd's Secret. A new key pair is drawn only when the Secret is created.
  std::vector<PluginObject> Objects(const Job& job) const override {
    json::object data{{kSshConfig, absl::Base64Escape(SshConfig(job, settings_.port))}};
    PluginObject secret;
    secret.resource = "secrets";
    if (!settings_.private_key.empty()) {
      data[kSshPrivateKey] = absl::Base64Escape(settings_.private_key);
      data[kSshPublicKey] = absl::Base64Escape(settings_.public_key);
      data[kSshAuthorizedKeys] = absl::Base64Escape(settings_.public_key);
    } else {
      secret.complete_on_create = [](json::object& object) {
        absl::StatusOr<SshKeyPair> pair = GenerateRsaKeyPair(kSshKeyBits);
        if (!pair.ok()) return pair.status();
        json::object& d = EnsureObject(object, "data");
        d[kSshPrivateKey] = absl::Base64Escape(pair->private_key_pem);
        d[kSshPublicKey] = absl::Base64Escape(pair->authorized_key);
        d[kSshAuthorizedKeys] = absl::Base64Escape(pair->authorized_key);
        return absl::OkStatus();
      };
    }
    secret.object = json::object{
        {"apiVersion", "v1"},
        {"kind", "Secret"},
        {"metadata", json::object{{"name", SecretName(job)},
                                  {"namespace", job.ns},
                                  {"ownerReferences", json::array{JobOwnerReference(job)}}}},
        {"data", std::move(data)}};
    std::vector<PluginObject> objects;
    objects.push_back(std::move(secret));
    return objects;
  }

 private:
  static std::string SecretName(const Job& job) { return job.name + "-ssh"; }

  Settings settings_;
};

class MpiPlugin : public JobPlugin {
 public:
  MpiPlugin(std::string master, std::string worker, int port)
      : master_(std::move(master)), worker_(std::move(worker)), port_(port) {}

  std::string_view name() const override { return "mpi"; }

  void OnPodCreate(const Job& job, size_t task, int, json::object& pod) const override {
    std::optional<std::string> worker_hosts;  // the master's MPI_HOST
    if (job.spec.tasks[task].name == master_) {
      const int worker = job.spec.FindTask(worker_);
      if (worker < 0) return;  // as Volcano: the master gets nothing at all
      std::vector<std::string> hosts;
      for (const TaskHost& host : TaskHosts(job, job.spec.tasks[static_cast<size_t>(worker)])) {
        hosts.push_back(host.Address());
      }
      worker_hosts = absl::StrJoin(hosts, ",");
    }
    ForEachContainer(pod, /*include_init=*/true, [&](json::object& c) {
      plugin_support::OpenContainerPort(c, "mpijob-port", port_);
      if (worker_hosts) plugin_support::AddEnv(c, "MPI_HOST", *worker_hosts);
    });
  }

 private:
  std::string master_;
  std::string worker_;
  int port_;
};

}  // namespace

PluginBuild MakeSshPlugin(const std::vector<std::string>& arguments) {
  SshPlugin::Settings settings;
  FlagSet flags;
  flags.String("ssh-key-file-path", &settings.key_file_path);
  flags.String("ssh-private-key", &settings.private_key);
  flags.String("ssh-public-key", &settings.public_key);
  flags.Int("ssh-port", &settings.port);
  PluginBuild build;
  if (absl::Status parsed = flags.Parse(arguments); !parsed.ok()) {
    build.problem = plugin_support::ParseProblem("ssh", parsed);
  }
  if (settings.port <= 0 || settings.port > 65535) {
    if (build.problem.empty()) {
      build.problem =
          fmt::format("invalid ssh port {}, falling back to default port 22 ...", settings.port);
    }
    settings.port = 22;
  }
  build.plugin = std::make_unique<SshPlugin>(std::move(settings));
  return build;
}

PluginBuild MakeMpiPlugin(const std::vector<std::string>& arguments) {
  std::string master = "master";
  std::string worker = "worker";
  int port = 22;
  FlagSet flags;
  flags.String("master", &master);
  flags.String("worker", &worker);
  flags.Int("port", &port);
  PluginBuild build;
  if (absl::Status parsed = flags.Parse(arguments); !parsed.ok()) {
    build.problem = plugin_support::ParseProblem("mpi", parsed);
  }
  build.plugin = std::make_unique<MpiPlugin>(std::move(master), std::move(worker), port);
  return build;
}

}  // namespace muster::controller
