#include "scheduler/cluster_mirror.h"

#include <algorithm>

#include "api/gpu_indices.h"
#include "core/podgroup_phase.h"
#include "core/resources.h"

namespace muster::scheduler {

Served ServedBy(const api::Pod& pod, const MirrorOptions& options) {
  const std::string& name = pod.spec.scheduler_name;
  if (std::find(options.scheduler_names.begin(), options.scheduler_names.end(), name) !=
      options.scheduler_names.end()) {
    return Served::kGang;
  }
  if (options.serve_default_scheduler && (name.empty() || name == kDefaultSchedulerName)) {
    return Served::kDefault;
  }
  return Served::kNo;
}

bool IsDefaultSchedulerJob(const core::JobInfo& job) {
  return job.name.starts_with(kDefaultGroupPrefix);
}

ClusterMirror::ClusterMirror(MirrorOptions options) : options_(std::move(options)) {
  if (options_.serve_default_scheduler) {
    // Default-scheduler pods are placed in a session of their own (KubeSchedulerConf) and
    // left out of Volcano's; their queue is never another queue's to reclaim from.
    api::Queue q;
    q.meta.name = kDefaultQueueName;
    q.spec.reclaimable = false;
    cluster_.UpsertQueue(q);
  }
}

void ClusterMirror::Overlay(api::Pod& pod, const std::string& key) {
  auto it = assumed_.find(key);
  if (it == assumed_.end()) return;
  Assumed& a = it->second;
  if (a.uid != pod.meta.uid) {
    assumed_.erase(it);
    return;
  }
  if (!a.node.empty()) {
    if (pod.spec.node_name.empty()) {
      pod.spec.node_name = a.node;
      if (!a.gpu_indices.empty()) pod.meta.annotations[api::kGpuIndicesAnnotation] = a.gpu_indices;
    } else {
      a.node.clear();  // the API's own word has arrived
    }
  }
  if (a.evicted) {
    if (pod.meta.deletion_timestamp.empty()) {
      pod.meta.deletion_timestamp = "assumed";
    } else {
      a.evicted = false;
    }
  }
  if (!a.group.empty()) {
    auto g = pod.meta.annotations.find(api::kGroupNameAnnotation);
    if (g == pod.meta.annotations.end()) {
      pod.meta.annotations[api::kGroupNameAnnotation] = a.group;
    } else {
      a.group.clear();
    }
  }
  if (a.node.empty() && !a.evicted && a.group.empty()) assumed_.erase(it);
}

std::string ClusterMirror::UpsertPod(api::Pod pod) {
  ++changes_;
  const std::string key = pod.meta.namespace_ + "/" + pod.meta.name;
  Overlay(pod, key);
  // An unbound pod being deleted will never be placed (the API deletes it at once).
  if (!pod.meta.deletion_timestamp.empty() && pod.spec.node_name.empty()) {
    RemovePod(pod.meta.namespace_, pod.meta.name);
    return "";
  }
  std::string group;
  switch (ServedBy(pod, options_)) {
    case Served::kNo:
      pod.meta.annotations.erase(api::kGroupNameAnnotation);
      without_group_.erase(key);
      break;
    case Served::kDefault: {
      group = kDefaultGroupPrefix + pod.meta.name;
      pod.meta.annotations[api::kGroupNameAnnotation] = group;
      without_group_.erase(key);
      core::JobInfo* j = cluster_.FindJob(pod.meta.namespace_ + "/" + group);
      if (j == nullptr || !j->pg || j->uid != pod.meta.uid) {
        api::PodGroup pg;
        pg.meta.name = group;
        pg.meta.namespace_ = pod.meta.namespace_;
        pg.meta.uid = pod.meta.uid;
        pg.meta.creation_timestamp = pod.meta.creation_timestamp;
        pg.spec.min_member = 1;
        pg.spec.queue = kDefaultQueueName;
        pg.spec.priority_class_name = pod.spec.priority_class_name;
        // Admitted from the start: kube-scheduler has no admission step.
        pg.status.phase = core::PodGroupPhaseName(core::PodGroupPhase::kInqueue);
        cluster_.UpsertPodGroup(pg);
      }
      break;
    }
    case Served::kGang: {
      auto g = pod.meta.annotations.find(api::kGroupNameAnnotation);
      if (g != pod.meta.annotations.end() && !g->second.empty()) {
        group = g->second;
        without_group_.erase(key);
      } else if (pod.spec.node_name.empty() && pod.status.phase != "Succeeded" &&
                 pod.status.phase != "Failed") {
        without_group_[key] = std::make_shared<const api::Pod>(pod);
      } else {
        without_group_.erase(key);
      }
      break;
    }
  }
  cluster_.UpsertPod(pod);
  return group.empty() ? std::string() : pod.meta.namespace_ + "/" + group;
}

std::string ClusterMirror::RemovePod(const std::string& ns, const std::string& name) {
  ++changes_;
  const std::string key = ns + "/" + name;
  std::string job;
  if (core::TaskInfo* t = cluster_.FindTask(key); t != nullptr && t->job >= 0) {
    const core::JobInfo& j = cluster_.job(t->job);
    job = j.key;
    if (IsDefaultSchedulerJob(j)) {
      std::string group = j.name;
      cluster_.RemovePod(ns, name);
      cluster_.RemovePodGroup(ns, group);
      assumed_.erase(key);
      without_group_.erase(key);
      return job;
    }
  }
  cluster_.RemovePod(ns, name);
  assumed_.erase(key);
  without_group_.erase(key);
  return job;
}

void ClusterMirror::AssumeBound(const std::string& key, const std::string& uid,
                                const std::string& node, const std::string& gpu_indices) {
  ++changes_;  // the session's placement stands
  Assumed& a = assumed_[key];
  if (a.uid != uid) a = Assumed{uid, "", "", false, ""};
  a.node = node;
  a.gpu_indices = gpu_indices;
}

void ClusterMirror::AssumeEvicted(const std::string& key, const std::string& uid) {
  ++changes_;
  Assumed& a = assumed_[key];
  if (a.uid != uid) a = Assumed{uid, "", "", false, ""};
  a.evicted = true;
}

void ClusterMirror::AssumeGroup(const std::string& key, const std::string& uid,
                                const std::string& group) {
  auto it = without_group_.find(key);
  if (it == without_group_.end() || it->second->meta.uid != uid) return;
  Assumed& a = assumed_[key];
  if (a.uid != uid) a = Assumed{uid, "", "", false, ""};
  a.group = group;
  api::Pod pod = *it->second;
  UpsertPod(std::move(pod));
}

void ClusterMirror::Reapply(const std::string& key) {
  core::TaskInfo* t = cluster_.FindTask(key);
  if (t == nullptr || !t->pod) return;
  api::Pod pod = *t->pod;
  UpsertPod(std::move(pod));
}

}  // namespace muster::scheduler
