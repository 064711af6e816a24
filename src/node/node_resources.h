#pragma once

// What one node hands out to the pods it runs: devices, room for their requests, pod addresses.
//
// Devices: each resource the node hands out by device (NodeConfig::device_resources; by default
// nvidia.com/gpu with one device per GPU) has its devices numbered from 0. For nvidia.com/gpu the
// scheduler names a pod's devices in annotation muster.dev/gpu-indices ("0,3"); those are taken
// as given (the scheduler keeps them apart). Every other resource (MIG devices under the mixed
// strategy, renamed time-slicing replicas), and nvidia.com/gpu for a pod placed without the
// annotation (by another scheduler), gets the lowest-numbered devices no pod holds, as the
// kubelet's device manager would hand them out. A device is never handed out twice that way.
//
// Requests: the node admits a pod as the kubelet does (lifecycle/predicate.go, the scheduler's
// noderesources fit), only when its effective requests fit the node's allocatable beside those of
// the pods it admitted before. Two schedulers placing pods from caches that lag each other can
// both pick the node; this keeps what it runs within its allocatable.
//
// Thread-safety: every method may be called from any thread.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "node/cluster_file.h"

namespace muster::node {

// The devices one pod holds: resource name -> device numbers in that resource's list.
using DeviceGrant = std::map<std::string, std::vector<int>>;

// Why the kubelet turns a pod away: reason "OutOfcpu", message "Node didn't have enough resource:
// cpu, requested: 500, used: 13800, capacity: 14000".
struct Rejection {
  std::string reason;
  std::string message;
};

class NodeResources {
 public:
  explicit NodeResources(NodeConfig config);

  const NodeConfig& config() const { return config_; }
  // The resources handed out by device: the config's, or nvidia.com/gpu with a device per GPU.
  const std::vector<DeviceResource>& device_resources() const { return resources_; }
  // The device `number` of `resource`; nullptr when there is none.
  const NodeDevice* Device(const std::string& resource, int number) const;

  // The devices pod `uid` uses: `wanted` per resource, nvidia.com/gpu's being `named_gpus` when
  // that is not empty (validated against the node's devices). All or nothing. Calling again for
  // the same uid returns what it already holds. FailedPrecondition, with the kubelet's message,
  // when the node cannot provide them.
  absl::StatusOr<DeviceGrant> AcquireDevices(const std::string& uid,
                                             const std::vector<int>& named_gpus,
                                             const std::map<std::string, int>& wanted);
  // Admits pod `uid`'s effective `requests` beside those of the pods admitted before: the
  // Rejection for the first that does not fit the node's allocatable, pods first (one per pod,
  // when the allocatable sets `pods`), then cpu (in milli), memory and the rest (in units) by
  // name; nullopt once admitted. A resource missing from the allocatable has capacity 0, except
  // extended ones ("example.com/foo"), which the kubelet leaves to the cluster. Resources handed
  // out by device and GPU shares are AcquireDevices'. `admitted_before` (a pod adopted after a
  // restart) counts them without checking. All or nothing; calling again for the same uid
  // admits without counting twice.
  std::optional<Rejection> AdmitRequests(const std::string& uid, const api::ResourceList& requests,
                                         bool admitted_before = false);
  // Frees what pod `uid` holds: its devices and its admitted requests.
  void Release(const std::string& uid);
  // Devices of every resource: those some pod holds, and all.
  [[nodiscard]] int DevicesInUse() const;
  [[nodiscard]] int DeviceCount() const;

  // An address for a new pod: the node's own for process nodes, the next one of the node's pod
  // network for simulated ones.
  std::string NextPodIp();

 private:
  const NodeConfig config_;
  const std::vector<DeviceResource> resources_;
  mutable std::mutex mu_;
  std::map<std::string, DeviceGrant> held_;            // pod uid -> its devices
  std::map<std::string, std::vector<int>> users_;      // resource -> per device: pods holding it
  std::map<std::string, api::ResourceList> admitted_;  // pod uid -> the requests counted for it
  api::ResourceList used_;                             // their sum
  int next_host_ = 0;
};

}  // namespace muster::node
