#pragma once

// Shared pieces of the benchmark suites: object builders in the style of kube-scheduler's
// scheduler_perf templates (node-default.yaml, pod-default.yaml), a cycle driver that runs real
// Sessions and applies their binds the way scenario.cc does, and small statistics helpers.
//
// Nothing here reaches into the engine: clusters are built with Cluster::Upsert*, decisions come
// from Session::Run, and binds are written back as pod updates with spec.nodeName set.

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "api/model.h"
#include "core/cluster.h"
#include "core/framework/conf.h"
#include "core/framework/session.h"

namespace muster::bench {

// Parses a Kubernetes quantity; aborts on malformed text (benchmark inputs are constants).
common::Quantity Q(const std::string& text);

class NodeBuilder {
 public:
  explicit NodeBuilder(std::string name);
  // Sets capacity and allocatable alike.
  NodeBuilder& Resource(const std::string& name, const std::string& quantity);
  NodeBuilder& Label(const std::string& key, const std::string& value);
  NodeBuilder& Taint(const std::string& key, const std::string& value, const std::string& effect);
  api::Node Obj() const { return node_; }

 private:
  api::Node node_;
};
inline NodeBuilder MakeNode(std::string name) { return NodeBuilder(std::move(name)); }

class PodBuilder {
 public:
  PodBuilder(std::string ns, std::string name);
  // Requests and limits alike, as scheduler_perf's pod-default.yaml.
  PodBuilder& Request(const std::string& name, const std::string& quantity);
  // The PodGroup this pod belongs to (scheduling.k8s.io/group-name annotation).
  PodBuilder& Group(const std::string& pod_group);
  PodBuilder& TolerateExists(const std::string& key, const std::string& effect);
  // requiredDuringSchedulingIgnoredDuringExecution: one term, `key In values`.
  PodBuilder& RequireNodeLabelIn(const std::string& key, std::vector<std::string> values);
  // Bound to `node` with phase Running (a pod that was placed before the benchmark starts).
  PodBuilder& RunningOn(const std::string& node);
  api::Pod Obj() const { return pod_; }

 private:
  api::Pod pod_;
};
inline PodBuilder MakePod(std::string ns, std::string name) {
  return PodBuilder(std::move(ns), std::move(name));
}

class PodGroupBuilder {
 public:
  PodGroupBuilder(std::string ns, std::string name);
  PodGroupBuilder& MinMember(int32_t n);
  PodGroupBuilder& Queue(const std::string& queue);
  PodGroupBuilder& Phase(const std::string& phase);
  api::PodGroup Obj() const { return pg_; }

 private:
  api::PodGroup pg_;
};
inline PodGroupBuilder MakePodGroup(std::string ns, std::string name) {
  return PodGroupBuilder(std::move(ns), std::move(name));
}

// What RunUntilBound did. Times are wall-clock seconds on the calling thread.
struct CycleStats {
  int cycles = 0;
  int64_t binds = 0;
  double session_seconds = 0;  // inside Session::Run (open, actions, close)
  double apply_seconds = 0;    // writing binds back into the cluster (Cluster::UpsertPod)
  double total_seconds() const { return session_seconds + apply_seconds; }
};

struct RunOptions {
  // Stop once this many binds have been made in total.
  int64_t want_binds = 0;
  int max_cycles = 10;
  // Observer attached to every session before it runs (Session::AddEventHandler); it must not
  // change state. Empty handlers are not attached.
  core::EventHandler observer;
};

// Runs scheduling cycles, as scenario.cc does, until `want_binds` pods are bound, a cycle binds
// nothing, or max_cycles is reached. After each cycle the binds are applied the way the API
// server would: the pod is updated with spec.nodeName (the engine then sees it Bound).
CycleStats RunUntilBound(core::Cluster& cluster, const core::SchedulerConf& conf,
                         const RunOptions& options);

// Applies one cycle's binds to the cluster (pod update with spec.nodeName).
void ApplyBinds(core::Cluster& cluster, const core::CycleResult& result);

// Nearest-rank percentile (p in [0, 100]) of unsorted samples; 0 when empty.
double Percentile(std::vector<double> samples, double p);

// Peak and current resident set size of this process in bytes (VmHWM / VmRSS from
// /proc/self/status); 0 when unavailable.
int64_t PeakRssBytes();
int64_t CurrentRssBytes();

inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace muster::bench
