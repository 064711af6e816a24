// The GPU placement policies as volcano-scheduler.conf plugins (gpu-fgd, gpu-bestfit,
// gpu-dotproduct, gpu-packing, gpu-clustering, gpu-random, gpu-muster), for nodeorder's tier:
//
//   - plugins:
//     - name: predicates
//     - name: gpu-fgd
//       arguments:
//         gpu-fgd.weight: 10
//
// Each adds weight x the policy's score to every feasible node, with each device's free milli
// (GPU shares, muster.dev/gpu-milli, included), and chooses the devices a pod allocated on a node
// takes (Session::AddGpuChoiceFn): the policy's SelectGpus, which for a GPU share is FGD's and
// muster's least-fragmenting device, Random's drawn one, else the best fit. FGD and muster learn
// their typical pod distribution from the pods the cluster has seen so far (every pod the
// engine knows, placed or not), recomputed when the session opens; the simulator instead gives
// them the distribution of its trace file.

#include <set>

#include "core/plugins/gpuplacement/placement.h"
#include "core/plugins/gpuplacement/plugin.h"
#include "core/plugins/gpuplacement/typical_pods.h"

namespace muster::core {
namespace {

GpuPodRequest RequestOf(const TaskInfo& t) {
  GpuPodRequest r;
  r.cpu_milli = t.resreq.Get(kCpu);
  r.memory = t.resreq.Get(kMemory);
  int64_t gpu = t.resreq.Get(kGpu);
  if (t.gpu_share > 0) {
    r.gpus = 1;
    r.gpu_milli = t.gpu_share;
  } else if (gpu > 0) {
    r.gpus = static_cast<int>((gpu + kMilliPerGpu - 1) / kMilliPerGpu);
    r.gpu_milli = kMilliPerGpu;
  }
  return r;
}

// SplitMix64: a small seeded stream for gpu-random; the same seed gives the same draws.
class SeededDraws : public RandomSource {
 public:
  explicit SeededDraws(uint64_t seed) : state_(seed) {}
  int Intn(int n) override {
    state_ += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<int>(z % static_cast<uint64_t>(n));
  }

 private:
  uint64_t state_;
};

class GpuPlacementPlugin : public Plugin {
 public:
  explicit GpuPlacementPlugin(const PluginOption& opt)
      : name_(opt.name),
        weight_(opt.Number(opt.name + ".weight", 1).value_or(1)),
        draws_(static_cast<uint64_t>(opt.Number(opt.name + ".seed", 42).value_or(42))) {}

  void OnSessionOpen(Session& ssn) override {
    Cluster& cluster = ssn.cluster();
    GpuPolicyContext context;
    if (name_ == "gpu-fgd" || name_ == "gpu-muster") {
      context.typical = std::make_shared<TypicalPods>(SeenPods(cluster));
      if (context.typical->empty()) return;  // nothing seen yet: no opinion
    }
    auto policy = NewGpuPlacementPolicy(name_, context);
    if (!policy.ok()) return;
    policy_ = *std::move(policy);
    ssn.AddGpuChoiceFn([this, &cluster](const TaskInfo& t, const NodeInfo& n) {
      GpuPodRequest pod = RequestOf(t);
      Fill(cluster, n, state_);
      if (!Fits(pod, state_)) return std::vector<int>{};
      return policy_->SelectGpus(pod, state_, draws_);
    });
    ssn.AddBatchNodeOrderFn(name_, [this, &cluster](const TaskInfo& t,
                                                   const std::vector<const NodeInfo*>& nodes,
                                                   std::vector<double>& scores) {
      Score(cluster, t, nodes, scores);
    });
  }

 private:
  TypicalPods SeenPods(const Cluster& cluster) {
    std::set<int> ids;
    for (int j : cluster.JobIds()) ids.insert(cluster.job(j).tasks.begin(), cluster.job(j).tasks.end());
    for (int n : cluster.NodeIds()) ids.insert(cluster.node(n).tasks.begin(), cluster.node(n).tasks.end());
    std::vector<PodShape> shapes;
    shapes.reserve(ids.size());
    for (int id : ids) {
      GpuPodRequest r = RequestOf(cluster.task(id));
      shapes.push_back({r.ScoringCpu(), r.gpu_milli, r.gpus, ""});
    }
    return TypicalPods::FromPods(shapes, models_);
  }

  void Fill(const Cluster& cluster, const NodeInfo& n, GpuNodeState& s) {
    s.cpu_free = n.idle.Get(kCpu);
    s.memory_free = n.idle.Get(kMemory);
    s.pods = n.pod_count;
    s.max_pods = n.max_pods;
    s.model = n.gpus.empty() ? -1 : models_.Id(n.gpus.front().model);
    s.gpu_free.resize(n.gpus.size());
    for (size_t g = 0; g < n.gpus.size(); ++g) {
      s.gpu_free[g] = static_cast<int32_t>(n.gpus[g].FreeMilli());
    }
    s.pods_by_tag.clear();
    for (int id : n.tasks) {
      const TaskInfo& t = cluster.task(id);
      if (OccupiesNode(t.status)) s.AddTag(RequestOf(t).ClusteringTag(), 1);
    }
  }

  void Score(const Cluster& cluster, const TaskInfo& t, const std::vector<const NodeInfo*>& nodes,
             std::vector<double>& scores) {
    if (nodes.empty()) return;
    GpuPodRequest pod = RequestOf(t);
    if (policy_->PicksNodeAtRandom()) {
      if (nodes.size() > 1) scores[draws_.Intn(static_cast<int>(nodes.size()))] += weight_ * 100;
      return;
    }
    for (size_t i = 0; i < nodes.size(); ++i) {
      Fill(cluster, *nodes[i], state_);
      if (!Fits(pod, state_)) continue;  // the session's own checks reject it
      scores[i] += weight_ * policy_->Score(pod, state_);
    }
  }

  std::string name_;
  double weight_;
  SeededDraws draws_;
  GpuModels models_;
  std::unique_ptr<GpuPlacementPolicy> policy_;
  GpuNodeState state_;
};

}  // namespace

std::unique_ptr<Plugin> NewGpuPlacementPlugin(const PluginOption& opt) {
  return std::make_unique<GpuPlacementPlugin>(opt);
}

}  // namespace muster::core
