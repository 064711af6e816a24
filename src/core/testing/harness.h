#pragma once

// The harness of the scheduling-cycle tests (engine_test.cc and the <plugin>_test.cc and
// <action>_test.cc beside each plugin and action): a cluster built from API objects, one
// Session::Run per cycle with a volcano-scheduler.conf, and lookups into the CycleResult a user
// would see (binds, evictions, PodGroup status, pod conditions and events).
//
//   Harness h;
//   h.Add(N("n1").Obj()).Add(MakePodGroup("ns", "pg").Obj());
//   h.Add(MakePod("ns", "p").Group("pg").Req("cpu", "1").Obj());
//   CycleResult r = h.Run();
//   EXPECT_THAT(Binds(r), ElementsAre(Pair("ns/p", "n1")));

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/apply_cycle_result.h"
#include "core/cluster.h"
#include "core/framework/conf.h"
#include "core/framework/session.h"
#include "core/testing/builders.h"

namespace muster::core::test {

using BindMap = std::map<std::string, std::string>;

// The conf the text gives; a parse error fails the test (and gives an empty conf).
SchedulerConf MustParse(std::string_view text);

// A cluster built from API objects, applying each cycle's decisions the way the API would
// (core::ApplyCycleResult, as scenario.cc does): a bound pod gets spec.nodeName and its GPU
// indices, an evicted pod is gone.
class Harness {
 public:
  Harness& Add(const api::Node& n) {
    cluster_.UpsertNode(n);
    return *this;
  }
  Harness& Add(const api::Pod& p) {
    cluster_.UpsertPod(p);
    return *this;
  }
  Harness& Add(const api::PodGroup& pg) {
    cluster_.UpsertPodGroup(pg);
    return *this;
  }
  Harness& Add(const api::Queue& q) {
    cluster_.UpsertQueue(q);
    return *this;
  }
  Harness& Add(const api::PriorityClass& pc) {
    cluster_.UpsertPriorityClass(pc);
    return *this;
  }
  Harness& Add(const api::HyperNode& hn) {
    cluster_.UpsertHyperNode(hn);
    return *this;
  }

  CycleResult Run(const SchedulerConf& conf = DefaultSchedulerConf(), SessionOptions options = {}) {
    CycleResult r;
    {
      Session ssn(cluster_, conf, std::move(options));
      r = ssn.Run();
    }
    ApplyCycleResult(cluster_, r);
    return r;
  }
  CycleResult Run(std::string_view conf_text) { return Run(MustParse(conf_text)); }

  // Re-upserts a pod after changing it (the kubelet reporting a phase, say); the pod as the
  // cluster holds it, so with the node and GPUs a cycle bound it to. Throws std::out_of_range for
  // a pod the cluster does not hold (never added, evicted or removed).
  void Update(const std::string& key, const std::function<void(api::Pod&)>& change) {
    api::Pod p = *Held(key).pod;
    change(p);
    cluster_.UpsertPod(p);
  }
  void Remove(const std::string& key) {
    const TaskInfo& t = Held(key);
    const std::string ns = t.ns;
    const std::string name = t.name;
    cluster_.RemovePod(ns, name);
  }

  Cluster& cluster() { return cluster_; }

 private:
  const TaskInfo& Held(const std::string& key) {
    const TaskInfo* t = cluster_.FindTask(key);
    if (t == nullptr || !t->pod) throw std::out_of_range("the cluster holds no pod " + key);
    return *t;
  }

  Cluster cluster_;
};

// Pod key -> node of the cycle's binds.
BindMap Binds(const CycleResult& r);
// Pod keys of the cycle's evictions, in order.
std::vector<std::string> Evicted(const CycleResult& r);
// The PodScheduled=False message of a pod, or "<none>".
std::string Message(const CycleResult& r, const std::string& pod);
// The pod's PodScheduled condition, or nullptr.
const CycleResult::PodCondition* Condition(const CycleResult& r, const std::string& pod);
// The status of PodGroup "ns/name", or nullptr.
const CycleResult::PodGroupStatus* Group(const CycleResult& r, const std::string& pg);
// Its phase, or "<none>".
std::string Phase(const CycleResult& r, const std::string& pg);
// Messages of the events about `object` with `reason`.
std::vector<std::string> Events(const CycleResult& r, const std::string& object,
                                const std::string& reason);
// How many bound pods' keys start with `prefix`.
int CountWithPrefix(const BindMap& binds, const std::string& prefix);

// One pod group "ns/pg" (minMember 1, default queue) with one pending pod "ns/p" asking 1 cpu,
// made unschedulable or not by `pod` and the nodes; returns the cycle's result.
CycleResult RunOnePod(const std::vector<api::Node>& nodes, PodBuilder pod,
                      const std::vector<api::Pod>& running = {});

// Pod "ns/p", and a node of 4 cpu and 8Gi labelled kubernetes.io/hostname=<name>.
PodBuilder P();
NodeBuilder N(std::string name);

// Nodes n1..n<count>, each with `gpus` GPUs.
void AddGpuNodes(Harness& h, int count, int gpus);
// PodGroup "ns/<pg>" of `pods` pods <pg>-1.. each asking 1 cpu and `gpus_each` GPUs.
void AddGang(Harness& h, const std::string& pg, int pods, int min_member, int gpus_each,
             const std::string& queue = "");

// The default conf's plugins less overcommit, and no backfill.
inline constexpr char kNoBackfillConf[] = R"(
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
)";

// --- allocate's arguments: strictOrder and reservations ---------------------------------------

// allocate and backfill without queue shares, with `arguments` as allocate's configuration.
SchedulerConf AllocateConf(std::string_view arguments);

// Times of the reservation cases: t0 and seconds after it.
inline constexpr int64_t kT0 = 1767225600;  // 2026-01-01T00:00:00Z
std::string At(int seconds);
SessionOptions Now(int seconds);

// Two nodes of 8 GPUs. A runs on n1 from t0 and is expected to take 100 s; gang g (2 x 8 GPUs,
// both nodes) arrives at 1; then single-pod jobs `small` (name, GPUs, expected runtime, or none
// when empty), each a second after the last.
void AddBlockedGang(Harness& h, const std::vector<std::tuple<std::string, int, std::string>>& small,
                    const std::string& a_runtime = "100s");

}  // namespace muster::core::test
