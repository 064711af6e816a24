#pragma once

// The scheduling actions (Volcano's pkg/scheduler/actions) and helpers they share.

#include <functional>
#include <memory>
#include <queue>
#include <unordered_map>
#include <vector>

#include "core/framework/session.h"

namespace muster::core {

std::unique_ptr<Action> NewEnqueueAction();
std::unique_ptr<Action> NewAllocateAction();
std::unique_ptr<Action> NewBackfillAction();
std::unique_ptr<Action> NewPreemptAction();
std::unique_ptr<Action> NewReclaimAction();

// A heap ordered by a session order function; ties pop in push order (deterministic).
template <typename T>
class OrderedQueue {
 public:
  explicit OrderedQueue(std::function<bool(const T&, const T&)> less) : less_(std::move(less)) {}
  void Push(T v) {
    items_.push_back({std::move(v), seq_++});
    std::push_heap(items_.begin(), items_.end(), Cmp());
  }
  T Pop() {
    std::pop_heap(items_.begin(), items_.end(), Cmp());
    T v = std::move(items_.back().value);
    items_.pop_back();
    return v;
  }
  bool Empty() const { return items_.empty(); }
  // Every item, in no particular order.
  std::vector<T> Items() const {
    std::vector<T> out;
    out.reserve(items_.size());
    for (const Item& i : items_) out.push_back(i.value);
    return out;
  }
  size_t Size() const { return items_.size(); }

 private:
  struct Item {
    T value;
    uint64_t seq;
  };
  auto Cmp() const {
    return [this](const Item& a, const Item& b) {
      if (less_(a.value, b.value)) return false;
      if (less_(b.value, a.value)) return true;
      return a.seq > b.seq;
    };
  }
  std::function<bool(const T&, const T&)> less_;
  std::vector<Item> items_;
  uint64_t seq_ = 0;
};

struct FeasibleNodes {
  std::vector<NodeInfo*> nodes;
  FitErrors errors;
};

// Nodes where the task passes every predicate and fits in future-idle resources, examined from
// a rotating start and stopping early once enough are found (Volcano's PredicateNodes with
// kube-scheduler's numFeasibleNodesToFind).
FeasibleNodes FindFeasibleNodes(Session& ssn, const TaskInfo& t);
// The same checks over `candidates` only, in their order and without early stop: for a task
// identical to one whose feasible nodes are `candidates` (see SameSchedulingShape), when only
// placements have happened since. Nodes outside them cannot have become feasible.
FeasibleNodes RecheckFeasibleNodes(Session& ssn, const TaskInfo& t,
                                   const std::vector<NodeInfo*>& candidates);
// Tasks that ask for the same resources with the same node constraints, and whose placement
// cannot depend on where other pods land (no pod affinity or topology spread): a node that
// failed one fails the other.
bool SameSchedulingShape(const TaskInfo& a, const TaskInfo& b);

// Remembers, per scheduling shape, the feasible nodes the last search for such a task found (and
// their scores), so that identical pods (of one gang or of many jobs) are searched for and
// scored once within an action. Valid while nodes only fill up: an action that frees resources
// between two uses must Clear().
class ShapeCache {
 public:
  struct Entry {
    const TaskInfo* shape = nullptr;
    std::vector<NodeInfo*> nodes;
    // Scores of `nodes` for this shape, each valid while the node's version is unchanged.
    std::vector<double> scores;
    std::vector<uint64_t> versions;
    std::vector<char> idle;  // whether the shape's request fits each node's idle resources
    int uses = 0;  // pods served since the search that produced `nodes`
    int job = -1;  // the job whose pod made that search
    // Set when a search of every node found none feasible for this shape: Cluster::NodeChanges()
    // then, and why each node failed. While no node has changed since, none fits a task of this
    // shape either, for the same reasons (the search examined every node).
    bool none_fit = false;
    uint64_t none_fit_at = 0;
    FitErrors none_fit_errors;
  };
  // The entry for a task of this shape, or nullptr.
  Entry* Find(const TaskInfo& t);
  // The entry for this shape, created empty when missing; `t` becomes its representative.
  Entry& Get(const TaskInfo& t);
  void Clear() { entries_.clear(); }

 private:
  static size_t Hash(const TaskInfo& t);
  std::unordered_map<size_t, std::vector<Entry>> entries_;
};

// The best-scoring node of `nodes` (first in order among equals).
NodeInfo* BestNode(Session& ssn, const TaskInfo& t, const std::vector<NodeInfo*>& nodes);

// "Insufficient <resource>" for the first dimension of `need` above `have`; empty when it fits.
std::string InsufficientReason(const Resources& need, const Resources& have);
// The FitReasons id of "Insufficient <resource>".
int InsufficientReasonId(ResourceId r);

}  // namespace muster::core
