// Cluster files (cluster_file.h): pools into nodes, their GPUs' NVLinks, and every mistake named
// with its line.

#include "node/cluster_file.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::node {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::vector<NodeConfig> Parse(const std::string& text) {
  absl::StatusOr<std::vector<NodeConfig>> nodes = ParseClusterFile(text);
  EXPECT_TRUE(nodes.ok()) << nodes.status();
  return nodes.ok() ? *nodes : std::vector<NodeConfig>{};
}

std::string ErrorOf(const std::string& text) {
  absl::StatusOr<std::vector<NodeConfig>> nodes = ParseClusterFile(text);
  EXPECT_FALSE(nodes.ok()) << "parsed: " << text;
  if (nodes.ok()) return "";
  EXPECT_EQ(nodes.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(nodes.status().message());
}

int64_t Units(const api::ResourceList& list, const std::string& name) {
  auto it = list.find(name);
  return it == list.end() ? -1 : it->second.Value();
}

constexpr char kDemo[] = R"(# two g4dn.xlarge-like nodes, one T4 each
apiVersion: muster.dev/v1alpha1
kind: Cluster
nodePools:
  - name: gpu-node
    count: 2
    labels:
      node.kubernetes.io/instance-type: g4dn.xlarge
    taints:
      - key: nvidia.com/gpu
        value: present
        effect: NoSchedule
    allocatable: {cpu: "4", memory: 16Gi}
    gpu: {count: 1, model: Tesla T4, memory: 15360Mi}
    runtime: simulated
  - name: cpu
    allocatable: {cpu: 2, memory: "4Gi", pods: 20}
    taints: ["dedicated=batch:PreferNoSchedule", "spot:NoExecute"]
    runtime: process
)";

TEST(ClusterFileTest, ExpandsPoolsIntoNodes) {
  std::vector<NodeConfig> nodes = Parse(kDemo);
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0].name, "gpu-node-0");
  EXPECT_EQ(nodes[1].name, "gpu-node-1");
  EXPECT_EQ(nodes[2].name, "cpu");  // no count: one node named as the pool

  const NodeConfig& gpu = nodes[1];
  EXPECT_EQ(gpu.labels.at("node.kubernetes.io/instance-type"), "g4dn.xlarge");
  EXPECT_EQ(gpu.labels.at("kubernetes.io/hostname"), "gpu-node-1");
  EXPECT_EQ(gpu.labels.at("kubernetes.io/os"), "linux");
  EXPECT_EQ(gpu.labels.at("nvidia.com/gpu.product"), "Tesla-T4");
  EXPECT_EQ(gpu.labels.at("nvidia.com/gpu.count"), "1");
  EXPECT_EQ(gpu.labels.at("nvidia.com/gpu.memory"), "15360");
  ASSERT_EQ(gpu.taints.size(), 1u);
  EXPECT_EQ(gpu.taints[0], (api::Taint{"nvidia.com/gpu", "present", "NoSchedule"}));
  EXPECT_EQ(Units(gpu.allocatable, "cpu"), 4);
  EXPECT_EQ(Units(gpu.allocatable, "memory"), int64_t{16} << 30);
  EXPECT_EQ(Units(gpu.allocatable, "pods"), 110);  // default
  EXPECT_EQ(Units(gpu.allocatable, "nvidia.com/gpu"), 1);
  EXPECT_EQ(Units(gpu.capacity, "nvidia.com/gpu"), 1);
  ASSERT_EQ(gpu.gpus.size(), 1u);
  EXPECT_EQ(gpu.gpus[0].index, 0);
  EXPECT_EQ(gpu.gpus[0].name, "Tesla-T4");
  EXPECT_EQ(gpu.gpus[0].memory_bytes, uint64_t{15360} << 20);
  EXPECT_THAT(gpu.gpus[0].uuid, StartsWith("GPU-"));
  EXPECT_NE(gpu.gpus[0].uuid, nodes[0].gpus[0].uuid);
  EXPECT_EQ(gpu.runtime, RuntimeKind::kSimulated);
  EXPECT_EQ(gpu.internal_ip, "10.1.0.2");
  EXPECT_EQ(gpu.pod_cidr, "10.128.1.0/24");

  const NodeConfig& cpu = nodes[2];
  EXPECT_EQ(cpu.runtime, RuntimeKind::kProcess);
  EXPECT_EQ(cpu.internal_ip, "127.0.0.1");
  EXPECT_EQ(Units(cpu.allocatable, "pods"), 20);
  EXPECT_EQ(cpu.allocatable.count("nvidia.com/gpu"), 0u);
  EXPECT_EQ(cpu.labels.count("nvidia.com/gpu.product"), 0u);
  ASSERT_EQ(cpu.taints.size(), 2u);
  EXPECT_EQ(cpu.taints[0], (api::Taint{"dedicated", "batch", "PreferNoSchedule"}));
  EXPECT_EQ(cpu.taints[1], (api::Taint{"spot", "", "NoExecute"}));
}

TEST(ClusterFileTest, SameFileSameNodes) {
  std::vector<NodeConfig> a = Parse(kDemo);
  std::vector<NodeConfig> b = Parse(kDemo);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name);
    EXPECT_EQ(a[i].internal_ip, b[i].internal_ip);
    ASSERT_EQ(a[i].gpus.size(), b[i].gpus.size());
    for (size_t g = 0; g < a[i].gpus.size(); ++g) EXPECT_EQ(a[i].gpus[g].uuid, b[i].gpus[g].uuid);
  }
}

TEST(ClusterFileTest, ManyNodesGetDistinctAddresses) {
  std::vector<NodeConfig> nodes = Parse(
      "nodePools:\n"
      "  - {name: sim, count: 1000, gpu: {count: 8, model: A100}}\n");
  ASSERT_EQ(nodes.size(), 1000u);
  EXPECT_EQ(nodes[999].name, "sim-999");
  std::set<std::string> ips, cidrs;
  for (const NodeConfig& n : nodes) {
    ips.insert(n.internal_ip);
    cidrs.insert(n.pod_cidr);
    EXPECT_EQ(n.gpus.size(), 8u);
  }
  EXPECT_EQ(ips.size(), 1000u);
  EXPECT_EQ(cidrs.size(), 1000u);
  EXPECT_EQ(nodes[0].labels.count("nvidia.com/gpu.memory"), 0u);  // no memory given
}

struct BadCase {
  std::string name;
  std::string yaml;
  std::string error;  // the whole message

  friend void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }
};

class BadClusterFileTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadClusterFileTest, SaysWhatAndWhere) {
  EXPECT_EQ(ErrorOf(GetParam().yaml), GetParam().error);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, BadClusterFileTest,
    ::testing::Values(
        BadCase{"Empty", "# nothing\n", "line 1: the cluster file is empty; it needs nodePools"},
        BadCase{"NoPools", "kind: Cluster\n", "line 1: nodePools is required"},
        BadCase{"UnknownTopKey", "nodePools: []\nnodes: 3\n",
                "line 2: cluster file: unknown key \"nodes\"; expected one of: apiVersion, kind, "
                "nodePools, topology"},
        BadCase{"EmptyPools", "nodePools: []\n",
                "line 1: nodePools: expected a non-empty list of node pools"},
        BadCase{"WrongKind", "kind: Pod\nnodePools: [{name: a}]\n",
                "line 1: kind: \"Pod\" is not Cluster"},
        BadCase{"UnknownPoolKey",
                "nodePools:\n  - name: a\n    labelz: {x: y}\n",
                "line 3: nodePools[0]: unknown key \"labelz\"; expected one of: name, count, "
                "labels, taints, allocatable, gpu, runtime"},
        BadCase{"MissingName", "nodePools:\n  - count: 2\n",
                "line 2: nodePools[0]: name is required"},
        BadCase{"BadName", "nodePools:\n  - name: GPU_Node\n",
                "line 2: nodePools[0].name: \"GPU_Node\" must be lower-case letters, digits, '-' "
                "and '.', starting and ending with a letter or digit"},
        BadCase{"CountNotInteger", "nodePools:\n  - name: a\n    count: two\n",
                "line 3: nodePools[0].count: expected an integer, got `two`"},
        BadCase{"CountZero", "nodePools:\n  - name: a\n    count: 0\n",
                "line 3: nodePools[0].count: must be between 1 and 100000"},
        BadCase{"LabelValueBool",
                "nodePools:\n  - name: a\n    labels:\n      spot: yes\n",
                "line 4: nodePools[0].labels.spot: expected a string, got `yes` (quote it)"},
        BadCase{"BadLabelValue",
                "nodePools:\n  - name: a\n    labels:\n      zone: \"a b\"\n",
                "line 4: nodePools[0].labels.zone: \"a b\" is not a valid label value (up to 63 "
                "letters, digits, '-', '_' or '.', starting and ending with a letter or digit)"},
        BadCase{"BadTaintEffect",
                "nodePools:\n  - name: a\n    taints:\n      - {key: k, effect: NoRun}\n",
                "line 4: nodePools[0].taints[0]: effect \"NoRun\" is not NoSchedule, "
                "PreferNoSchedule or NoExecute"},
        BadCase{"BadTaintString", "nodePools:\n  - name: a\n    taints: [gpu]\n",
                "line 3: nodePools[0].taints[0]: \"gpu\" is not key=value:Effect (for example "
                "nvidia.com/gpu=present:NoSchedule)"},
        BadCase{"BadQuantity",
                "nodePools:\n  - name: a\n    allocatable:\n      cpu: 4x\n",
                "line 4: nodePools[0].allocatable.cpu: quantity \"4x\": unknown suffix \"x\""},
        BadCase{"GpuInAllocatable",
                "nodePools:\n  - name: a\n    allocatable:\n      nvidia.com/gpu: 1\n",
                "line 4: nodePools[0].allocatable: give GPUs as gpu: {count: N, model: ..., "
                "memory: ...} rather than nvidia.com/gpu"},
        BadCase{"GpuWithoutModel", "nodePools:\n  - name: a\n    gpu: {count: 1}\n",
                "line 3: nodePools[0].gpu: model is required (for example Tesla-T4)"},
        BadCase{"GpuMemoryWithoutUnit",
                "nodePools:\n  - name: a\n    gpu: {count: 1, model: T4, memory: 15360}\n",
                "line 3: nodePools[0].gpu.memory: 15360 is less than 1Mi; give a unit, for "
                "example 15360Mi or 16Gi"},
        BadCase{"BadRuntime", "nodePools:\n  - name: a\n    runtime: docker\n",
                "line 3: nodePools[0].runtime: \"docker\" is not simulated or process"},
        BadCase{"DuplicateNode",
                "nodePools:\n  - name: a\n    count: 2\n  - name: a-1\n",
                "line 4: nodePools[1]: node \"a-1\" is also named by an earlier pool"},
        BadCase{"PoolNotMap", "nodePools:\n  - just-a-name\n",
                "line 2: nodePools[0]: expected a map"},
        BadCase{"Syntax", "nodePools:\n  - name: a\n   count: 2\n",
                "line 3: end of sequence not found"},
        BadCase{"NvLinkPresetNeedsEightGpus",
                "nodePools:\n  - name: a\n    gpu: {count: 4, model: V100, nvlink: dgx-1}\n",
                "line 3: nodePools[0].gpu.nvlink: dgx-1 is the hybrid cube-mesh of 8 GPUs, but "
                "count is 4"},
        BadCase{"NvLinkUnknownPreset",
                "nodePools:\n  - name: a\n    gpu: {count: 2, model: V100, nvlink: ring}\n",
                "line 3: nodePools[0].gpu.nvlink: \"ring\" is not dgx-1, nvswitch or a matrix of "
                "NVLinks (one row per GPU)"},
        BadCase{"NvLinkRowsNotCount",
                "nodePools:\n  - name: a\n    gpu:\n      count: 3\n      model: V100\n"
                "      nvlink: [[0, 1], [1, 0]]\n",
                "line 6: nodePools[0].gpu.nvlink: 2 rows, but count is 3 (one row per GPU)"},
        BadCase{"NvLinkRowTooShort",
                "nodePools:\n  - name: a\n    gpu:\n      count: 2\n      model: V100\n"
                "      nvlink:\n        - [0, 1]\n        - [1]\n",
                "line 8: nodePools[0].gpu.nvlink[1]: expected a list of 2 NVLink counts (one per "
                "GPU)"},
        BadCase{"NvLinkAsymmetric",
                "nodePools:\n  - name: a\n    gpu:\n      count: 2\n      model: V100\n"
                "      nvlink:\n        - [0, 1]\n        - [2, 0]\n",
                "line 7: nodePools[0].gpu.nvlink[1][0]: 2 NVLinks, but [0][1] says 1 (links are "
                "the same both ways)"},
        BadCase{"NvLinkToItself",
                "nodePools:\n  - name: a\n    gpu:\n      count: 2\n      model: V100\n"
                "      nvlink: [[1, 1], [1, 0]]\n",
                "line 6: nodePools[0].gpu.nvlink[0][0]: 1 NVLinks from GPU 0 to itself; give 0"},
        BadCase{"NvLinkNotANumber",
                "nodePools:\n  - name: a\n    gpu:\n      count: 2\n      model: V100\n"
                "      nvlink: [[0, two], [2, 0]]\n",
                "line 6: nodePools[0].gpu.nvlink[0][1]: expected an integer, got `two`"},
        BadCase{"TwoDocuments", "nodePools: [{name: a}]\n---\nnodePools: [{name: b}]\n",
                "line 1: a cluster file is one YAML document; found several separated by ---"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; });

TEST(ClusterFileTest, NvLinksBecomeTheNodesGpuTopology) {
  std::vector<NodeConfig> nodes = Parse(R"(nodePools:
  - name: dgx1
    gpu: {count: 8, model: Tesla-V100-SXM2-32GB, nvlink: dgx-1}
  - name: hgx
    gpu: {count: 4, model: NVIDIA-H100-80GB-HBM3, nvlink: nvswitch}
  - name: pair
    gpu:
      count: 3
      model: NVIDIA-A100-PCIE-40GB
      nvlink:
        - [0, 4, 0]
        - [4, 0, 0]
        - [0, 0, 0]
  - name: t4
    gpu: {count: 2, model: Tesla-T4}
)");
  ASSERT_EQ(nodes.size(), 4u);
  EXPECT_EQ(GpuTopologyAnnotation(nodes[0]),
            "v1;gpus=8;nvlink=0-1:1,0-2:1,0-3:2,0-4:2,1-2:2,1-3:1,1-5:2,2-3:2,2-6:1,3-7:1,4-5:1,"
            "4-6:1,4-7:2,5-6:2,5-7:1,6-7:2");
  ASSERT_EQ(nodes[0].gpus[0].peers.size(), 7u);
  EXPECT_EQ(nodes[0].gpus[0].Peer(4)->nvlinks, 2);
  EXPECT_EQ(GpuTopologyAnnotation(nodes[1]),
            "v1;gpus=4;nvlink=0-1:18,0-2:18,0-3:18,1-2:18,1-3:18,2-3:18");
  EXPECT_EQ(GpuTopologyAnnotation(nodes[2]), "v1;gpus=3;nvlink=0-1:4");
  EXPECT_EQ(GpuTopologyAnnotation(nodes[3]), "");  // PCIe only: no annotation
}

TEST(ClusterFileTest, LoadNamesTheFile) {
  char path[] = "/tmp/muster-cluster-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  {
    std::ofstream out(path);
    out << "nodePools:\n  - name: a\n    runtime: vm\n";
  }
  absl::StatusOr<std::vector<NodeConfig>> nodes = LoadClusterFile(path);
  ASSERT_FALSE(nodes.ok());
  EXPECT_EQ(std::string(nodes.status().message()),
            std::string(path) + ": line 3: nodePools[0].runtime: \"vm\" is not simulated or process");
  std::remove(path);

  absl::StatusOr<std::vector<NodeConfig>> missing = LoadClusterFile("/nonexistent/cluster.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("/nonexistent/cluster.yaml"));
}

TEST(ClusterFileTest, LocalNodeDescribesThisMachine) {
  NodeConfig node = LocalNode();
  EXPECT_FALSE(node.name.empty());
  EXPECT_EQ(node.runtime, RuntimeKind::kProcess);
  EXPECT_GE(Units(node.allocatable, "cpu"), 1);
  EXPECT_GT(Units(node.allocatable, "memory"), int64_t{64} << 20);
  EXPECT_EQ(node.allocatable.count("nvidia.com/gpu"), 0u);
  EXPECT_EQ(node.labels.at("kubernetes.io/hostname"), node.name);

  std::vector<gpu::GpuDevice> gpus(2);
  for (int i = 0; i < 2; ++i) {
    gpus[i].index = i;
    gpus[i].uuid = "GPU-" + std::to_string(i);
    gpus[i].name = "NVIDIA A100-SXM4-80GB";
    gpus[i].memory_bytes = uint64_t{81920} << 20;
  }
  NodeConfig with_gpus = LocalNode(gpus);
  EXPECT_EQ(Units(with_gpus.allocatable, "nvidia.com/gpu"), 2);
  EXPECT_EQ(with_gpus.labels.at("nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(with_gpus.labels.at("nvidia.com/gpu.count"), "2");
  EXPECT_EQ(with_gpus.labels.at("nvidia.com/gpu.memory"), "81920");
  EXPECT_EQ(with_gpus.gpus.size(), 2u);
}

}  // namespace
}  // namespace muster::node
