#pragma once

// What the node agents run: the nodes of a cluster file (docs/cluster-file.md), or this machine.
//
// A cluster file is YAML with a list of node pools; each pool expands to `count` nodes named
// `<name>-0` .. `<name>-<count-1>` (or one node named `name` when `count` is left out) with the
// pool's labels, taints, allocatable resources, GPUs and runtime:
//
//   nodePools:
//     - name: gpu-node
//       count: 2
//       labels: {node.kubernetes.io/instance-type: g4dn.xlarge}
//       taints: ["nvidia.com/gpu=present:NoSchedule"]
//       allocatable: {cpu: "4", memory: 16Gi}
//       gpu: {count: 1, model: Tesla-T4, memory: 15360Mi}   # nvlink: dgx-1 | nvswitch | matrix
//       runtime: simulated
//
// A `topology` section describes racks and spines over those nodes (cluster_topology.h), which
// `muster up` creates as Volcano HyperNodes.
//
// Errors are InvalidArgument and start with the 1-based line they are about ("line 7: ...").

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/model.h"
#include "gpu/device.h"

namespace muster::node {

// How a node runs its pods.
enum class RuntimeKind {
  // Pods "run" for the seconds in annotation muster.dev/run-seconds (absent: until deleted) and
  // exit with muster.dev/exit-code (default 0). Nothing is started on this machine.
  kSimulated,
  // Each container's command and args run as a process group on this machine.
  kProcess,
};

std::string_view RuntimeKindName(RuntimeKind kind);  // "simulated", "process"

// One device a node hands to pods: a whole GPU, a MIG device, or a time-slicing replica of
// either (what a device plugin advertises; cmd/gpu_node.h builds them from NVIDIA's config).
struct NodeDevice {
  std::string id;       // the device plugin's ID: "GPU-...", "MIG-...", "GPU-...::2" for a replica
  std::string visible;  // its NVIDIA_VISIBLE_DEVICES entry: a UUID, or an index ("1", "0:1")
  std::string cuda;     // its CUDA_VISIBLE_DEVICES entry: the GPU's index, or the MIG device's UUID
};

// A resource a node hands out by device, as the kubelet's device manager hands out a device
// plugin's devices: "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared".
struct DeviceResource {
  std::string name;
  std::vector<NodeDevice> devices;
};

// One node as its agent registers and runs it.
struct NodeConfig {
  std::string name;
  api::StringMap labels;  // the pool's plus kubernetes.io/{hostname,os,arch} and GFD GPU labels
  std::vector<api::Taint> taints;
  api::ResourceList capacity;     // equal to allocatable (no system reservations)
  api::ResourceList allocatable;  // includes nvidia.com/gpu when the node has GPUs
  // index (what CUDA_VISIBLE_DEVICES and muster.dev/gpu-indices name), uuid, name, memory_bytes.
  // Simulated nodes get `count` devices named after their pool's model with stable UUIDs.
  std::vector<gpu::GpuDevice> gpus;
  // The resources handed out by device, each in `allocatable` with its number of devices. The
  // devices of nvidia.com/gpu are what muster.dev/gpu-indices numbers (0 is the first). Empty:
  // nvidia.com/gpu with one device per entry of `gpus`, named by its index in both variables.
  std::vector<DeviceResource> device_resources;
  RuntimeKind runtime = RuntimeKind::kSimulated;
  // InternalIP of the node. Pods of simulated nodes get addresses from `pod_cidr`; pods of
  // process nodes share this machine's network and get the node's address.
  std::string internal_ip;
  std::string pod_cidr;  // "10.128.3.0/24"; empty for process nodes
};

// A cluster file read: its nodes, and the HyperNodes of its `topology` section (racks of tier 1
// first, then spines of tier 2, each in file order; none without the section). The nodes of a
// rack carry kRackLabel, and of a spine kSpineLabel (cluster_topology.h).
struct ClusterSpec {
  std::vector<NodeConfig> nodes;
  std::vector<api::HyperNode> hypernodes;
};

// Parses a cluster file and expands its pools into nodes, in file order. Node addresses are
// assigned by position: node i (0-based over the whole file) is 10.1.(i/250).(i%250+1) with pod
// network 10.(128+i/256).(i%256).0/24; process-runtime nodes use 127.0.0.1 for both.
absl::StatusOr<ClusterSpec> ParseClusterSpec(std::string_view text);
// ParseClusterSpec's nodes alone.
absl::StatusOr<std::vector<NodeConfig>> ParseClusterFile(std::string_view text);

// Reads and parses `path`; errors are prefixed with the path ("cluster.yaml: line 3: ...").
absl::StatusOr<ClusterSpec> LoadClusterSpec(const std::string& path);
absl::StatusOr<std::vector<NodeConfig>> LoadClusterFile(const std::string& path);

// This machine as one process-runtime node: its hostname (as a node name), the CPUs this process
// may run on (sched_getaffinity), MemTotal from /proc/meminfo, 110 pods, and `gpus` (what
// gpu::Discover found; none without a driver) as nvidia.com/gpu with GFD labels from the first
// device (its name with spaces as '-', "NVIDIA-A100-SXM4-80GB").
NodeConfig LocalNode(const std::vector<gpu::GpuDevice>& gpus = {});

// The node's muster.dev/gpu-topology annotation (api/gpu_topology.h) from its GPUs' NVLinks (a
// cluster file's gpu.nvlink, or what NVML reports for this machine); "" when no two GPUs share an
// NVLink, or when NVML's counts are not the same both ways.
std::string GpuTopologyAnnotation(const NodeConfig& node);

// GFD-style labels for `count` GPUs of `model` with `memory_bytes` each:
// nvidia.com/gpu.product, nvidia.com/gpu.count, nvidia.com/gpu.memory (MiB).
api::StringMap GpuLabels(const std::string& model, int count, uint64_t memory_bytes);

}  // namespace muster::node
