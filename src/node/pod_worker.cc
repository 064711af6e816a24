#include "node/pod_worker.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "api/time.h"
#include "fmt/format.h"
#include "node/json_access.h"

extern char** environ;  // NOLINT

namespace muster::node {

namespace json = boost::json;
namespace fs = std::filesystem;
using common::Quantity;

struct PodWorker::Container {
  std::string name;
  std::string image;
  bool init = false;
  json::object spec;
  std::map<std::string, int> device_counts;  // nvidia.com/* resource -> devices asked for
  std::vector<const NodeDevice*> devices;    // given at admission

  enum class State { kWaiting, kRunning, kTerminated };
  State state = State::kWaiting;
  std::string waiting_reason;
  std::string waiting_message;

  std::optional<ContainerId> handle;  // while running
  std::string container_id;           // of the current or last run
  std::string started_at;             // of the current or last run
  Clock::time_point started_steady{};
  bool ever_started = false;
  bool kill_sent = false;
  std::optional<double> resume_seconds;  // simulated: time left from an adopted run

  // The last run's end (state kTerminated).
  int exit_code = 0;
  int signal = 0;
  std::string term_reason, term_message, finished_at;
  std::optional<json::object> last_state;  // the run before the current one, as "terminated"
  int restart_count = 0;

  bool restart_pending = false;
  Clock::time_point restart_at{};
  std::chrono::milliseconds applied_backoff{0};
  std::chrono::milliseconds backoff{0};  // the next one
  bool backoff_event_sent = false;
  Clock::time_point setup_retry_at{};

  json::object Terminated() const {
    json::object t;
    t["exitCode"] = exit_code;
    if (signal != 0) t["signal"] = signal;
    t["reason"] = term_reason;
    if (!term_message.empty()) t["message"] = term_message;
    t["startedAt"] = started_at.empty() ? finished_at : started_at;
    t["finishedAt"] = finished_at;
    if (!container_id.empty()) t["containerID"] = container_id;
    return t;
  }
};

namespace {

constexpr char kUnreadyPrefix[] = "containers with unready status: [";

std::string PodRef(const std::string& ns, const std::string& name, const std::string& uid) {
  return Cat(name, "_", ns, "(", uid, ")");
}

std::string DurationText(std::chrono::milliseconds d) {
  if (d.count() % 1000 == 0) return Cat(d.count() / 1000, "s");
  return Cat(d.count(), "ms");
}

// A quantity as the API writes it ("500m", 2); nullopt when it is not one.
std::optional<Quantity> QuantityOf(const json::value& v) {
  std::string text;
  if (v.is_string()) {
    text = std::string(v.get_string());
  } else if (v.is_int64()) {
    text = std::to_string(v.get_int64());
  } else if (v.is_uint64()) {
    text = std::to_string(v.get_uint64());
  } else if (v.is_double()) {
    text = fmt::format("{}", v.get_double());
  } else {
    return std::nullopt;
  }
  absl::StatusOr<Quantity> q = Quantity::Parse(text);
  if (!q.ok()) return std::nullopt;
  return *q;
}

// The quantity of `resource` in a container's resources.<kind>; nullopt when absent or bad.
std::optional<Quantity> ResourceOf(const json::object& container, std::string_view kind,
                                   std::string_view resource) {
  const json::object* resources = ObjectAt(container, "resources");
  if (resources == nullptr) return std::nullopt;
  const json::object* list = ObjectAt(*resources, kind);
  if (list == nullptr) return std::nullopt;
  const json::value* v = list->if_contains(resource);
  return v == nullptr ? std::nullopt : QuantityOf(*v);
}

// Every quantity of a resource list (resources.requests, spec.overhead); bad ones are left out.
api::ResourceList Quantities(const json::object* list) {
  api::ResourceList out;
  if (list == nullptr) return out;
  for (const auto& [resource, v] : *list) {
    if (std::optional<Quantity> q = QuantityOf(v)) out[std::string(resource)] = *q;
  }
  return out;
}

// A container's requests as the API server defaults them: a resource given only in limits is
// requested at its limit.
api::ResourceList ContainerRequests(const json::object& container) {
  const json::object* resources = ObjectAt(container, "resources");
  if (resources == nullptr) return {};
  api::ResourceList requests = Quantities(ObjectAt(*resources, "requests"));
  requests.merge(Quantities(ObjectAt(*resources, "limits")));  // keeps the requests given
  return requests;
}

// The devices a container asks for: its nvidia.com/* resources (GPUs, MIG devices, shared GPUs),
// limits where given, else requests.
std::map<std::string, int> DeviceCounts(const json::object& container) {
  std::map<std::string, int> counts;
  const json::object* resources = ObjectAt(container, "resources");
  if (resources == nullptr) return counts;
  for (const char* kind : {"requests", "limits"}) {  // limits last: they win
    const json::object* list = ObjectAt(*resources, kind);
    if (list == nullptr) continue;
    for (const auto& entry : *list) {
      const std::string name(entry.key().data(), entry.key().size());
      if (name.rfind("nvidia.com/", 0) != 0) continue;
      std::optional<Quantity> q = ResourceOf(container, kind, name);
      counts[name] = q ? static_cast<int>(std::clamp<int64_t>(q->Value(), 0, 1 << 20)) : 0;
    }
  }
  std::erase_if(counts, [](const auto& c) { return c.second == 0; });
  // A GPU share is part of one device, the one the scheduler recorded: the container sees it.
  if (!counts.contains(api::kGpuResource)) {
    for (const char* kind : {"requests", "limits"}) {
      std::optional<Quantity> q = ResourceOf(container, kind, api::kGpuShareResource);
      if (q && q->MilliValue() > 0) counts[api::kGpuResource] = 1;
    }
  }
  return counts;
}

std::string Annotation(const json::object& pod, std::string_view key) {
  const json::object* meta = ObjectAt(pod, "metadata");
  if (meta == nullptr) return "";
  const json::object* annotations = ObjectAt(*meta, "annotations");
  return annotations == nullptr ? "" : StringAt(*annotations, key);
}

std::string LabelOrAnnotation(const json::object& pod, std::string_view map,
                              std::string_view key) {
  const json::object* meta = ObjectAt(pod, "metadata");
  if (meta == nullptr) return "";
  const json::object* m = ObjectAt(*meta, map);
  return m == nullptr ? "" : StringAt(*m, key);
}

// Kubernetes' $(VAR) expansion (third_party/forked/golang/expansion): $(NAME) becomes the value
// of NAME when defined and stays as written otherwise; $$ is a literal $.
std::string Expand(std::string_view in, const std::map<std::string, std::string>& vars) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '$' || i + 1 >= in.size()) {
      out += in[i];
      continue;
    }
    if (in[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (in[i + 1] == '(') {
      size_t close = in.find(')', i + 2);
      if (close != std::string_view::npos) {
        std::string name(in.substr(i + 2, close - i - 2));
        auto it = vars.find(name);
        if (it != vars.end()) {
          out += it->second;
        } else {
          out += in.substr(i, close - i + 1);
        }
        i = close;
        continue;
      }
    }
    out += in[i];
  }
  return out;
}

std::vector<std::string> Strings(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const json::array* a = ArrayAt(o, key)) {
    for (const json::value& v : *a) {
      if (v.is_string()) out.emplace_back(v.get_string());
    }
  }
  return out;
}

// An ordered environment where a later definition replaces an earlier one in place.
class Environment {
 public:
  void Set(const std::string& name, std::string value) {
    auto [it, inserted] = index_.emplace(name, entries_.size());
    if (inserted) {
      entries_.emplace_back(name, std::move(value));
    } else {
      entries_[it->second].second = std::move(value);
    }
  }
  std::vector<std::string> Entries() const {
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const auto& [k, v] : entries_) out.push_back(Cat(k, "=", v));
    return out;
  }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
  std::map<std::string, size_t> index_;
};

absl::Status WriteFile(const fs::path& path, std::string_view content) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return absl::InternalError(Cat("creating ", path.parent_path().string(), ": ", ec.message()));
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) return absl::InternalError(Cat("writing ", path.string()));
  return absl::OkStatus();
}

// A path inside the container must be absolute and may not climb with "..".
bool SafeContainerPath(std::string_view path, bool absolute) {
  if (absolute && (path.empty() || path.front() != '/')) return false;
  for (absl::string_view part : absl::StrSplit(std::string(path), '/')) {
    if (part == "..") return false;
  }
  return true;
}

}  // namespace

PodWorker::PodWorker(json::object pod, NodeResources& node, Runtime& runtime,
                     const PodWorkerOptions& options, PodWorkerHooks hooks)
    : pod_(std::move(pod)), node_(node), runtime_(runtime), options_(options),
      hooks_(std::move(hooks)) {
  ns_ = MetaString(pod_, "namespace");
  name_ = MetaString(pod_, "name");
  uid_ = MetaString(pod_, "uid");
  deleting_ = !MetaString(pod_, "deletionTimestamp").empty();
  const json::object* spec = ObjectAt(pod_, "spec");
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
      c->waiting_reason = init || spec->contains("initContainers") ? "PodInitializing"
                                                                     : "ContainerCreating";
      (init ? init_ : app_).push_back(std::move(c));
    }
  }
  for (const auto& [resource, q] : init_max) requests_[resource] = std::max(requests_[resource], q);
  for (const auto& [resource, q] : Quantities(ObjectAt(*spec, "overhead"))) {
    requests_[resource] += q;
  }
  if (const json::object* status = ObjectAt(pod_, "status");
      status != nullptr && !StringAt(*status, "startTime").empty()) {
    Adopt(*status);
  }
}

PodWorker::~PodWorker() { node_.Release(uid_); }

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
  const bool simulated = node_.config().runtime == RuntimeKind::kSimulated;
  for (auto [list, containers] : {std::pair{"initContainerStatuses", &init_},
                                  std::pair{"containerStatuses", &app_}}) {
    const json::array* statuses = ArrayAt(status, list);
    if (statuses == nullptr) continue;
    for (const json::value& v : *statuses) {
      if (!v.is_object()) continue;
      const json::object& cs = v.get_object();
      const std::string cname = StringAt(cs, "name");
      auto it = std::find_if(containers->begin(), containers->end(),
                             [&](const auto& c) { return c->name == cname; });
      if (it == containers->end()) continue;
      Container& c = **it;
      c.restart_count = static_cast<int>(IntAt(cs, "restartCount").value_or(0));
      c.container_id = StringAt(cs, "containerID");
      if (const json::object* last = ObjectAt(cs, "lastState")) {
        if (const json::object* t = ObjectAt(*last, "terminated")) c.last_state = *t;
      }
      const json::object* state = ObjectAt(cs, "state");
      if (state == nullptr) continue;
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
        if (simulated) {
          // Resumes with the time it had left; restartCount stays.
          const std::string run = Annotation(pod_, kRunSecondsAnnotation);
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
      } else if (const json::object* w = ObjectAt(*state, "waiting")) {
        (void)w;
        const json::object* last = ObjectAt(cs, "lastState");
        const json::object* t = last == nullptr ? nullptr : ObjectAt(*last, "terminated");
        if (t != nullptr) {
          json::object copy = *t;
          c.last_state.reset();
          take_terminated(copy);
        }
      }
    }
  }
}

bool PodWorker::Update(json::object pod) {
  auto deletion = [](const json::object& p) {
    return Cat(MetaString(p, "deletionTimestamp"), "/",
                        IntAt(*ObjectAt(p, "metadata"), "deletionGracePeriodSeconds").value_or(-1));
  };
  auto annotations = [](const json::object& p) -> json::value {
    const json::object* meta = ObjectAt(p, "metadata");
    const json::value* a = meta == nullptr ? nullptr : meta->if_contains("annotations");
    return a == nullptr ? json::value() : *a;
  };
  const bool changed = (ObjectAt(pod, "metadata") != nullptr && ObjectAt(pod_, "metadata") != nullptr &&
                        deletion(pod) != deletion(pod_)) ||
                       annotations(pod) != annotations(pod_);
  pod_ = std::move(pod);
  if (!MetaString(pod_, "deletionTimestamp").empty()) deleting_ = true;
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

absl::StatusOr<json::object> PodWorker::ConfigMap(const std::string& name, bool optional) {
  absl::StatusOr<json::object> cm = hooks_.get_config_map
                                        ? hooks_.get_config_map(ns_, name)
                                        : absl::NotFoundError("no ConfigMaps");
  if (cm.ok()) return cm;
  if (absl::IsNotFound(cm.status())) {
    if (optional) return json::object();
    return absl::NotFoundError(Cat("configmap \"", name, "\" not found"));
  }
  return absl::UnavailableError(
      Cat("getting configmap \"", name, "\": ", std::string(cm.status().message())));
}

absl::StatusOr<ContainerLaunch> PodWorker::BuildLaunch(Container& c, SyncResult& result) {
  ContainerLaunch launch;
  launch.description = Cat(ns_, "/", name_, "/", c.name);
  if (node_.config().runtime == RuntimeKind::kProcess) return BuildProcessLaunch(c, result);
  if (c.init) {
    launch.run_seconds = 0;
    return launch;
  }
  const std::string run = Annotation(pod_, kRunSecondsAnnotation);
  const std::string code = Annotation(pod_, kExitCodeAnnotation);
  if (!run.empty() && (!absl::SimpleAtod(run, &launch.run_seconds) || !(launch.run_seconds >= 0))) {
    c.waiting_reason = "CreateContainerConfigError";
    return absl::InvalidArgumentError(Cat("annotation ", kRunSecondsAnnotation, ": \"",
                                                   run, "\" is not a number of seconds"));
  }
  if (run.empty()) launch.run_seconds = -1;
  if (!code.empty() && (!absl::SimpleAtoi(code, &launch.exit_code) || launch.exit_code < 0 ||
                        launch.exit_code > 255)) {
    c.waiting_reason = "CreateContainerConfigError";
    return absl::InvalidArgumentError(Cat("annotation ", kExitCodeAnnotation, ": \"",
                                                   code, "\" is not an exit code (0 to 255)"));
  }
  if (c.resume_seconds) {
    launch.run_seconds = *c.resume_seconds;
  }
  return launch;
}

absl::StatusOr<ContainerLaunch> PodWorker::BuildProcessLaunch(Container& c, SyncResult& result) {
  ContainerLaunch launch;
  launch.description = Cat(ns_, "/", name_, "/", c.name);
  const std::vector<std::string> command = Strings(c.spec, "command");
  const std::vector<std::string> args = Strings(c.spec, "args");
  if (command.empty()) {
    // Not a setup problem that time could fix: the start fails (StartError).
    return absl::FailedPreconditionError(Cat(
        "container \"", c.name, "\" has no command: the process runtime runs a container's "
        "command and args on this machine and does not run images (image \"",
        c.image, "\")"));
  }
  const fs::path pod_dir = fs::path(options_.data_dir) / "pods" / ns_ / name_;
  const fs::path work_dir = pod_dir / c.name;
  const fs::path root = work_dir / "rootfs";

  // Volumes: materialized under <pod dir>/volumes/<volume> and linked at $MUSTER_ROOT<mountPath>.
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return absl::InternalError(Cat("creating ", root.string(), ": ", ec.message()));
  const json::object* spec = ObjectAt(pod_, "spec");
  const json::array* volumes = spec == nullptr ? nullptr : ArrayAt(*spec, "volumes");
  if (const json::array* mounts = ArrayAt(c.spec, "volumeMounts")) {
    for (const json::value& mv : *mounts) {
      if (!mv.is_object()) continue;
      const json::object& mount = mv.get_object();
      const std::string vname = StringAt(mount, "name");
      const std::string mount_path = StringAt(mount, "mountPath");
      const std::string sub_path = StringAt(mount, "subPath");
      auto mount_error = [&](const std::string& why) {
        c.waiting_reason = "ContainerCreating";
        return absl::UnavailableError(
            Cat("MountVolume.SetUp failed for volume \"", vname, "\" : ", why));
      };
      if (!SafeContainerPath(mount_path, true) || !SafeContainerPath(sub_path, false)) {
        return mount_error(Cat("mount path \"", mount_path, "\" or subPath \"", sub_path,
                                        "\" is not a plain absolute path"));
      }
      const json::object* volume = nullptr;
      if (volumes != nullptr) {
        for (const json::value& v : *volumes) {
          if (v.is_object() && StringAt(v.get_object(), "name") == vname) volume = &v.get_object();
        }
      }
      if (volume == nullptr) return mount_error("no volume of that name in the pod");
      fs::path source;
      if (const json::object* cmv = ObjectAt(*volume, "configMap")) {
        const std::string cm_name = StringAt(*cmv, "name");
        const bool optional = cmv->contains("optional") && cmv->at("optional").is_bool() &&
                              cmv->at("optional").get_bool();
        absl::StatusOr<json::object> cm = ConfigMap(cm_name, optional);
        if (!cm.ok()) return mount_error(std::string(cm.status().message()));
        source = pod_dir / "volumes" / vname;
        fs::remove_all(source, ec);
        fs::create_directories(source, ec);
        std::map<std::string, std::string> files;  // key -> content
        if (const json::object* data = ObjectAt(*cm, "data")) {
          for (const auto& [k, v] : *data) {
            if (v.is_string()) files[std::string(k)] = std::string(v.get_string());
          }
        }
        if (const json::object* binary = ObjectAt(*cm, "binaryData")) {
          for (const auto& [k, v] : *binary) {
            std::string decoded;
            if (v.is_string() && absl::Base64Unescape(std::string(v.get_string()), &decoded)) {
              files[std::string(k)] = decoded;
            }
          }
        }
        std::vector<std::pair<std::string, std::string>> wanted;  // path -> key
        if (const json::array* items = ArrayAt(*cmv, "items"); items != nullptr && !items->empty()) {
          for (const json::value& iv : *items) {
            if (!iv.is_object()) continue;
            wanted.emplace_back(StringAt(iv.get_object(), "path"), StringAt(iv.get_object(), "key"));
          }
        } else {
          for (const auto& [k, v] : files) wanted.emplace_back(k, k);
        }
        for (const auto& [path, key] : wanted) {
          auto it = files.find(key);
          if (it == files.end()) {
            if (optional) continue;
            return mount_error(Cat("configmap references non-existent config key: ", key));
          }
          if (!SafeContainerPath(path, false) || path.empty() || path.front() == '/') {
            return mount_error(Cat("item path \"", path, "\" is not a relative path"));
          }
          if (absl::Status s = WriteFile(source / path, it->second); !s.ok()) {
            return mount_error(std::string(s.message()));
          }
        }
      } else if (volume->contains("emptyDir")) {
        source = pod_dir / "volumes" / vname;
        fs::create_directories(source, ec);
      } else if (const json::object* host = ObjectAt(*volume, "hostPath")) {
        source = StringAt(*host, "path");
      } else {
        return mount_error(
            "the process runtime provides configMap, emptyDir and hostPath volumes only");
      }
      if (!sub_path.empty()) source /= sub_path;
      const fs::path link = root / mount_path.substr(1);
      fs::create_directories(link.parent_path(), ec);
      fs::remove(link, ec);
      fs::create_symlink(source, link, ec);
      if (ec) return mount_error(Cat("linking ", link.string(), ": ", ec.message()));
    }
  }

  // Environment: this agent's own, then what a container is told about itself, then the pod's
  // env (envFrom first, env after, $(VAR) expanded), then the GPUs it was given.
  Environment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    env.Set(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  std::map<std::string, std::string> defined;  // what $(VAR) may refer to
  auto define = [&](const std::string& k, std::string v) {
    defined[k] = v;
    env.Set(k, std::move(v));
  };
  const std::string hostname = spec == nullptr || StringAt(*spec, "hostname").empty()
                                   ? name_
                                   : StringAt(*spec, "hostname");
  define("HOSTNAME", hostname);
  define("MUSTER_ROOT", root.string());
  auto config_error = [&](const std::string& why) {
    c.waiting_reason = "CreateContainerConfigError";
    return absl::UnavailableError(why);
  };
  if (const json::array* from = ArrayAt(c.spec, "envFrom")) {
    for (const json::value& fv : *from) {
      if (!fv.is_object()) continue;
      const json::object& source = fv.get_object();
      const std::string prefix = StringAt(source, "prefix");
      if (const json::object* ref = ObjectAt(source, "configMapRef")) {
        const bool optional = ref->contains("optional") && ref->at("optional").is_bool() &&
                              ref->at("optional").get_bool();
        absl::StatusOr<json::object> cm = ConfigMap(StringAt(*ref, "name"), optional);
        if (!cm.ok()) return config_error(std::string(cm.status().message()));
        if (const json::object* data = ObjectAt(*cm, "data")) {
          for (const auto& [k, v] : *data) {
            if (v.is_string()) define(Cat(prefix, std::string(k)), std::string(v.get_string()));
          }
        }
      } else if (const json::object* secret = ObjectAt(source, "secretRef")) {
        const bool optional = secret->contains("optional") && secret->at("optional").is_bool() &&
                              secret->at("optional").get_bool();
        if (!optional) {
          return config_error(Cat("secret \"", StringAt(*secret, "name"),
                                           "\" not found (muster serves no Secrets)"));
        }
      }
    }
  }
  if (const json::array* vars = ArrayAt(c.spec, "env")) {
    for (const json::value& ev : *vars) {
      if (!ev.is_object()) continue;
      const json::object& var = ev.get_object();
      const std::string vname = StringAt(var, "name");
      if (vname.empty()) continue;
      const json::object* from = ObjectAt(var, "valueFrom");
      if (from == nullptr) {
        define(vname, Expand(StringAt(var, "value"), defined));
        continue;
      }
      if (const json::object* field = ObjectAt(*from, "fieldRef")) {
        const std::string path = StringAt(*field, "fieldPath");
        std::string value;
        auto bracketed = [&](std::string_view prefix) -> std::optional<std::string> {
          // metadata.labels['key']
          if (path.rfind(prefix, 0) != 0 || path.size() < prefix.size() + 4) return std::nullopt;
          std::string_view rest = std::string_view(path).substr(prefix.size());
          if (rest.substr(0, 2) != "['" || rest.substr(rest.size() - 2) != "']") return std::nullopt;
          return std::string(rest.substr(2, rest.size() - 4));
        };
        if (path == "metadata.name") {
          value = name_;
        } else if (path == "metadata.namespace") {
          value = ns_;
        } else if (path == "metadata.uid") {
          value = uid_;
        } else if (auto key = bracketed("metadata.labels")) {
          value = LabelOrAnnotation(pod_, "labels", *key);
        } else if (auto akey = bracketed("metadata.annotations")) {
          value = LabelOrAnnotation(pod_, "annotations", *akey);
        } else if (path == "spec.nodeName") {
          value = node_.config().name;
        } else if (path == "spec.serviceAccountName") {
          value = spec == nullptr ? "" : StringAt(*spec, "serviceAccountName");
        } else if (path == "status.hostIP" || path == "status.hostIPs") {
          value = node_.config().internal_ip;
        } else if (path == "status.podIP" || path == "status.podIPs") {
          value = pod_ip_;
        } else {
          return config_error(Cat("env ", vname, ": fieldRef \"", path,
                                           "\" is not one the node agent provides"));
        }
        define(vname, value);
      } else if (const json::object* res = ObjectAt(*from, "resourceFieldRef")) {
        const std::string resource = StringAt(*res, "resource");
        std::string target = StringAt(*res, "containerName");
        const json::object* owner = &c.spec;
        if (!target.empty() && target != c.name) {
          owner = nullptr;
          for (const auto* list : {&init_, &app_}) {
            for (const auto& other : *list) {
              if (other->name == target) owner = &other->spec;
            }
          }
          if (owner == nullptr) {
            return config_error(Cat("env ", vname, ": no container \"", target, "\""));
          }
        }
        size_t dot = resource.find('.');
        const std::string kind = resource.substr(0, dot);
        const std::string rname = dot == std::string::npos ? "" : resource.substr(dot + 1);
        if ((kind != "limits" && kind != "requests") || rname.empty()) {
          return config_error(Cat("env ", vname, ": resourceFieldRef \"", resource,
                                           "\" is not limits.<name> or requests.<name>"));
        }
        std::optional<Quantity> q = ResourceOf(*owner, kind, rname);
        if (!q && kind == "limits") {
          auto it = node_.config().allocatable.find(rname);
          if (it != node_.config().allocatable.end()) q = it->second;
        }
        Quantity divisor = Quantity::FromUnits(1);
        if (const json::value* d = res->if_contains("divisor"); d != nullptr && d->is_string()) {
          absl::StatusOr<Quantity> parsed = Quantity::Parse(std::string(d->get_string()));
          if (parsed.ok() && parsed->MilliValue() > 0) divisor = *parsed;
        }
        const int64_t milli = q ? q->MilliValue() : 0;
        const int64_t value = (milli + divisor.MilliValue() - 1) / divisor.MilliValue();
        define(vname, std::to_string(value));
      } else if (const json::object* key_ref = ObjectAt(*from, "configMapKeyRef")) {
        const bool optional = key_ref->contains("optional") && key_ref->at("optional").is_bool() &&
                              key_ref->at("optional").get_bool();
        const std::string cm_name = StringAt(*key_ref, "name");
        absl::StatusOr<json::object> cm = ConfigMap(cm_name, optional);
        if (!cm.ok()) return config_error(std::string(cm.status().message()));
        const json::object* data = ObjectAt(*cm, "data");
        const std::string key = StringAt(*key_ref, "key");
        if (data == nullptr || !data->contains(key) || !data->at(key).is_string()) {
          if (optional) continue;
          return config_error(
              Cat("couldn't find key ", key, " in ConfigMap ", ns_, "/", cm_name));
        }
        define(vname, std::string(data->at(key).get_string()));
      } else if (const json::object* secret = ObjectAt(*from, "secretKeyRef")) {
        const bool optional = secret->contains("optional") && secret->at("optional").is_bool() &&
                              secret->at("optional").get_bool();
        if (optional) continue;
        return config_error(Cat("secret \"", StringAt(*secret, "name"),
                                         "\" not found (muster serves no Secrets)"));
      }
    }
  }
  // Replicas of one GPU name it once, as NVIDIA's device plugin's Allocate collapses them.
  std::vector<std::string> visible, cuda;
  for (const NodeDevice* d : c.devices) {
    if (std::find(visible.begin(), visible.end(), d->visible) == visible.end()) {
      visible.push_back(d->visible);
    }
    if (std::find(cuda.begin(), cuda.end(), d->cuda) == cuda.end()) cuda.push_back(d->cuda);
  }
  define("NVIDIA_VISIBLE_DEVICES", visible.empty() ? "void" : absl::StrJoin(visible, ","));
  define("CUDA_VISIBLE_DEVICES", absl::StrJoin(cuda, ","));

  for (const std::string& s : command) launch.argv.push_back(Expand(s, defined));
  for (const std::string& s : args) launch.argv.push_back(Expand(s, defined));
  launch.env = env.Entries();
  launch.working_dir = work_dir.string();
  if (const std::string wd = StringAt(c.spec, "workingDir"); !wd.empty() && wd.front() == '/') {
    if (fs::is_directory(wd, ec)) launch.working_dir = wd;
  }
  launch.log_path = (fs::path(options_.data_dir) / "logs" / ns_ / name_ / (c.name + ".log")).string();
  launch.truncate_log = !c.ever_started && c.restart_count == 0;
  (void)result;
  return launch;
}

void PodWorker::StartContainer(Container& c, SyncResult& result) {
  const auto now = Clock::now();
  absl::StatusOr<ContainerLaunch> launch = BuildLaunch(c, result);
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
  if (launch.ok()) launch->log_run_id = c.container_id;
  absl::StatusOr<ContainerId> id =
      launch.ok() ? runtime_.Start(*launch, hooks_.on_exit) : absl::StatusOr<ContainerId>(launch.status());
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
  const json::object* meta = ObjectAt(pod_, "metadata");
  const json::object* spec = ObjectAt(pod_, "spec");
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

PodWorker::SyncResult PodWorker::Sync() {
  SyncResult result;
  const auto now = Clock::now();
  auto wake = [&](Clock::time_point t) {
    if (!result.wake_at || t < *result.wake_at) result.wake_at = t;
  };
  if (frozen_status_) {
    result.confirm_deletion = deleting_ && !orphaned_;
    return result;
  }
  if (start_time_.empty()) start_time_ = api::FormatTime(std::chrono::system_clock::now());
  if (pod_ip_.empty()) pod_ip_ = node_.NextPodIp();

  if (deleting()) {
    KillAll(result);
    result.confirm_deletion = !orphaned_ && running_containers() == 0;
    return result;
  }
  if (terminal_) return result;

  if (!admitted_) {
    std::optional<std::vector<int>> named = api::ParseGpuIndices(Annotation(pod_, api::kGpuIndicesAnnotation));
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
                         Annotation(pod_, api::kGpuIndicesAnnotation),
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
      return result;
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
  }

  auto advance = [&](Container& c) {
    if (c.state == Container::State::kRunning) return;
    if (c.state == Container::State::kTerminated) {
      if (!c.restart_pending) return;
      if (now < c.restart_at) {
        wake(c.restart_at);
        if (!c.backoff_event_sent) {
          c.backoff_event_sent = true;
          result.events.push_back({"Warning", "BackOff",
                                   Cat("Back-off restarting failed container ", c.name,
                                                " in pod ", PodRef(ns_, name_, uid_))});
        }
        return;
      }
    } else if (now < c.setup_retry_at) {
      wake(c.setup_retry_at);
      return;
    }
    StartContainer(c, result);
    if (c.state == Container::State::kTerminated && c.restart_pending) wake(c.restart_at);
    if (c.state == Container::State::kWaiting) wake(c.setup_retry_at);
  };

  bool initialized = true;
  for (auto& c : init_) {
    if (c->state == Container::State::kTerminated && !c->restart_pending && c->exit_code == 0) {
      continue;
    }
    initialized = false;
    if (c->state == Container::State::kTerminated && !c->restart_pending) break;  // failed
    advance(*c);
    if (c->state == Container::State::kTerminated && !c->restart_pending && c->exit_code == 0) {
      initialized = true;  // ended at once (simulated init containers); look at the next
      continue;
    }
    break;
  }
  if (initialized) {
    for (auto& c : init_) {
      if (!(c->state == Container::State::kTerminated && !c->restart_pending && c->exit_code == 0)) {
        initialized = false;
      }
    }
  }
  if (initialized) {
    for (auto& c : app_) {
      if (c->state == Container::State::kWaiting && c->waiting_reason == "PodInitializing") {
        c->waiting_reason = "ContainerCreating";
      }
      advance(*c);
    }
  }

  phase_ = ComputePhase();
  if (phase_ == "Succeeded" || phase_ == "Failed") {
    terminal_ = true;
    node_.Release(uid_);
  }

  // Conditions.
  std::vector<std::string> incomplete, unready;
  for (const auto& c : init_) {
    if (!(c->state == Container::State::kTerminated && !c->restart_pending && c->exit_code == 0)) {
      incomplete.push_back(c->name);
    }
  }
  for (const auto& c : app_) {
    if (c->state != Container::State::kRunning) unready.push_back(c->name);
  }
  const bool succeeded = phase_ == "Succeeded";
  if (incomplete.empty()) {
    SetCondition("Initialized", true, succeeded ? "PodCompleted" : "", "");
  } else {
    SetCondition("Initialized", false, "ContainersNotInitialized",
                 Cat("containers with incomplete status: [", absl::StrJoin(incomplete, " "),
                              "]"));
  }
  for (const char* type : {"Ready", "ContainersReady"}) {
    if (succeeded) {
      SetCondition(type, false, "PodCompleted", "");
    } else if (unready.empty()) {
      SetCondition(type, true, "", "");
    } else {
      SetCondition(type, false, "ContainersNotReady",
                   Cat(kUnreadyPrefix, absl::StrJoin(unready, " "), "]"));
    }
  }
  return result;
}

std::string PodWorker::ComputePhase() const {
  if (!reason_.empty()) return "Failed";
  for (const auto& c : init_) {
    if (c->state == Container::State::kTerminated && !c->restart_pending && c->exit_code == 0) {
      continue;
    }
    if (c->state == Container::State::kTerminated && !c->restart_pending) return "Failed";
    return "Pending";
  }
  int running = 0, waiting = 0, stopped = 0, succeeded = 0;
  for (const auto& c : app_) {
    switch (c->state) {
      case Container::State::kRunning:
        ++running;
        break;
      case Container::State::kTerminated:
        ++stopped;
        if (!c->restart_pending && c->exit_code == 0) ++succeeded;
        break;
      case Container::State::kWaiting:
        ++waiting;
        break;
    }
  }
  if (waiting > 0) return "Pending";
  if (running > 0) return "Running";
  if (stopped > 0) {
    if (restart_policy_ == "Always") return "Running";
    if (stopped == succeeded) return "Succeeded";
    if (restart_policy_ == "Never") return "Failed";
    return "Running";
  }
  return "Pending";
}

void PodWorker::SetCondition(const std::string& type, bool status, const std::string& reason,
                             const std::string& message) {
  ConditionState& c = conditions_[type];
  if (c.time.empty() || c.status != status) {
    c.time = api::FormatTime(std::chrono::system_clock::now());
  }
  c.status = status;
  c.reason = reason;
  c.message = message;
}

json::object PodWorker::Status() const {
  if (frozen_status_) return *frozen_status_;
  json::object status;
  status["phase"] = phase_;
  json::array conditions;
  for (const char* type : {"Initialized", "Ready", "ContainersReady"}) {
    auto it = conditions_.find(type);
    if (it == conditions_.end()) continue;
    json::object c;
    c["type"] = type;
    c["status"] = it->second.status ? "True" : "False";
    c["lastProbeTime"] = nullptr;
    c["lastTransitionTime"] = it->second.time;
    if (!it->second.reason.empty()) c["reason"] = it->second.reason;
    if (!it->second.message.empty()) c["message"] = it->second.message;
    conditions.push_back(std::move(c));
  }
  if (const json::object* live = ObjectAt(pod_, "status")) {
    if (const json::array* kept = ArrayAt(*live, "conditions")) {
      for (const json::value& v : *kept) {
        if (!v.is_object()) continue;
        const std::string type = StringAt(v.get_object(), "type");
        if (type == "Initialized" || type == "Ready" || type == "ContainersReady") continue;
        conditions.push_back(v);
      }
    }
  }
  status["conditions"] = std::move(conditions);
  const std::string& host_ip = node_.config().internal_ip;
  status["hostIP"] = host_ip;
  status["hostIPs"] = json::array{json::object{{"ip", host_ip}}};
  if (!pod_ip_.empty()) {
    status["podIP"] = pod_ip_;
    status["podIPs"] = json::array{json::object{{"ip", pod_ip_}}};
  }
  if (!start_time_.empty()) status["startTime"] = start_time_;
  if (!reason_.empty()) status["reason"] = reason_;
  if (!message_.empty()) status["message"] = message_;

  auto container_status = [&](const Container& c) {
    json::object cs;
    cs["name"] = c.name;
    cs["image"] = c.image;
    cs["imageID"] = "";
    if (!c.container_id.empty() && c.ever_started) cs["containerID"] = c.container_id;
    const bool running = c.state == Container::State::kRunning;
    cs["ready"] = running && !c.init;
    cs["started"] = running;
    cs["restartCount"] = c.restart_count;
    json::object state, last;
    if (running) {
      state["running"] = json::object{{"startedAt", c.started_at}};
    } else if (c.state == Container::State::kTerminated && !c.restart_pending) {
      state["terminated"] = c.Terminated();
    } else if (c.state == Container::State::kTerminated) {
      state["waiting"] = json::object{
          {"reason", "CrashLoopBackOff"},
          {"message", Cat("back-off ", DurationText(c.applied_backoff),
                                   " restarting failed container=", c.name,
                                   " pod=", PodRef(ns_, name_, uid_))}};
    } else {
      json::object w{{"reason", c.waiting_reason}};
      if (!c.waiting_message.empty()) w["message"] = c.waiting_message;
      state["waiting"] = std::move(w);
    }
    if (c.state == Container::State::kTerminated && c.restart_pending) {
      last["terminated"] = c.Terminated();
    } else if (c.last_state) {
      last["terminated"] = *c.last_state;
    }
    cs["state"] = std::move(state);
    cs["lastState"] = std::move(last);
    return cs;
  };
  if (!init_.empty()) {
    json::array list;
    for (const auto& c : init_) list.push_back(container_status(*c));
    status["initContainerStatuses"] = std::move(list);
  }
  json::array list;
  for (const auto& c : app_) list.push_back(container_status(*c));
  status["containerStatuses"] = std::move(list);
  return status;
}

void PodWorker::RemoveFiles() const {
  if (node_.config().runtime != RuntimeKind::kProcess || options_.data_dir.empty()) return;
  std::error_code ec;
  fs::remove_all(fs::path(options_.data_dir) / "pods" / ns_ / name_, ec);
  fs::remove_all(fs::path(options_.data_dir) / "logs" / ns_ / name_, ec);
}

}  // namespace muster::node
