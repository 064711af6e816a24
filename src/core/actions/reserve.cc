// Reservations for large gangs, planned for allocate (reserve.h).

#include "core/actions/reserve.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "api/time.h"
#include "fmt/format.h"

namespace muster::core {
namespace {

constexpr double kNever = std::numeric_limits<double>::infinity();

}  // namespace

Reservation::Reservation(Session& ssn, const AllocateOptions& options)
    : ssn_(ssn), options_(options), now_(static_cast<double>(ssn.options().now_unix)) {
  int max_id = -1;
  for (const NodeInfo* n : ssn.nodes()) max_id = std::max(max_id, n->id);
  node_index_.assign(max_id + 1, -1);
  for (size_t i = 0; i < ssn.nodes().size(); ++i) {
    node_index_[ssn.nodes()[i]->id] = static_cast<int>(i);
  }
}

bool AsksForReservation(const Cluster& cluster, const JobInfo& j, const AllocateOptions& options) {
  if (options.reserve_gpus <= 0) return false;
  int64_t gpus = 0;
  for (int tid : j.tasks) gpus += cluster.task(tid).resreq.Get(kGpu);
  return static_cast<double>(gpus) >= options.reserve_gpus * 1000;
}

bool Reservation::Wants(const JobInfo& j) const {
  if (active() || &j == released_ || !AsksForReservation(ssn_.cluster(), j, options_)) {
    return false;
  }
  if (options_.reserve_after_seconds > 0) {
    std::optional<int64_t> created = api::ParseUnixTime(j.creation);
    if (!created || now_ - static_cast<double>(*created) < options_.reserve_after_seconds) {
      return false;
    }
  }
  return true;
}

bool Reservation::Waited(const JobInfo& j) const {
  std::optional<int64_t> created = api::ParseUnixTime(j.creation);
  return created && static_cast<double>(*created) < now_;
}

double Reservation::ExpectedEnd(const TaskInfo& t) const {
  if (t.status == TaskStatus::kReleasing) return now_;
  if (t.expected_runtime < 0) return kNever;
  // Placed this cycle, or bound but not started yet: it starts now. A pod past its expected end
  // is expected to leave any moment.
  double start = t.status == TaskStatus::kRunning && t.start_unix > 0
                     ? static_cast<double>(t.start_unix)
                     : now_;
  return std::max(now_, start + t.expected_runtime);
}

bool Reservation::GangFitsIn(const std::vector<Resources>& free,
                             const std::vector<int>* indices) const {
  thread_local std::vector<Resources> left;
  left = free;
  const size_t n = indices ? indices->size() : left.size();
  for (size_t k = 0; k < gang_tasks_.size(); ++k) {
    const Resources& req = gang_tasks_[k]->resreq;
    bool placed = false;
    for (size_t x = 0; x < n && !placed; ++x) {
      const size_t i = indices ? static_cast<size_t>((*indices)[x]) : x;
      if (!eligible_[k][i] || !req.LessEqual(left[i])) continue;
      left[i].Sub(req);
      placed = true;
    }
    if (!placed) return false;
  }
  return true;
}

bool Reservation::GangFits(const std::vector<Resources>& free) const {
  if (within_.empty()) return GangFitsIn(free, nullptr);
  for (const std::vector<int>& indices : within_) {
    if (GangFitsIn(free, &indices)) return true;
  }
  return false;
}

bool Reservation::Plan(const JobInfo& j) {
  Cluster& c = ssn_.cluster();
  const std::vector<NodeInfo*>& nodes = ssn_.nodes();
  std::vector<TaskInfo*> pending;
  for (int tid : j.tasks) {
    TaskInfo& t = c.task(tid);
    if (t.status == TaskStatus::kPending && !t.best_effort) pending.push_back(&t);
  }
  std::stable_sort(pending.begin(), pending.end(), [this](const TaskInfo* l, const TaskInfo* r) {
    return ssn_.TaskOrderLess(*l, *r);
  });
  int need = std::min(static_cast<int>(pending.size()), j.min_available - j.ReadyTaskNum());
  if (need <= 0) return false;
  gang_tasks_.assign(pending.begin(), pending.begin() + need);
  within_.clear();
  if (std::optional<HyperNodeGradient> g = ssn_.HyperNodeGradientFor(j); g && g->hard) {
    for (const HyperNodeInfo* hn : g->allowed) {
      std::vector<int> indices;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (hn->Has(nodes[i]->id)) indices.push_back(static_cast<int>(i));
      }
      if (!indices.empty()) within_.push_back(std::move(indices));
    }
    if (within_.empty()) {  // no HyperNode it may land in has a node: nothing to wait for
      gang_tasks_.clear();
      return false;
    }
  }
  eligible_.assign(gang_tasks_.size(), std::vector<char>(nodes.size(), 0));
  for (size_t k = 0; k < gang_tasks_.size(); ++k) {
    for (size_t i = 0; i < nodes.size(); ++i) {
      PredicateStatus s = ssn_.Predicate(*gang_tasks_[k], *nodes[i]);
      eligible_[k][i] = s.ok || !s.unresolvable;
    }
  }

  // Free resources now, then as the pods on the nodes end, earliest first.
  std::vector<Resources> free(nodes.size());
  struct Release {
    double end;
    int node;
    const Resources* resreq;
  };
  std::vector<Release> releases;
  for (size_t i = 0; i < nodes.size(); ++i) {
    free[i] = nodes[i]->FutureIdle();
    for (int tid : nodes[i]->tasks) {
      const TaskInfo& t = c.task(tid);
      // Releasing pods are in FutureIdle already; pipelined ones are taken out of it.
      if (!IsAllocatedStatus(t.status) && t.status != TaskStatus::kPipelined) continue;
      releases.push_back({ExpectedEnd(t), static_cast<int>(i), &t.resreq});
    }
  }
  std::sort(releases.begin(), releases.end(), [](const Release& a, const Release& b) {
    return std::tie(a.end, a.node) < std::tie(b.end, b.node);
  });
  double shadow = kNever;
  size_t next = 0;
  if (GangFits(free)) shadow = now_;
  while (!std::isfinite(shadow) && next < releases.size() && std::isfinite(releases[next].end)) {
    double at = releases[next].end;
    for (; next < releases.size() && releases[next].end == at; ++next) {
      free[releases[next].node].Add(*releases[next].resreq);
    }
    if (GangFits(free)) shadow = at;
  }
  if (!std::isfinite(shadow)) {
    gang_tasks_.clear();
    eligible_.clear();
    within_.clear();
    return false;
  }
  gang_ = &j;
  shadow_ = shadow;
  free_at_shadow_ = std::move(free);
  return true;
}

void Reservation::Release() {
  released_ = gang_;
  gang_ = nullptr;
  shadow_ = kNever;
  gang_tasks_.clear();
  eligible_.clear();
  within_.clear();
  free_at_shadow_.clear();
}

bool Reservation::Admit(const JobInfo& j) {
  if (!active() || &j == gang_ || j.priority > gang_->priority) return true;
  Cluster& c = ssn_.cluster();
  thread_local std::vector<const TaskInfo*> placed;
  placed.clear();
  double end = now_;
  for (int tid : j.tasks) {
    const TaskInfo& t = c.task(tid);
    // The open statement's placements: committed ones are Binding.
    if (t.status != TaskStatus::kAllocated && t.status != TaskStatus::kPipelined) continue;
    placed.push_back(&t);
    end = std::max(end, ExpectedEnd(t));
  }
  if (end <= shadow_) return true;
  thread_local std::vector<Resources> trial;
  trial = free_at_shadow_;
  for (const TaskInfo* t : placed) {
    int i = t->node < static_cast<int>(node_index_.size()) ? node_index_[t->node] : -1;
    if (i >= 0) trial[i].Sub(t->resreq);
  }
  if (!GangFits(trial)) return false;
  free_at_shadow_.swap(trial);
  return true;
}

std::string Reservation::TurnedAwayReason() const {
  if (!active()) return "";
  return fmt::format("waits for the reservation of {} (expected to fit in {:.0f}s)", gang_->key,
                     shadow_ - now_);
}

}  // namespace muster::core
