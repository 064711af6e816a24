#include "scheduler/gang_repair.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "api/gpu_indices.h"
#include "api/json_access.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "fmt/format.h"

namespace muster::scheduler {
namespace {

namespace json = boost::json;

bool Ours(const core::TaskInfo& t, const std::vector<std::string>& scheduler_names) {
  if (!t.pod) return false;
  return std::find(scheduler_names.begin(), scheduler_names.end(), t.pod->spec.scheduler_name) !=
         scheduler_names.end();
}

}  // namespace

std::string PlacementText(const std::vector<client::Binding>& bindings) {
  json::array pods;
  for (const client::Binding& b : bindings) {
    json::object m{{"name", b.pod}, {"uid", b.pod_uid}, {"node", b.node}};
    auto gpus = b.annotations.find(api::kGpuIndicesAnnotation);
    if (gpus != b.annotations.end() && !gpus->second.empty()) m["gpus"] = gpus->second;
    pods.push_back(std::move(m));
  }
  return json::serialize(json::object{{"pods", std::move(pods)}});
}

std::vector<RecordedMember> ParsePlacement(std::string_view text) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return {};
  const json::value* pods = v.get_object().if_contains("pods");
  if (pods == nullptr || !pods->is_array()) return {};
  std::vector<RecordedMember> out;
  for (const json::value& p : pods->get_array()) {
    if (!p.is_object()) return {};
    RecordedMember m{api::StringAt(p.get_object(), "name"), api::StringAt(p.get_object(), "uid"),
                     api::StringAt(p.get_object(), "node"), api::StringAt(p.get_object(), "gpus")};
    if (m.name.empty() || m.uid.empty() || m.node.empty()) return {};
    out.push_back(std::move(m));
  }
  return out;
}

std::string PlacementPatch(const std::vector<client::Binding>& bindings) {
  json::object patch{
      {"metadata",
       json::object{{"annotations",
                     json::object{{kPlacementAnnotation, PlacementText(bindings)}}}}}};
  return json::serialize(patch);
}

std::vector<GangRepair> PlanGangRepairs(const core::Cluster& cluster,
                                        const std::vector<std::string>& scheduler_names) {
  std::vector<GangRepair> repairs;
  for (int id : cluster.JobIds()) {
    const core::JobInfo& j = cluster.job(id);
    if (!j.pg) continue;
    auto record = j.pg->meta.annotations.find(kPlacementAnnotation);
    if (record == j.pg->meta.annotations.end()) continue;
    if (j.ReadyTaskNum() >= j.min_available) continue;
    const std::vector<RecordedMember> members = ParsePlacement(record->second);
    if (members.empty()) continue;

    GangRepair repair;
    repair.job = j.key;
    repair.min_available = j.min_available;
    std::vector<std::pair<const RecordedMember*, const core::TaskInfo*>> waiting;
    bool foreign = false;
    for (const RecordedMember& m : members) {
      const core::TaskInfo* t = nullptr;
      for (int tid : j.tasks) {
        const core::TaskInfo& candidate = cluster.task(tid);
        if (candidate.name == m.name && candidate.pod && candidate.pod->meta.uid == m.uid) {
          t = &candidate;
        }
      }
      if (t == nullptr) continue;  // gone or replaced: not this record's any more
      if (!Ours(*t, scheduler_names)) {
        foreign = true;
        break;
      }
      if (t->node >= 0) {
        if (!t->pod->meta.deletion_timestamp.empty()) continue;
        ++repair.bound;
        client::Binding undo;
        undo.ns = t->ns;
        undo.pod = t->name;
        undo.pod_uid = m.uid;
        undo.node = cluster.node(t->node).name;
        repair.undo.push_back(std::move(undo));
      } else if (t->status == core::TaskStatus::kPending) {
        waiting.emplace_back(&m, t);
      }
    }
    if (foreign || repair.bound == 0 || waiting.empty()) continue;

    // Does the record still fit? Requests summed per node against idle, GPU devices free.
    std::map<int, core::Resources> asked;
    std::map<int, std::set<int>> devices;
    for (const auto& [m, t] : waiting) {
      const core::NodeInfo* n = nullptr;
      for (int nid : cluster.NodeIds()) {
        if (cluster.node(nid).name == m->node) n = &cluster.node(nid);
      }
      if (n == nullptr) {
        repair.why = fmt::format("node {} of {} is gone", m->node, m->name);
        break;
      }
      if (!n->ready || n->unschedulable) {
        repair.why = fmt::format("node {} of {} is not ready or is cordoned", n->name, m->name);
        break;
      }
      core::Resources& sum = asked[n->id];
      sum.Add(t->resreq);
      if (!sum.LessEqual(n->idle)) {
        repair.why = fmt::format("{} no longer fits on {}", m->name, n->name);
        break;
      }
      std::optional<std::vector<int>> gpus = api::ParseGpuIndices(m->gpus);
      bool parsed = gpus.has_value();
      for (int gpu : gpus.value_or(std::vector<int>())) {
        auto dev = std::find_if(n->gpus.begin(), n->gpus.end(),
                                [gpu](const core::GpuDevice& d) { return d.index == gpu; });
        if (dev == n->gpus.end() || !dev->IsFree() || !devices[n->id].insert(gpu).second) {
          parsed = false;
          break;
        }
      }
      if (!parsed) {
        repair.why = fmt::format("GPU {} of {} on {} is taken", m->gpus, m->name, n->name);
        break;
      }
      client::Binding b;
      b.ns = t->ns;
      b.pod = t->name;
      b.node = m->node;
      b.pod_uid = m->uid;
      if (!m->gpus.empty()) b.annotations[api::kGpuIndicesAnnotation] = m->gpus;
      repair.bindings.push_back(std::move(b));
    }
    repair.complete = repair.why.empty();
    if (!repair.complete) repair.bindings.clear();
    repairs.push_back(std::move(repair));
  }
  return repairs;
}

}  // namespace muster::scheduler
