#pragma once

// Scheduling shapes: pods that ask for the same resources under the same node constraints, and
// whose placement cannot depend on other pods, fail and fit on the same nodes. allocate keeps
// the last feasible-node search per shape (ShapeCache) so that identical pods are searched for
// and scored once. Muster's own, going further than Volcano's predicate error cache
// (pkg/scheduler/util/predicate_helper.go), which remembers the nodes a job's task role failed.

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/framework/session.h"

namespace muster::core {

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
    int uses = 0;            // pods served since the search that produced `nodes`
    int job = -1;            // the job whose pod made that search
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

}  // namespace muster::core
