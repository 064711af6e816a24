#include "deviceplugin/config.h"

#include <fstream>
#include <set>
#include <sstream>

#include "absl/time/time.h"
#include "fmt/format.h"
#include "yaml-cpp/yaml.h"

namespace muster::deviceplugin {

std::string_view MigStrategyName(MigStrategy strategy) {
  switch (strategy) {
    case MigStrategy::kNone:
      return "none";
    case MigStrategy::kSingle:
      return "single";
    case MigStrategy::kMixed:
      return "mixed";
  }
  return "none";
}

std::string PluginConfig::DevRoot() const {
  return nvidia_dev_root.empty() ? nvidia_driver_root : nvidia_dev_root;
}

int PluginConfig::ReplicasOf(const std::string& resource) const {
  for (const ReplicatedResource& r : time_slicing.resources) {
    if (r.name == resource) return r.replicas;
  }
  return 1;
}

namespace {

// Value parsers shared by the file and the flags; errors say what is allowed.
absl::StatusOr<MigStrategy> ParseMigStrategy(const std::string& value) {
  if (value == "none") return MigStrategy::kNone;
  if (value == "single") return MigStrategy::kSingle;
  if (value == "mixed") return MigStrategy::kMixed;
  return absl::InvalidArgumentError(
      fmt::format("unknown MIG strategy \"{}\"; use none, single or mixed", value));
}

absl::StatusOr<DeviceIdStrategy> ParseDeviceIdStrategy(const std::string& value) {
  if (value == "uuid") return DeviceIdStrategy::kUuid;
  if (value == "index") return DeviceIdStrategy::kIndex;
  return absl::InvalidArgumentError(
      fmt::format("unknown device ID strategy \"{}\"; use uuid or index", value));
}

absl::StatusOr<SharedAllocationPolicy> ParseSharedPolicy(const std::string& value) {
  if (value == "distributed") return SharedAllocationPolicy::kDistributed;
  if (value == "packed") return SharedAllocationPolicy::kPacked;
  return absl::InvalidArgumentError(fmt::format(
      "unknown shared devices allocation policy \"{}\"; use distributed or packed", value));
}

absl::StatusOr<DeviceListStrategies> ParseDeviceListStrategies(
    const std::vector<std::string>& values) {
  if (values.empty()) {
    return absl::InvalidArgumentError(
        "no device list strategy; use envvar, volume-mounts, cdi-annotations or cdi-cri");
  }
  DeviceListStrategies strategies;
  strategies.envvar = false;
  for (const std::string& value : values) {
    if (value == "envvar") {
      strategies.envvar = true;
    } else if (value == "volume-mounts") {
      strategies.volume_mounts = true;
    } else if (value == "cdi-annotations") {
      strategies.cdi_annotations = true;
    } else if (value == "cdi-cri") {
      strategies.cdi_cri = true;
    } else {
      return absl::InvalidArgumentError(fmt::format(
          "unknown device list strategy \"{}\"; use envvar, volume-mounts, cdi-annotations or "
          "cdi-cri",
          value));
    }
  }
  return strategies;
}

absl::Status CheckSharedResourceName(const std::string& name) {
  if (name == "nvidia.com/gpu") return absl::OkStatus();
  if (name.rfind("nvidia.com/mig-", 0) == 0 && name.size() > 15) return absl::OkStatus();
  return absl::InvalidArgumentError(fmt::format(
      "\"{}\" is not a resource this plugin serves (nvidia.com/gpu or nvidia.com/mig-<profile>)",
      name));
}

// Walks a parsed file, checking keys and types; every error names source:line and the key path.
class FileReader {
 public:
  explicit FileReader(std::string source) : source_(std::move(source)) {}

  absl::Status Error(const YAML::Node& node, const std::string& path,
                     std::string_view message) const {
    if (path.empty()) {  // the document itself
      return absl::InvalidArgumentError(
          fmt::format("{}:{}: the file {}", source_, node.Mark().line + 1, message));
    }
    return absl::InvalidArgumentError(
        fmt::format("{}:{}: {}: {}", source_, node.Mark().line + 1, path, message));
  }

  absl::Status ExpectMap(const YAML::Node& node, const std::string& path) const {
    if (!node.IsMap()) return Error(node, path, "must be a mapping");
    return absl::OkStatus();
  }

  absl::Status CheckKeys(const YAML::Node& node, const std::string& path,
                         const std::set<std::string>& known) const {
    if (auto s = ExpectMap(node, path); !s.ok()) return s;
    for (const auto& entry : node) {
      auto key = entry.first.as<std::string>();
      if (known.count(key) == 0) {
        std::string list;
        for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
        return Error(entry.first, path.empty() ? key : path + "." + key,
                     fmt::format("unknown key; known keys here: {}", list));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> String(const YAML::Node& node, const std::string& path) const {
    if (!node.IsScalar()) return Error(node, path, "must be a string");
    return node.Scalar();
  }

  absl::StatusOr<bool> Bool(const YAML::Node& node, const std::string& path) const {
    bool value = false;
    if (!node.IsScalar() || !YAML::convert<bool>::decode(node, value)) {
      return Error(node, path, "must be true or false");
    }
    return value;
  }

  absl::StatusOr<int> Int(const YAML::Node& node, const std::string& path) const {
    int value = 0;
    if (!node.IsScalar() || !YAML::convert<int>::decode(node, value)) {
      return Error(node, path, "must be an integer");
    }
    return value;
  }

  absl::StatusOr<std::vector<std::string>> StringOrList(const YAML::Node& node,
                                                        const std::string& path) const {
    std::vector<std::string> values;
    if (node.IsScalar()) {
      values.push_back(node.Scalar());
    } else if (node.IsSequence()) {
      for (const auto& item : node) {
        auto value = String(item, path);
        if (!value.ok()) return value.status();
        values.push_back(*value);
      }
    } else {
      return Error(node, path, "must be a string or a list of strings");
    }
    return values;
  }

  // Wraps a value parser's error with the location.
  template <typename T>
  absl::StatusOr<T> Located(const YAML::Node& node, const std::string& path,
                            absl::StatusOr<T> parsed) const {
    if (!parsed.ok()) return Error(node, path, std::string(parsed.status().message()));
    return parsed;
  }

  absl::Status ReadFlags(const YAML::Node& flags, PluginConfig& config) const;
  absl::Status ReadSharing(const YAML::Node& sharing, PluginConfig& config) const;

 private:
  std::string source_;
};

#define MUSTER_ASSIGN(lhs, expr)        \
  {                                     \
    auto _value = (expr);               \
    if (!_value.ok()) return _value.status(); \
    lhs = std::move(*_value);           \
  }

absl::Status FileReader::ReadFlags(const YAML::Node& flags, PluginConfig& config) const {
  if (auto s = CheckKeys(flags, "flags",
                         {"migStrategy", "failOnInitError", "nvidiaDriverRoot", "nvidiaDevRoot",
                          "mpsRoot", "gdrcopyEnabled", "gdsEnabled", "mofedEnabled",
                          "useNodeFeatureAPI", "deviceDiscoveryStrategy", "plugin", "gfd"});
      !s.ok()) {
    return s;
  }
  for (const auto& entry : flags) {
    auto key = entry.first.as<std::string>();
    const YAML::Node& value = entry.second;
    std::string path = "flags." + key;
    if (value.IsNull()) continue;
    if (key == "migStrategy") {
      std::string name;
      MUSTER_ASSIGN(name, String(value, path));
      MUSTER_ASSIGN(config.mig_strategy, Located(value, path, ParseMigStrategy(name)));
    } else if (key == "failOnInitError") {
      MUSTER_ASSIGN(config.fail_on_init_error, Bool(value, path));
    } else if (key == "nvidiaDriverRoot") {
      MUSTER_ASSIGN(config.nvidia_driver_root, String(value, path));
    } else if (key == "nvidiaDevRoot") {
      MUSTER_ASSIGN(config.nvidia_dev_root, String(value, path));
    } else if (key == "gdrcopyEnabled") {
      MUSTER_ASSIGN(config.gdrcopy_enabled, Bool(value, path));
    } else if (key == "gdsEnabled") {
      MUSTER_ASSIGN(config.gds_enabled, Bool(value, path));
    } else if (key == "mofedEnabled") {
      MUSTER_ASSIGN(config.mofed_enabled, Bool(value, path));
    } else if (key == "useNodeFeatureAPI") {
      if (auto v = Bool(value, path); !v.ok()) return v.status();  // accepted, not used
    } else if (key == "mpsRoot") {
      if (auto v = String(value, path); !v.ok()) return v.status();  // accepted, not used
    } else if (key == "deviceDiscoveryStrategy") {
      std::string strategy;
      MUSTER_ASSIGN(strategy, String(value, path));
      if (strategy != "auto" && strategy != "nvml") {
        return Error(value, path,
                     fmt::format("\"{}\" is not supported; muster discovers GPUs with NVML "
                                 "(auto or nvml)",
                                 strategy));
      }
    } else if (key == "plugin") {
      if (auto s = CheckKeys(value, path,
                             {"passDeviceSpecs", "deviceListStrategy", "deviceIDStrategy",
                              "cdiAnnotationPrefix", "nvidiaCTKPath", "containerDriverRoot",
                              "sharedDevicesAllocationPolicy"});
          !s.ok()) {
        return s;
      }
      for (const auto& plugin_entry : value) {
        auto plugin_key = plugin_entry.first.as<std::string>();
        const YAML::Node& v = plugin_entry.second;
        std::string p = path + "." + plugin_key;
        if (v.IsNull()) continue;
        if (plugin_key == "passDeviceSpecs") {
          MUSTER_ASSIGN(config.pass_device_specs, Bool(v, p));
        } else if (plugin_key == "deviceListStrategy") {
          std::vector<std::string> names;
          MUSTER_ASSIGN(names, StringOrList(v, p));
          MUSTER_ASSIGN(config.device_list_strategy, Located(v, p, ParseDeviceListStrategies(names)));
        } else if (plugin_key == "deviceIDStrategy") {
          std::string name;
          MUSTER_ASSIGN(name, String(v, p));
          MUSTER_ASSIGN(config.device_id_strategy, Located(v, p, ParseDeviceIdStrategy(name)));
        } else if (plugin_key == "cdiAnnotationPrefix") {
          MUSTER_ASSIGN(config.cdi_annotation_prefix, String(v, p));
        } else if (plugin_key == "sharedDevicesAllocationPolicy") {
          std::string name;
          MUSTER_ASSIGN(name, String(v, p));
          MUSTER_ASSIGN(config.shared_allocation_policy, Located(v, p, ParseSharedPolicy(name)));
        } else {  // nvidiaCTKPath, containerDriverRoot: accepted, not used
          if (auto checked = String(v, p); !checked.ok()) return checked.status();
        }
      }
    } else if (key == "gfd") {
      if (auto s = CheckKeys(value, path,
                             {"oneshot", "noTimestamp", "sleepInterval", "outputFile",
                              "machineTypeFile"});
          !s.ok()) {
        return s;
      }
      for (const auto& gfd_entry : value) {
        auto gfd_key = gfd_entry.first.as<std::string>();
        const YAML::Node& v = gfd_entry.second;
        std::string p = path + "." + gfd_key;
        if (v.IsNull()) continue;
        if (gfd_key == "oneshot") {
          MUSTER_ASSIGN(config.gfd.oneshot, Bool(v, p));
        } else if (gfd_key == "noTimestamp") {
          MUSTER_ASSIGN(config.gfd.no_timestamp, Bool(v, p));
        } else if (gfd_key == "sleepInterval") {
          std::string text;
          MUSTER_ASSIGN(text, String(v, p));
          absl::Duration duration;
          if (!absl::ParseDuration(text, &duration) || duration < absl::Seconds(1)) {
            return Error(v, p, fmt::format("\"{}\" is not a duration of at least 1s", text));
          }
          config.gfd.sleep_interval = std::chrono::seconds(absl::ToInt64Seconds(duration));
        } else if (gfd_key == "outputFile") {
          MUSTER_ASSIGN(config.gfd.output_file, String(v, p));
        } else {
          MUSTER_ASSIGN(config.gfd.machine_type_file, String(v, p));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status FileReader::ReadSharing(const YAML::Node& sharing, PluginConfig& config) const {
  if (auto s = CheckKeys(sharing, "sharing", {"timeSlicing", "mps"}); !s.ok()) return s;
  if (const YAML::Node mps = sharing["mps"]; mps && !mps.IsNull()) {
    return Error(mps, "sharing.mps",
                 "MPS is not supported by muster's device plugin; use sharing.timeSlicing");
  }
  const YAML::Node slicing = sharing["timeSlicing"];
  if (!slicing || slicing.IsNull()) return absl::OkStatus();
  std::string path = "sharing.timeSlicing";
  if (auto s = CheckKeys(slicing, path,
                         {"renameByDefault", "failRequestsGreaterThanOne", "resources"});
      !s.ok()) {
    return s;
  }
  if (const YAML::Node v = slicing["renameByDefault"]; v && !v.IsNull()) {
    MUSTER_ASSIGN(config.time_slicing.rename_by_default, Bool(v, path + ".renameByDefault"));
  }
  if (const YAML::Node v = slicing["failRequestsGreaterThanOne"]; v && !v.IsNull()) {
    MUSTER_ASSIGN(config.time_slicing.fail_requests_greater_than_one,
                  Bool(v, path + ".failRequestsGreaterThanOne"));
  }
  const YAML::Node resources = slicing["resources"];
  if (!resources || resources.IsNull()) return absl::OkStatus();
  if (!resources.IsSequence()) return Error(resources, path + ".resources", "must be a list");
  std::set<std::string> seen;
  for (size_t i = 0; i < resources.size(); ++i) {
    const YAML::Node item = resources[i];
    std::string p = fmt::format("{}.resources[{}]", path, i);
    if (auto s = CheckKeys(item, p, {"name", "replicas", "rename", "devices"}); !s.ok()) return s;
    ReplicatedResource resource;
    if (!item["name"]) return Error(item, p, "missing name");
    MUSTER_ASSIGN(resource.name, String(item["name"], p + ".name"));
    if (auto s = CheckSharedResourceName(resource.name); !s.ok()) {
      return Error(item["name"], p + ".name", std::string(s.message()));
    }
    if (!seen.insert(resource.name).second) {
      return Error(item["name"], p + ".name", fmt::format("{} is listed twice", resource.name));
    }
    if (!item["replicas"]) return Error(item, p, "missing replicas");
    MUSTER_ASSIGN(resource.replicas, Int(item["replicas"], p + ".replicas"));
    if (resource.replicas < 2) {
      return Error(item["replicas"], p + ".replicas",
                   fmt::format("must be at least 2, got {}", resource.replicas));
    }
    if (const YAML::Node rename = item["rename"]; rename && !rename.IsNull()) {
      // NVIDIA's plugin parses and ignores it (renaming is disabled).
      if (auto v = String(rename, p + ".rename"); !v.ok()) return v.status();
    }
    if (const YAML::Node devices = item["devices"]; devices && !devices.IsNull()) {
      if (!devices.IsScalar() || devices.Scalar() != "all") {
        return Error(devices, p + ".devices",
                     "only \"all\" is supported (every device of the resource is shared)");
      }
    }
    config.time_slicing.resources.push_back(resource);
  }
  return absl::OkStatus();
}

#undef MUSTER_ASSIGN

absl::Status ReadImex(const FileReader& reader, const YAML::Node& imex) {
  if (auto s = reader.CheckKeys(imex, "imex", {"channelIDs", "required"}); !s.ok()) return s;
  if (const YAML::Node ids = imex["channelIDs"]; ids && !ids.IsNull() && ids.size() > 0) {
    return reader.Error(ids, "imex.channelIDs", "IMEX channels are not supported by muster");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PluginConfig> ParseConfig(const std::string& text, const std::string& source) {
  PluginConfig config;
  FileReader reader(source);
  try {
    YAML::Node root = YAML::Load(text);
    if (root.IsNull()) return config;
    if (auto s = reader.CheckKeys(root, "", {"version", "flags", "sharing", "resources", "imex"});
        !s.ok()) {
      return s;
    }
    const YAML::Node version = root["version"];
    if (!version) {
      return absl::InvalidArgumentError(
          fmt::format("{}: missing version (the only version is v1)", source));
    }
    if (!version.IsScalar() || version.Scalar() != "v1") {
      return reader.Error(version, "version",
                          fmt::format("unsupported version \"{}\"; the only version is v1",
                                      version.IsScalar() ? version.Scalar() : ""));
    }
    if (const YAML::Node flags = root["flags"]; flags && !flags.IsNull()) {
      if (auto s = reader.ReadFlags(flags, config); !s.ok()) return s;
    }
    if (const YAML::Node sharing = root["sharing"]; sharing && !sharing.IsNull()) {
      if (auto s = reader.ReadSharing(sharing, config); !s.ok()) return s;
    }
    if (const YAML::Node resources = root["resources"]; resources && !resources.IsNull()) {
      if (auto s = reader.CheckKeys(resources, "resources", {"gpus", "mig"}); !s.ok()) return s;
      for (const auto& entry : resources) {
        if (!entry.second.IsNull() && entry.second.size() > 0) {
          return reader.Error(entry.second, "resources." + entry.first.as<std::string>(),
                              "renaming resources is disabled, as in NVIDIA's plugin");
        }
      }
    }
    if (const YAML::Node imex = root["imex"]; imex && !imex.IsNull()) {
      if (auto s = ReadImex(reader, imex); !s.ok()) return s;
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        fmt::format("{}:{}: malformed YAML: {}", source, e.mark.line + 1, e.msg));
  }
  return config;
}

absl::StatusOr<PluginConfig> LoadConfig(const std::string& path,
                                        const ConfigOverrides& overrides) {
  PluginConfig config;
  if (!path.empty()) {
    std::ifstream in(path);
    if (!in) {
      return absl::InvalidArgumentError(fmt::format("config file {}: cannot be read", path));
    }
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = ParseConfig(text.str(), path);
    if (!parsed.ok()) return parsed.status();
    config = std::move(*parsed);
  }
  auto flag_error = [](std::string_view flag, const absl::Status& s) {
    return absl::InvalidArgumentError(fmt::format("{}: {}", flag, std::string(s.message())));
  };
  if (overrides.mig_strategy) {
    auto v = ParseMigStrategy(*overrides.mig_strategy);
    if (!v.ok()) return flag_error("--mig-strategy (MIG_STRATEGY)", v.status());
    config.mig_strategy = *v;
  }
  if (overrides.fail_on_init_error) config.fail_on_init_error = *overrides.fail_on_init_error;
  if (overrides.nvidia_driver_root) config.nvidia_driver_root = *overrides.nvidia_driver_root;
  if (overrides.nvidia_dev_root) config.nvidia_dev_root = *overrides.nvidia_dev_root;
  if (overrides.gdrcopy_enabled) config.gdrcopy_enabled = *overrides.gdrcopy_enabled;
  if (overrides.gds_enabled) config.gds_enabled = *overrides.gds_enabled;
  if (overrides.mofed_enabled) config.mofed_enabled = *overrides.mofed_enabled;
  if (overrides.pass_device_specs) config.pass_device_specs = *overrides.pass_device_specs;
  if (overrides.device_list_strategy) {
    auto v = ParseDeviceListStrategies(*overrides.device_list_strategy);
    if (!v.ok()) return flag_error("--device-list-strategy (DEVICE_LIST_STRATEGY)", v.status());
    config.device_list_strategy = *v;
  }
  if (overrides.device_id_strategy) {
    auto v = ParseDeviceIdStrategy(*overrides.device_id_strategy);
    if (!v.ok()) return flag_error("--device-id-strategy (DEVICE_ID_STRATEGY)", v.status());
    config.device_id_strategy = *v;
  }
  if (overrides.cdi_annotation_prefix) {
    config.cdi_annotation_prefix = *overrides.cdi_annotation_prefix;
  }
  if (overrides.shared_allocation_policy) {
    auto v = ParseSharedPolicy(*overrides.shared_allocation_policy);
    if (!v.ok()) {
      return flag_error("--shared-devices-allocation-policy (SHARED_DEVICES_ALLOCATION_POLICY)",
                        v.status());
    }
    config.shared_allocation_policy = *v;
  }
  return config;
}

}  // namespace muster::deviceplugin
