// StartEstimator (estimates.h): the waiting gangs' estimated starts and reasons, and which
// PodGroups' annotations need writing.

#include "scheduler/estimates.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include "api/time.h"
#include "boost/json.hpp"
#include "core/explain/explain.h"
#include "scheduler/cluster_mirror.h"

namespace muster::scheduler {

std::string EstimateWrite::Patch() const {
  boost::json::object annotations;
  if (start && !reason.empty()) {
    annotations[kEstimatedStartAnnotation] = api::FormatUnixTime(*start);
  } else {
    annotations[kEstimatedStartAnnotation] = nullptr;
  }
  if (reason.empty()) {
    annotations[kWaitReasonAnnotation] = nullptr;
  } else {
    annotations[kWaitReasonAnnotation] = reason;
  }
  boost::json::object patch;
  patch["metadata"] = boost::json::object{{"annotations", std::move(annotations)}};
  return boost::json::serialize(patch);
}

bool StartEstimator::CameDue(int64_t now_unix) const {
  return std::any_of(written_.begin(), written_.end(),
                     [&](const auto& w) { return w.second.start && *w.second.start <= now_unix; });
}

std::vector<EstimateWrite> StartEstimator::Plan(const core::Cluster& cluster,
                                                const core::SchedulerConf& conf, int64_t now_unix,
                                                uint64_t generation) {
  // The gangs this cycle left waiting; those the previous cycle left waiting too are explained.
  std::set<std::string> before = std::move(left_waiting_);
  left_waiting_.clear();
  Inputs inputs;
  inputs.generation = generation;
  std::vector<std::string> waiting;
  for (int id : cluster.JobIds()) {
    const core::JobInfo& j = cluster.job(id);
    if (!j.pg || IsDefaultSchedulerJob(j)) continue;
    // Every gang's phase, as one number: admission counts the admitted gangs.
    inputs.phases ^= static_cast<uint64_t>(id) << 8 | static_cast<uint64_t>(j.phase);
    inputs.phases *= 1099511628211ull;
    bool started = j.min_available > 0 ? j.ReadyTaskNum() >= j.min_available : j.ReadyTaskNum() > 0;
    if (started) continue;
    if (j.phase != core::PodGroupPhase::kPending && j.phase != core::PodGroupPhase::kInqueue) {
      continue;
    }
    left_waiting_.insert(j.key);
    if (!before.count(j.key) || waiting.size() >= options_.max_gangs) continue;
    waiting.push_back(j.key);
    inputs.waiting.emplace_back(j.key, static_cast<int>(j.phase));
  }
  if (!Due(now_unix)) return {};
  if (last_inputs_ == inputs && !CameDue(now_unix)) return {};
  last_inputs_ = std::move(inputs);
  if (!waiting.empty()) {
    last_run_ = now_unix;
    ++runs_;
  }
  std::vector<EstimateWrite> out;
  std::set<std::string> seen;
  core::ExplainOptions explain;
  explain.now_unix = now_unix;
  explain.max_sessions = options_.max_sessions;
  std::map<std::string, int64_t> starts;
  if (!waiting.empty()) starts = core::EstimateStarts(cluster, conf, waiting, explain);
  explain.estimate = false;
  for (const std::string& key : waiting) {
    auto e = core::Explain(cluster, conf, key, explain);
    if (!e.ok()) continue;
    seen.insert(key);
    std::optional<int64_t> start;
    if (auto it = starts.find(key); it != starts.end()) start = it->second;
    auto prev = written_.find(key);
    bool changed = prev == written_.end() || prev->second.reason != e->reason ||
                   prev->second.start.has_value() != start.has_value() ||
                   (start && std::llabs(*start - *prev->second.start) > options_.tolerance_seconds);
    if (!changed) continue;
    size_t slash = key.find('/');
    out.push_back({key.substr(0, slash), key.substr(slash + 1), start, e->reason});
  }
  // Gangs that no longer wait: their annotations go, once, while the PodGroup is there.
  for (auto it = written_.begin(); it != written_.end();) {
    if (seen.count(it->first)) {
      ++it;
      continue;
    }
    // One that waits again but not yet for a whole cycle keeps what was written.
    if (left_waiting_.count(it->first) && !before.count(it->first)) {
      ++it;
      continue;
    }
    const core::JobInfo* j = const_cast<core::Cluster&>(cluster).FindJob(it->first);
    bool waits = std::find(waiting.begin(), waiting.end(), it->first) != waiting.end();
    if (j && j->pg && !waits) {
      size_t slash = it->first.find('/');
      out.push_back({it->first.substr(0, slash), it->first.substr(slash + 1), std::nullopt, ""});
    }
    it = written_.erase(it);
  }
  return out;
}

void StartEstimator::Written(const EstimateWrite& w) {
  std::string key = w.ns + "/" + w.name;
  if (w.reason.empty()) {
    written_.erase(key);
  } else {
    written_[key] = {w.start, w.reason};
  }
}

}  // namespace muster::scheduler
