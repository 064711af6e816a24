// GPU shares (muster.dev/gpu-milli: a share of one device): what the request counts as, how the
// cluster accounts it per device, where a session places it and what a reload from the API
// restores.

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/apply_cycle_result.h"
#include "core/cluster.h"
#include "core/framework/conf.h"
#include "core/framework/session.h"
#include "core/testing/builders.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using test::MakeNode;
using test::MakePod;
using test::MakePodGroup;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using test::R;

test::PodBuilder SharePod(const std::string& name, const std::string& milli) {
  return MakePod("ns", name).Req("cpu", "1").Req(kGpuShareResource, milli);
}

// The shared milli of each device of `node`.
std::vector<int64_t> SharedMilli(Cluster& c, const std::string& node) {
  std::vector<int64_t> out;
  for (const GpuDevice& g : c.FindNode(node)->gpus) out.push_back(g.shared_milli);
  return out;
}

// A cluster and the API objects behind its pods; binds are applied as the API server would
// (core::ApplyBinds: devices recorded in muster.dev/gpu-indices as the scheduler writes them) and
// the pods reported Running.
class ShareHarness {
 public:
  void Add(const api::Node& n) { cluster_.UpsertNode(n); }
  void Add(const api::Pod& p) {
    cluster_.UpsertPod(p);
    pods_[p.meta.namespace_ + "/" + p.meta.name] = p;
  }
  void Add(const api::PodGroup& pg) { cluster_.UpsertPodGroup(pg); }
  void Add(const api::PriorityClass& pc) { cluster_.UpsertPriorityClass(pc); }
  // A pending pod in a one-member PodGroup of its own, as the live scheduler makes for a pod
  // without one.
  void AddAlone(test::PodBuilder pod) {
    api::Pod p = pod.Obj();
    Add(MakePodGroup("ns", p.meta.name).MinMember(1).Obj());
    Add(pod.Group(p.meta.name).Obj());
  }
  CycleResult Run(const SchedulerConf& conf = DefaultSchedulerConf()) {
    CycleResult r;
    {
      Session ssn(cluster_, conf, SessionOptions{});
      r = ssn.Run();
    }
    ApplyBinds(cluster_, r.binds, {.running_since = "2026-01-01T00:00:00Z"});
    for (const auto& b : r.binds) {
      pods_.at(b.pod) = *cluster_.FindTask(b.pod)->pod;  // as the bind wrote it
      devices_[b.pod] = b.gpus;
    }
    for (const auto& e : r.evictions) Remove(e.pod);
    return r;
  }
  void Remove(const std::string& key) {
    const api::Pod p = pods_.at(key);
    pods_.erase(key);
    cluster_.RemovePod(p.meta.namespace_, p.meta.name);
  }
  // Device indices of the binds so far, by pod key.
  const std::map<std::string, std::vector<int>>& devices() const { return devices_; }
  // The pods as the API server holds them, by key.
  const std::map<std::string, api::Pod>& pods() const { return pods_; }
  Cluster& cluster() { return cluster_; }

 private:
  Cluster cluster_;
  std::map<std::string, api::Pod> pods_;
  std::map<std::string, std::vector<int>> devices_;
};

std::vector<std::string> BoundPods(const CycleResult& r) {
  std::vector<std::string> out;
  for (const auto& b : r.binds) out.push_back(b.pod);
  return out;
}

// --- the request --------------------------------------------------------------------------------

TEST(GpuShareRequestTest, AShareCountsAsMilliOfOneGpu) {
  api::Pod pod = SharePod("p", "500").Obj();
  EXPECT_EQ(PodRequests(pod), R({{"cpu", "1"}, {"nvidia.com/gpu", "500m"}}));
  EXPECT_EQ(PodGpuShare(pod), 500);
  // As Kubernetes wants extended resources: in limits, which stand in for the request.
  api::Pod limited = MakePod("ns", "l").Limit(kGpuShareResource, "250").Obj();
  EXPECT_EQ(PodRequests(limited), R({{"nvidia.com/gpu", "250m"}}));
  EXPECT_EQ(PodGpuShare(limited), 250);
}

TEST(GpuShareRequestTest, ValuesThatAreNoShareStayAResourceOfTheirOwn) {
  for (const char* milli : {"1000", "1500", "1500m"}) {
    api::Pod pod = SharePod("p", milli).Obj();
    EXPECT_EQ(PodGpuShare(pod), 0) << milli;
    EXPECT_EQ(PodRequests(pod).Get(kGpu), 0) << milli;
  }
  api::Pod both = SharePod("p", "500").Gpus(1).Obj();
  EXPECT_EQ(PodGpuShare(both), 0);
  EXPECT_EQ(PodRequests(both).Get(kGpu), 1000);
}

// --- accounting ---------------------------------------------------------------------------------

TEST(GpuShareClusterTest, SharesOfBoundPodsAreRestoredOnTheirRecordedDevices) {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("8").Gpus(2).Obj());
  c.UpsertPod(SharePod("a", "300").RunningOn("n1").Annotation(kGpuIndicesAnnotation, "1").Obj());
  c.UpsertPod(SharePod("b", "500").RunningOn("n1").Annotation(kGpuIndicesAnnotation, "1").Obj());
  EXPECT_THAT(SharedMilli(c, "n1"), ElementsAre(0, 800));
  EXPECT_EQ(c.FindNode("n1")->FreeGpus(), 1);
  EXPECT_EQ(c.FindNode("n1")->used, R({{"cpu", "2"}, {"nvidia.com/gpu", "800m"}}));
  EXPECT_THAT(c.FindTask("ns/b")->gpus, ElementsAre(1));

  // A third share does not fit device 1 any more: it is put where it fits.
  c.UpsertPod(SharePod("c", "300").RunningOn("n1").Annotation(kGpuIndicesAnnotation, "1").Obj());
  EXPECT_THAT(c.FindTask("ns/c")->gpus, ElementsAre(0));
  EXPECT_THAT(SharedMilli(c, "n1"), ElementsAre(300, 800));

  c.RemovePod("ns", "b");
  EXPECT_THAT(SharedMilli(c, "n1"), ElementsAre(300, 300));
  c.RemovePod("ns", "a");
  c.RemovePod("ns", "c");
  EXPECT_THAT(SharedMilli(c, "n1"), ElementsAre(0, 0));
  EXPECT_EQ(c.FindNode("n1")->FreeGpus(), 2);
}

TEST(GpuShareClusterTest, ASharedDeviceIsNotFreeForWholeGpus) {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("8").Gpus(2).Obj());
  c.UpsertPod(SharePod("a", "200").RunningOn("n1").Obj());
  EXPECT_THAT(SharedMilli(c, "n1"), ElementsAre(200, 0));
  c.UpsertPod(MakePod("ns", "w").Req("cpu", "1").Gpus(1).RunningOn("n1").Obj());
  EXPECT_THAT(c.FindTask("ns/w")->gpus, ElementsAre(1));
  EXPECT_EQ(c.FindNode("n1")->gpus[1].holder, c.FindTask("ns/w")->id);
  EXPECT_EQ(c.FindNode("n1")->gpus[1].FreeMilli(), 0);
}

TEST(GpuShareClusterTest, ANodeUpdateKeepsTheShares) {
  Cluster c;
  c.UpsertNode(MakeNode("n1").Cpu("8").Gpus(2).Obj());
  c.UpsertPod(SharePod("a", "200").RunningOn("n1").Annotation(kGpuIndicesAnnotation, "1").Obj());
  c.UpsertNode(MakeNode("n1").Cpu("8").Gpus(2).Label("zone", "z1").Obj());
  EXPECT_THAT(SharedMilli(c, "n1"), ElementsAre(0, 200));
  EXPECT_EQ(c.FindNode("n1")->shared_devices, 1);
}

// --- sessions -----------------------------------------------------------------------------------

TEST(GpuShareSessionTest, AShareNeedsOneDeviceWithRoomNotTheNodesTotal) {
  ShareHarness h;
  h.Add(MakeNode("n1").Cpu("8").Gpus(2).Obj());
  h.Add(SharePod("a", "400").RunningOn("n1").Annotation(kGpuIndicesAnnotation, "0").Obj());
  h.Add(SharePod("b", "400").RunningOn("n1").Annotation(kGpuIndicesAnnotation, "1").Obj());
  // 1200m free on the node, 600m on each device.
  h.AddAlone(SharePod("big", "700"));
  CycleResult r = h.Run();
  EXPECT_THAT(BoundPods(r), IsEmpty());

  h.AddAlone(SharePod("fits", "600"));
  r = h.Run();
  EXPECT_THAT(BoundPods(r), ElementsAre("ns/fits"));
  EXPECT_THAT(h.devices().at("ns/fits"), ElementsAre(0));  // equal room: the lower index
  EXPECT_THAT(SharedMilli(h.cluster(), "n1"), ElementsAre(1000, 400));
}

TEST(GpuShareSessionTest, AShareGoesToTheMostUsedDeviceThatTakesIt) {
  ShareHarness h;
  h.Add(MakeNode("n1").Cpu("8").Gpus(3).Obj());
  h.Add(SharePod("a", "200").RunningOn("n1").Annotation(kGpuIndicesAnnotation, "0").Obj());
  h.Add(SharePod("b", "600").RunningOn("n1").Annotation(kGpuIndicesAnnotation, "2").Obj());
  h.AddAlone(SharePod("small", "300"));
  h.Run();
  h.AddAlone(SharePod("larger", "500"));
  h.Run();
  EXPECT_THAT(h.devices().at("ns/small"), ElementsAre(2));
  EXPECT_THAT(h.devices().at("ns/larger"), ElementsAre(0));
  EXPECT_THAT(SharedMilli(h.cluster(), "n1"), ElementsAre(700, 0, 900));
}

TEST(GpuShareSessionTest, WholeGpusNeedDevicesNoShareHasStartedOn) {
  ShareHarness h;
  h.Add(MakeNode("n1").Cpu("8").Gpus(2).Obj());
  h.Add(MakeNode("n2").Cpu("8").Gpus(1).Obj());
  h.Add(SharePod("a", "300").RunningOn("n1").Annotation(kGpuIndicesAnnotation, "0").Obj());
  h.Add(SharePod("b", "300").RunningOn("n1").Annotation(kGpuIndicesAnnotation, "1").Obj());
  h.Add(SharePod("c", "100").RunningOn("n2").Obj());
  // n1 has 1400m free in total but no free device; n2 neither.
  h.AddAlone(MakePod("ns", "whole").Req("cpu", "1").Gpus(1));
  CycleResult r = h.Run();
  EXPECT_THAT(BoundPods(r), IsEmpty());
}

TEST(GpuShareSessionTest, AGangOfSharesIsAdmittedAndPackedOntoOneDevice) {
  ShareHarness h;
  h.Add(MakeNode("n1").Cpu("8").Gpus(1).Obj());
  h.Add(MakePodGroup("ns", "g").MinMember(2).MinResources(kGpuShareResource, "1000").Obj());
  h.Add(SharePod("g-0", "500").Group("g").Obj());
  h.Add(SharePod("g-1", "500").Group("g").Obj());
  h.Run();  // enqueue admits; the GPU the gang needs is one device's worth
  h.Run();
  EXPECT_THAT(h.devices().at("ns/g-0"), ElementsAre(0));
  EXPECT_THAT(h.devices().at("ns/g-1"), ElementsAre(0));
  EXPECT_THAT(SharedMilli(h.cluster(), "n1"), ElementsAre(1000));
}

TEST(GpuShareSessionTest, AGpuModelIsARequiredNodeAffinityOnTheProductLabel) {
  ShareHarness h;
  h.Add(MakeNode("a-t4").Cpu("8").Gpus(1).Label("nvidia.com/gpu.product", "T4").Obj());
  h.Add(MakeNode("b-v100").Cpu("8").Gpus(1).Label("nvidia.com/gpu.product", "V100M32").Obj());
  h.AddAlone(SharePod("p", "500").RequiredNodeAffinity("nvidia.com/gpu.product", "In",
                                                       {"V100M16", "V100M32"}));
  CycleResult r = h.Run();
  ASSERT_EQ(r.binds.size(), 1u);
  EXPECT_EQ(r.binds[0].node, "b-v100");
}

// 800m are free on the node, 400m on each device: a 700m share of high priority needs a device
// freed, not just the total, so preempt evicts the low-priority share on device 0.
TEST(GpuShareSessionTest, PreemptionFreesADeviceForAShare) {
  absl::StatusOr<SchedulerConf> preempt = ParseSchedulerConf(R"(
actions: "enqueue, allocate, preempt"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]
)");
  ASSERT_TRUE(preempt.ok()) << preempt.status();
  ShareHarness h;
  h.Add(MakeNode("n1").Cpu("8").Gpus(2).Obj());
  h.Add(test::MakePriorityClass("low", 10));
  h.Add(test::MakePriorityClass("high", 1000));
  h.Add(MakePodGroup("ns", "low").PriorityClass("low").Phase("Running").Obj());
  h.Add(SharePod("low-a", "600").Group("low").Priority(10).RunningOn("n1")
            .Annotation(kGpuIndicesAnnotation, "0").Obj());
  h.Add(MakePod("ns", "low-cpu").Req("cpu", "1").Group("low").Priority(10).Preemptable(false)
            .RunningOn("n1").Obj());
  h.Add(MakePodGroup("ns", "keep").PriorityClass("high").Phase("Running").Obj());
  h.Add(SharePod("keep", "600").Group("keep").Priority(1000).RunningOn("n1")
            .Annotation(kGpuIndicesAnnotation, "1").Obj());
  h.Add(MakePodGroup("ns", "high").PriorityClass("high").Obj());
  h.Add(SharePod("high-c", "700").Group("high").Priority(1000).Obj());

  CycleResult r = h.Run(*preempt);
  ASSERT_EQ(r.evictions.size(), 1u);
  EXPECT_EQ(r.evictions[0].pod, "ns/low-a");
  r = h.Run(*preempt);
  EXPECT_THAT(BoundPods(r), ElementsAre("ns/high-c"));
  EXPECT_THAT(h.devices().at("ns/high-c"), ElementsAre(0));
}

// With a gpu-<policy> plugin the policy chooses the device: Random draws among those that take
// the share, where the engine's own best fit packs every share onto device 0.
TEST(GpuShareSessionTest, AGpuPlacementPluginChoosesTheDevice) {
  auto devices_used = [](const SchedulerConf& conf) {
    ShareHarness h;
    h.Add(MakeNode("n1").Cpu("16").Gpus(4).Obj());
    for (int i = 0; i < 8; ++i) h.AddAlone(SharePod("p" + std::to_string(i), "100"));
    h.Run(conf);
    std::set<int> used;
    for (const auto& [pod, gpus] : h.devices()) used.insert(gpus.begin(), gpus.end());
    EXPECT_EQ(h.devices().size(), 8u);
    return used;
  };
  EXPECT_THAT(devices_used(DefaultSchedulerConf()), ElementsAre(0));
  absl::StatusOr<SchedulerConf> random = ParseSchedulerConf(R"(
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates}, {name: proportion}, {name: gpu-random}]
)");
  ASSERT_TRUE(random.ok()) << random.status();
  EXPECT_GT(devices_used(*random).size(), 1u);
}

// --- invariants over random workloads ----------------------------------------------------------

// Per device of one node: the shares bound to it, and the pods that hold it whole.
struct DeviceUse {
  int64_t shared = 0;
  std::vector<std::string> whole;
};
using DeviceBooks = std::map<std::string, std::map<int, DeviceUse>>;

// What the bound pods' recorded devices (muster.dev/gpu-indices) say each device carries. Fails
// unless each pod was given one device for a share, one per GPU otherwise.
DeviceBooks BooksFromPods(const std::map<std::string, api::Pod>& pods) {
  DeviceBooks books;
  for (const auto& [key, p] : pods) {
    if (p.spec.node_name.empty()) continue;
    const std::string& indices = p.meta.annotations.at(kGpuIndicesAnnotation);
    const int64_t share = PodGpuShare(p);
    int64_t given = 0;
    for (size_t at = 0; at < indices.size(); ++given) {
      size_t end = std::min(indices.find(',', at), indices.size());
      DeviceUse& use = books[p.spec.node_name][std::stoi(indices.substr(at, end - at))];
      if (share > 0) use.shared += share; else use.whole.push_back(key);
      at = end + 1;
    }
    EXPECT_EQ(given, share > 0 ? 1 : PodRequests(p).Get(kGpu) / 1000) << key;
  }
  return books;
}

// Fails unless no device carries more than 1000 milli or a whole-GPU pod beside anything, and
// the cluster's devices carry what the pods say (shares summed, the whole holder).
void ExpectDevicesMatch(Cluster& c, const DeviceBooks& books, const std::string& when) {
  for (int id : c.NodeIds()) {
    const NodeInfo& n = c.node(id);
    for (const GpuDevice& g : n.gpus) {
      DeviceUse use;
      if (auto it = books.find(n.name); it != books.end()) {
        if (auto d = it->second.find(g.index); d != it->second.end()) use = d->second;
      }
      std::string where = when + ": " + n.name + " device " + std::to_string(g.index);
      EXPECT_LE(use.shared, 1000) << where;
      EXPECT_LE(use.whole.size(), 1u) << where;
      EXPECT_TRUE(use.whole.empty() || use.shared == 0) << where;
      EXPECT_EQ(g.shared_milli, use.shared) << where;
      EXPECT_EQ(g.holder < 0 ? "" : c.task(g.holder).key, use.whole.empty() ? "" : use.whole[0])
          << where;
    }
  }
}

TEST(GpuSharePropertyTest, NoDeviceOverfilledAndAReloadRestoresTheDevices) {
  const std::vector<const char*> shares = {"100", "250", "300", "500", "700", "900"};
  int bound = 0;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    auto draw = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
    ShareHarness h;
    std::vector<api::Node> nodes;
    for (int i = 0; i < 4; ++i) {
      nodes.push_back(MakeNode("n" + std::to_string(i)).Cpu("64").Gpus(1 + draw(4)).Obj());
      h.Add(nodes.back());
    }
    int next = 0;
    for (int round = 0; round < 8; ++round) {
      for (int k = draw(6); k >= 0; --k) {
        std::string name = "p" + std::to_string(next++);
        if (draw(10) < 7) {
          h.AddAlone(SharePod(name, shares[draw(static_cast<int>(shares.size()))]));
        } else {
          h.AddAlone(MakePod("ns", name).Req("cpu", "1").Gpus(1 + draw(2)));
        }
      }
      h.Run();
      std::string when = "seed " + std::to_string(seed) + " round " + std::to_string(round);
      DeviceBooks books = BooksFromPods(h.pods());
      ExpectDevicesMatch(h.cluster(), books, when);

      // The scheduler restarting: the same objects read back into a fresh cluster.
      Cluster reloaded;
      for (const api::Node& n : nodes) reloaded.UpsertNode(n);
      for (const auto& [key, p] : h.pods()) {
        if (!p.spec.node_name.empty()) reloaded.UpsertPod(p);
      }
      ExpectDevicesMatch(reloaded, books, when + " reloaded");

      std::vector<std::string> running;
      for (const auto& [key, p] : h.pods()) {
        if (!p.spec.node_name.empty()) running.push_back(key);
      }
      for (const std::string& key : running) {
        if (draw(3) == 0) h.Remove(key);
      }
    }
    bound += static_cast<int>(h.devices().size());
  }
  EXPECT_GT(bound, 200);  // the workloads do bind, shares beside each other included
}

}  // namespace
}  // namespace muster::core
