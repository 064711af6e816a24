// Scheduling scenario files (scenario.h, tests/conformance/FORMAT.md): load a file, run its cycles
// through the core, compare with what it expects. muster's own format; the files under
// tests/conformance/volcano restate Volcano's scheduler tests (pkg/scheduler/*/*/*_test.go).

#include "scenario/scenario.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "api/gpu_indices.h"
#include "api/yaml.h"
#include "core/apply_cycle_result.h"
#include "core/framework/conf.h"
#include "fmt/format.h"
#include "yaml-cpp/yaml.h"

namespace muster::scenario {
namespace {

absl::Status Err(const std::string& file, const YAML::Node& at, const std::string& what) {
  int line = at.IsDefined() ? at.Mark().line + 1 : 0;
  return absl::InvalidArgumentError(
      line > 0 ? fmt::format("{}:{}: {}", file, line, what) : fmt::format("{}: {}", file, what));
}

absl::StatusOr<std::map<std::string, std::string>> StringMap(const std::string& file,
                                                            const YAML::Node& n,
                                                            const std::string& field) {
  std::map<std::string, std::string> out;
  if (!n.IsMap()) return Err(file, n, fmt::format("expect.{} must be a map", field));
  for (const auto& kv : n) {
    if (!kv.second.IsScalar()) {
      return Err(file, kv.second, fmt::format("expect.{}.{} must be a string", field,
                                              kv.first.as<std::string>()));
    }
    out[kv.first.as<std::string>()] = kv.second.as<std::string>();
  }
  return out;
}

}  // namespace

absl::StatusOr<Scenario> LoadScenario(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(fmt::format("{}: cannot open file", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseScenario(ss.str(), path);
}

absl::StatusOr<Scenario> ParseScenario(const std::string& text, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        fmt::format("{}:{}: malformed YAML: {}", file, e.mark.line + 1, e.msg));
  }
  if (!root.IsMap()) return Err(file, root, "a scenario must be a YAML map");
  static const std::set<std::string> kKeys = {"name",   "source",  "description", "schedulerConf",
                                              "cycles", "objects", "expect"};
  for (const auto& kv : root) {
    std::string key = kv.first.as<std::string>();
    if (!kKeys.count(key)) return Err(file, kv.first, fmt::format("unknown field \"{}\"", key));
  }
  Scenario s;
  s.file = file;
  try {
    if (!root["name"] || !root["name"].IsScalar()) return Err(file, root, "missing field \"name\"");
    s.name = root["name"].as<std::string>();
    if (root["source"]) s.source = root["source"].as<std::string>();
    if (root["description"]) s.description = root["description"].as<std::string>();
    if (root["schedulerConf"]) {
      s.scheduler_conf = root["schedulerConf"].as<std::string>();
      core::ConfParseOptions opts;
      opts.allow_proportion_with_capacity = true;
      auto conf = core::ParseSchedulerConf(s.scheduler_conf, opts);
      if (!conf.ok()) {
        return Err(file, root["schedulerConf"],
                   "schedulerConf: " + std::string(conf.status().message()));
      }
    }
    if (root["cycles"]) {
      s.cycles = root["cycles"].as<int>();
      if (s.cycles < 1) return Err(file, root["cycles"], "cycles must be at least 1");
    }
    if (!root["objects"] || !root["objects"].IsSequence()) {
      return Err(file, root, "missing field \"objects\" (a list of Kubernetes objects)");
    }
    int index = 0;
    for (const auto& obj : root["objects"]) {
      auto json = api::YamlToJson(obj);
      if (!json.ok()) return Err(file, obj, std::string(json.status().message()));
      auto decoded = api::DecodeObject(*json);
      if (!decoded.ok()) {
        return Err(file, obj, fmt::format("objects[{}]: {}", index, std::string(decoded.status().message())));
      }
      // Namespaced kinds default to "default", as kubectl does.
      std::visit(
          [](auto& o) {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, api::Pod> || std::is_same_v<T, api::PodGroup>) {
              if (o.meta.namespace_.empty()) o.meta.namespace_ = "default";
            }
          },
          *decoded);
      s.objects.push_back(std::move(*decoded));
      ++index;
    }
    if (!root["expect"] || !root["expect"].IsMap()) {
      return Err(file, root, "missing field \"expect\"");
    }
    const YAML::Node ex = root["expect"];
    static const std::set<std::string> kExpectKeys = {
        "binds", "evictions", "pipelined", "podGroupPhases", "unschedulableMessage", "gpuIndices"};
    for (const auto& kv : ex) {
      std::string key = kv.first.as<std::string>();
      if (!kExpectKeys.count(key)) {
        return Err(file, kv.first, fmt::format("unknown field \"expect.{}\"", key));
      }
    }
    if (ex["binds"]) {
      if (ex["binds"].IsNull()) {
        s.expect.binds.emplace();
      } else {
        auto m = StringMap(file, ex["binds"], "binds");
        if (!m.ok()) return m.status();
        s.expect.binds = *m;
      }
    }
    if (ex["evictions"]) {
      if (!ex["evictions"].IsSequence() && !ex["evictions"].IsNull()) {
        return Err(file, ex["evictions"], "expect.evictions must be a list of pods");
      }
      s.expect.evictions.emplace();
      for (const auto& e : ex["evictions"]) s.expect.evictions->push_back(e.as<std::string>());
    }
    auto read_map = [&](const char* key, std::map<std::string, std::string>& out) -> absl::Status {
      if (!ex[key]) return absl::OkStatus();
      auto m = StringMap(file, ex[key], key);
      if (!m.ok()) return m.status();
      out = *m;
      return absl::OkStatus();
    };
    if (auto st = read_map("pipelined", s.expect.pipelined); !st.ok()) return st;
    if (auto st = read_map("podGroupPhases", s.expect.pod_group_phases); !st.ok()) return st;
    if (auto st = read_map("unschedulableMessage", s.expect.unschedulable_messages); !st.ok()) {
      return st;
    }
    if (auto st = read_map("gpuIndices", s.expect.gpu_indices); !st.ok()) return st;
    for (const auto& [pod, indices] : s.expect.gpu_indices) {
      if (!api::ParseGpuIndices(indices)) {
        return Err(file, ex["gpuIndices"][pod],
                   fmt::format("expect.gpuIndices.{}: \"{}\" is not a list of GPU indices such "
                               "as \"0,3\"",
                               pod, indices));
      }
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(fmt::format("{}:{}: {}", file, e.mark.line + 1, e.msg));
  }
  return s;
}

absl::StatusOr<Outcome> RunScenario(const Scenario& scenario) {
  core::ConfParseOptions opts;
  opts.allow_proportion_with_capacity = true;
  core::SchedulerConf conf = core::DefaultSchedulerConf();
  if (!scenario.scheduler_conf.empty()) {
    auto parsed = core::ParseSchedulerConf(scenario.scheduler_conf, opts);
    if (!parsed.ok()) return parsed.status();
    conf = *parsed;
  }
  core::Cluster cluster;
  for (const auto& obj : scenario.objects) {
    std::visit(
        [&](const auto& o) {
          using T = std::decay_t<decltype(o)>;
          if constexpr (std::is_same_v<T, api::Node>) cluster.UpsertNode(o);
          if constexpr (std::is_same_v<T, api::Pod>) cluster.UpsertPod(o);
          if constexpr (std::is_same_v<T, api::PodGroup>) cluster.UpsertPodGroup(o);
          if constexpr (std::is_same_v<T, api::Queue>) cluster.UpsertQueue(o);
          if constexpr (std::is_same_v<T, api::PriorityClass>) cluster.UpsertPriorityClass(o);
          if constexpr (std::is_same_v<T, api::HyperNode>) cluster.UpsertHyperNode(o);
        },
        obj);
  }
  Outcome out;
  for (int cycle = 0; cycle < scenario.cycles; ++cycle) {
    core::SessionOptions so;
    so.session_id = fmt::format("cycle-{}", cycle + 1);
    core::Session ssn(cluster, conf, so);
    core::CycleResult r = ssn.Run();
    // Apply the decisions as the API would: bound pods get their node, evicted pods go away.
    for (const auto& b : r.binds) {
      out.binds[b.pod] = b.node;
      if (!b.gpus.empty()) out.gpu_indices[b.pod] = api::FormatGpuIndices(b.gpus);
    }
    for (const auto& e : r.evictions) out.evictions.push_back(e.pod);
    core::ApplyCycleResult(cluster, r);
    for (const auto& [pod, node] : r.pipelined) out.pipelined[pod] = node;
    // A cycle reports only the groups it worked on; every group's phase is in the cluster view.
    for (int id : cluster.JobIds()) {
      const core::JobInfo& j = cluster.job(id);
      if (j.pg) out.pod_group_phases[j.key] = j.PhaseText();
    }
    for (const auto& pg : r.pod_groups) {
      if (pg.condition) out.pod_group_conditions[pg.pod_group] = pg.condition->message;
    }
    out.unschedulable_messages.clear();
    for (const auto& pc : r.pod_conditions) out.unschedulable_messages[pc.pod] = pc.message;
    out.cycles.push_back(std::move(r));
  }
  return out;
}

std::vector<std::string> Compare(const Expectations& expect, const Outcome& outcome) {
  std::vector<std::string> diffs;
  std::map<std::string, std::string> want_binds = expect.binds.value_or(
      std::map<std::string, std::string>{});
  for (const auto& [pod, node] : want_binds) {
    auto it = outcome.binds.find(pod);
    if (it == outcome.binds.end()) {
      diffs.push_back(fmt::format("binds: {} should be bound to {}, but was not bound", pod, node));
    } else if (node != "*" && it->second != node) {
      diffs.push_back(fmt::format("binds: {} should be bound to {}, but went to {}", pod, node,
                                  it->second));
    }
  }
  for (const auto& [pod, node] : outcome.binds) {
    if (!want_binds.count(pod)) {
      diffs.push_back(fmt::format("binds: {} was bound to {}, which was not expected", pod, node));
    }
  }
  std::set<std::string> want_ev;
  if (expect.evictions) want_ev.insert(expect.evictions->begin(), expect.evictions->end());
  std::set<std::string> got_ev(outcome.evictions.begin(), outcome.evictions.end());
  for (const auto& p : want_ev) {
    if (!got_ev.count(p)) diffs.push_back(fmt::format("evictions: {} should be evicted, but was not", p));
  }
  for (const auto& p : got_ev) {
    if (!want_ev.count(p)) diffs.push_back(fmt::format("evictions: {} was evicted, which was not expected", p));
  }
  for (const auto& [pod, node] : expect.pipelined) {
    auto it = outcome.pipelined.find(pod);
    std::string got = it == outcome.pipelined.end() ? "<not pipelined>" : it->second;
    if (got != node && !(node == "*" && it != outcome.pipelined.end())) {
      diffs.push_back(fmt::format("pipelined: {} should be held on {}, got {}", pod, node, got));
    }
  }
  for (const auto& [pg, phase] : expect.pod_group_phases) {
    auto it = outcome.pod_group_phases.find(pg);
    std::string got = it == outcome.pod_group_phases.end() ? "<unknown pod group>" : it->second;
    if (got != phase) {
      diffs.push_back(fmt::format("podGroupPhases: {} should be {}, got {}", pg, phase, got));
    }
  }
  for (const auto& [pod, indices] : expect.gpu_indices) {
    auto it = outcome.gpu_indices.find(pod);
    std::string got = it == outcome.gpu_indices.end() ? "<no GPUs>" : it->second;
    if (got != indices) {
      diffs.push_back(
          fmt::format("gpuIndices: {} should be given GPUs {}, got {}", pod, indices, got));
    }
  }
  for (const auto& [pod, msg] : expect.unschedulable_messages) {
    auto it = outcome.unschedulable_messages.find(pod);
    std::string got = it == outcome.unschedulable_messages.end() ? "<no message>" : it->second;
    if (got != msg) {
      diffs.push_back(fmt::format("unschedulableMessage: {}\n      want: {}\n      got:  {}", pod,
                                  msg, got));
    }
  }
  return diffs;
}

std::string Explain(const Scenario& scenario, const Outcome& outcome) {
  std::string out;
  if (!scenario.description.empty()) out += "  " + scenario.description + "\n";
  for (size_t c = 0; c < outcome.cycles.size(); ++c) {
    const core::CycleResult& r = outcome.cycles[c];
    out += fmt::format("  cycle {}:\n", c + 1);
    if (r.binds.empty() && r.evictions.empty()) out += "    nothing was bound or evicted\n";
    for (const auto& b : r.binds) {
      std::string gpus;
      for (int g : b.gpus) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
      out += fmt::format("    bound {} to {}{}\n", b.pod, b.node,
                         gpus.empty() ? "" : " (GPU " + gpus + ")");
    }
    for (const auto& e : r.evictions) out += fmt::format("    evicted {} ({})\n", e.pod, e.reason);
    for (const auto& pg : r.pod_groups) {
      out += fmt::format("    pod group {} is {}", pg.pod_group, pg.phase);
      if (pg.condition && pg.condition->type == "Unschedulable") {
        out += ": " + pg.condition->message;
      }
      out += "\n";
    }
    for (const auto& pc : r.pod_conditions) {
      out += fmt::format("    pod {} waits: {}\n", pc.pod, pc.message);
    }
  }
  return out;
}

}  // namespace muster::scenario
