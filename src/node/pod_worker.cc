// PodWorker's life cycle (pod_worker.h): adoption of a pod an earlier agent ran, admission,
// starting, restarting and stopping its containers under the restart policy, and deletion. What a
// container is started with is container_launch.h's; what the status says is pod_status.cc's.

#include "node/pod_worker.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "api/time.h"
#include "node/container_launch.h"
#include "node/json_access.h"
#include "node/pod_network.h"
#include "node/pod_spec.h"
#include "node/pod_worker_container.h"

namespace muster::node {

namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

// Asks for a Sync by `t` at the latest.
void WakeBy(PodWorker::SyncResult& result, PodWorker::Clock::time_point t) {
  if (!result.wake_at || t < *result.wake_at) result.wake_at = t;
}

}  // namespace

PodWorker::PodWorker(std::shared_ptr<const json::object> pod, NodeResources& node,
                     Runtime& runtime, const PodWorkerOptions& options, PodWorkerHooks hooks)
    : pod_(std::move(pod)),
      node_(node),
      runtime_(runtime),
      options_(options),
      hooks_(std::move(hooks)) {
  ns_ = MetaString(*pod_, "namespace");
  name_ = MetaString(*pod_, "name");
  uid_ = MetaString(*pod_, "uid");
  deleting_ = !MetaString(*pod_, "deletionTimestamp").empty();
  const json::object* spec = ObjectAt(*pod_, "spec");
  static const json::object kEmpty;
  if (spec == nullptr) spec = &kEmpty;
  restart_policy_ = StringAt(*spec, "restartPolicy");
  if (restart_policy_.empty()) restart_policy_ = "Always";
  // Kubernetes' effective requests: the app containers' sum, at least each init container's,
  // plus the pod's overhead.
  api::ResourceList init_max;
  for (auto [list, init] : {std::pair{"initContainers", true}, {"containers", false}}) {
    const json::array* containers = ArrayAt(*spec, list);
    if (containers == nullptr) continue;
    for (const json::value& v : *containers) {
      if (!v.is_object()) continue;
      auto c = std::make_unique<Container>();
      c->spec = v.get_object();
      c->name = StringAt(c->spec, "name");
      c->image = StringAt(c->spec, "image");
      c->init = init;
      c->device_counts = DeviceCounts(c->spec);
      for (const auto& [resource, q] : ContainerRequests(c->spec)) {
        if (init) {
          init_max[resource] = std::max(init_max[resource], q);
        } else {
          requests_[resource] += q;
        }
      }
      c->waiting_reason =
          init || spec->contains("initContainers") ? "PodInitializing" : "ContainerCreating";
      (init ? init_ : app_).push_back(std::move(c));
    }
  }
  for (const auto& [resource, q] : init_max) requests_[resource] = std::max(requests_[resource], q);
  for (const auto& [resource, q] : Quantities(ObjectAt(*spec, "overhead"))) {
    requests_[resource] += q;
  }
  if (const json::object* status = ObjectAt(*pod_, "status");
      status != nullptr && !StringAt(*status, "startTime").empty()) {
    Adopt(*status);
  }
}

PodWorker::~PodWorker() {
  if (hooks_.network != nullptr) hooks_.network->Withdraw(uid_);
  node_.Release(uid_);
}

void PodWorker::Adopt(const json::object& status) {
  const std::string phase = StringAt(status, "phase");
  if (phase == "Succeeded" || phase == "Failed") {
    frozen_status_ = status;
    terminal_ = true;
    phase_ = phase;
    return;
  }
  // Admitted by the agent before this one: counted, never turned away (a restart fails no pod).
  node_.AdmitRequests(uid_, requests_, /*admitted_before=*/true);
  start_time_ = StringAt(status, "startTime");
  pod_ip_ = StringAt(status, "podIP");
  if (const json::array* conditions = ArrayAt(status, "conditions")) {
    for (const json::value& v : *conditions) {
      if (!v.is_object()) continue;
      const json::object& c = v.get_object();
      const std::string type = StringAt(c, "type");
      if (type != "Initialized" && type != "Ready" && type != "ContainersReady") continue;
      conditions_[type] = {StringAt(c, "status") == "True", StringAt(c, "lastTransitionTime"),
                           StringAt(c, "reason"), StringAt(c, "message")};
    }
  }
  const auto now_wall = std::chrono::system_clock::now();
  for (auto [list, containers] :
       {std::pair{"initContainerStatuses", &init_}, std::pair{"containerStatuses", &app_}}) {
    const json::array* statuses = ArrayAt(status, list);
    if (statuses == nullptr) continue;
    for (const json::value& v : *statuses) {
      if (!v.is_object()) continue;
      const json::object& cs = v.get_object();
      const std::string cname = StringAt(cs, "name");
      auto it = std::find_if(containers->begin(), containers->end(),
                             [&](const auto& c) { return c->name == cname; });
      if (it != containers->end()) AdoptContainer(**it, cs, now_wall);
    }
  }
}

void PodWorker::AdoptContainer(Container& c, const json::object& cs,
                               std::chrono::system_clock::time_point now_wall) {
  c.restart_count = static_cast<int>(IntAt(cs, "restartCount").value_or(0));
  c.container_id = StringAt(cs, "containerID");
  if (const json::object* last = ObjectAt(cs, "lastState")) {
    if (const json::object* t = ObjectAt(*last, "terminated")) c.last_state = *t;
  }
  const json::object* state = ObjectAt(cs, "state");
  if (state == nullptr) return;
  auto take_terminated = [&](const json::object& t) {
    c.ever_started = true;
    c.state = Container::State::kTerminated;
    c.exit_code = static_cast<int>(IntAt(t, "exitCode").value_or(0));
    c.signal = static_cast<int>(IntAt(t, "signal").value_or(0));
    c.term_reason = StringAt(t, "reason");
    c.term_message = StringAt(t, "message");
    c.started_at = StringAt(t, "startedAt");
    c.finished_at = StringAt(t, "finishedAt");
    c.restart_pending = WillRestart(c);
    c.restart_at = Clock::now();
    c.backoff = options_.backoff_initial;
  };
  if (const json::object* running = ObjectAt(*state, "running")) {
    c.ever_started = true;
    c.started_at = StringAt(*running, "startedAt");
    if (node_.config().runtime == RuntimeKind::kSimulated) {
      // Resumes with the time it had left; restartCount stays.
      const std::string run = Annotation(*pod_, kRunSecondsAnnotation);
      double seconds = -1;
      if (!run.empty() && absl::SimpleAtod(run, &seconds) && seconds >= 0) {
        auto started = api::ParseTime(c.started_at).value_or(now_wall);
        double elapsed = std::chrono::duration<double>(now_wall - started).count();
        c.resume_seconds = std::max(0.0, seconds - elapsed);
      } else {
        c.resume_seconds = -1;
      }
    } else {
      c.started_steady = Clock::now();
      ContainerExit lost;
      lost.exit_code = 137;
      lost.finished_at = now_wall;
      ContainerEnded(c, lost, "ContainerStatusUnknown",
                     "The container could not be located when the node agent started "
                     "again. The container used to be Running");
    }
  } else if (const json::object* t = ObjectAt(*state, "terminated")) {
    take_terminated(*t);
  } else if (ObjectAt(*state, "waiting") != nullptr) {
    const json::object* last = ObjectAt(cs, "lastState");
    const json::object* t = last == nullptr ? nullptr : ObjectAt(*last, "terminated");
    if (t != nullptr) {
      json::object copy = *t;
      c.last_state.reset();
      take_terminated(copy);
    }
  }
}

bool PodWorker::Update(std::shared_ptr<const json::object> pod) {
  auto deletion = [](const json::object& p) {
    return Cat(MetaString(p, "deletionTimestamp"), "/",
               IntAt(*ObjectAt(p, "metadata"), "deletionGracePeriodSeconds").value_or(-1));
  };
  auto annotations = [](const json::object& p) -> json::value {
    const json::object* meta = ObjectAt(p, "metadata");
    const json::value* a = meta == nullptr ? nullptr : meta->if_contains("annotations");
    return a == nullptr ? json::value() : *a;
  };
  auto labels = [](const json::object& p) -> json::value {
    const json::object* meta = ObjectAt(p, "metadata");
    const json::value* l = meta == nullptr ? nullptr : meta->if_contains("labels");
    return l == nullptr ? json::value() : *l;
  };
  const bool changed =
      (ObjectAt(*pod, "metadata") != nullptr && ObjectAt(*pod_, "metadata") != nullptr &&
       deletion(*pod) != deletion(*pod_)) ||
      annotations(*pod) != annotations(*pod_) ||
      (hooks_.network != nullptr && labels(*pod) != labels(*pod_));  // Services select by them
  pod_ = std::move(pod);
  if (!MetaString(*pod_, "deletionTimestamp").empty()) deleting_ = true;
  return changed;
}

void PodWorker::Orphan() { orphaned_ = true; }

int PodWorker::running_containers() const {
  int n = 0;
  for (const auto* list : {&init_, &app_}) {
    for (const auto& c : *list) n += c->handle.has_value() ? 1 : 0;
  }
  return n;
}

void PodWorker::OnExit(ContainerId id, const ContainerExit& exit) {
  for (auto* list : {&init_, &app_}) {
    for (auto& c : *list) {
      if (c->handle == id) {
        ContainerEnded(*c, exit, "", "");
        return;
      }
    }
  }
}

bool PodWorker::WillRestart(const Container& c) const {
  if (c.init) return c.exit_code != 0 && restart_policy_ != "Never";
  if (restart_policy_ == "Always") return true;
  if (restart_policy_ == "OnFailure") return c.exit_code != 0;
  return false;
}

void PodWorker::ContainerEnded(Container& c, const ContainerExit& exit, const std::string& reason,
                               const std::string& message) {
  const auto now = Clock::now();
  c.state = Container::State::kTerminated;
  c.handle.reset();
  c.exit_code = exit.exit_code;
  c.signal = exit.signal;
  c.term_reason = !reason.empty() ? reason : exit.exit_code == 0 ? "Completed" : "Error";
  c.term_message = message;
  c.finished_at = api::FormatTime(exit.finished_at == std::chrono::system_clock::time_point{}
                                      ? std::chrono::system_clock::now()
                                      : exit.finished_at);
  if (now - c.started_steady >= 2 * options_.backoff_max) c.backoff = std::chrono::milliseconds(0);
  c.restart_pending = !deleting() && !terminal_ && WillRestart(c);
  if (c.restart_pending) {
    c.applied_backoff = c.backoff;
    c.restart_at = now + c.backoff;
    c.backoff = c.backoff.count() == 0 ? options_.backoff_initial
                                       : std::min(2 * c.backoff, options_.backoff_max);
    c.backoff_event_sent = false;
  }
}

LaunchResult PodWorker::BuildLaunch(const Container& c) const {
  LaunchContext context{.pod = *pod_,
                        .ns = ns_,
                        .name = name_,
                        .uid = uid_,
                        .pod_ip = pod_ip_,
                        .node = node_.config(),
                        .data_dir = options_.data_dir,
                        .containers = {},
                        .get_object = hooks_.get_object};
  for (const auto* list : {&init_, &app_}) {
    for (const auto& other : *list) context.containers.push_back(&other->spec);
  }
  return BuildContainerLaunch(context, {.spec = c.spec,
                                        .init = c.init,
                                        .devices = c.devices,
                                        .first_run = !c.ever_started && c.restart_count == 0,
                                        .resume_seconds = c.resume_seconds});
}

void PodWorker::StartContainer(Container& c, SyncResult& result) {
  const auto now = Clock::now();
  LaunchResult built = BuildLaunch(c);
  if (!built.waiting_reason.empty()) c.waiting_reason = std::move(built.waiting_reason);
  absl::StatusOr<ContainerLaunch>& launch = built.launch;
  if (launch.ok() && hooks_.network != nullptr) {
    if (absl::Status s = hooks_.network->PrepareLaunch(uid_, *launch); !s.ok()) launch = s;
  }
  if (!launch.ok() && !absl::IsFailedPrecondition(launch.status())) {
    // Set-up failed (ConfigMap missing, bad annotation, volume): stay waiting and try again.
    const std::string message(launch.status().message());
    c.state = Container::State::kWaiting;
    c.waiting_message = message;
    c.setup_retry_at = now + options_.setup_retry;
    if (message != last_setup_warning_) {
      last_setup_warning_ = message;
      const bool mount = message.rfind("MountVolume", 0) == 0;
      result.events.push_back(
          {"Warning", mount ? "FailedMount" : "Failed", mount ? message : "Error: " + message});
    }
    return;
  }
  last_setup_warning_.clear();
  c.waiting_message.clear();
  if (c.ever_started && !c.resume_seconds) {
    c.last_state = c.Terminated();
    ++c.restart_count;
  }
  const bool resumed = c.resume_seconds.has_value();
  c.resume_seconds.reset();
  c.ever_started = true;
  c.kill_sent = false;
  c.backoff_event_sent = false;
  c.restart_pending = false;
  c.started_steady = now;
  if (!resumed || c.started_at.empty()) {
    c.started_at = api::FormatTime(std::chrono::system_clock::now());
  }
  c.container_id = Cat("muster://", uid_, "-", c.name, "-", c.restart_count);
  if (launch.ok()) {
    launch->log_run_id = c.container_id;
    c.launch = std::make_shared<const ContainerLaunch>(*launch);
  }
  absl::StatusOr<ContainerId> id = launch.ok() ? runtime_.Start(*launch, hooks_.on_exit)
                                               : absl::StatusOr<ContainerId>(launch.status());
  if (!id.ok()) {
    const std::string message(id.status().message());
    ContainerExit failed;
    failed.exit_code = 128;
    failed.finished_at = std::chrono::system_clock::now();
    ContainerEnded(c, failed, "StartError", message);
    result.events.push_back({"Warning", "Failed", "Error: " + message});
    return;
  }
  c.state = Container::State::kRunning;
  c.handle = *id;
  if (!resumed) result.events.push_back({"Normal", "Started", "Started container " + c.name});
}

void PodWorker::KillAll(SyncResult& result) {
  const json::object* meta = ObjectAt(*pod_, "metadata");
  const json::object* spec = ObjectAt(*pod_, "spec");
  int64_t grace = 30;
  if (meta != nullptr && IntAt(*meta, "deletionGracePeriodSeconds")) {
    grace = *IntAt(*meta, "deletionGracePeriodSeconds");
  } else if (spec != nullptr && IntAt(*spec, "terminationGracePeriodSeconds")) {
    grace = *IntAt(*spec, "terminationGracePeriodSeconds");
  }
  grace = std::max<int64_t>(0, grace);
  for (auto* list : {&init_, &app_}) {
    for (auto& c : *list) {
      c->restart_pending = false;
      if (!c->handle || c->kill_sent) continue;
      c->kill_sent = true;
      runtime_.Kill(*c->handle, std::chrono::seconds(grace));
      result.events.push_back({"Normal", "Killing", "Stopping container " + c->name});
    }
  }
}

bool PodWorker::Admit(SyncResult& result) {
  std::optional<std::vector<int>> named =
      api::ParseGpuIndices(Annotation(*pod_, api::kGpuIndicesAnnotation));
  // Per resource: the app containers' sum, at least the largest init container's.
  std::map<std::string, int> wanted, init_max;
  for (const auto& c : app_) {
    for (const auto& [resource, n] : c->device_counts) wanted[resource] += n;
  }
  for (const auto& c : init_) {
    for (const auto& [resource, n] : c->device_counts) {
      init_max[resource] = std::max(init_max[resource], n);
    }
  }
  for (const auto& [resource, n] : init_max) wanted[resource] = std::max(wanted[resource], n);
  absl::StatusOr<DeviceGrant> devices =
      !named ? absl::StatusOr<DeviceGrant>(absl::FailedPreconditionError(
                   Cat("annotation ", api::kGpuIndicesAnnotation, ": \"",
                       Annotation(*pod_, api::kGpuIndicesAnnotation),
                       "\" is not a list of GPU indices such as \"0,3\"")))
      : wanted.empty() && named->empty() ? DeviceGrant()
                                         : node_.AcquireDevices(uid_, *named, wanted);
  // The kubelet's rejectPod: a Warning event with the reason, the pod Failed holding nothing.
  auto reject = [&](std::string reason, const std::string& message, std::string status_message) {
    node_.Release(uid_);
    reason_ = std::move(reason);
    message_ = std::move(status_message);
    terminal_ = true;
    phase_ = "Failed";
    result.events.push_back({"Warning", reason_, message});
    SetCondition("Initialized", init_.empty(), "", "");
    return false;
  };
  if (!devices.ok()) {
    const std::string message(devices.status().message());
    return reject("UnexpectedAdmissionError", message, message);
  }
  if (std::optional<Rejection> rejected = node_.AdmitRequests(uid_, requests_)) {
    return reject(rejected->reason, rejected->message, "Pod was rejected: " + rejected->message);
  }
  // App containers share the pod's devices out in order; an init container (they run one at a
  // time) uses the first ones.
  std::map<std::string, size_t> next;
  auto give = [&](Container& c, bool from_first) {
    for (const DeviceResource& r : node_.device_resources()) {
      auto want = c.device_counts.find(r.name);
      auto held = devices->find(r.name);
      if (want == c.device_counts.end() || held == devices->end()) continue;
      size_t at = from_first ? 0 : next[r.name];
      for (int i = 0; i < want->second && at < held->second.size(); ++i, ++at) {
        if (const NodeDevice* d = node_.Device(r.name, held->second[at])) c.devices.push_back(d);
      }
      if (!from_first) next[r.name] = at;
    }
  };
  for (auto& c : app_) give(*c, false);
  for (auto& c : init_) give(*c, true);
  admitted_ = true;
  return true;
}

void PodWorker::AdvanceContainer(Container& c, Clock::time_point now, SyncResult& result) {
  if (c.state == Container::State::kRunning) return;
  if (c.state == Container::State::kTerminated) {
    if (!c.restart_pending) return;
    if (now < c.restart_at) {
      WakeBy(result, c.restart_at);
      if (!c.backoff_event_sent) {
        c.backoff_event_sent = true;
        result.events.push_back({"Warning", "BackOff",
                                 Cat("Back-off restarting failed container ", c.name, " in pod ",
                                     PodDescription(ns_, name_, uid_))});
      }
      return;
    }
  } else if (now < c.setup_retry_at) {
    WakeBy(result, c.setup_retry_at);
    return;
  }
  StartContainer(c, result);
  if (c.state == Container::State::kTerminated && c.restart_pending) WakeBy(result, c.restart_at);
  if (c.state == Container::State::kWaiting) WakeBy(result, c.setup_retry_at);
}

PodWorker::SyncResult PodWorker::Sync() {
  SyncResult result;
  const auto now = Clock::now();
  if (frozen_status_) {
    result.confirm_deletion = deleting_ && !orphaned_;
    return result;
  }
  if (start_time_.empty()) start_time_ = api::FormatTime(std::chrono::system_clock::now());
  SyncNetwork();

  if (deleting()) {
    KillAll(result);
    result.confirm_deletion = !orphaned_ && running_containers() == 0;
    return result;
  }
  if (terminal_) return result;

  if (!admitted_ && !Admit(result)) {
    SyncNetwork();  // rejected: withdrawn
    return result;
  }

  bool initialized = true;
  for (auto& c : init_) {
    if (c->Completed()) continue;
    initialized = false;
    if (c->StoppedForGood()) break;  // failed
    AdvanceContainer(*c, now, result);
    if (c->Completed()) {
      initialized = true;  // ended at once (simulated init containers); look at the next
      continue;
    }
    break;
  }
  if (initialized) {
    for (auto& c : init_) {
      if (!c->Completed()) initialized = false;
    }
  }
  if (initialized) {
    for (auto& c : app_) {
      if (c->state == Container::State::kWaiting && c->waiting_reason == "PodInitializing") {
        c->waiting_reason = "ContainerCreating";
      }
      AdvanceContainer(*c, now, result);
    }
  }

  phase_ = ComputePhase();
  if (phase_ == "Succeeded" || phase_ == "Failed") {
    terminal_ = true;
    node_.Release(uid_);
    SyncNetwork();
  }

  UpdateConditions();
  return result;
}

void PodWorker::SyncNetwork() {
  if (hooks_.network == nullptr) {
    if (pod_ip_.empty()) pod_ip_ = node_.NextPodIp();
  } else if (terminal_ || deleting()) {
    hooks_.network->Withdraw(uid_);
  } else {
    pod_ip_ = hooks_.network->Publish(*pod_, pod_ip_);
  }
}

std::optional<PodWorker::ContainerRun> PodWorker::Run(std::string_view container) const {
  for (const auto* list : {&init_, &app_}) {
    for (const auto& c : *list) {
      if (c->name == container) return ContainerRun{c->handle, c->launch};
    }
  }
  return std::nullopt;
}

void PodWorker::RemoveFiles() const {
  if (hooks_.network != nullptr) hooks_.network->Withdraw(uid_);  // its file is written no more
  if (node_.config().runtime != RuntimeKind::kProcess || options_.data_dir.empty()) return;
  std::error_code ec;
  fs::remove_all(fs::path(options_.data_dir) / "pods" / ns_ / name_, ec);
  fs::remove_all(fs::path(options_.data_dir) / "logs" / ns_ / name_, ec);
}

}  // namespace muster::node
