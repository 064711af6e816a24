#include "deviceplugin/labels.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "fmt/format.h"

namespace muster::deviceplugin {
namespace {

constexpr uint64_t kMiB = 1024ULL * 1024;

std::string ProductName(const std::string& name) {
  std::string out;
  bool space = false;
  for (char c : name) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += '-';
    space = false;
    out += c;
  }
  return out;
}

void AddMigLabels(Labels& labels, const std::string& prefix, const gpu::MigDevice& mig,
                  size_t count) {
  labels[prefix + ".count"] = std::to_string(count);
  labels[prefix + ".memory"] = std::to_string(mig.memory_bytes / kMiB);
  labels[prefix + ".multiprocessors"] = std::to_string(mig.multiprocessors);
  labels[prefix + ".slices.gi"] = std::to_string(mig.gpu_instance_slices);
  labels[prefix + ".slices.ci"] = std::to_string(mig.compute_instance_slices);
  labels[prefix + ".engines.copy"] = std::to_string(mig.copy_engines);
  labels[prefix + ".engines.decoder"] = std::to_string(mig.decoders);
  labels[prefix + ".engines.encoder"] = std::to_string(mig.encoders);
  labels[prefix + ".engines.jpeg"] = std::to_string(mig.jpeg_engines);
  labels[prefix + ".engines.ofa"] = std::to_string(mig.ofa_engines);
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += fmt::format("\\u{:04x}", static_cast<int>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace

std::string GpuFamily(int major, int minor) {
  switch (major) {
    case 1:
      return "tesla";
    case 2:
      return "fermi";
    case 3:
      return "kepler";
    case 5:
      return "maxwell";
    case 6:
      return "pascal";
    case 7:
      return minor < 5 ? "volta" : "turing";
    case 8:
      return minor < 9 ? "ampere" : "ada-lovelace";
    case 9:
      return "hopper";
    case 10:
    case 12:
      return "blackwell";
    case 13:
      return "rubin";
    default:
      return "undefined";
  }
}

std::string SanitizeLabelValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    out += ok ? c : '-';
  }
  if (out.size() > 63) out.resize(63);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  while (!out.empty() && !alnum(out.back())) out.pop_back();
  size_t start = 0;
  while (start < out.size() && !alnum(out[start])) ++start;
  return out.substr(start);
}

Labels GfdLabels(const gpu::GpuSystem& system, const PluginConfig& config,
                 const LabelInputs& inputs) {
  Labels labels;
  const std::string p = "nvidia.com/";
  // Driver and CUDA versions.
  if (!system.driver_version.empty()) {
    std::vector<std::string> parts;
    size_t start = 0;
    while (start <= system.driver_version.size()) {
      size_t dot = system.driver_version.find('.', start);
      if (dot == std::string::npos) dot = system.driver_version.size();
      parts.push_back(system.driver_version.substr(start, dot - start));
      start = dot + 1;
    }
    labels[p + "cuda.driver-version.full"] = SanitizeLabelValue(system.driver_version);
    labels[p + "cuda.driver-version.major"] = parts[0];
    labels[p + "cuda.driver.major"] = parts[0];
    if (parts.size() > 1) {
      labels[p + "cuda.driver-version.minor"] = parts[1];
      labels[p + "cuda.driver.minor"] = parts[1];
    }
    if (parts.size() > 2) {
      labels[p + "cuda.driver-version.revision"] = parts[2];
      labels[p + "cuda.driver.rev"] = parts[2];
    }
  }
  if (system.cuda_driver_version > 0) {
    int major = system.cuda_driver_version / 1000;
    int minor = (system.cuda_driver_version % 1000) / 10;
    labels[p + "cuda.runtime-version.major"] = std::to_string(major);
    labels[p + "cuda.runtime-version.minor"] = std::to_string(minor);
    labels[p + "cuda.runtime-version.full"] = fmt::format("{}.{}", major, minor);
    labels[p + "cuda.runtime.major"] = std::to_string(major);
    labels[p + "cuda.runtime.minor"] = std::to_string(minor);
  }
  labels[p + "gpu.machine"] =
      SanitizeLabelValue(inputs.machine_type.empty() ? "unknown" : inputs.machine_type);
  labels[p + "mps.capable"] = "false";
  if (inputs.timestamp) labels[p + "gfd.timestamp"] = std::to_string(*inputs.timestamp);
  if (system.devices.empty()) return labels;

  bool mig_capable = false;
  for (const gpu::GpuDevice& gpu : system.devices) mig_capable = mig_capable || gpu.mig_capable;
  labels[p + "mig.capable"] = mig_capable ? "true" : "false";
  if (mig_capable) labels[p + "mig.strategy"] = std::string(MigStrategyName(config.mig_strategy));

  const gpu::GpuDevice& first = system.devices.front();
  int gpu_replicas = config.ReplicasOf("nvidia.com/gpu");
  bool renamed = config.time_slicing.rename_by_default;
  std::string product = ProductName(first.name);
  labels[p + "gpu.count"] = std::to_string(system.devices.size());
  labels[p + "gpu.memory"] = std::to_string(first.memory_bytes / kMiB);
  labels[p + "gpu.family"] = GpuFamily(first.compute_major, first.compute_minor);
  labels[p + "gpu.compute.major"] = std::to_string(first.compute_major);
  labels[p + "gpu.compute.minor"] = std::to_string(first.compute_minor);
  labels[p + "gpu.replicas"] = std::to_string(gpu_replicas);
  labels[p + "gpu.sharing-strategy"] = gpu_replicas > 1 ? "time-slicing" : "none";

  bool all_mig = true;
  for (const gpu::GpuDevice& gpu : system.devices) {
    all_mig = all_mig && gpu.mig_enabled && !gpu.mig_devices.empty();
  }
  if (config.mig_strategy == MigStrategy::kSingle && all_mig) {
    const gpu::MigDevice& mig = first.mig_devices.front();
    size_t count = 0;
    for (const gpu::GpuDevice& gpu : system.devices) count += gpu.mig_devices.size();
    product += "-MIG-" + mig.profile;
    Labels mig_labels;
    AddMigLabels(mig_labels, p + "gpu", mig, count);
    for (auto& [key, value] : mig_labels) labels[key] = value;
  }
  if (config.mig_strategy == MigStrategy::kMixed) {
    std::map<std::string, std::pair<const gpu::MigDevice*, size_t>> by_profile;
    for (const gpu::GpuDevice& gpu : system.devices) {
      for (const gpu::MigDevice& mig : gpu.mig_devices) {
        auto& entry = by_profile[mig.profile];
        if (entry.first == nullptr) entry.first = &mig;
        ++entry.second;
      }
    }
    for (const auto& [profile, entry] : by_profile) {
      std::string resource = "mig-" + profile;
      std::replace(resource.begin(), resource.end(), '+', '.');
      AddMigLabels(labels, p + resource, *entry.first, entry.second);
      int replicas = config.ReplicasOf(p + resource);
      labels[p + resource + ".replicas"] = std::to_string(replicas);
      labels[p + resource + ".sharing-strategy"] = replicas > 1 ? "time-slicing" : "none";
    }
  }
  if (gpu_replicas > 1 && !renamed) product += "-SHARED";
  labels[p + "gpu.product"] = SanitizeLabelValue(product);
  return labels;
}

absl::Status WriteFeaturesFile(const std::string& path, const Labels& labels) {
  std::error_code error;
  std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), error);
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) {
      return absl::UnavailableError(fmt::format("cannot write the labels file {}", tmp));
    }
    for (const auto& [key, value] : labels) out << key << "=" << value << "\n";
    out.flush();
    if (!out) return absl::UnavailableError(fmt::format("cannot write the labels file {}", tmp));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::UnavailableError(fmt::format("cannot move {} to {}", tmp, path));
  }
  return absl::OkStatus();
}

std::string NodeLabelsPatch(const Labels& labels, const Labels& annotations) {
  auto object = [](const Labels& entries) {
    std::string body;
    for (const auto& [key, value] : entries) {
      if (!body.empty()) body += ",";
      body += JsonString(key) + ":" + JsonString(value);
    }
    return "{" + body + "}";
  };
  std::string patch = "{\"metadata\":{\"labels\":" + object(labels);
  if (!annotations.empty()) patch += ",\"annotations\":" + object(annotations);
  return patch + "}}";
}

}  // namespace muster::deviceplugin
