#pragma once

// Building a container's launch (runtime.h: ContainerLaunch) from its pod, as the kubelet's
// kuberuntime_container.go generateContainerConfig does before it asks the runtime to start it.
//
// Simulated runtime: init containers end at once; app containers run for the pod's annotation
// muster.dev/run-seconds (absent: until stopped) and exit with muster.dev/exit-code.
//
// Process runtime (docs/cluster-file.md, "What a process container sees"): the command and args
// with $(VAR) expanded, run in <data_dir>/pods/<ns>/<pod>/<container> (or an absolute workingDir
// that exists), logging to <data_dir>/logs/<ns>/<pod>/<container>.log. Volumes (configMap,
// emptyDir, hostPath) are materialised under <pod dir>/volumes/<volume> and linked at
// $MUSTER_ROOT<mountPath>. The environment is this agent's own, then HOSTNAME and MUSTER_ROOT,
// then the container's envFrom and env (fieldRef, resourceFieldRef, configMapKeyRef), then
// NVIDIA_VISIBLE_DEVICES and CUDA_VISIBLE_DEVICES for the devices it was given.
//
// Thread-safety: the functions share no state; BuildContainerLaunch writes the pod's files, so
// two calls for the same pod must not overlap (the pod worker makes them from one thread).

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "boost/json/object.hpp"
#include "node/cluster_file.h"
#include "node/runtime.h"

namespace muster::node {

// A ConfigMap or Secret (`resource` "configmaps" or "secrets") by namespace and name; NotFound
// when there is none.
using ObjectGetter = std::function<absl::StatusOr<boost::json::object>(
    std::string_view resource, const std::string& ns, const std::string& name)>;

// What a launch is built from besides the container: the pod and where it runs. Every reference
// must outlive the BuildContainerLaunch call.
struct LaunchContext {
  const boost::json::object& pod;  // the latest version seen
  const std::string& ns;
  const std::string& name;
  const std::string& uid;
  const std::string& pod_ip;
  const NodeConfig& node;
  const std::string& data_dir;  // PodWorkerOptions::data_dir
  // Every container's spec, init containers first, for resourceFieldRef.containerName.
  std::vector<const boost::json::object*> containers;
  // Empty: the cluster serves no ConfigMaps nor Secrets.
  const ObjectGetter& get_object;
};

// The container to launch, and what its worker knows about its runs.
struct ContainerToLaunch {
  const boost::json::object& spec;
  bool init = false;
  const std::vector<const NodeDevice*>& devices;  // given at admission
  bool first_run = true;                          // no earlier run: its log starts afresh
  // Simulated: the seconds an adopted run had left (negative: until stopped).
  std::optional<double> resume_seconds;
};

struct LaunchResult {
  // FailedPrecondition: the container cannot start at all (a process container without a
  // command); the kubelet reports StartError. Any other error is a set-up problem that may pass
  // (a ConfigMap missing, a bad annotation, a volume), to be tried again.
  absl::StatusOr<ContainerLaunch> launch;
  // With a set-up error, the reason the container waits with meanwhile
  // (CreateContainerConfigError, ContainerCreating); empty: it keeps the one it has.
  std::string waiting_reason{};
};

// The launch of `container` on `context.node`'s runtime. For the process runtime this creates
// the container's directories and writes its volumes.
LaunchResult BuildContainerLaunch(const LaunchContext& context, const ContainerToLaunch& container);

// Kubernetes' $(VAR) expansion (third_party/forked/golang/expansion): $(NAME) becomes the value
// of NAME when `vars` defines it and stays as written otherwise; $$ is a literal $.
std::string ExpandVariableRefs(std::string_view in, const std::map<std::string, std::string>& vars);

// Whether a path has a ".." component, by which a mount would reach outside what it names.
bool ClimbsOut(std::string_view path);

}  // namespace muster::node
