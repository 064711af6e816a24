#pragma once

// Reservations for large gangs (EASY backfilling), used by allocate when its configuration asks
// for them:
//
//   configurations:
//   - name: allocate
//     arguments: {reserveGpus: 16, reserveAfter: 10m}
//
// Rationale. Volcano's allocate skips a gang that does not fit and places the jobs behind it, so
// a stream of small jobs can keep a large gang from ever finding enough free GPUs at once. A
// reservation goes to the first gang in job order, asking at least reserveGpus GPUs and created
// at least reserveAfter ago, that cannot be placed: at the start of allocate to the first such
// gang created before this cycle (an earlier cycle could not place it), which allocate then tries
// before any other job; else, or once that one is placed, to the first such gang allocate fails
// to place. Its shadow time is the earliest time at which it fits, computed from the expected
// ends of the pods now on the nodes (start time plus the muster.dev/expected-runtime annotation;
// a pod without one is expected to run for ever, and a gang that only such pods' ends would make
// room for gets no reservation). While it holds, every other job of the gang's priority or lower
// that allocate comes to keeps its placements only if it is expected to end by the shadow time
// or if the gang still fits at the shadow time with it on its nodes; a job of higher priority is
// not held back by a lower one's reservation. The reservation lives for one cycle and is planned
// afresh in the next, so it follows the cluster as pods start and end. It needs the cycle's time
// (SessionOptions::now_unix); without it allocate holds no reservations.
//
// At the shadow time the gang's pods are fitted first-fit in node order over the nodes whose
// predicates they pass (or fail only for reasons that freeing resources cures), counting
// resources only: which node each pod will get is left to allocate when the time comes. A gang
// in hard network-topology mode (network-topology-aware's HyperNodeGradient::hard) is fitted
// within one HyperNode it may land in: the shadow time is the earliest at which some such
// HyperNode (a rack) holds it, and the jobs turned away are those that would keep every such
// HyperNode from holding it then. Planned over the whole cluster instead, a hard gang's
// reservation would hold back jobs for room spread over racks that the gang cannot use.

#include <limits>
#include <string>
#include <vector>

#include "core/framework/session.h"

namespace muster::core {

// Whether `j` asks for at least options.reserve_gpus GPUs over all its pods, so that it gets a
// reservation when allocate cannot place it (reserveAfter aside). False when reservations are off.
// The live scheduler keeps such gangs out of its backoff: a backed-off gang is not in the
// session, and would lose its reservation for as long as it waits.
bool AsksForReservation(const Cluster& cluster, const JobInfo& j, const AllocateOptions& options);

// One cycle's reservation. Not thread-safe; lives within one allocate.
class Reservation {
 public:
  Reservation(Session& ssn, const AllocateOptions& options);

  bool active() const { return gang_ != nullptr; }
  // The reserved gang, or nullptr.
  const JobInfo* gang() const { return gang_; }
  // When the reserved gang is expected to fit, in Unix seconds.
  double shadow() const { return shadow_; }

  // Whether `j` would get a reservation if allocate cannot place it: no reservation yet, j asks
  // for at least reserveGpus GPUs and its PodGroup is at least reserveAfter old.
  bool Wants(const JobInfo& j) const;
  // Whether j's PodGroup was created before this cycle (so an earlier cycle has tried it).
  bool Waited(const JobInfo& j) const;
  // Plans the reservation for gang `j`, which allocate could not place. False (and none held)
  // when no known end of a pod makes room for it.
  bool Plan(const JobInfo& j);
  // Ends the reservation: its gang has been placed, or will not be placed now after all. The
  // gang gets no second one in this cycle.
  void Release();
  // Whether `j`, whose pods the open statement has just placed, may keep them: no reservation, j
  // is the gang or of higher priority, j is expected to end by the shadow time, or the gang still
  // fits at the shadow time with j where it is. When it may, j's placements are counted at the
  // shadow time from then on.
  bool Admit(const JobInfo& j);
  // "waits for the reservation of <gang> (expected to fit in <seconds>s)", for a job Admit
  // turned away.
  std::string TurnedAwayReason() const;

 private:
  // When `t`, now on a node, is expected to leave it: Unix seconds, or infinity.
  double ExpectedEnd(const TaskInfo& t) const;
  // Whether the gang's pods fit into `free` (by index in ssn.nodes()): within one of within_
  // when it is not empty.
  bool GangFits(const std::vector<Resources>& free) const;
  // Whether they fit first-fit into the nodes `indices` of `free` (all when null).
  bool GangFitsIn(const std::vector<Resources>& free, const std::vector<int>* indices) const;

  Session& ssn_;
  AllocateOptions options_;
  double now_ = 0;
  std::vector<int> node_index_;  // cluster node id -> index in ssn.nodes(), -1 when not there
  const JobInfo* gang_ = nullptr;
  const JobInfo* released_ = nullptr;
  double shadow_ = std::numeric_limits<double>::infinity();
  std::vector<const TaskInfo*> gang_tasks_;  // the pods the gang needs placed, in task order
  std::vector<std::vector<char>> eligible_;  // per gang task, per node: predicates allow it
  // Hard network-topology mode: per HyperNode the gang may land in, its nodes (indices in
  // ssn.nodes()); the gang must fit within one. Empty: anywhere.
  std::vector<std::vector<int>> within_;
  std::vector<Resources> free_at_shadow_;    // per node, once the pods ending by then are gone
};

}  // namespace muster::core
