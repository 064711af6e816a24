#include "bench/bench_support.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string_view>

#include "fmt/format.h"

namespace muster::bench {

common::Quantity Q(const std::string& text) {
  auto q = common::Quantity::Parse(text);
  if (!q.ok()) {
    std::fprintf(stderr, "bench: bad quantity %s: %s\n", text.c_str(),
                 std::string(q.status().message()).c_str());
    std::abort();
  }
  return *q;
}

// --- builders -------------------------------------------------------------------------------

NodeBuilder::NodeBuilder(std::string name) {
  node_.meta.name = std::move(name);
  node_.meta.labels["kubernetes.io/hostname"] = node_.meta.name;
  api::Condition ready;
  ready.type = "Ready";
  ready.status = "True";
  node_.status.conditions.push_back(ready);
}

NodeBuilder& NodeBuilder::Resource(const std::string& name, const std::string& quantity) {
  node_.status.capacity[name] = Q(quantity);
  node_.status.allocatable[name] = Q(quantity);
  return *this;
}

NodeBuilder& NodeBuilder::Label(const std::string& key, const std::string& value) {
  node_.meta.labels[key] = value;
  return *this;
}

NodeBuilder& NodeBuilder::Taint(const std::string& key, const std::string& value,
                                const std::string& effect) {
  node_.spec.taints.push_back({key, value, effect});
  return *this;
}

PodBuilder::PodBuilder(std::string ns, std::string name) {
  pod_.meta.namespace_ = std::move(ns);
  pod_.meta.name = std::move(name);
  pod_.meta.uid = pod_.meta.namespace_ + "-" + pod_.meta.name;
  pod_.spec.scheduler_name = "volcano";
  pod_.status.phase = "Pending";
  api::Container pause;
  pause.name = "pause";
  pause.image = "registry.k8s.io/pause:3.10";
  pod_.spec.containers.push_back(pause);
}

PodBuilder& PodBuilder::Request(const std::string& name, const std::string& quantity) {
  api::Container& c = pod_.spec.containers.front();
  c.resources.requests[name] = Q(quantity);
  c.resources.limits[name] = Q(quantity);
  return *this;
}

PodBuilder& PodBuilder::Group(const std::string& pod_group) {
  pod_.meta.annotations[api::kGroupNameAnnotation] = pod_group;
  return *this;
}

PodBuilder& PodBuilder::TolerateExists(const std::string& key, const std::string& effect) {
  api::Toleration toleration;
  toleration.key = key;
  toleration.op = "Exists";
  toleration.effect = effect;
  pod_.spec.tolerations.push_back(toleration);
  return *this;
}

PodBuilder& PodBuilder::RequireNodeLabelIn(const std::string& key,
                                           std::vector<std::string> values) {
  api::NodeSelectorTerm term;
  term.match_expressions.push_back({key, "In", std::move(values)});
  api::Affinity& affinity = pod_.spec.affinity.emplace();
  affinity.node_affinity.emplace().required.emplace().push_back(std::move(term));
  return *this;
}

PodBuilder& PodBuilder::RunningOn(const std::string& node) {
  pod_.spec.node_name = node;
  pod_.status.phase = "Running";
  return *this;
}

PodGroupBuilder::PodGroupBuilder(std::string ns, std::string name) {
  pg_.meta.namespace_ = std::move(ns);
  pg_.meta.name = std::move(name);
  pg_.meta.uid = pg_.meta.namespace_ + "-" + pg_.meta.name;
  pg_.spec.min_member = 1;
  pg_.spec.queue = "default";
  pg_.status.phase = "Inqueue";
}

PodGroupBuilder& PodGroupBuilder::MinMember(int32_t n) {
  pg_.spec.min_member = n;
  return *this;
}

PodGroupBuilder& PodGroupBuilder::Queue(const std::string& queue) {
  pg_.spec.queue = queue;
  return *this;
}

PodGroupBuilder& PodGroupBuilder::Phase(const std::string& phase) {
  pg_.status.phase = phase;
  return *this;
}

// --- cycles ---------------------------------------------------------------------------------

void ApplyBinds(core::Cluster& cluster, const core::CycleResult& result) {
  for (const auto& b : result.binds) {
    core::TaskInfo* t = cluster.FindTask(b.pod);
    if (t == nullptr || !t->pod) continue;
    api::Pod pod = *t->pod;
    pod.spec.node_name = b.node;
    cluster.UpsertPod(pod);
  }
}

CycleStats RunUntilBound(core::Cluster& cluster, const core::SchedulerConf& conf,
                         const RunOptions& options) {
  CycleStats stats;
  while (stats.binds < options.want_binds && stats.cycles < options.max_cycles) {
    core::SessionOptions so;
    so.session_id = fmt::format("cycle-{}", stats.cycles + 1);
    auto start = std::chrono::steady_clock::now();
    core::CycleResult result;
    {
      core::Session ssn(cluster, conf, so);
      if (options.observer.on_allocate || options.observer.on_deallocate) {
        ssn.AddEventHandler(options.observer);
      }
      result = ssn.Run();
    }
    stats.session_seconds += SecondsSince(start);
    ++stats.cycles;
    start = std::chrono::steady_clock::now();
    ApplyBinds(cluster, result);
    stats.apply_seconds += SecondsSince(start);
    stats.binds += static_cast<int64_t>(result.binds.size());
    if (result.binds.empty()) break;
  }
  return stats;
}

// --- statistics -----------------------------------------------------------------------------

double Percentile(std::vector<double> samples, double p) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  double rank = std::ceil(p / 100.0 * static_cast<double>(samples.size()));
  size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return samples[std::min(index, samples.size() - 1)];
}

namespace {

int64_t StatusKiB(std::string_view field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0 && line.size() > field.size() && line[field.size()] == ':') {
      return std::atoll(line.c_str() + field.size() + 1);
    }
  }
  return 0;
}

}  // namespace

int64_t PeakRssBytes() { return StatusKiB("VmHWM") * 1024; }
int64_t CurrentRssBytes() { return StatusKiB("VmRSS") * 1024; }

}  // namespace muster::bench
