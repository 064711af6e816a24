// Property tests: seeded random clusters scheduled for several cycles, with the invariants that
// must hold whatever the input: capacity never exceeded, no GPU device handed out twice, gangs
// all-or-nothing, evictions never break a gang, and the same input gives the same decisions.

#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/apply_cycle_result.h"
#include "core/cluster.h"
#include "core/framework/conf.h"
#include "core/framework/session.h"
#include "core/testing/builders.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::MakeNode;
using test::MakePod;
using test::MakePodGroup;
using test::MakePriorityClass;
using test::MakeQueue;
using ::testing::IsEmpty;

constexpr int kSeeds = 20;
constexpr int kCycles = 4;
// Terminating pods finish (are deleted) after this cycle.
constexpr int kGracePeriodCycles = 2;

// splitmix64: portable, so a seed means the same cluster everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int Int(int lo, int hi) {
    return lo + static_cast<int>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool Chance(int percent) { return Int(1, 100) <= percent; }

 private:
  uint64_t state_;
};

struct World {
  std::vector<api::Node> nodes;
  std::vector<api::Queue> queues;
  std::vector<api::PriorityClass> classes;
  std::vector<api::PodGroup> groups;
  std::vector<api::Pod> pods;
};

int64_t GpuCount(const Resources& r) { return (r.Get(kGpu) + 999) / 1000; }

// Room left on a node while the generator places running pods.
struct Room {
  Resources free;
  int pods = 0;
};

World Generate(uint64_t seed) {
  Rng rng(seed);
  World w;
  const int node_count = rng.Int(5, 30);
  std::vector<Room> room;
  for (int i = 0; i < node_count; ++i) {
    std::string name = fmt::format("n{:02d}", i);
    int gpus = rng.Int(0, 8);
    auto node = MakeNode(name)
                    .Cpu(std::to_string(rng.Int(4, 32)))
                    .Memory(fmt::format("{}Gi", rng.Int(8, 128)))
                    .Gpus(gpus)
                    .Pods(rng.Chance(15) ? rng.Int(3, 12) : 110)
                    .Label("kubernetes.io/hostname", name)
                    .Label("zone", fmt::format("z{}", rng.Int(0, 2)));
    if (gpus > 0 && rng.Chance(50)) node.Taint("nvidia.com/gpu", "present", "NoSchedule");
    if (rng.Chance(10)) node.Taint("dedicated", "infra", "NoSchedule");
    if (rng.Chance(5)) node.Unschedulable();
    if (rng.Chance(5)) node.Ready(false);
    w.nodes.push_back(node.Obj());
    Room r;
    r.free = Resources::FromList(w.nodes.back().status.allocatable);
    r.pods = static_cast<int>(w.nodes.back().status.allocatable.at("pods").Value());
    room.push_back(r);
  }

  std::vector<std::string> queues = {"default"};
  for (int i = 0, n = rng.Int(1, 3); i < n; ++i) {
    auto q = MakeQueue(fmt::format("q{}", i)).Weight(rng.Int(1, 4)).Reclaimable(rng.Chance(80));
    if (rng.Chance(25)) q.Capability("cpu", std::to_string(rng.Int(8, 64)));
    w.queues.push_back(q.Obj());
    queues.push_back(w.queues.back().meta.name);
  }
  const std::vector<std::pair<std::string, int>> classes = {
      {"", 1}, {"low", 10}, {"mid", 100}, {"high", 1000}};
  for (size_t i = 1; i < classes.size(); ++i) {
    w.classes.push_back(MakePriorityClass(classes[i].first, classes[i].second));
  }

  const int target_pods = rng.Int(10, 80);
  int pod_total = 0;
  for (int j = 0; pod_total < target_pods; ++j) {
    const std::string ns = fmt::format("ns{}", rng.Int(0, 2));
    const std::string pg = fmt::format("job{:02d}", j);
    const bool best_effort = rng.Chance(5);
    const int size = best_effort ? rng.Int(1, 3) : rng.Int(1, 8);
    const int min_member = best_effort ? 1 : rng.Int(1, size);
    const bool running = rng.Chance(40);
    const auto& [pc, priority] = classes[rng.Int(0, 3)];
    auto group = MakePodGroup(ns, pg)
                     .MinMember(min_member)
                     .Queue(queues[rng.Int(0, static_cast<int>(queues.size()) - 1)])
                     .PriorityClass(pc);
    if (running) {
      group.Phase("Running");
    } else if (rng.Chance(20)) {
      group.Phase("Inqueue");
    }
    const bool roles = !best_effort && min_member >= 2 && rng.Chance(30);
    if (roles) group.MinTaskMember("ps", 1).MinTaskMember("worker", min_member - 1);
    w.groups.push_back(group.Obj());

    // Pods of one job are alike (one task template), as a Volcano Job makes them.
    const int cpu_quarters = rng.Int(1, 16);
    const int mem_halves = rng.Int(1, 16);
    const int gpus = rng.Chance(40) ? rng.Int(1, 4) : 0;
    const bool tolerate = gpus > 0 && rng.Chance(90);
    const std::string zone = rng.Chance(10) ? fmt::format("z{}", rng.Int(0, 2)) : "";
    for (int i = 0; i < size; ++i) {
      auto pod = MakePod(ns, fmt::format("{}-{}", pg, i)).Group(pg).Priority(priority);
      if (!pc.empty()) pod.PriorityClass(pc);
      if (roles) pod.Role(i == 0 ? "ps" : "worker");
      if (!best_effort) {
        pod.Req("cpu", fmt::format("{}m", cpu_quarters * 250))
            .Req("memory", fmt::format("{}Mi", mem_halves * 512));
        if (gpus > 0) pod.Gpus(gpus);
      }
      if (tolerate) pod.Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule");
      if (!zone.empty()) pod.NodeSelector("zone", zone);
      if (rng.Chance(10)) pod.Preemptable(false);
      api::Pod obj = pod.Obj();
      if (running) {
        // First fit from a random node, within what the node has left.
        Resources req = PodRequests(obj);
        int start = rng.Int(0, node_count - 1);
        for (int k = 0; k < node_count; ++k) {
          Room& r = room[(start + k) % node_count];
          if (r.pods > 0 && req.LessEqual(r.free)) {
            r.free.Sub(req);
            r.pods--;
            obj.spec.node_name = w.nodes[(start + k) % node_count].meta.name;
            obj.status.phase = "Running";
            if (rng.Chance(15)) obj.meta.deletion_timestamp = "2026-01-01T00:00:00Z";
            break;
          }
        }
      }
      w.pods.push_back(std::move(obj));
      ++pod_total;
    }
  }
  return w;
}

struct SimulationOptions {
  // Before each cycle, pods bound earlier are reported Running (a pod update), as a kubelet does.
  bool kubelet_runs_bound_pods = false;
};

// Runs a World through cycles like scenario.cc does (binds applied by core::ApplyBinds, evicted
// pods deleted with the grace period below) and checks the invariants after each cycle.
class Simulation {
 public:
  Simulation(const World& w, const SchedulerConf& conf, SimulationOptions options = {})
      : conf_(conf), options_(options) {
    for (const auto& n : w.nodes) {
      cluster_.UpsertNode(n);
      nodes_[n.meta.name] = n;
    }
    for (const auto& q : w.queues) cluster_.UpsertQueue(q);
    for (const auto& pc : w.classes) cluster_.UpsertPriorityClass(pc);
    for (const auto& pg : w.groups) {
      cluster_.UpsertPodGroup(pg);
      groups_[pg.meta.namespace_ + "/" + pg.meta.name] = pg;
    }
    for (const auto& p : w.pods) {
      cluster_.UpsertPod(p);
      pods_[Key(p)] = p;
    }
    // Devices of the pods that were already running, as the engine assigned them.
    for (const auto& [key, p] : pods_) {
      if (p.spec.node_name.empty()) continue;
      for (int g : cluster_.FindTask(key)->gpus) Hold(p.spec.node_name, g, key);
    }
  }

  // One cycle; returns its decisions as text and appends broken invariants to `violations`.
  std::string Cycle(int cycle, std::vector<std::string>& violations) {
    auto fail = [&](std::string what) {
      violations.push_back(fmt::format("cycle {}: {}", cycle, what));
    };
    if (options_.kubelet_runs_bound_pods) {
      for (auto& [key, p] : pods_) {
        if (p.spec.node_name.empty() || p.status.phase != "Pending") continue;
        p.status.phase = "Running";
        cluster_.UpsertPod(p);
      }
    }
    SessionOptions options;
    options.session_id = fmt::format("cycle-{}", cycle);
    Session ssn(cluster_, conf_, options);
    CycleResult r = ssn.Run();
    std::map<std::string, int> ready_before = ReadyByJob();

    // Binds: pending pods, ready nodes, as many distinct free devices as the pod asks for.
    std::set<std::string> bound_jobs;
    for (const auto& b : r.binds) {
      auto it = pods_.find(b.pod);
      if (it == pods_.end() || !it->second.spec.node_name.empty()) {
        fail(b.pod + " bound but it is not a pending pod");
        continue;
      }
      const TaskInfo* t = cluster_.FindTask(b.pod);
      const NodeInfo* n = cluster_.FindNode(b.node);
      if (!n || !n->ready) fail(b.pod + " bound to missing or not-ready node " + b.node);
      if (static_cast<int64_t>(b.gpus.size()) != GpuCount(t->resreq)) {
        fail(fmt::format("{} asks {} GPUs, bound with {}", b.pod, GpuCount(t->resreq),
                         b.gpus.size()));
      }
      for (int g : b.gpus) {
        if (n && (g < 0 || g >= static_cast<int>(n->gpus.size()))) {
          fail(fmt::format("{} bound to device {} of {}, which has {}", b.pod, g, b.node,
                           n->gpus.size()));
        }
        auto& holder = devices_[b.node][g];
        if (!holder.empty()) {
          fail(fmt::format("device {} of {} bound to {} while {} holds it", g, b.node, b.pod,
                           holder));
        }
        holder = b.pod;
      }
      bound_jobs.insert(JobKey(it->second));
    }
    // Applied as the API server would; the model takes the pods back as the bind wrote them.
    ApplyBinds(cluster_, r.binds);
    for (const auto& b : r.binds) {
      auto it = pods_.find(b.pod);
      const TaskInfo* t = cluster_.FindTask(b.pod);
      if (it == pods_.end() || t == nullptr) continue;
      it->second = *t->pod;
    }
    // Evictions: running pods, none critical.
    std::set<std::string> evicted_jobs;
    for (const auto& e : r.evictions) {
      auto it = pods_.find(e.pod);
      if (it == pods_.end() || it->second.status.phase != "Running") {
        fail(e.pod + " evicted but it was not running");
        continue;
      }
      evicted_jobs.insert(JobKey(it->second));
      Delete(e.pod);
    }
    if (cycle + 1 == kGracePeriodCycles) {
      std::vector<std::string> done;
      for (const auto& [key, p] : pods_) {
        if (!p.meta.deletion_timestamp.empty()) done.push_back(key);
      }
      for (const auto& key : done) Delete(key);
    }

    CheckNodes(fail);
    std::map<std::string, int> ready_after = ReadyByJob();
    for (const auto& job : bound_jobs) {
      const api::PodGroup& pg = groups_.at(job);
      if (ready_after[job] < pg.spec.min_member) {
        fail(fmt::format("gang {} got binds but has {} of minMember {} placed", job,
                         ready_after[job], pg.spec.min_member));
      }
      int role_total = 0;
      for (const auto& [role, min] : pg.spec.min_task_member) role_total += min;
      if (role_total > pg.spec.min_member) continue;
      for (const auto& [role, min] : pg.spec.min_task_member) {
        int placed = ReadyByJob(role)[job];
        if (placed < min) {
          fail(fmt::format("gang {} got binds but role {} has {} of {}", job, role, placed, min));
        }
      }
    }
    for (const auto& job : evicted_jobs) {
      const int min = groups_.at(job).spec.min_member;
      if (ready_before[job] >= min && ready_after[job] < min) {
        fail(fmt::format("evictions took gang {} from {} to {} ready pods, below minMember {}", job,
                         ready_before[job], ready_after[job], min));
      }
    }
    binds_ += static_cast<int>(r.binds.size());
    evictions_ += static_cast<int>(r.evictions.size());
    pipelined_ += static_cast<int>(r.pipelined.size());
    return Transcript(r);
  }

  int binds() const { return binds_; }
  int evictions() const { return evictions_; }
  int pipelined() const { return pipelined_; }

 private:
  static std::string Key(const api::Pod& p) { return p.meta.namespace_ + "/" + p.meta.name; }
  static std::string JobKey(const api::Pod& p) {
    return p.meta.namespace_ + "/" + p.meta.annotations.at(api::kGroupNameAnnotation);
  }

  void Hold(const std::string& node, int device, const std::string& pod) {
    devices_[node][device] = pod;
  }

  void Delete(const std::string& key) {
    const api::Pod p = pods_.at(key);
    pods_.erase(key);
    cluster_.RemovePod(p.meta.namespace_, p.meta.name);
    for (auto& [index, holder] : devices_[p.spec.node_name]) {
      if (holder == key) holder.clear();
    }
  }

  // Pods per job placed (nodeName set, running or about to) or succeeded, optionally of one role.
  std::map<std::string, int> ReadyByJob(const std::string& role = "*") const {
    std::map<std::string, int> out;
    for (const auto& [key, p] : pods_) {
      if (role != "*") {
        auto it = p.meta.annotations.find(api::kTaskSpecKey);
        if (it == p.meta.annotations.end() || it->second != role) continue;
      }
      bool placed = !p.spec.node_name.empty() && p.status.phase != "Failed" &&
                    p.meta.deletion_timestamp.empty();
      if (placed || p.status.phase == "Succeeded") out[JobKey(p)]++;
    }
    return out;
  }

  // Capacity from the API objects alone, and the engine's books against it.
  template <typename Fail>
  void CheckNodes(Fail& fail) {
    std::map<std::string, Resources> used;
    std::map<std::string, int> count;
    for (const auto& [key, p] : pods_) {
      if (p.spec.node_name.empty() || p.status.phase == "Succeeded" || p.status.phase == "Failed") {
        continue;
      }
      used[p.spec.node_name].Add(PodRequests(p));
      count[p.spec.node_name]++;
    }
    for (const auto& [name, node] : nodes_) {
      Resources alloc = Resources::FromList(node.status.allocatable);
      const int max_pods = static_cast<int>(node.status.allocatable.at("pods").Value());
      ResourceId over = used[name].FirstExceeding(alloc);
      if (over >= 0) {
        fail(fmt::format("{} over capacity in {}: uses {} of {}", name, ResourceNames::Name(over),
                         used[name].ToString(), alloc.ToString()));
      }
      if (count[name] > max_pods) {
        fail(fmt::format("{} runs {} pods, allows {}", name, count[name], max_pods));
      }
      const NodeInfo& n = *cluster_.FindNode(name);
      if (!(n.used == used[name]) || n.pod_count != count[name]) {
        fail(fmt::format("{} engine books {} ({} pods), pods say {} ({} pods)", name,
                         n.used.ToString(), n.pod_count, used[name].ToString(), count[name]));
      }
      Resources idle = alloc;
      idle.Sub(used[name]);
      if (!(n.idle == idle)) fail(name + " idle is not allocatable minus used");
      int held = 0;
      for (const auto& g : n.gpus) {
        if (g.holder < 0) continue;
        ++held;
        // The engine's holder is the pod the device was bound to.
        const std::string& bound_to = devices_[name][g.index];
        if (cluster_.task(g.holder).key != bound_to) {
          fail(fmt::format("device {} of {} was bound to {} but the engine has {} on it", g.index,
                           name, bound_to.empty() ? "no pod" : bound_to,
                           cluster_.task(g.holder).key));
        }
      }
      if (held != used[name].Get(kGpu) / 1000) {
        fail(fmt::format("{} has {} devices held for {} GPUs in use", name, held,
                         used[name].Get(kGpu) / 1000));
      }
    }
  }

  static std::string Transcript(const CycleResult& r) {
    std::string out;
    for (const auto& b : r.binds) {
      out += fmt::format("bind {} {} [{}]\n", b.pod, b.node, fmt::join(b.gpus, ","));
    }
    for (const auto& e : r.evictions) out += fmt::format("evict {} {}\n", e.pod, e.reason);
    for (const auto& [pod, node] : r.pipelined) out += fmt::format("pipeline {} {}\n", pod, node);
    for (const auto& pg : r.pod_groups) {
      out += fmt::format("group {} {} {}/{}/{}", pg.pod_group, pg.phase, pg.running, pg.succeeded,
                         pg.failed);
      if (pg.condition) {
        out += fmt::format(" {} {} {}", pg.condition->type, pg.condition->reason,
                           pg.condition->message);
      }
      out += "\n";
    }
    for (const auto& pc : r.pod_conditions) {
      out +=
          fmt::format("condition {} {} {} {}\n", pc.pod, pc.reason, pc.nominated_node, pc.message);
    }
    for (const auto& e : r.events) {
      out += fmt::format("event {} {} {} {} {}\n", e.kind, e.object, e.type, e.reason, e.message);
    }
    return out;
  }

  const SchedulerConf& conf_;
  SimulationOptions options_;
  Cluster cluster_;
  std::map<std::string, api::Node> nodes_;
  std::map<std::string, api::PodGroup> groups_;
  std::map<std::string, api::Pod> pods_;
  std::map<std::string, std::map<int, std::string>> devices_;  // node -> device -> pod key
  int binds_ = 0;
  int evictions_ = 0;
  int pipelined_ = 0;
};

struct Variant {
  const char* name;
  const char* conf;  // empty: the built-in default
  SimulationOptions options = {};
};

void PrintTo(const Variant& v, std::ostream* os) { *os << v.name; }

constexpr char kPreemptReclaim[] = R"(
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit}, {name: drf}, {name: predicates}, {name: proportion},
            {name: nodeorder}, {name: binpack}]
)";

constexpr char kTopologyAwarePreempt[] = R"(
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
configurations:
- name: preempt
  arguments:
    enableTopologyAwarePreemption: true
)";

class PropertyTest : public ::testing::TestWithParam<Variant> {
 protected:
  SchedulerConf Conf() const {
    if (GetParam().conf[0] == '\0') return DefaultSchedulerConf();
    auto conf = ParseSchedulerConf(GetParam().conf);
    EXPECT_TRUE(conf.ok()) << conf.status();
    return conf.ok() ? *conf : SchedulerConf{};
  }
};

TEST_P(PropertyTest, InvariantsHoldAndDecisionsAreReproducible) {
  const SchedulerConf conf = Conf();
  int binds = 0, evictions = 0, pipelined = 0;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE(fmt::format("seed {}", seed));
    const World world = Generate(seed);
    Simulation first(world, conf, GetParam().options);
    Simulation second(Generate(seed), conf, GetParam().options);
    std::vector<std::string> violations;
    for (int cycle = 1; cycle <= kCycles; ++cycle) {
      std::vector<std::string> ignored;
      std::string a = first.Cycle(cycle, violations);
      std::string b = second.Cycle(cycle, ignored);
      ASSERT_EQ(a, b) << "cycle " << cycle << ": the same input gave different decisions";
    }
    if (violations.size() > 10) violations.resize(10);
    EXPECT_THAT(violations, IsEmpty());
    binds += first.binds();
    evictions += first.evictions();
    pipelined += first.pipelined();
  }
  // The generated clusters exercise what the invariants are about.
  EXPECT_GT(binds, 100);
  if (std::string(GetParam().name) != "Default") {
    EXPECT_GT(evictions, 0);
  }
  RecordProperty("binds", binds);
  RecordProperty("evictions", evictions);
  RecordProperty("pipelined", pipelined);
}

INSTANTIATE_TEST_SUITE_P(Confs, PropertyTest,
                         ::testing::Values(Variant{"Default", ""},
                                           Variant{"PreemptReclaim", kPreemptReclaim},
                                           Variant{"TopologyAwarePreempt", kTopologyAwarePreempt},
                                           Variant{"PreemptReclaimWithKubelet",
                                                   kPreemptReclaim,
                                                   {.kubelet_runs_bound_pods = true}}),
                         [](const auto& info) { return std::string(info.param.name); });

// The generator itself: different seeds give different clusters, the same seed the same one.
TEST(PropertyGeneratorTest, SeedsAreReproducibleAndVaried) {
  World a = Generate(7), b = Generate(7), c = Generate(8);
  ASSERT_EQ(a.pods.size(), b.pods.size());
  for (size_t i = 0; i < a.pods.size(); ++i) {
    EXPECT_EQ(a.pods[i].meta.name, b.pods[i].meta.name);
    EXPECT_EQ(a.pods[i].spec.node_name, b.pods[i].spec.node_name);
  }
  EXPECT_TRUE(a.nodes.size() != c.nodes.size() || a.pods.size() != c.pods.size() ||
              a.pods[0].meta.name != c.pods[0].meta.name ||
              PodRequests(a.pods[0]) != PodRequests(c.pods[0]));
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    World w = Generate(seed);
    EXPECT_GE(w.nodes.size(), 5u);
    EXPECT_LE(w.nodes.size(), 30u);
    EXPECT_GE(w.pods.size(), 10u);
    EXPECT_LE(w.pods.size(), 87u);  // the last job may overshoot 80 by up to 7
  }
}

}  // namespace
}  // namespace muster::core
