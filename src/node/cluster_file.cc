// Cluster files of `muster up` and `muster nodes` (cluster_file.h, docs/cluster-file.md): node
// pools expanded into nodes as a kubelet would register them (labels, GPU labels as NVIDIA's GPU
// Feature Discovery writes them, taints, allocatable, GPUs and their NVLinks); the `topology`
// section is read by cluster_topology.cc.

#include "node/cluster_file.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "api/gpu_topology.h"
#include "api/names.h"
#include "api/yaml.h"
#include "boost/json/value.hpp"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "node/cluster_file_yaml.h"
#include "node/json_access.h"
#include "yaml-cpp/yaml.h"

namespace muster::node {

namespace {

namespace json = boost::json;
using common::Quantity;

constexpr int kMaxNodes = 100000;
constexpr uint64_t kMiB = uint64_t{1} << 20;

}  // namespace

namespace cluster_yaml {

absl::Status ErrorAt(const YAML::Node& node, std::string_view message) {
  const int line = node.Mark().is_null() ? 1 : node.Mark().line + 1;
  return absl::InvalidArgumentError(Cat("line ", line, ": ", message));
}

absl::StatusOr<boost::json::value> Scalar(const YAML::Node& node, std::string_view what) {
  if (!node.IsScalar()) return ErrorAt(node, Cat(what, ": expected a value"));
  return api::YamlToJson(node);
}

absl::StatusOr<std::string> String(const YAML::Node& node, std::string_view what) {
  absl::StatusOr<json::value> v = Scalar(node, what);
  if (!v.ok()) return v.status();
  if (!v->is_string()) {
    return ErrorAt(node, Cat(what, ": expected a string, got `", node.Scalar(),
                                      "` (quote it)"));
  }
  return std::string(v->get_string());
}

absl::StatusOr<int64_t> Integer(const YAML::Node& node, std::string_view what) {
  absl::StatusOr<json::value> v = Scalar(node, what);
  if (!v.ok()) return v.status();
  if (!v->is_int64()) {
    return ErrorAt(node, Cat(what, ": expected an integer, got `", node.Scalar(), "`"));
  }
  return v->get_int64();
}

absl::Status ExpectMap(const YAML::Node& node, std::string_view what) {
  if (node.IsMap()) return absl::OkStatus();
  return ErrorAt(node, Cat(what, ": expected a map"));
}

// Checks that every key of `map` is one of `known`.
absl::Status KnownKeys(const YAML::Node& map, std::string_view what,
                       const std::vector<std::string_view>& known) {
  for (const auto& entry : map) {
    const std::string& key = entry.first.Scalar();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return ErrorAt(entry.first, fmt::format("{}: unknown key \"{}\"; expected one of: {}", what,
                                              key, fmt::join(known, ", ")));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> StringList(const YAML::Node& node, std::string_view what) {
  std::vector<std::string> out;
  if (!node || node.IsNull()) return out;
  if (!node.IsSequence()) return ErrorAt(node, Cat(what, ": expected a list"));
  for (size_t i = 0; i < node.size(); ++i) {
    absl::StatusOr<std::string> v = String(node[i], Cat(what, "[", i, "]"));
    if (!v.ok()) return v.status();
    out.push_back(*std::move(v));
  }
  return out;
}

}  // namespace cluster_yaml

namespace {

using namespace cluster_yaml;

absl::StatusOr<Quantity> QuantityAt(const YAML::Node& node, std::string_view what) {
  absl::StatusOr<json::value> v = Scalar(node, what);
  if (!v.ok()) return v.status();
  if (!v->is_string() && !v->is_number()) {
    return ErrorAt(node, Cat(what, ": expected a quantity such as \"4\" or \"16Gi\""));
  }
  absl::StatusOr<Quantity> q = Quantity::Parse(node.Scalar());
  if (!q.ok()) return ErrorAt(node, Cat(what, ": ", std::string(q.status().message())));
  if (q->MilliValue() < 0) return ErrorAt(node, Cat(what, ": must not be negative"));
  return *q;
}

absl::StatusOr<api::Taint> ParseTaint(const YAML::Node& node, std::string_view what) {
  api::Taint taint;
  if (node.IsScalar()) {
    // kubectl taint's form: key[=value]:Effect
    absl::StatusOr<std::string> text = String(node, what);
    if (!text.ok()) return text.status();
    size_t colon = text->rfind(':');
    if (colon == std::string::npos) {
      return ErrorAt(node, Cat(what, ": \"", *text,
                                        "\" is not key=value:Effect (for example "
                                        "nvidia.com/gpu=present:NoSchedule)"));
    }
    std::string key_value = text->substr(0, colon);
    taint.effect = text->substr(colon + 1);
    size_t eq = key_value.find('=');
    taint.key = key_value.substr(0, eq);
    if (eq != std::string::npos) taint.value = key_value.substr(eq + 1);
  } else if (node.IsMap()) {
    if (absl::Status s = KnownKeys(node, what, {"key", "value", "effect"}); !s.ok()) return s;
    for (const auto& [field, target] :
         {std::pair{"key", &taint.key}, {"value", &taint.value}, {"effect", &taint.effect}}) {
      if (!node[field]) continue;
      absl::StatusOr<std::string> v = String(node[field], Cat(what, ".", field));
      if (!v.ok()) return v.status();
      *target = *v;
    }
  } else {
    return ErrorAt(node, Cat(what, ": expected key=value:Effect or a map"));
  }
  if (!api::IsQualifiedName(taint.key)) {
    return ErrorAt(node, Cat(what, ": key \"", taint.key, "\" is not a valid taint key"));
  }
  if (!api::IsLabelValue(taint.value)) {
    return ErrorAt(node,
                   Cat(what, ": value \"", taint.value, "\" is not a valid taint value"));
  }
  if (taint.effect != "NoSchedule" && taint.effect != "PreferNoSchedule" &&
      taint.effect != "NoExecute") {
    return ErrorAt(node, Cat(what, ": effect \"", taint.effect,
                                      "\" is not NoSchedule, PreferNoSchedule or NoExecute"));
  }
  return taint;
}

struct GpuSpec {
  int count = 0;
  std::string model;
  int64_t memory_bytes = 0;
  // NVLinks between every two GPUs (row a, column b); empty when the pool gives none.
  std::vector<std::vector<int>> nvlinks;
};

// DGX-1's hybrid cube-mesh of eight V100s: GPUs 0-3 and 4-7 fully linked, each GPU linked to one
// of the other four (NVIDIA's DGX-1 V100 System Architecture; what NVML reports on one).
constexpr int kCubeMeshLinks[][3] = {{0, 1, 1}, {0, 2, 1}, {0, 3, 2}, {0, 4, 2}, {1, 2, 2},
                                     {1, 3, 1}, {1, 5, 2}, {2, 3, 2}, {2, 6, 1}, {3, 7, 1},
                                     {4, 5, 1}, {4, 6, 1}, {4, 7, 2}, {5, 6, 2}, {5, 7, 1},
                                     {6, 7, 2}};
// NVLinks from each GPU of an HGX H100 board to its NVSwitches: any two GPUs meet over 18.
constexpr int kNvSwitchLinks = 18;
// The most GPUs of one node whose NVLinks a pool may give (a 72-GPU NVLink domain is a rack).
constexpr int kMaxNvLinkGpus = 64;

// gpu.nvlink: `dgx-1` (8 GPUs), `nvswitch`, or a count x count matrix of NVLinks, as
// `nvidia-smi topo -m` prints NV<n>.
absl::StatusOr<std::vector<std::vector<int>>> ParseNvLinks(const YAML::Node& node, int count,
                                                           std::string_view what) {
  if (count > kMaxNvLinkGpus) {
    return ErrorAt(node, Cat(what, ": NVLinks are described for up to ", kMaxNvLinkGpus,
                             " GPUs per node; count is ", count));
  }
  std::vector<std::vector<int>> links(count, std::vector<int>(count, 0));
  if (node.IsScalar()) {
    absl::StatusOr<std::string> preset = String(node, what);
    if (!preset.ok()) return preset.status();
    if (*preset == "dgx-1") {
      if (count != 8) {
        return ErrorAt(node, Cat(what, ": dgx-1 is the hybrid cube-mesh of 8 GPUs, but count is ",
                                 count));
      }
      for (const auto& l : kCubeMeshLinks) links[l[0]][l[1]] = links[l[1]][l[0]] = l[2];
      return links;
    }
    if (*preset == "nvswitch") {
      for (int a = 0; a < count; ++a) {
        for (int b = 0; b < count; ++b) links[a][b] = a == b ? 0 : kNvSwitchLinks;
      }
      return links;
    }
    return ErrorAt(node, Cat(what, ": \"", *preset,
                             "\" is not dgx-1, nvswitch or a matrix of NVLinks (one row per GPU)"));
  }
  if (!node.IsSequence()) {
    return ErrorAt(node, Cat(what, ": expected dgx-1, nvswitch or a matrix of NVLinks"));
  }
  if (static_cast<int>(node.size()) != count) {
    return ErrorAt(node, Cat(what, ": ", node.size(), " rows, but count is ", count,
                             " (one row per GPU)"));
  }
  for (int a = 0; a < count; ++a) {
    const YAML::Node row = node[a];
    const std::string row_what = Cat(what, "[", a, "]");
    if (!row.IsSequence() || static_cast<int>(row.size()) != count) {
      return ErrorAt(row, Cat(row_what, ": expected a list of ", count,
                              " NVLink counts (one per GPU)"));
    }
    for (int b = 0; b < count; ++b) {
      absl::StatusOr<int64_t> l = Integer(row[b], Cat(row_what, "[", b, "]"));
      if (!l.ok()) return l.status();
      links[a][b] = static_cast<int>(std::clamp<int64_t>(*l, -1, api::kMaxNvLinksPerPair + 1));
    }
  }
  // Symmetric, no link from a GPU to itself, counts in range: the codec's own checks, named.
  absl::StatusOr<api::GpuTopology> checked = api::GpuTopology::FromMatrix(links);
  if (!checked.ok()) return ErrorAt(node, Cat(what, std::string(checked.status().message())));
  return links;
}

absl::StatusOr<GpuSpec> ParseGpu(const YAML::Node& node, std::string_view what) {
  if (absl::Status s = ExpectMap(node, what); !s.ok()) return s;
  if (absl::Status s = KnownKeys(node, what, {"count", "model", "memory", "nvlink"}); !s.ok()) {
    return s;
  }
  GpuSpec gpu;
  if (!node["count"]) return ErrorAt(node, Cat(what, ": count is required"));
  absl::StatusOr<int64_t> count = Integer(node["count"], Cat(what, ".count"));
  if (!count.ok()) return count.status();
  if (*count < 0 || *count > 1024) {
    return ErrorAt(node["count"], Cat(what, ".count: must be between 0 and 1024"));
  }
  gpu.count = static_cast<int>(*count);
  if (!node["model"]) {
    return ErrorAt(node, Cat(what, ": model is required (for example Tesla-T4)"));
  }
  absl::StatusOr<std::string> model = String(node["model"], Cat(what, ".model"));
  if (!model.ok()) return model.status();
  for (char& c : *model) {
    if (c == ' ') c = '-';
  }
  if (model->empty() || !api::IsLabelValue(*model)) {
    return ErrorAt(node["model"],
                   Cat(what, ".model: \"", *model,
                                "\" must be a label value: up to 63 letters, digits, '-', '_' or "
                                "'.', starting and ending with a letter or digit"));
  }
  gpu.model = *model;
  if (node["memory"]) {
    absl::StatusOr<Quantity> memory = QuantityAt(node["memory"], Cat(what, ".memory"));
    if (!memory.ok()) return memory.status();
    if (memory->Value() < static_cast<int64_t>(kMiB)) {
      return ErrorAt(node["memory"],
                     Cat(what, ".memory: ", node["memory"].Scalar(),
                                  " is less than 1Mi; give a unit, for example 15360Mi or 16Gi"));
    }
    gpu.memory_bytes = memory->Value();
  }
  if (const YAML::Node nvlink = node["nvlink"]; nvlink && !nvlink.IsNull()) {
    absl::StatusOr<std::vector<std::vector<int>>> links =
        ParseNvLinks(nvlink, gpu.count, Cat(what, ".nvlink"));
    if (!links.ok()) return links.status();
    gpu.nvlinks = *std::move(links);
  }
  return gpu;
}

// A stable UUID-shaped identifier for simulated GPU `index` of `node`.
std::string SimulatedGpuUuid(const std::string& node, int index) {
  auto fnv = [](std::string_view s, uint64_t h) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ULL;
    }
    return h;
  };
  std::string key = Cat(node, "/", index);
  uint64_t a = fnv(key, 14695981039346656037ULL);
  uint64_t b = fnv(key, a ^ 0x9e3779b97f4a7c15ULL);
  return fmt::format("GPU-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff,
                     a & 0xffff, b >> 48, b & 0xffffffffffffULL);
}

struct Pool {
  std::string name;
  std::optional<int> count;
  api::StringMap labels;
  std::vector<api::Taint> taints;
  api::ResourceList allocatable;
  GpuSpec gpu;
  RuntimeKind runtime = RuntimeKind::kSimulated;
};

absl::StatusOr<Pool> ParsePool(const YAML::Node& node, size_t index) {
  const std::string what = Cat("nodePools[", index, "]");
  if (absl::Status s = ExpectMap(node, what); !s.ok()) return s;
  if (absl::Status s = KnownKeys(
          node, what, {"name", "count", "labels", "taints", "allocatable", "gpu", "runtime"});
      !s.ok()) {
    return s;
  }
  Pool pool;
  if (!node["name"]) return ErrorAt(node, Cat(what, ": name is required"));
  absl::StatusOr<std::string> name = String(node["name"], Cat(what, ".name"));
  if (!name.ok()) return name.status();
  if (!api::IsDns1123Subdomain(*name)) {
    return ErrorAt(node["name"],
                   Cat(what, ".name: \"", *name,
                                "\" must be lower-case letters, digits, '-' and '.', starting and "
                                "ending with a letter or digit"));
  }
  pool.name = *name;

  if (node["count"]) {
    absl::StatusOr<int64_t> count = Integer(node["count"], Cat(what, ".count"));
    if (!count.ok()) return count.status();
    if (*count < 1 || *count > kMaxNodes) {
      return ErrorAt(node["count"],
                     Cat(what, ".count: must be between 1 and ", kMaxNodes));
    }
    pool.count = static_cast<int>(*count);
  }

  if (const YAML::Node labels = node["labels"]; labels && !labels.IsNull()) {
    if (absl::Status s = ExpectMap(labels, what + ".labels"); !s.ok()) return s;
    for (const auto& entry : labels) {
      const std::string& key = entry.first.Scalar();
      if (!api::IsQualifiedName(key)) {
        return ErrorAt(entry.first,
                       Cat(what, ".labels: \"", key, "\" is not a valid label key"));
      }
      absl::StatusOr<std::string> value =
          String(entry.second, Cat(what, ".labels.", key));
      if (!value.ok()) return value.status();
      if (!api::IsLabelValue(*value)) {
        return ErrorAt(entry.second,
                       Cat(what, ".labels.", key, ": \"", *value,
                                    "\" is not a valid label value (up to 63 letters, digits, '-', "
                                    "'_' or '.', starting and ending with a letter or digit)"));
      }
      pool.labels[key] = *value;
    }
  }

  if (const YAML::Node taints = node["taints"]; taints && !taints.IsNull()) {
    if (!taints.IsSequence()) return ErrorAt(taints, Cat(what, ".taints: expected a list"));
    for (size_t i = 0; i < taints.size(); ++i) {
      absl::StatusOr<api::Taint> taint = ParseTaint(taints[i], Cat(what, ".taints[", i, "]"));
      if (!taint.ok()) return taint.status();
      pool.taints.push_back(*taint);
    }
  }

  if (const YAML::Node alloc = node["allocatable"]; alloc && !alloc.IsNull()) {
    if (absl::Status s = ExpectMap(alloc, what + ".allocatable"); !s.ok()) return s;
    for (const auto& entry : alloc) {
      const std::string& resource = entry.first.Scalar();
      if (resource == api::kGpuResource) {
        return ErrorAt(entry.first,
                       Cat(what, ".allocatable: give GPUs as gpu: {count: N, model: ..., "
                                          "memory: ...} rather than nvidia.com/gpu"));
      }
      if (!api::IsQualifiedName(resource)) {
        return ErrorAt(entry.first, Cat(what, ".allocatable: \"", resource,
                                                 "\" is not a valid resource name"));
      }
      absl::StatusOr<Quantity> q =
          QuantityAt(entry.second, Cat(what, ".allocatable.", resource));
      if (!q.ok()) return q.status();
      pool.allocatable[resource] = *q;
    }
  }

  if (const YAML::Node gpu = node["gpu"]; gpu && !gpu.IsNull()) {
    absl::StatusOr<GpuSpec> spec = ParseGpu(gpu, what + ".gpu");
    if (!spec.ok()) return spec.status();
    pool.gpu = *spec;
  }

  if (node["runtime"]) {
    absl::StatusOr<std::string> runtime = String(node["runtime"], Cat(what, ".runtime"));
    if (!runtime.ok()) return runtime.status();
    if (*runtime == "simulated") {
      pool.runtime = RuntimeKind::kSimulated;
    } else if (*runtime == "process") {
      pool.runtime = RuntimeKind::kProcess;
    } else {
      return ErrorAt(node["runtime"], Cat(what, ".runtime: \"", *runtime,
                                                   "\" is not simulated or process"));
    }
  }
  return pool;
}

// Labels every kubelet sets on its node.
void AddKubeletLabels(NodeConfig& node) {
  node.labels.emplace("kubernetes.io/hostname", node.name);
  node.labels.emplace("kubernetes.io/os", "linux");
  node.labels.emplace("kubernetes.io/arch", "amd64");
}

void AddGpus(NodeConfig& node, std::vector<gpu::GpuDevice> gpus) {
  if (gpus.empty()) return;
  std::string model = gpus.front().name;
  for (char& c : model) {
    if (c == ' ') c = '-';
  }
  for (auto& [k, v] : GpuLabels(model, static_cast<int>(gpus.size()), gpus.front().memory_bytes)) {
    node.labels.emplace(k, v);
  }
  node.allocatable[api::kGpuResource] = Quantity::FromUnits(static_cast<int64_t>(gpus.size()));
  node.capacity[api::kGpuResource] = node.allocatable[api::kGpuResource];
  node.gpus = std::move(gpus);
}

}  // namespace

std::string_view RuntimeKindName(RuntimeKind kind) {
  return kind == RuntimeKind::kProcess ? "process" : "simulated";
}

std::string GpuTopologyAnnotation(const NodeConfig& node) {
  return api::GpuTopologyValue(gpu::NvLinkMatrix(node.gpus));
}

api::StringMap GpuLabels(const std::string& model, int count, uint64_t memory_bytes) {
  api::StringMap labels;
  labels["nvidia.com/gpu.product"] = model;
  labels["nvidia.com/gpu.count"] = std::to_string(count);
  if (memory_bytes > 0) labels["nvidia.com/gpu.memory"] = std::to_string(memory_bytes / kMiB);
  return labels;
}

absl::StatusOr<ClusterSpec> ParseClusterSpec(std::string_view text) {
  // Validates the YAML itself (syntax, UTF-8, alias bombs, yaml-cpp's endless streams) first, so
  // that the second parse below, which keeps line marks, only sees well-formed input.
  absl::StatusOr<std::vector<json::value>> documents = api::ParseYamlDocuments(text);
  if (!documents.ok()) return documents.status();
  if (documents->empty()) {
    return absl::InvalidArgumentError("line 1: the cluster file is empty; it needs nodePools");
  }
  if (documents->size() > 1) {
    return absl::InvalidArgumentError(
        "line 1: a cluster file is one YAML document; found several separated by ---");
  }
  YAML::Node root;
  try {
    for (const YAML::Node& doc : YAML::LoadAll(std::string(text))) {
      if (!doc.IsNull()) root = doc;
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(Cat("line ", e.mark.line + 1, ": ", e.msg));
  }
  if (!root.IsMap()) return ErrorAt(root, "a cluster file is a map with nodePools");
  if (absl::Status s =
          KnownKeys(root, "cluster file", {"apiVersion", "kind", "nodePools", "topology"});
      !s.ok()) {
    return s;
  }
  if (root["apiVersion"]) {
    absl::StatusOr<std::string> v = String(root["apiVersion"], "apiVersion");
    if (!v.ok()) return v.status();
    if (*v != "muster.dev/v1alpha1") {
      return ErrorAt(root["apiVersion"],
                     Cat("apiVersion: \"", *v, "\" is not muster.dev/v1alpha1"));
    }
  }
  if (root["kind"]) {
    absl::StatusOr<std::string> v = String(root["kind"], "kind");
    if (!v.ok()) return v.status();
    if (*v != "Cluster") return ErrorAt(root["kind"], Cat("kind: \"", *v, "\" is not Cluster"));
  }
  const YAML::Node pools = root["nodePools"];
  if (!pools || pools.IsNull()) return ErrorAt(root, "nodePools is required");
  if (!pools.IsSequence() || pools.size() == 0) {
    return ErrorAt(pools, "nodePools: expected a non-empty list of node pools");
  }

  ClusterSpec spec;
  std::vector<NodeConfig>& nodes = spec.nodes;
  std::vector<cluster_yaml::PoolNodes> pool_nodes;
  std::set<std::string> names;
  for (size_t p = 0; p < pools.size(); ++p) {
    absl::StatusOr<Pool> pool = ParsePool(pools[p], p);
    if (!pool.ok()) return pool.status();
    pool_nodes.push_back({pool->name, {}});
    const int count = pool->count.value_or(1);
    if (nodes.size() + static_cast<size_t>(count) > static_cast<size_t>(kMaxNodes)) {
      return ErrorAt(pools[p], Cat("more than ", kMaxNodes, " nodes in all"));
    }
    for (int i = 0; i < count; ++i) {
      NodeConfig node;
      node.name = pool->count ? Cat(pool->name, "-", i) : pool->name;
      if (!api::IsDns1123Subdomain(node.name)) {
        return ErrorAt(pools[p]["name"],
                       Cat("nodePools[", p, "]: node name \"", node.name, "\" is too long"));
      }
      if (!names.insert(node.name).second) {
        return ErrorAt(pools[p]["name"],
                       Cat("nodePools[", p, "]: node \"", node.name,
                                    "\" is also named by an earlier pool"));
      }
      node.labels = pool->labels;
      node.taints = pool->taints;
      node.allocatable = pool->allocatable;
      node.allocatable.emplace("cpu", Quantity::FromUnits(8));
      node.allocatable.emplace("memory", Quantity::FromUnits(int64_t{32} << 30));
      node.allocatable.emplace("pods", Quantity::FromUnits(110));
      node.allocatable.emplace("ephemeral-storage", Quantity::FromUnits(int64_t{100} << 30));
      node.capacity = node.allocatable;
      node.runtime = pool->runtime;
      const size_t at = nodes.size();
      if (node.runtime == RuntimeKind::kProcess) {
        node.internal_ip = "127.0.0.1";
      } else {
        node.internal_ip = fmt::format("10.1.{}.{}", at / 250, at % 250 + 1);
        node.pod_cidr = fmt::format("10.{}.{}.0/24", 128 + at / 256, at % 256);
      }
      std::vector<gpu::GpuDevice> gpus(static_cast<size_t>(pool->gpu.count));
      for (int g = 0; g < pool->gpu.count; ++g) {
        gpus[g].index = g;
        gpus[g].uuid = SimulatedGpuUuid(node.name, g);
        gpus[g].name = pool->gpu.model;
        gpus[g].memory_bytes = static_cast<uint64_t>(pool->gpu.memory_bytes);
        for (int peer = 0; peer < pool->gpu.count && !pool->gpu.nvlinks.empty(); ++peer) {
          if (peer == g) continue;
          gpu::PeerLink link;
          link.peer_index = peer;
          link.nvlinks = pool->gpu.nvlinks[g][peer];
          gpus[g].peers.push_back(link);
        }
      }
      AddGpus(node, std::move(gpus));
      AddKubeletLabels(node);
      pool_nodes.back().nodes.push_back(nodes.size());
      nodes.push_back(std::move(node));
    }
  }
  if (const YAML::Node topology = root["topology"]; topology && !topology.IsNull()) {
    absl::StatusOr<std::vector<api::HyperNode>> hypernodes =
        cluster_yaml::ParseTopology(topology, pool_nodes, nodes);
    if (!hypernodes.ok()) return hypernodes.status();
    spec.hypernodes = *std::move(hypernodes);
  }
  return spec;
}

absl::StatusOr<std::vector<NodeConfig>> ParseClusterFile(std::string_view text) {
  absl::StatusOr<ClusterSpec> spec = ParseClusterSpec(text);
  if (!spec.ok()) return spec.status();
  return std::move(spec->nodes);
}

absl::StatusOr<ClusterSpec> LoadClusterSpec(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(Cat(path, ": cannot open the cluster file"));
  std::ostringstream text;
  text << in.rdbuf();
  absl::StatusOr<ClusterSpec> spec = ParseClusterSpec(text.str());
  if (!spec.ok()) {
    return absl::Status(spec.status().code(),
                        Cat(path, ": ", std::string(spec.status().message())));
  }
  return spec;
}

absl::StatusOr<std::vector<NodeConfig>> LoadClusterFile(const std::string& path) {
  absl::StatusOr<ClusterSpec> spec = LoadClusterSpec(path);
  if (!spec.ok()) return spec.status();
  return std::move(spec->nodes);
}

NodeConfig LocalNode(const std::vector<gpu::GpuDevice>& gpus) {
  NodeConfig node;
  char host[256] = {};
  std::string name;
  if (::gethostname(host, sizeof(host) - 1) == 0) name = host;
  // A node name is a DNS subdomain: lower-case, '-' for anything else.
  for (char& c : name) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!absl::ascii_isalnum(c) && c != '-' && c != '.') c = '-';
  }
  while (!name.empty() && !absl::ascii_isalnum(name.back())) name.pop_back();
  while (!name.empty() && !absl::ascii_isalnum(name.front())) name.erase(name.begin());
  if (name.size() > 253) name.resize(253);
  if (!api::IsDns1123Subdomain(name)) name = "localhost";
  node.name = name;

  int64_t cpus = 1;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) {
    cpus = CPU_COUNT(&set);
  } else if (long n = ::sysconf(_SC_NPROCESSORS_ONLN); n > 0) {
    cpus = n;
  }
  int64_t memory = 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  while (meminfo >> key) {
    if (key == "MemTotal:") {
      int64_t kib = 0;
      meminfo >> kib;
      memory = kib * 1024;
      break;
    }
    std::string rest;
    std::getline(meminfo, rest);
  }
  node.allocatable["cpu"] = Quantity::FromUnits(std::max<int64_t>(cpus, 1));
  if (memory > 0) node.allocatable["memory"] = Quantity::FromUnits(memory);
  node.allocatable["pods"] = Quantity::FromUnits(110);
  node.capacity = node.allocatable;
  node.runtime = RuntimeKind::kProcess;
  node.internal_ip = "127.0.0.1";
  AddGpus(node, gpus);
  AddKubeletLabels(node);
  return node;
}

}  // namespace muster::node
