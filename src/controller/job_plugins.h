#pragma once

// Volcano's job plugins (pkg/controllers/job/plugins), the ones muster implements:
//   env      each container gets VK_TASK_INDEX and VC_TASK_INDEX (the pod's replica index).
//   svc      a headless Service named after the Job and a ConfigMap "<job>-svc" whose data has
//            "<task>.host" (one "<job>-<task>-<i>.<job>" per line), VC_<TASK>_HOSTS
//            (comma-separated) and VC_<TASK>_NUM for every task; pods get hostname and subdomain,
//            the ConfigMap mounted at /etc/volcano and the two variables per task from it.
//            Arguments: --publish-not-ready-addresses, --disable-network-policy (muster serves no
//            NetworkPolicy, so none is made either way).
//   pytorch  MASTER_ADDR (the master task's first pod, "<job>-master-0.<job>"), MASTER_PORT
//            (23456), WORLD_SIZE (all replicas), RANK (0 for the master, index+1 for workers)
//            and the port opened on every container. Arguments: --master=, --worker=, --port=.
//   tensorflow  TF_CONFIG ({"cluster": {"ps": [...], "worker": [...], "chief": [...],
//            "evaluator": [...]}, "task": {"type": ..., "index": i}}, hosts
//            "<job>-<task>-<i>.<job>:2222") on every container, except for a single-pod job.
//            Arguments: --ps=, --worker=, --chief=, --evaluator=, --port=.
//   ssh      a Secret "<job>-ssh" with a new RSA key pair (id_rsa, id_rsa.pub, authorized_keys)
//            and an ssh config naming every pod ("Host <hostname>" / "HostName
//            <hostname>.<subdomain>" / "Port <port>", host keys not checked), mounted with subPath
//            .ssh at /root/.ssh (mode 0600; 0644 elsewhere) in every container and init container.
//            Arguments: --ssh-key-file-path=, --ssh-private-key= and --ssh-public-key= (a pair
//            of one's own instead of a new one), --ssh-port= (22; out of 1-65535: 22).
//   mpi      MPI_HOST (the worker task's hosts, comma-separated) on the master task's containers
//            and init containers, and the port opened on every pod's containers. Arguments:
//            --master=, --worker=, --port= (22). The Job webhook adds svc and ssh beside it.
// Arguments are parsed as Go's flag package does (`--port=1234`, `-port 1234`, `--flag` for
// booleans). Volcano logs bad arguments and goes on with the defaults; so does muster, and the
// controller reports the problem as a PluginError event on the Job.
//
// A plugin is a pure transformation: it edits a pod being created and names the objects it keeps
// for the Job; the JobController does the API calls.

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "boost/json/object.hpp"
#include "controller/job.h"

namespace muster::controller {

// An object a plugin keeps for a Job while it runs (created when the Job starts, a ConfigMap
// brought up to date while it runs, deleted when the Job is killed).
struct PluginObject {
  std::string resource;  // "services", "configmaps" or "secrets"
  boost::json::object object;
  // When set, completes `object` just before it is created, and only then: the ssh plugin draws
  // its key pair there, not each time the Job's objects are listed. An error stops the create.
  std::function<absl::Status(boost::json::object&)> complete_on_create;
};

class JobPlugin {
 public:
  virtual ~JobPlugin() = default;
  virtual std::string_view name() const = 0;
  // Adds the plugin's part to a pod being created for replica `index` of spec.tasks[task].
  virtual void OnPodCreate(const Job& job, size_t task, int index,
                           boost::json::object& pod) const = 0;
  // The objects the plugin keeps for the Job, in creation order.
  virtual std::vector<PluginObject> Objects(const Job& job) const { return {}; }
};

struct PluginBuild {
  std::unique_ptr<JobPlugin> plugin;  // null when muster does not implement the plugin
  std::string problem;  // why the arguments were (partly) ignored, or why there is no plugin
};

// Builds a plugin from its name and arguments (spec.plugins).
PluginBuild MakePlugin(std::string_view name, const std::vector<std::string>& arguments);

// The DNS name of a Job's pod as the plugins hand it out: the task template's hostname, else the
// pod's name "<job>-<task>-<i>"; the template's subdomain, else the Job's name (the svc plugin's
// headless Service).
struct TaskHost {
  std::string hostname;
  std::string subdomain;

  static TaskHost Of(const Job& job, const TaskSpec& task, int index);
  std::string Address() const { return hostname + "." + subdomain; }
};

// A task's hosts, one per replica; only one when the template fixes the hostname (every replica
// has it).
std::vector<TaskHost> TaskHosts(const Job& job, const TaskSpec& task);

// The svc plugin's ConfigMap data for a Job (svc.GenerateHosts).
std::map<std::string, std::string> GenerateHosts(const Job& job);

// A Go flag set: the subset of the flag package Volcano's plugins use.
class FlagSet {
 public:
  void String(std::string name, std::string* target);
  void Int(std::string name, int* target);
  void Bool(std::string name, bool* target);
  // Parses `args` into the registered targets; stops at the first non-flag argument or "--".
  // Errors read as Go's: "flag provided but not defined: -x", "invalid value \"a\" for flag
  // -port: parse error". Flags before the error keep their parsed values.
  absl::Status Parse(const std::vector<std::string>& args);

 private:
  struct Flag {
    std::string name;
    std::string* str = nullptr;
    int* num = nullptr;
    bool* boolean = nullptr;
  };
  std::vector<Flag> flags_;
};

}  // namespace muster::controller
