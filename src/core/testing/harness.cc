// The scheduling-cycle test harness (harness.h).

#include "core/testing/harness.h"

#include "api/time.h"
#include "fmt/format.h"
#include "gtest/gtest.h"

namespace muster::core::test {

SchedulerConf MustParse(std::string_view text) {
  absl::StatusOr<SchedulerConf> conf = ParseSchedulerConf(text);
  EXPECT_TRUE(conf.ok()) << conf.status() << "\n" << text;
  return conf.ok() ? *std::move(conf) : SchedulerConf{};
}

BindMap Binds(const CycleResult& r) {
  BindMap out;
  for (const auto& b : r.binds) out[b.pod] = b.node;
  return out;
}

std::vector<std::string> Evicted(const CycleResult& r) {
  std::vector<std::string> out;
  for (const auto& e : r.evictions) out.push_back(e.pod);
  return out;
}

std::string Message(const CycleResult& r, const std::string& pod) {
  for (const auto& pc : r.pod_conditions) {
    if (pc.pod == pod) return pc.message;
  }
  return "<none>";
}

const CycleResult::PodCondition* Condition(const CycleResult& r, const std::string& pod) {
  for (const auto& pc : r.pod_conditions) {
    if (pc.pod == pod) return &pc;
  }
  return nullptr;
}

const CycleResult::PodGroupStatus* Group(const CycleResult& r, const std::string& pg) {
  for (const auto& s : r.pod_groups) {
    if (s.pod_group == pg) return &s;
  }
  return nullptr;
}

std::string Phase(const CycleResult& r, const std::string& pg) {
  const auto* s = Group(r, pg);
  return s ? s->phase : "<none>";
}

std::vector<std::string> Events(const CycleResult& r, const std::string& object,
                                const std::string& reason) {
  std::vector<std::string> out;
  for (const auto& e : r.events) {
    if (e.object == object && e.reason == reason) out.push_back(e.message);
  }
  return out;
}

int CountWithPrefix(const BindMap& binds, const std::string& prefix) {
  int n = 0;
  for (const auto& [pod, node] : binds) n += pod.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

CycleResult RunOnePod(const std::vector<api::Node>& nodes, PodBuilder pod,
                      const std::vector<api::Pod>& running) {
  Harness h;
  for (const auto& n : nodes) h.Add(n);
  for (const auto& p : running) h.Add(p);
  h.Add(MakePodGroup("ns", "pg").Obj());
  h.Add(pod.Group("pg").Req("cpu", "1").Obj());
  return h.Run();
}

PodBuilder P() { return MakePod("ns", "p"); }
NodeBuilder N(std::string name) {
  return MakeNode(name).Cpu("4").Memory("8Gi").Label("kubernetes.io/hostname", name);
}

void AddGpuNodes(Harness& h, int count, int gpus) {
  for (int i = 1; i <= count; ++i) {
    h.Add(MakeNode("n" + std::to_string(i)).Cpu("32").Memory("64Gi").Gpus(gpus).Obj());
  }
}

void AddGang(Harness& h, const std::string& pg, int pods, int min_member, int gpus_each,
             const std::string& queue) {
  h.Add(MakePodGroup("ns", pg).MinMember(min_member).Queue(queue).Obj());
  for (int i = 1; i <= pods; ++i) {
    h.Add(MakePod("ns", pg + "-" + std::to_string(i))
              .Group(pg)
              .Req("cpu", "1")
              .Gpus(gpus_each)
              .Obj());
  }
}

SchedulerConf AllocateConf(std::string_view arguments) {
  return MustParse(fmt::format(R"(
actions: "allocate, backfill"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}]
- plugins: [{{name: predicates}}, {{name: nodeorder}}]
configurations:
- name: allocate
  arguments: {}
)",
                               arguments));
}

std::string At(int seconds) { return api::FormatUnixTime(kT0 + seconds); }
SessionOptions Now(int seconds) {
  SessionOptions o;
  o.now_unix = kT0 + seconds;
  return o;
}

void AddBlockedGang(Harness& h, const std::vector<std::tuple<std::string, int, std::string>>& small,
                    const std::string& a_runtime) {
  AddGpuNodes(h, 2, 8);
  auto a = MakePod("ns", "a-1").Group("a").Req("cpu", "1").Gpus(8).RunningOn("n1").Started(At(0));
  if (!a_runtime.empty()) a.ExpectedRuntime(a_runtime);
  h.Add(MakePodGroup("ns", "a").Phase("Running").Created(At(0)).Obj()).Add(a.Obj());
  h.Add(MakePodGroup("ns", "g").MinMember(2).Created(At(1)).Obj());
  for (const char* p : {"g-1", "g-2"}) {
    h.Add(MakePod("ns", p).Group("g").Req("cpu", "1").Gpus(8).ExpectedRuntime("50s").Obj());
  }
  int created = 2;
  for (const auto& [name, gpus, runtime] : small) {
    h.Add(MakePodGroup("ns", name).Created(At(created++)).Obj());
    auto p = MakePod("ns", name + "-1").Group(name).Req("cpu", "1").Gpus(gpus);
    if (!runtime.empty()) p.ExpectedRuntime(runtime);
    h.Add(p.Obj());
  }
}

}  // namespace muster::core::test
