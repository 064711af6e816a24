#pragma once

// A gang's tentative operations, committed together or undone in reverse (Volcano's Statement,
// pkg/scheduler/framework/statement.go).

#include <string>
#include <vector>

#include "core/cluster.h"

namespace muster::core {

class Session;

class Statement {
 public:
  explicit Statement(Session& ssn) : ssn_(ssn) {}
  ~Statement() = default;
  void Allocate(TaskInfo& t, int node);
  void Pipeline(TaskInfo& t, int node);
  void Evict(TaskInfo& t, const std::string& reason);
  void Commit();
  void Discard();
  // Moves other's operations to the end of this one.
  void Merge(Statement& other);
  bool empty() const { return ops_.empty(); }

 private:
  enum class Kind { kAllocate, kPipeline, kEvict };
  struct Op {
    Kind kind;
    int task;
    TaskStatus previous;
    std::string reason;
  };
  Session& ssn_;
  std::vector<Op> ops_;
};

}  // namespace muster::core
