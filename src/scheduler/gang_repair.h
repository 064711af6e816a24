#pragma once

// Crash-consistent gangs over HTTP. A gang's binds are one store commit only in process
// (apiserver::LocalTransport); against kube-apiserver they are one `pods/binding` call per pod, so a
// scheduler that dies (or loses its lease, or meets an error) between two of them leaves a gang
// bound below minAvailable, holding GPUs that no one can use: Volcano's open bug #5805.
//
// muster therefore records a gang's placement on its PodGroup (annotation muster.dev/placement:
// each member's name, UID, node and GPU indices) before binding it, and at the start of every
// cycle, the first after it starts or takes over leadership included, looks for gangs of its own
// left bound below minAvailable with pods of that record still unbound. Such a gang is completed
// as recorded when that still fits (the nodes exist, are ready and have the room and the GPU
// devices), and otherwise undone: its bound members are deleted (their controller makes them
// again) so that the gang is placed again whole. Pods of other schedulers are never touched, and
// a record whose pods were since replaced (other UIDs) or all bound is left alone.
//
// Planning reads the scheduler's ClusterMirror only; the scheduler carries the plan out.

#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "core/cluster.h"

namespace muster::scheduler {

inline constexpr char kPlacementAnnotation[] = "muster.dev/placement";

struct RecordedMember {
  std::string name;
  std::string uid;
  std::string node;
  std::string gpus;  // "0,3" as muster.dev/gpu-indices; "" for none
};

// The annotation's value for a gang's bindings (one namespace): {"pods":[{"name","uid","node",
// "gpus"}...]}, members in the order given.
std::string PlacementText(const std::vector<client::Binding>& bindings);
// The members the value records; empty when it does not parse.
std::vector<RecordedMember> ParsePlacement(std::string_view text);

// The merge patch that records `bindings` on their PodGroup.
std::string PlacementPatch(const std::vector<client::Binding>& bindings);

struct GangRepair {
  std::string job;  // the PodGroup's key, ns/name
  int32_t min_available = 0;
  int bound = 0;     // members bound now
  // Complete: bind these (the recorded members still unbound, as recorded). Otherwise delete
  // `undo` (the bound members: ns, name and UID in a Binding's fields; node as bound).
  bool complete = false;
  std::vector<client::Binding> bindings;
  std::vector<client::Binding> undo;
  std::string why;  // for the log: why it cannot be completed
};

// The gangs of `scheduler_names` left bound below minAvailable, each with its repair, in job order.
std::vector<GangRepair> PlanGangRepairs(const core::Cluster& cluster,
                                        const std::vector<std::string>& scheduler_names);

}  // namespace muster::scheduler
