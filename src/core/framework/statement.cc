#include "core/framework/statement.h"

#include "core/framework/session.h"

namespace muster::core {

void Statement::Allocate(TaskInfo& t, int node) {
  ops_.push_back({Kind::kAllocate, t.id, t.status, ""});
  ssn_.DoAllocate(t, node);
}

void Statement::Pipeline(TaskInfo& t, int node) {
  ops_.push_back({Kind::kPipeline, t.id, t.status, ""});
  ssn_.DoPipeline(t, node);
}

void Statement::Evict(TaskInfo& t, const std::string& reason) {
  ops_.push_back({Kind::kEvict, t.id, t.status, reason});
  ssn_.DoEvict(t);
}

void Statement::Commit() {
  for (const Op& op : ops_) {
    TaskInfo& t = ssn_.cluster().task(op.task);
    switch (op.kind) {
      case Kind::kAllocate:
        ssn_.RecordBind(t);
        break;
      case Kind::kPipeline:
        ssn_.RecordPipelined(t);
        break;
      case Kind::kEvict:
        ssn_.RecordEviction(t, op.reason);
        break;
    }
  }
  ops_.clear();
}

void Statement::Discard() {
  for (auto it = ops_.rbegin(); it != ops_.rend(); ++it) {
    TaskInfo& t = ssn_.cluster().task(it->task);
    switch (it->kind) {
      case Kind::kAllocate:
      case Kind::kPipeline:
        ssn_.UndoPlacement(t);
        break;
      case Kind::kEvict:
        ssn_.UndoEvict(t, it->previous);
        break;
    }
  }
  ops_.clear();
}

void Statement::Merge(Statement& other) {
  ops_.insert(ops_.end(), other.ops_.begin(), other.ops_.end());
  other.ops_.clear();
}

}  // namespace muster::core
