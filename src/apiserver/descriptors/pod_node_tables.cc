// `kubectl get pods` and `kubectl get nodes` as kube-apiserver prints them (table_support.h):
// the columns and cells of printPod and printNode in k8s.io/kubernetes
// pkg/printers/internalversion/printers.go, the two longest rows of tables.h's kinds.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "api/time.h"
#include "apiserver/descriptors/table_support.h"
#include "apiserver/descriptors/tables.h"
#include "fmt/format.h"

namespace muster::apiserver::table {

using boost::json::array;
using boost::json::object;
using boost::json::value;

array PodColumns() {
  return array{
      NameColumn(),
      ColumnDef("Ready", "string",
                "The aggregate readiness state of this pod for accepting "
                "traffic."),
      ColumnDef("Status", "string", "The aggregate status of the containers in this pod."),
      ColumnDef("Restarts", "string",
                "The number of times the containers in this pod have been restarted and when "
                "the last container in this pod has restarted."),
      AgeColumn(),
      ColumnDef("IP", "string",
                "podIP address allocated to the pod. Routable at least within the cluster. "
                "Empty if not yet allocated.",
                1),
      ColumnDef("Node", "string",
                "NodeName indicates in which node this pod is scheduled. If empty, this pod is a "
                "candidate for scheduling by the scheduler defined in schedulerName.",
                1),
      ColumnDef("Nominated Node", "string",
                "nominatedNodeName is set only when this pod preempts other pods on the node, "
                "but it cannot be scheduled right away as preemption victims receive their "
                "graceful termination periods.",
                1),
      ColumnDef("Readiness Gates", "string",
                "If specified, all readiness gates will be evaluated for pod readiness.", 1),
  };
}

array NodeColumns() {
  return array{
      NameColumn(),
      ColumnDef("Status", "string", "The status of the node"),
      ColumnDef("Roles", "string", "The roles of the node"),
      AgeColumn(),
      ColumnDef("Version", "string", "Kubelet Version reported by the node."),
      ColumnDef("Internal-IP", "string", "List of addresses reachable to the node.", 1),
      ColumnDef("External-IP", "string", "List of addresses reachable to the node.", 1),
      ColumnDef("OS-Image", "string",
                "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 "
                "(wheezy)).",
                1),
      ColumnDef("Kernel-Version", "string",
                "Kernel Version reported by the node from 'uname -r' (e.g. "
                "3.16.0-0.bpo.4-amd64).",
                1),
      ColumnDef("Container-Runtime", "string",
                "ContainerRuntime Version reported by the node through runtime remote API (e.g. "
                "containerd://1.4.2).",
                1),
  };
}

namespace {

bool IsRestartableInitContainer(const value& pod, std::string_view name) {
  for (const value& container : ArrayAt(Path(pod, {"spec", "initContainers"}))) {
    if (StrAt(Get(&container, "name")) == name) {
      return StrAt(Get(&container, "restartPolicy")) == "Always";
    }
  }
  return false;
}

}  // namespace

// printPod: READY counts ready, running containers (plus started sidecars); STATUS is the most
// specific reason known, in kubectl's order of precedence.
array PodCells(const value& pod, int64_t now_unix) {
  const value* spec = Get(&pod, "spec");
  const value* status = Get(&pod, "status");
  const std::string_view phase = StrAt(Get(status, "phase"));
  std::string reason(phase);
  if (std::string_view r = StrAt(Get(status, "reason")); !r.empty()) reason = r;
  for (const value& condition : ArrayAt(Get(status, "conditions"))) {
    if (StrAt(Get(&condition, "type")) == "PodScheduled" &&
        StrAt(Get(&condition, "reason")) == "SchedulingGated") {
      reason = "SchedulingGated";
    }
  }

  const array& init_containers = ArrayAt(Get(spec, "initContainers"));
  int64_t total = static_cast<int64_t>(ArrayAt(Get(spec, "containers")).size());
  for (const value& c : init_containers) {
    if (StrAt(Get(&c, "restartPolicy")) == "Always") ++total;
  }
  int64_t ready = 0;
  int64_t restarts = 0;
  int64_t sidecar_restarts = 0;
  std::optional<int64_t> last_restart;
  std::optional<int64_t> last_sidecar_restart;
  const auto note_restart = [](const value& container_status, std::optional<int64_t>& latest) {
    if (const value* finished = Path(container_status, {"lastState", "terminated", "finishedAt"})) {
      if (std::optional<int64_t> t = api::ParseUnixTime(StrAt(finished));
          t && (!latest || *t > *latest)) {
        latest = t;
      }
    }
  };

  bool initializing = false;
  const array& init_statuses = ArrayAt(Get(status, "initContainerStatuses"));
  for (size_t i = 0; i < init_statuses.size(); ++i) {
    const value& cs = init_statuses[i];
    restarts += IntAt(Get(&cs, "restartCount"));
    note_restart(cs, last_restart);
    const bool sidecar = IsRestartableInitContainer(pod, StrAt(Get(&cs, "name")));
    if (sidecar) {
      sidecar_restarts += IntAt(Get(&cs, "restartCount"));
      note_restart(cs, last_sidecar_restart);
    }
    const value* terminated = Path(cs, {"state", "terminated"});
    const value* waiting = Path(cs, {"state", "waiting"});
    if (terminated != nullptr && IntAt(Get(terminated, "exitCode")) == 0) continue;
    if (sidecar && BoolAt(Get(&cs, "started"))) {
      if (BoolAt(Get(&cs, "ready"))) ++ready;
      continue;
    }
    if (terminated != nullptr) {
      std::string_view r = StrAt(Get(terminated, "reason"));
      if (!r.empty()) {
        reason = fmt::format("Init:{}", r);
      } else if (int64_t signal = IntAt(Get(terminated, "signal")); signal != 0) {
        reason = fmt::format("Init:Signal:{}", signal);
      } else {
        reason = fmt::format("Init:ExitCode:{}", IntAt(Get(terminated, "exitCode")));
      }
    } else if (std::string_view r = StrAt(Get(waiting, "reason"));
               !r.empty() && r != "PodInitializing") {
      reason = fmt::format("Init:{}", r);
    } else {
      reason = fmt::format("Init:{}/{}", i, init_containers.size());
    }
    initializing = true;
    break;
  }

  if (!initializing || HasTrueCondition(pod, "Initialized")) {
    restarts = sidecar_restarts;
    last_restart = last_sidecar_restart;
    bool has_running = false;
    const array& statuses = ArrayAt(Get(status, "containerStatuses"));
    for (auto it = statuses.rbegin(); it != statuses.rend(); ++it) {
      const value& cs = *it;
      restarts += IntAt(Get(&cs, "restartCount"));
      note_restart(cs, last_restart);
      const value* waiting = Path(cs, {"state", "waiting"});
      const value* terminated = Path(cs, {"state", "terminated"});
      if (std::string_view r = StrAt(Get(waiting, "reason")); !r.empty()) {
        reason = r;
      } else if (std::string_view tr = StrAt(Get(terminated, "reason")); !tr.empty()) {
        reason = tr;
      } else if (terminated != nullptr) {
        int64_t signal = IntAt(Get(terminated, "signal"));
        reason = signal != 0 ? fmt::format("Signal:{}", signal)
                             : fmt::format("ExitCode:{}", IntAt(Get(terminated, "exitCode")));
      } else if (BoolAt(Get(&cs, "ready")) && Path(cs, {"state", "running"}) != nullptr) {
        has_running = true;
        ++ready;
      }
    }
    if (reason == "Completed" && has_running) {
      reason = HasTrueCondition(pod, "Ready") ? "Running" : "NotReady";
    }
  }

  const value* deletion = Path(pod, {"metadata", "deletionTimestamp"});
  const bool deleting = deletion != nullptr && !deletion->is_null();
  if (deleting && StrAt(Get(status, "reason")) == "NodeLost") {
    reason = "Unknown";
  } else if (deleting && phase != "Succeeded" && phase != "Failed") {
    reason = "Terminating";
  }

  std::string restarts_cell = std::to_string(restarts);
  if (restarts != 0 && last_restart) {
    restarts_cell = fmt::format("{} ({} ago)", restarts, HumanDuration(now_unix - *last_restart));
  }

  std::string ip;
  const array& pod_ips = ArrayAt(Get(status, "podIPs"));
  if (!pod_ips.empty()) ip = StrAt(Get(&pod_ips.front(), "ip"));
  if (ip.empty()) ip = StrAt(Get(status, "podIP"));
  std::string node(StrAt(Get(spec, "nodeName")));
  std::string nominated(StrAt(Get(status, "nominatedNodeName")));
  std::string gates = "<none>";
  if (const array& readiness_gates = ArrayAt(Get(spec, "readinessGates"));
      !readiness_gates.empty()) {
    int true_gates = 0;
    for (const value& gate : readiness_gates) {
      if (HasTrueCondition(pod, StrAt(Get(&gate, "conditionType")))) ++true_gates;
    }
    gates = fmt::format("{}/{}", true_gates, readiness_gates.size());
  }
  const auto or_none = [](std::string s) { return s.empty() ? std::string("<none>") : s; };

  return array{StrAt(Path(pod, {"metadata", "name"})),
               fmt::format("{}/{}", ready, total),
               reason,
               restarts_cell,
               Since(pod, {"metadata", "creationTimestamp"}, now_unix),
               or_none(ip),
               or_none(node),
               or_none(nominated),
               gates};
}

namespace {

// findNodeRoles: node-role.kubernetes.io/<role> keys and the kubernetes.io/role value, sorted.
std::string NodeRoles(const value& node) {
  constexpr std::string_view kRolePrefix = "node-role.kubernetes.io/";
  std::set<std::string> roles;
  const value* labels_value = Path(node, {"metadata", "labels"});
  if (const object* labels = labels_value == nullptr ? nullptr : labels_value->if_object()) {
    for (const auto& kv : *labels) {
      std::string_view key = kv.key();
      if (key.starts_with(kRolePrefix)) {
        if (key.size() > kRolePrefix.size()) roles.emplace(key.substr(kRolePrefix.size()));
      } else if (key == "kubernetes.io/role" && !StrAt(&kv.value()).empty()) {
        roles.emplace(StrAt(&kv.value()));
      }
    }
  }
  std::string joined;
  for (const std::string& role : roles) {
    if (!joined.empty()) joined += ",";
    joined += role;
  }
  return joined.empty() ? "<none>" : joined;
}

std::string NodeAddress(const value& node, std::string_view type) {
  for (const value& address : ArrayAt(Path(node, {"status", "addresses"}))) {
    if (StrAt(Get(&address, "type")) == type) return std::string(StrAt(Get(&address, "address")));
  }
  return "<none>";
}

}  // namespace

array NodeCells(const value& node, int64_t now_unix) {
  std::string status;
  for (const value& condition : ArrayAt(Path(node, {"status", "conditions"}))) {
    if (StrAt(Get(&condition, "type")) == "Ready") {
      status = StrAt(Get(&condition, "status")) == "True" ? "Ready" : "NotReady";
    }
  }
  if (status.empty()) status = "Unknown";
  if (BoolAt(Path(node, {"spec", "unschedulable"}))) status += ",SchedulingDisabled";
  const value* info = Path(node, {"status", "nodeInfo"});
  const auto or_unknown = [](std::string_view s) {
    return s.empty() ? std::string("<unknown>") : std::string(s);
  };
  return array{StrAt(Path(node, {"metadata", "name"})),
               status,
               NodeRoles(node),
               Since(node, {"metadata", "creationTimestamp"}, now_unix),
               StrAt(Get(info, "kubeletVersion")),
               NodeAddress(node, "InternalIP"),
               NodeAddress(node, "ExternalIP"),
               or_unknown(StrAt(Get(info, "osImage"))),
               or_unknown(StrAt(Get(info, "kernelVersion"))),
               or_unknown(StrAt(Get(info, "containerRuntimeVersion")))};
}

}  // namespace muster::apiserver::table
