#pragma once

// ClusterMirror: the scheduler's core::Cluster, kept current from API objects one change at a
// time (Upsert/Remove per watch event; nothing is rebuilt per cycle), with the adapter's rules
// for which pods the scheduler serves:
//   - pods whose schedulerName is one of the scheduler's names (volcano, muster) are placed as
//     members of the PodGroup their annotation scheduling.k8s.io/group-name names; one that
//     names none waits until its one-member PodGroup exists and the pod names it
//     (PodsWithoutGroup; the podgroup controller, controller/podgroup_controller.h, writes both);
//   - with serve_default_scheduler, pods with no schedulerName (or default-scheduler) are placed
//     one by one: each is its own one-member group in a queue of its own, both known only to the
//     core (IsDefaultSchedulerJob). The scheduler places them in a session of their own with
//     kube-scheduler's filters and scores (KubeSchedulerConf) and leaves them out of Volcano's,
//     so that gangs, queue shares and admission neither hold them back nor count them;
//   - every other pod only occupies the node it is bound to.
// It also remembers what the scheduler has just written and the API accepted (a bind, an
// eviction, a group annotation) until the pod's own watch event shows it, so that an older
// version of the pod still in flight from the watch is never read as undoing it (kube-
// scheduler's assume cache): no pod is placed twice.
//
// Thread-safety: none; the scheduler's loop owns it.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "api/model.h"
#include "core/cluster.h"
#include "core/framework/conf.h"

namespace muster::scheduler {

inline constexpr char kDefaultSchedulerName[] = "default-scheduler";
// Core-only names for default-scheduler pods' groups ("default-scheduler:<pod>") and their queue.
// A colon cannot appear in an API object's name, so they never meet a real PodGroup or Queue.
inline constexpr char kDefaultGroupPrefix[] = "default-scheduler:";
inline constexpr char kDefaultQueueName[] = "default-scheduler:pods";

enum class Served {
  kNo,       // another scheduler's pod
  kGang,     // a pod of this scheduler (volcano, muster)
  kDefault,  // a default-scheduler pod this scheduler places (serve_default_scheduler)
};

struct MirrorOptions {
  std::vector<std::string> scheduler_names = {"volcano", "muster"};
  bool serve_default_scheduler = false;
};

Served ServedBy(const api::Pod& pod, const MirrorOptions& options);

// True for the core-only group of a default-scheduler pod.
bool IsDefaultSchedulerJob(const core::JobInfo& job);

// The configuration default-scheduler pods are placed with, one at a time as kube-scheduler
// places them (core/framework/conf.h): allocate and backfill (no admission, no gang, no queue
// shares), ordered by priority, kube-scheduler's filters (predicates) and scores (nodeorder).
using core::KubeSchedulerConf;

class ClusterMirror {
 public:
  explicit ClusterMirror(MirrorOptions options);

  core::Cluster& cluster() { return cluster_; }
  const core::Cluster& cluster() const { return cluster_; }
  const MirrorOptions& options() const { return options_; }

  // Applies a pod's current state. Returns the key ("ns/name") of the core job the pod belongs
  // to, or "" when it belongs to none.
  std::string UpsertPod(api::Pod pod);
  // Returns the key of the job the pod belonged to, or "".
  std::string RemovePod(const std::string& ns, const std::string& name);
  void UpsertNode(const api::Node& node) {
    ++changes_;
    cluster_.UpsertNode(node);
  }
  void RemoveNode(const std::string& name) {
    ++changes_;
    cluster_.RemoveNode(name);
  }
  void UpsertPodGroup(const api::PodGroup& pg) {
    ++changes_;
    cluster_.UpsertPodGroup(pg);
  }
  // A PodGroup whose status or whose start-estimate annotations alone changed (changes.h: a
  // change that helps nobody), as the scheduler's own writes come back: not counted in Changes().
  // Its phase, the one status field the view holds, is a caller's to compare.
  void UpsertPodGroupStatus(const api::PodGroup& pg) { cluster_.UpsertPodGroup(pg); }
  void RemovePodGroup(const std::string& ns, const std::string& name) {
    ++changes_;
    cluster_.RemovePodGroup(ns, name);
  }
  void UpsertQueue(const api::Queue& queue) {
    ++changes_;
    cluster_.UpsertQueue(queue);
  }
  void RemoveQueue(const std::string& name) {
    ++changes_;
    cluster_.RemoveQueue(name);
  }
  void UpsertHyperNode(const api::HyperNode& hn) {
    ++changes_;
    cluster_.UpsertHyperNode(hn);
  }
  void RemoveHyperNode(const std::string& name) {
    ++changes_;
    cluster_.RemoveHyperNode(name);
  }
  void UpsertPriorityClass(const api::PriorityClass& pc) {
    ++changes_;
    cluster_.UpsertPriorityClass(pc);
  }
  void RemovePriorityClass(const std::string& name) {
    ++changes_;
    cluster_.RemovePriorityClass(name);
  }

  // The API bound the pod (UID `uid`) to `node` with GPU annotation `gpu_indices` ("" for none).
  void AssumeBound(const std::string& key, const std::string& uid, const std::string& node,
                   const std::string& gpu_indices);
  // The API accepted the pod's deletion.
  void AssumeEvicted(const std::string& key, const std::string& uid);
  // The API accepted the pod's group annotation; re-applies the pod with it.
  void AssumeGroup(const std::string& key, const std::string& uid, const std::string& group);
  // Re-derives the task's state from the last pod object applied (after a write the API
  // refused, to undo what the cycle assumed).
  void Reapply(const std::string& key);

  // Bumped by every change above (an API object applied or removed, a write assumed or undone):
  // what was concluded from the view (the waiting gangs' start estimates, estimates.h) holds
  // while it is unchanged. A session's own placements, which the cycle either binds (and so
  // assumes) or takes back, do not bump it.
  uint64_t Changes() const { return changes_; }

  // Pending pods of this scheduler that name no PodGroup, by key.
  const std::map<std::string, std::shared_ptr<const api::Pod>>& PodsWithoutGroup() const {
    return without_group_;
  }

 private:
  struct Assumed {
    std::string uid;
    std::string node;  // bound there, when not empty
    std::string gpu_indices;
    bool evicted = false;
    std::string group;  // annotated with it, when not empty
  };
  void Overlay(api::Pod& pod, const std::string& key);

  MirrorOptions options_;
  core::Cluster cluster_;
  std::unordered_map<std::string, Assumed> assumed_;
  std::map<std::string, std::shared_ptr<const api::Pod>> without_group_;
  uint64_t changes_ = 0;
};

}  // namespace muster::scheduler
