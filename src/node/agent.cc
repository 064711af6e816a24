#include "node/agent.h"

#include <sys/utsname.h>

#include <algorithm>
#include <fstream>
#include <utility>

#include "api/gpu_topology.h"
#include "api/time.h"
#include "boost/json/serialize.hpp"
#include "client/event_recorder.h"
#include "common/thread.h"
#include "fmt/format.h"
#include "node/cluster_topology.h"
#include "node/json_access.h"

namespace muster::node {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr char kLeaseNamespace[] = "kube-node-lease";
constexpr char kComponent[] = "kubelet";

const client::Resource& ConfigMaps() {
  static const client::Resource* const r =
      new client::Resource{"", "v1", "configmaps", "ConfigMap", true};
  return *r;
}

const client::Resource& Secrets() {
  static const client::Resource* const r =
      new client::Resource{"", "v1", "secrets", "Secret", true};
  return *r;
}

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// What nodeInfo says about this machine.
struct HostInfo {
  std::string kernel = "unknown";
  std::string os_image = "Linux";
  std::string machine_id;
  std::string boot_id;
  std::string architecture = "amd64";
};

const HostInfo& Host() {
  static const HostInfo* const info = [] {
    auto* h = new HostInfo;
    struct utsname u;
    if (::uname(&u) == 0) {
      h->kernel = u.release;
      std::string machine = u.machine;
      h->architecture = machine == "x86_64" ? "amd64" : machine == "aarch64" ? "arm64" : machine;
    }
    std::ifstream os("/etc/os-release");
    std::string line;
    while (std::getline(os, line)) {
      if (line.rfind("PRETTY_NAME=", 0) == 0) {
        std::string v = line.substr(12);
        if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
        h->os_image = v;
      }
    }
    h->machine_id = FirstLine("/etc/machine-id");
    h->boot_id = FirstLine("/proc/sys/kernel/random/boot_id");
    return h;
  }();
  return *info;
}

// A stable 32-hex-digit id for a simulated node's machineID / systemUUID.
std::string HexId(const std::string& seed) {
  uint64_t a = 14695981039346656037ULL, b = 1099511628211ULL * 31;
  for (unsigned char c : seed) {
    a = (a ^ c) * 1099511628211ULL;
    b = (b ^ c) * 0x100000001b3ULL + 7;
  }
  return fmt::format("{:016x}{:016x}", a, b);
}

json::object Resources(const api::ResourceList& list) {
  json::object out;
  for (const auto& [name, q] : list) out[name] = q.ToString();
  return out;
}

json::object Condition(const std::string& type, const std::string& status,
                       const std::string& reason, const std::string& message,
                       const std::string& heartbeat, const std::string& transition) {
  return json::object{{"type", type},
                      {"status", status},
                      {"lastHeartbeatTime", heartbeat},
                      {"lastTransitionTime", transition},
                      {"reason", reason},
                      {"message", message}};
}

}  // namespace

// Reports of the pod manager, as API writes.
class NodeAgent::Sink : public PodSink {
 public:
  Sink(client::Client& client, bool record_events)
      : client_(client), events_(record_events), recorder_(client, kEventQueueLimit) {
    if (events_) events_started_ = recorder_.Start();
  }

  absl::Status WriteStatus(const PodRef& pod, const json::object& status) override {
    // A JSON patch whose first operation tests the uid: a new pod of the same name is left alone.
    json::array ops;
    ops.push_back(json::object{{"op", "test"}, {"path", "/metadata/uid"}, {"value", pod.uid}});
    for (const auto& [key, value] : status) {
      ops.push_back(json::object{
          {"op", "add"}, {"path", Cat("/status/", std::string_view(key))}, {"value", value}});
    }
    absl::Status patched = client_.PatchWithoutResult(
        client::Pods(), pod.ns, pod.name, client::PatchType::kJson, json::serialize(ops), "status");
    if (absl::IsInvalidArgument(patched)) {
      return absl::NotFoundError(Cat("pod ", pod.ns, "/", pod.name, " was replaced"));
    }
    return patched;
  }

  absl::Status ConfirmDeletion(const PodRef& pod) override {
    client::DeleteOptions options;
    options.grace_period_seconds = 0;
    options.precondition_uid = pod.uid;
    absl::Status s = client_.Delete(client::Pods(), pod.ns, pod.name, options);
    if (absl::IsAborted(s)) return absl::NotFoundError("replaced by a new pod of the same name");
    return s;
  }

  void RecordEvent(const PodRef& pod, const std::string& node, const PodEvent& event) override {
    if (!events_) return;
    client::EventRecord record = client::EventRecord::AboutPod(pod.ns, pod.name, pod.uid);
    record.type = event.type;
    record.reason = event.reason;
    record.message = event.message;
    record.source_component = kComponent;
    record.source_host = node;
    Record(std::move(record));
  }

  // Queued and written in batches by the recorder's thread; best effort, as client-go's are.
  void Record(client::EventRecord record) {
    if (events_) recorder_.Record(std::move(record));
  }
  // Writes what is queued, then stops.
  void StopEvents() { recorder_.Stop(); }
  const absl::Status& EventsStarted() const { return events_started_; }

  absl::StatusOr<json::object> GetObject(std::string_view resource, const std::string& ns,
                                         const std::string& name) override {
    return client_.Get(resource == "secrets" ? Secrets() : ConfigMaps(), ns, name);
  }

 private:
  // Events waiting to be written beyond this are dropped (and counted by the recorder).
  static constexpr size_t kEventQueueLimit = 100000;

  client::Client& client_;
  const bool events_;
  client::EventRecorder recorder_;
  absl::Status events_started_;
};

NodeAgent::NodeAgent(client::Client& client, std::vector<NodeConfig> nodes,
                     NodeAgentOptions options)
    : client_(client),
      nodes_(std::move(nodes)),
      options_(std::move(options)),
      started_at_(std::chrono::system_clock::now()),
      sink_(std::make_unique<Sink>(client, options_.record_events)),
      node_uids_(nodes_.size()) {
  for (size_t i = 0; i < nodes_.size(); ++i) node_index_.emplace(nodes_[i].name, i);
  PodManagerOptions pod_options;
  pod_options.worker.data_dir = options_.data_dir;
  pod_options.worker.backoff_initial = options_.backoff_initial;
  pod_options.worker.backoff_max = options_.backoff_max;
  pod_options.shards = options_.shards;
  pods_ = std::make_unique<PodManager>(nodes_, *sink_, simulated_, process_, pod_options);
  streams_ = std::make_unique<NodePodStreams>(*pods_, process_);
}

NodeAgent::~NodeAgent() { Stop(); }

absl::Status NodeAgent::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_) return absl::FailedPreconditionError("the node agent is already started");
    started_ = true;
  }
  if (const absl::Status& s = sink_->EventsStarted(); !s.ok()) return s;
  if (absl::Status s = RegisterAll(); !s.ok()) return s;
  if (absl::Status s = pods_->Start(); !s.ok()) return s;
  client::ListOptions bound;
  bound.field_selector = "spec.nodeName!=";
  informer_ = std::make_unique<client::Informer>(client_, client::Pods(), "", bound);
  client::InformerHandlers handlers;
  PodManager* pods = pods_.get();
  // The informer's own state, shared: in process that is the store's (which leaves field
  // ownership out), so the agent keeps no copy of a pod.
  handlers.on_upsert = [pods](const std::shared_ptr<const json::object>& pod) {
    pods->Upsert(pod);
  };
  handlers.on_delete = [pods](const json::object& pod) { pods->Remove(pod); };
  informer_->AddHandlers(std::move(handlers));
  if (absl::Status s = informer_->Start(); !s.ok()) return s;
  if (pods_->network() != nullptr) {
    services_ = std::make_unique<client::Informer>(client_, client::Services());
    client::InformerHandlers on_service;
    on_service.on_upsert = [pods](const std::shared_ptr<const json::object>& service) {
      pods->UpsertService(*service);
    };
    on_service.on_delete = [pods](const json::object& service) { pods->RemoveService(service); };
    services_->AddHandlers(std::move(on_service));
    if (absl::Status s = services_->Start(); !s.ok()) return s;
  }
  // The kubelet puts its status back when the node lifecycle controller has marked the node
  // Unknown (a Lease renewed late under load): watch the Nodes and do the same.
  node_watch_ = std::make_unique<client::Informer>(client_, client::Nodes());
  client::InformerHandlers on_node;
  on_node.on_add = [this](const json::object& node) { NodeSeen(node); };
  on_node.on_update = [this](const json::object&, const json::object& node) { NodeSeen(node); };
  node_watch_->AddHandlers(std::move(on_node));
  if (absl::Status s = node_watch_->Start(); !s.ok()) return s;
  return common::StartThread(heartbeat_, "node heartbeats", [this] { Heartbeats(); });
}

absl::Status NodeAgent::RegisterAll() {
  std::atomic<size_t> next{0};
  std::mutex failed_mu;
  absl::Status failed;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < nodes_.size();) {
      {
        std::lock_guard<std::mutex> lock(failed_mu);
        if (!failed.ok()) return;
      }
      bool created = false;
      absl::Status s = RegisterNode(nodes_[i], &created);
      if (s.ok()) {
        registered_.fetch_add(1);
        s = RenewLease(nodes_[i], created);
      }
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(failed_mu);
        if (failed.ok()) failed = s;
        return;
      }
    }
  };
  // A new node is two writes (the Node with its status, its Lease). One after another over
  // HTTP, 5,000 nodes took a minute at four writes each, longer than a Lease lasts; up to four
  // writers share them. Small clusters register in order on this thread alone.
  std::vector<std::thread> helpers(std::min<size_t>(3, nodes_.size() / 64));
  for (std::thread& t : helpers) {
    if (!common::StartThread(t, "node registration", work).ok()) break;  // fewer helpers
  }
  work();
  for (std::thread& t : helpers) {
    if (t.joinable()) t.join();
  }
  return failed;
}

void NodeAgent::NodeSeen(const json::object& node) {
  auto it = node_index_.find(MetaString(node, "name"));
  if (it == node_index_.end()) return;
  bool ready = false;
  const json::object* status = ObjectAt(node, "status");
  if (const json::array* conditions = status ? ArrayAt(*status, "conditions") : nullptr) {
    for (const json::value& c : *conditions) {
      if (!c.is_object() || StringAt(c.get_object(), "type") != "Ready") continue;
      ready = StringAt(c.get_object(), "status") == "True";
    }
  }
  if (ready) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_now_.push_back(it->second);
  }
  wake_.notify_all();
}

void NodeAgent::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  streams_->Stop();
  if (node_watch_) node_watch_->Stop();
  if (informer_) informer_->Stop();
  if (services_) services_->Stop();
  if (heartbeat_.joinable()) heartbeat_.join();
  pods_->Stop();
  process_.Shutdown(options_.shutdown_grace);
  simulated_.Shutdown(std::chrono::milliseconds(0));
  sink_->StopEvents();
}

NodeAgentStats NodeAgent::Stats() const {
  NodeAgentStats stats;
  stats.nodes = registered_.load();
  PodManager::GpuCounts gpus = pods_->Gpus();
  stats.gpus_total = gpus.total;
  stats.gpus_free = gpus.total - gpus.in_use;
  PodCounts counts = pods_->Counts();
  stats.pods_pending = counts.pending;
  stats.pods_running = counts.running;
  stats.pods_succeeded = counts.succeeded;
  stats.pods_failed = counts.failed;
  return stats;
}

void NodeAgent::NodeEvent(const NodeConfig& node, const std::string& reason,
                          const std::string& message) {
  if (!options_.record_events) return;
  client::EventRecord record;
  record.involved_api_version = "v1";
  record.involved_kind = "Node";
  record.involved_name = node.name;
  record.involved_uid = node.name;  // the kubelet's node events carry the name as uid
  record.reason = reason;
  record.message = message;
  record.source_component = kComponent;
  record.source_host = node.name;
  sink_->Record(std::move(record));
}

absl::Status NodeAgent::RegisterNode(const NodeConfig& node, bool* created_now) {
  json::object labels;
  for (const auto& [k, v] : node.labels) labels[k] = v;
  json::object annotations{{"node.alpha.kubernetes.io/ttl", "0"},
                           {"muster.dev/runtime", std::string(RuntimeKindName(node.runtime))}};
  // The GPUs' NVLinks, for the scheduler's nvlink plugin; removed again by a restart without them.
  const std::string topology = GpuTopologyAnnotation(node);
  if (!topology.empty()) annotations[api::kGpuTopologyAnnotation] = topology;
  json::object meta{{"name", node.name}, {"labels", labels}, {"annotations", annotations}};
  json::object spec;
  if (!node.taints.empty()) {
    json::array taints;
    for (const api::Taint& t : node.taints) {
      json::object taint{{"key", t.key}, {"effect", t.effect}};
      if (!t.value.empty()) taint["value"] = t.value;
      taints.push_back(std::move(taint));
    }
    spec["taints"] = std::move(taints);
  }
  if (!node.pod_cidr.empty()) {
    spec["podCIDR"] = node.pod_cidr;
    spec["podCIDRs"] = json::array{json::value(node.pod_cidr)};
  }
  json::object obj{{"apiVersion", "v1"},
                   {"kind", "Node"},
                   {"metadata", meta},
                   {"spec", spec},
                   {"status", NodeStatus(node)}};
  auto created = client_.Create(client::Nodes(), "", std::move(obj));
  std::string uid;
  if (created.ok()) {
    uid = MetaString(*created, "uid");
    if (created_now != nullptr) *created_now = true;
  } else if (absl::IsAlreadyExists(created.status())) {
    // Registered by an earlier run: labels are re-applied; taints stay as they are now. The
    // rack and spine labels are the cluster file's topology's alone: one it no longer gives the
    // node is removed (as a spine that a HyperNode's label selector might still pick).
    json::value topology_value = nullptr;
    if (!topology.empty()) topology_value = topology;
    for (const char* owned : {kRackLabel, kSpineLabel}) {
      if (!labels.contains(owned)) labels[owned] = nullptr;
    }
    json::object patch{
        {"metadata",
         json::object{{"labels", labels},
                      {"annotations",
                       json::object{{api::kGpuTopologyAnnotation, std::move(topology_value)}}}}}};
    auto patched = client_.Patch(client::Nodes(), "", node.name, client::PatchType::kMerge,
                                 json::serialize(patch));
    if (!patched.ok()) return patched.status();
    uid = MetaString(*patched, "uid");
  } else {
    return absl::Status(created.status().code(),
                        Cat("registering node ", node.name, ": ",
                            std::string(created.status().message())));
  }
  if (auto it = node_index_.find(node.name); it != node_index_.end()) node_uids_[it->second] = uid;
  if (!created.ok()) {
    if (absl::Status s = WriteNodeStatus(node); !s.ok()) return s;
  }
  NodeEvent(node, "Starting", "Starting kubelet.");
  NodeEvent(node, "NodeReady", Cat("Node ", node.name, " status is now: NodeReady"));
  return absl::OkStatus();
}

json::object NodeAgent::NodeStatus(const NodeConfig& node) const {
  const std::string now = api::FormatTime(std::chrono::system_clock::now());
  const std::string since = api::FormatTime(started_at_);
  json::array conditions{
      Condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available", now, since),
      Condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure",
                now, since),
      Condition("PIDPressure", "False", "KubeletHasSufficientPID",
                "kubelet has sufficient PID available", now, since),
      Condition("Ready", "True", "KubeletReady", "kubelet is posting ready status", now, since)};
  const HostInfo& host = Host();
  const bool simulated = node.runtime == RuntimeKind::kSimulated;
  const std::string id = simulated ? HexId(node.name) : host.machine_id;
  json::object info{
      {"machineID", id},
      {"systemUUID", id},
      {"bootID", simulated ? HexId(node.name + "/boot") : host.boot_id},
      {"kernelVersion", host.kernel},
      {"osImage", simulated ? std::string("muster simulated node") : host.os_image},
      {"containerRuntimeVersion",
       Cat("muster-", RuntimeKindName(node.runtime), "://0.1.0")},
      {"kubeletVersion", options_.kubelet_version},
      {"kubeProxyVersion", ""},
      {"operatingSystem", "linux"},
      {"architecture", host.architecture}};
  json::object status{
      {"capacity", Resources(node.capacity)},
      {"allocatable", Resources(node.allocatable)},
      {"conditions", std::move(conditions)},
      {"addresses", json::array{json::object{{"type", "InternalIP"}, {"address", node.internal_ip}},
                                json::object{{"type", "Hostname"}, {"address", node.name}}}},
      {"daemonEndpoints", json::object{{"kubeletEndpoint", json::object{{"Port", 10250}}}}},
      {"nodeInfo", std::move(info)}};
  return status;
}

absl::Status NodeAgent::WriteNodeStatus(const NodeConfig& node) {
  json::object patch{{"status", NodeStatus(node)}};
  auto patched = client_.Patch(client::Nodes(), "", node.name, client::PatchType::kMerge,
                               json::serialize(patch), "status");
  if (!patched.ok()) {
    return absl::Status(patched.status().code(),
                        Cat("writing the status of node ", node.name, ": ",
                            std::string(patched.status().message())));
  }
  return absl::OkStatus();
}

absl::Status NodeAgent::RenewLease(const NodeConfig& node, bool create_first) {
  const std::string renew = api::FormatMicroTime(std::chrono::system_clock::now());
  json::object spec{{"holderIdentity", node.name},
                    {"leaseDurationSeconds", options_.lease_duration_seconds},
                    {"renewTime", renew}};
  // Serialised before `spec` moves into a Lease to create.
  const std::string patch_body = json::serialize(json::object{{"spec", spec}});
  auto patch = [&]() -> absl::Status {
    return client_
        .Patch(client::Leases(), kLeaseNamespace, node.name, client::PatchType::kMerge, patch_body)
        .status();
  };
  if (!create_first) {
    absl::Status patched = patch();
    if (patched.ok() || !absl::IsNotFound(patched)) return patched;
  }
  json::object meta{{"name", node.name}, {"namespace", kLeaseNamespace}};
  std::string uid;
  if (auto it = node_index_.find(node.name); it != node_index_.end()) uid = node_uids_[it->second];
  if (!uid.empty()) {
    meta["ownerReferences"] = json::array{
        json::object{{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node.name}, {"uid", uid}}};
  }
  json::object lease{{"apiVersion", "coordination.k8s.io/v1"},
                     {"kind", "Lease"},
                     {"metadata", std::move(meta)},
                     {"spec", std::move(spec)}};
  auto created = client_.Create(client::Leases(), kLeaseNamespace, std::move(lease));
  if (create_first && absl::IsAlreadyExists(created.status())) return patch();
  if (!created.ok() && !absl::IsAlreadyExists(created.status())) {
    return absl::Status(created.status().code(),
                        Cat("creating the lease of node ", node.name, ": ",
                            std::string(created.status().message())));
  }
  return absl::OkStatus();
}

void NodeAgent::Heartbeats() {
  const size_t n = nodes_.size();
  if (n == 0) return;
  std::vector<Clock::time_point> lease_due(n), status_due(n);
  const auto start = Clock::now();
  for (size_t i = 0; i < n; ++i) {
    // Spread over the interval, so that a thousand nodes do not all write at once.
    lease_due[i] = start + options_.lease_renew_interval * (i + 1) / n;
    status_due[i] = start + options_.status_report_interval * (i + 1) / n;
  }
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const auto now = Clock::now();
    std::vector<size_t> leases, statuses;
    for (size_t i : status_now_) status_due[i] = now;
    status_now_.clear();
    Clock::time_point next = Clock::time_point::max();
    for (size_t i = 0; i < n; ++i) {
      if (lease_due[i] <= now) {
        leases.push_back(i);
        lease_due[i] = now + options_.lease_renew_interval;
      }
      if (status_due[i] <= now) {
        statuses.push_back(i);
        status_due[i] = now + options_.status_report_interval;
      }
      next = std::min({next, lease_due[i], status_due[i]});
    }
    if (leases.empty() && statuses.empty()) {
      wake_.wait_until(lock, next);
      continue;
    }
    lock.unlock();
    for (size_t i : leases) (void)RenewLease(nodes_[i]);  // the next renewal retries
    for (size_t i : statuses) {
      absl::Status s = WriteNodeStatus(nodes_[i]);
      if (absl::IsNotFound(s)) (void)RegisterNode(nodes_[i]);  // deleted: register again
    }
    lock.lock();
  }
}

}  // namespace muster::node
