// Building a container's launch from its pod (container_launch.h).
//
// A process container's set-up fails in one of two ways the kubelet tells apart in the waiting
// reason: its volumes (ContainerCreating, with a FailedMount event) or its environment
// (CreateContainerConfigError). Each step below reports a plain error; BuildProcessLaunch names
// the step.

#include "node/container_launch.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "node/json_access.h"
#include "node/pod_spec.h"
#include "node/pod_worker.h"  // the simulated runtime's annotations

extern char** environ;  // NOLINT

namespace muster::node {

namespace json = boost::json;
namespace fs = std::filesystem;
using common::Quantity;

namespace {

// A process container's environment, in order, where a later definition replaces an earlier one
// in place. Only what the pod defines may be referred to as $(VAR), not the agent's own.
class LaunchEnvironment {
 public:
  void Inherit(std::string name, std::string value) { Set(std::move(name), std::move(value)); }
  void Define(const std::string& name, std::string value) {
    defined_[name] = value;
    Set(name, std::move(value));
  }
  [[nodiscard]] std::string Expand(std::string_view in) const {
    return ExpandVariableRefs(in, defined_);
  }
  [[nodiscard]] std::vector<std::string> Entries() const {
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const auto& [k, v] : entries_) out.push_back(Cat(k, "=", v));
    return out;
  }

 private:
  void Set(std::string name, std::string value) {
    auto [it, inserted] = index_.emplace(name, entries_.size());
    if (inserted) {
      entries_.emplace_back(std::move(name), std::move(value));
    } else {
      entries_[it->second].second = std::move(value);
    }
  }

  std::vector<std::pair<std::string, std::string>> entries_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> defined_;
};

std::vector<std::string> Strings(const json::object& o, std::string_view key) {
  std::vector<std::string> out;
  if (const json::array* a = ArrayAt(o, key)) {
    for (const json::value& v : *a) {
      if (v.is_string()) out.emplace_back(v.get_string());
    }
  }
  return out;
}

// `optional: true` of a ConfigMap or Secret reference.
bool IsOptional(const json::object& ref) {
  const json::value* v = ref.if_contains("optional");
  return v != nullptr && v->is_bool() && v->get_bool();
}

// A container path: absolute, and not climbing out with "..".
bool IsPlainAbsolutePath(std::string_view path) {
  return !path.empty() && path.front() == '/' && !ClimbsOut(path);
}

absl::Status WriteFile(const fs::path& path, std::string_view content) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return absl::InternalError(Cat("creating ", path.parent_path().string(), ": ", ec.message()));
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  if (!out) return absl::InternalError(Cat("writing ", path.string()));
  return absl::OkStatus();
}

// What a pod reads keys from: a ConfigMap, or a Secret (whose data is base64).
struct KeyedKind {
  std::string_view resource;  // "configmaps" or "secrets"
  std::string_view lower;     // as the kubelet's messages name it: "configmap", "secret"
  std::string_view kind;      // "ConfigMap", "Secret"
};
constexpr KeyedKind kConfigMap{"configmaps", "configmap", "ConfigMap"};
constexpr KeyedKind kSecret{"secrets", "secret", "Secret"};

// The ConfigMap or Secret `name` of the pod's namespace; an optional one that is missing reads as
// empty.
absl::StatusOr<json::object> GetKeyed(const LaunchContext& context, const KeyedKind& kind,
                                      const std::string& name, bool optional) {
  absl::StatusOr<json::object> got = context.get_object
                                         ? context.get_object(kind.resource, context.ns, name)
                                         : absl::NotFoundError("none served");
  if (got.ok()) return got;
  if (absl::IsNotFound(got.status())) {
    if (optional) return json::object();
    return absl::NotFoundError(Cat(kind.lower, " \"", name, "\" not found"));
  }
  return absl::UnavailableError(
      Cat("getting ", kind.lower, " \"", name, "\": ", std::string(got.status().message())));
}

// The keys and their contents: a ConfigMap's data as written and binaryData decoded, a Secret's
// data decoded.
std::map<std::string, std::string> KeyedFiles(const json::object& object, const KeyedKind& kind) {
  std::map<std::string, std::string> files;
  auto add = [&](std::string_view field, bool base64) {
    const json::object* data = ObjectAt(object, field);
    if (data == nullptr) return;
    for (const auto& [k, v] : *data) {
      if (!v.is_string()) continue;
      std::string content(v.get_string());
      if (base64) {
        std::string decoded;
        if (!absl::Base64Unescape(content, &decoded)) continue;
        content = std::move(decoded);
      }
      files[std::string(k)] = std::move(content);
    }
  };
  const bool secret = kind.resource == kSecret.resource;
  add("data", secret);
  if (!secret) add("binaryData", true);
  return files;
}

// Writes a configMap or secret volume's files (its items, or every key) into `dir`, afresh.
absl::Status WriteKeyedVolume(const LaunchContext& context, const json::object& volume,
                              const KeyedKind& kind, const fs::path& dir) {
  const bool optional = IsOptional(volume);
  const std::string name =
      StringAt(volume, kind.resource == kSecret.resource ? "secretName" : "name");
  absl::StatusOr<json::object> object = GetKeyed(context, kind, name, optional);
  if (!object.ok()) return absl::UnavailableError(object.status().message());
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  const std::map<std::string, std::string> files = KeyedFiles(*object, kind);
  // Modes as the kubelet sets them: the item's mode, else defaultMode, else 0644.
  const int64_t default_mode = IntAt(volume, "defaultMode").value_or(0644);
  std::vector<std::tuple<std::string, std::string, int64_t>> wanted;  // path, key, mode
  if (const json::array* items = ArrayAt(volume, "items"); items != nullptr && !items->empty()) {
    for (const json::value& iv : *items) {
      if (!iv.is_object()) continue;
      const json::object& item = iv.get_object();
      wanted.emplace_back(StringAt(item, "path"), StringAt(item, "key"),
                          IntAt(item, "mode").value_or(default_mode));
    }
  } else {
    for (const auto& [k, v] : files) wanted.emplace_back(k, k, default_mode);
  }
  for (const auto& [path, key, mode] : wanted) {
    auto it = files.find(key);
    if (it == files.end()) {
      if (optional) continue;
      return absl::UnavailableError(
          kind.resource == kSecret.resource
              ? Cat("references non-existent secret key: ", key)
              : Cat("configmap references non-existent config key: ", key));
    }
    if (ClimbsOut(path) || path.empty() || path.front() == '/') {
      return absl::UnavailableError(Cat("item path \"", path, "\" is not a relative path"));
    }
    if (absl::Status s = WriteFile(dir / path, it->second); !s.ok()) return s;
    fs::permissions(dir / path, static_cast<fs::perms>(mode & 0777), ec);
  }
  return absl::OkStatus();
}

// The pod's volume `name` (the last of that name); nullptr when there is none.
const json::object* FindVolume(const json::object& pod, const std::string& name) {
  const json::object* spec = ObjectAt(pod, "spec");
  const json::array* volumes = spec == nullptr ? nullptr : ArrayAt(*spec, "volumes");
  const json::object* found = nullptr;
  if (volumes == nullptr) return found;
  for (const json::value& v : *volumes) {
    if (v.is_object() && StringAt(v.get_object(), "name") == name) found = &v.get_object();
  }
  return found;
}

// Where volume `name` lives on this machine, materialised under <pod dir>/volumes/<name>.
absl::StatusOr<fs::path> MaterializeVolume(const LaunchContext& context, const std::string& name,
                                           const fs::path& pod_dir) {
  const json::object* volume = FindVolume(context.pod, name);
  if (volume == nullptr) return absl::UnavailableError("no volume of that name in the pod");
  std::error_code ec;
  if (const json::object* cm = ObjectAt(*volume, "configMap")) {
    const fs::path dir = pod_dir / "volumes" / name;
    if (absl::Status s = WriteKeyedVolume(context, *cm, kConfigMap, dir); !s.ok()) return s;
    return dir;
  }
  if (const json::object* secret = ObjectAt(*volume, "secret")) {
    const fs::path dir = pod_dir / "volumes" / name;
    if (absl::Status s = WriteKeyedVolume(context, *secret, kSecret, dir); !s.ok()) return s;
    return dir;
  }
  if (volume->contains("emptyDir")) {
    const fs::path dir = pod_dir / "volumes" / name;
    fs::create_directories(dir, ec);
    return dir;
  }
  if (const json::object* host = ObjectAt(*volume, "hostPath")) {
    return fs::path(StringAt(*host, "path"));
  }
  return absl::UnavailableError(
      "the process runtime provides configMap, secret, emptyDir and hostPath volumes only");
}

// One volumeMount: its volume linked at <root><mountPath>, with the kubelet's message on failure.
absl::Status MountVolume(const LaunchContext& context, const json::object& mount,
                         const fs::path& pod_dir, const fs::path& root) {
  const std::string vname = StringAt(mount, "name");
  const std::string mount_path = StringAt(mount, "mountPath");
  const std::string sub_path = StringAt(mount, "subPath");
  auto mount_error = [&](const std::string& why) {
    return absl::UnavailableError(
        Cat("MountVolume.SetUp failed for volume \"", vname, "\" : ", why));
  };
  if (!IsPlainAbsolutePath(mount_path) || ClimbsOut(sub_path)) {
    return mount_error(Cat("mount path \"", mount_path, "\" or subPath \"", sub_path,
                           "\" is not a plain absolute path"));
  }
  absl::StatusOr<fs::path> source = MaterializeVolume(context, vname, pod_dir);
  if (!source.ok()) return mount_error(std::string(source.status().message()));
  if (!sub_path.empty()) *source /= sub_path;
  const fs::path link = root / mount_path.substr(1);
  std::error_code ec;
  fs::create_directories(link.parent_path(), ec);
  fs::remove(link, ec);
  fs::create_symlink(*source, link, ec);
  if (ec) return mount_error(Cat("linking ", link.string(), ": ", ec.message()));
  return absl::OkStatus();
}

absl::Status MountVolumes(const LaunchContext& context, const json::object& container,
                          const fs::path& pod_dir, const fs::path& root) {
  const json::array* mounts = ArrayAt(container, "volumeMounts");
  if (mounts == nullptr) return absl::OkStatus();
  for (const json::value& mv : *mounts) {
    if (!mv.is_object()) continue;
    if (absl::Status s = MountVolume(context, mv.get_object(), pod_dir, root); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// envFrom: each ConfigMap's or Secret's keys under its prefix.
absl::Status AddEnvFrom(const LaunchContext& context, const json::object& container,
                        LaunchEnvironment& env) {
  const json::array* from = ArrayAt(container, "envFrom");
  if (from == nullptr) return absl::OkStatus();
  for (const json::value& fv : *from) {
    if (!fv.is_object()) continue;
    const json::object& source = fv.get_object();
    const std::string prefix = StringAt(source, "prefix");
    const json::object* ref = ObjectAt(source, "configMapRef");
    const KeyedKind* kind = &kConfigMap;
    if (ref == nullptr) {
      ref = ObjectAt(source, "secretRef");
      kind = &kSecret;
    }
    if (ref == nullptr) continue;
    absl::StatusOr<json::object> object =
        GetKeyed(context, *kind, StringAt(*ref, "name"), IsOptional(*ref));
    if (!object.ok()) return absl::UnavailableError(object.status().message());
    // A ConfigMap's binaryData is not for the environment (the kubelet reads data alone).
    json::object data_only;
    if (const json::value* data = object->if_contains("data")) data_only["data"] = *data;
    for (const auto& [k, v] : KeyedFiles(data_only, *kind)) env.Define(Cat(prefix, k), v);
  }
  return absl::OkStatus();
}

// KEY of a fieldPath "<prefix>['KEY']" (metadata.labels['app']); nullopt for any other path.
std::optional<std::string> BracketedKey(const std::string& path, std::string_view prefix) {
  if (path.rfind(prefix, 0) != 0 || path.size() < prefix.size() + 4) return std::nullopt;
  std::string_view rest = std::string_view(path).substr(prefix.size());
  if (rest.substr(0, 2) != "['" || rest.substr(rest.size() - 2) != "']") return std::nullopt;
  return std::string(rest.substr(2, rest.size() - 4));
}

// The downward API's env valueFrom.fieldRef.
absl::StatusOr<std::string> FieldRefValue(const LaunchContext& context, const std::string& var,
                                          const json::object& field) {
  const std::string path = StringAt(field, "fieldPath");
  const json::object* spec = ObjectAt(context.pod, "spec");
  if (path == "metadata.name") return context.name;
  if (path == "metadata.namespace") return context.ns;
  if (path == "metadata.uid") return context.uid;
  if (auto key = BracketedKey(path, "metadata.labels")) {
    return LabelOrAnnotation(context.pod, "labels", *key);
  }
  if (auto key = BracketedKey(path, "metadata.annotations")) {
    return LabelOrAnnotation(context.pod, "annotations", *key);
  }
  if (path == "spec.nodeName") return context.node.name;
  if (path == "spec.serviceAccountName") {
    return spec == nullptr ? "" : StringAt(*spec, "serviceAccountName");
  }
  if (path == "status.hostIP" || path == "status.hostIPs") return context.node.internal_ip;
  if (path == "status.podIP" || path == "status.podIPs") return context.pod_ip;
  return absl::UnavailableError(
      Cat("env ", var, ": fieldRef \"", path, "\" is not one the node agent provides"));
}

// The downward API's env valueFrom.resourceFieldRef: a container's request or limit (a limit left
// out is the node's allocatable), divided by the divisor and rounded up.
absl::StatusOr<std::string> ResourceFieldRefValue(const LaunchContext& context,
                                                  const json::object& container,
                                                  const std::string& var, const json::object& ref) {
  const std::string resource = StringAt(ref, "resource");
  const std::string target = StringAt(ref, "containerName");
  const json::object* owner = &container;
  if (!target.empty() && target != StringAt(container, "name")) {
    owner = nullptr;
    for (const json::object* other : context.containers) {
      if (StringAt(*other, "name") == target) owner = other;
    }
    if (owner == nullptr) {
      return absl::UnavailableError(Cat("env ", var, ": no container \"", target, "\""));
    }
  }
  size_t dot = resource.find('.');
  const std::string kind = resource.substr(0, dot);
  const std::string rname = dot == std::string::npos ? "" : resource.substr(dot + 1);
  if ((kind != "limits" && kind != "requests") || rname.empty()) {
    return absl::UnavailableError(Cat("env ", var, ": resourceFieldRef \"", resource,
                                      "\" is not limits.<name> or requests.<name>"));
  }
  std::optional<Quantity> q = ResourceOf(*owner, kind, rname);
  if (!q && kind == "limits") {
    auto it = context.node.allocatable.find(rname);
    if (it != context.node.allocatable.end()) q = it->second;
  }
  Quantity divisor = Quantity::FromUnits(1);
  if (const json::value* d = ref.if_contains("divisor"); d != nullptr && d->is_string()) {
    absl::StatusOr<Quantity> parsed = Quantity::Parse(std::string(d->get_string()));
    if (parsed.ok() && parsed->MilliValue() > 0) divisor = *parsed;
  }
  const int64_t milli = q ? q->MilliValue() : 0;
  return std::to_string((milli + divisor.MilliValue() - 1) / divisor.MilliValue());
}

// The value of one env entry; nullopt when it defines nothing (an optional key that is missing).
absl::StatusOr<std::optional<std::string>> EnvValue(const LaunchContext& context,
                                                    const json::object& container,
                                                    const json::object& var,
                                                    const LaunchEnvironment& env) {
  const std::string name = StringAt(var, "name");
  const json::object* from = ObjectAt(var, "valueFrom");
  if (from == nullptr) return env.Expand(StringAt(var, "value"));
  if (const json::object* field = ObjectAt(*from, "fieldRef")) {
    return FieldRefValue(context, name, *field);
  }
  if (const json::object* res = ObjectAt(*from, "resourceFieldRef")) {
    return ResourceFieldRefValue(context, container, name, *res);
  }
  const json::object* key_ref = ObjectAt(*from, "configMapKeyRef");
  const KeyedKind* kind = &kConfigMap;
  if (key_ref == nullptr) {
    key_ref = ObjectAt(*from, "secretKeyRef");
    kind = &kSecret;
  }
  if (key_ref != nullptr) {
    const bool optional = IsOptional(*key_ref);
    const std::string object_name = StringAt(*key_ref, "name");
    absl::StatusOr<json::object> object = GetKeyed(context, *kind, object_name, optional);
    if (!object.ok()) return absl::UnavailableError(object.status().message());
    json::object data_only;
    if (const json::value* data = object->if_contains("data")) data_only["data"] = *data;
    const std::map<std::string, std::string> values = KeyedFiles(data_only, *kind);
    const std::string key = StringAt(*key_ref, "key");
    auto it = values.find(key);
    if (it == values.end()) {
      if (optional) return std::nullopt;
      return absl::UnavailableError(
          Cat("couldn't find key ", key, " in ", kind->kind, " ", context.ns, "/", object_name));
    }
    return it->second;
  }
  return std::nullopt;
}

absl::Status AddEnv(const LaunchContext& context, const json::object& container,
                    LaunchEnvironment& env) {
  const json::array* vars = ArrayAt(container, "env");
  if (vars == nullptr) return absl::OkStatus();
  for (const json::value& ev : *vars) {
    if (!ev.is_object()) continue;
    const json::object& var = ev.get_object();
    const std::string name = StringAt(var, "name");
    if (name.empty()) continue;
    absl::StatusOr<std::optional<std::string>> value = EnvValue(context, container, var, env);
    if (!value.ok()) return value.status();
    if (*value) env.Define(name, std::move(**value));
  }
  return absl::OkStatus();
}

// Replicas of one GPU name it once, as NVIDIA's device plugin's Allocate collapses them.
void AddDeviceEnv(const std::vector<const NodeDevice*>& devices, LaunchEnvironment& env) {
  std::vector<std::string> visible, cuda;
  for (const NodeDevice* d : devices) {
    if (std::find(visible.begin(), visible.end(), d->visible) == visible.end()) {
      visible.push_back(d->visible);
    }
    if (std::find(cuda.begin(), cuda.end(), d->cuda) == cuda.end()) cuda.push_back(d->cuda);
  }
  env.Define("NVIDIA_VISIBLE_DEVICES", visible.empty() ? "void" : absl::StrJoin(visible, ","));
  env.Define("CUDA_VISIBLE_DEVICES", absl::StrJoin(cuda, ","));
}

// This agent's environment, then what the container is told about itself, then the pod's env
// (envFrom first, env after, $(VAR) expanded), then the devices it was given.
absl::StatusOr<LaunchEnvironment> BuildEnvironment(const LaunchContext& context,
                                                   const ContainerToLaunch& container,
                                                   const fs::path& root) {
  LaunchEnvironment env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    env.Inherit(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
  }
  const json::object* spec = ObjectAt(context.pod, "spec");
  const std::string hostname = spec == nullptr ? "" : StringAt(*spec, "hostname");
  env.Define("HOSTNAME", hostname.empty() ? context.name : hostname);
  env.Define("MUSTER_ROOT", root.string());
  if (absl::Status s = AddEnvFrom(context, container.spec, env); !s.ok()) return s;
  if (absl::Status s = AddEnv(context, container.spec, env); !s.ok()) return s;
  AddDeviceEnv(container.devices, env);
  return env;
}

LaunchResult BuildProcessLaunch(const LaunchContext& context, const ContainerToLaunch& container) {
  const std::string name = StringAt(container.spec, "name");
  ContainerLaunch launch;
  launch.description = Cat(context.ns, "/", context.name, "/", name);
  // Kubernetes runs the image's entrypoint with `args` when there is no `command`; there is no
  // image here, so the args are the whole command line (`kubectl run x --image=y -- sh -c ...`).
  const std::vector<std::string> command = Strings(container.spec, "command");
  const std::vector<std::string> args = Strings(container.spec, "args");
  if (command.empty() && args.empty()) {
    // Not a setup problem that time could fix: the start fails (StartError).
    return {absl::FailedPreconditionError(
        Cat("container \"", name,
            "\" has no command: the process runtime runs a container's "
            "command and args on this machine and does not run images (image \"",
            StringAt(container.spec, "image"), "\")"))};
  }
  const fs::path pod_dir = fs::path(context.data_dir) / "pods" / context.ns / context.name;
  const fs::path work_dir = pod_dir / name;
  const fs::path root = work_dir / "rootfs";
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return {absl::InternalError(Cat("creating ", root.string(), ": ", ec.message()))};
  if (absl::Status s = MountVolumes(context, container.spec, pod_dir, root); !s.ok()) {
    return {s, "ContainerCreating"};
  }
  absl::StatusOr<LaunchEnvironment> env = BuildEnvironment(context, container, root);
  if (!env.ok()) return {env.status(), "CreateContainerConfigError"};

  for (const std::string& s : command) launch.argv.push_back(env->Expand(s));
  for (const std::string& s : args) launch.argv.push_back(env->Expand(s));
  launch.env = env->Entries();
  launch.working_dir = work_dir.string();
  if (const std::string wd = StringAt(container.spec, "workingDir");
      !wd.empty() && wd.front() == '/') {
    if (fs::is_directory(wd, ec)) launch.working_dir = wd;
  }
  launch.log_path =
      (fs::path(context.data_dir) / "logs" / context.ns / context.name / (name + ".log")).string();
  launch.truncate_log = container.first_run;
  auto flag = [&](const char* key) {
    const boost::json::value* v = container.spec.if_contains(key);
    return v != nullptr && v->is_bool() && v->get_bool();
  };
  launch.stdin_pipe = flag("stdin");
  launch.stdin_once = flag("stdinOnce");
  return {std::move(launch)};
}

LaunchResult BuildSimulatedLaunch(const LaunchContext& context,
                                  const ContainerToLaunch& container) {
  ContainerLaunch launch;
  launch.description = Cat(context.ns, "/", context.name, "/", StringAt(container.spec, "name"));
  if (container.init) {
    launch.run_seconds = 0;
    return {std::move(launch)};
  }
  const std::string run = Annotation(context.pod, kRunSecondsAnnotation);
  const std::string code = Annotation(context.pod, kExitCodeAnnotation);
  if (!run.empty() && (!absl::SimpleAtod(run, &launch.run_seconds) || !(launch.run_seconds >= 0))) {
    return {absl::InvalidArgumentError(Cat("annotation ", kRunSecondsAnnotation, ": \"", run,
                                           "\" is not a number of seconds")),
            "CreateContainerConfigError"};
  }
  if (run.empty()) launch.run_seconds = -1;
  if (!code.empty() && (!absl::SimpleAtoi(code, &launch.exit_code) || launch.exit_code < 0 ||
                        launch.exit_code > 255)) {
    return {absl::InvalidArgumentError(Cat("annotation ", kExitCodeAnnotation, ": \"", code,
                                           "\" is not an exit code (0 to 255)")),
            "CreateContainerConfigError"};
  }
  if (container.resume_seconds) launch.run_seconds = *container.resume_seconds;
  return {std::move(launch)};
}

}  // namespace

LaunchResult BuildContainerLaunch(const LaunchContext& context,
                                  const ContainerToLaunch& container) {
  if (context.node.runtime == RuntimeKind::kProcess) return BuildProcessLaunch(context, container);
  return BuildSimulatedLaunch(context, container);
}

std::string ExpandVariableRefs(std::string_view in,
                               const std::map<std::string, std::string>& vars) {
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

bool ClimbsOut(std::string_view path) {
  for (absl::string_view part : absl::StrSplit(std::string(path), '/')) {
    if (part == "..") return true;
  }
  return false;
}

}  // namespace muster::node
