// Making room on a node for a preemptor or a reclaimer (make_room.h).

#include "core/actions/make_room.h"

#include <algorithm>
#include <utility>

namespace muster::core {

bool FitsNow(Session& ssn, const QueueInfo& q, const TaskInfo& t, const NodeInfo& n,
             bool check_queue) {
  if (check_queue && !ssn.Allocatable(q, t)) return false;
  if (!t.resreq.LessEqual(n.FutureIdle())) return false;
  // A GPU share needs one device with room once the victims are gone, not only the node's total.
  if (!ssn.cluster().GpuDevicesFitOnceReleased(t, n)) return false;
  // The pod slot counts like a resource: pods leaving free theirs (best-effort preemption).
  if (n.pod_count - n.releasing_pods >= n.max_pods) return false;
  return ssn.Predicate(t, n).ok;
}

bool MakeRoom(Session& ssn, const QueueInfo& q, TaskInfo& t, NodeInfo& n,
              std::vector<const TaskInfo*> victims, bool topology_aware, bool check_queue,
              Statement& node_stmt, const char* reason) {
  Cluster& c = ssn.cluster();
  victims = ssn.OrderVictims(std::move(victims), t);
  if (!topology_aware) {
    for (const TaskInfo* v : victims) {
      if (FitsNow(ssn, q, t, n, check_queue)) break;
      node_stmt.Evict(c.task(v->id), reason);
    }
    if (FitsNow(ssn, q, t, n, check_queue)) return true;
    node_stmt.Discard();
    return false;
  }
  std::vector<std::pair<TaskInfo*, TaskStatus>> evicted;
  std::vector<int> ids;
  for (const TaskInfo* v : victims) {
    TaskInfo& vt = c.task(v->id);
    evicted.emplace_back(&vt, vt.status);
    ids.push_back(vt.id);
    ssn.DoEvict(vt);
  }
  // The dry run's victims, for plugins whose removal simulation is off (Session::dry_run_victims).
  ssn.set_dry_run_victims(std::move(ids));
  bool fits = FitsNow(ssn, q, t, n, check_queue);
  std::vector<TaskInfo*> chosen;
  if (fits) {
    // Reprieve the most important victims first.
    for (auto it = evicted.rbegin(); it != evicted.rend(); ++it) {
      ssn.UndoEvict(*it->first, it->second);
      if (!FitsNow(ssn, q, t, n, check_queue)) {
        ssn.DoEvict(*it->first);
        chosen.push_back(it->first);
      }
    }
  }
  // Restore everything, then replay the chosen evictions through the statement.
  ssn.set_dry_run_victims({});
  for (auto it = evicted.rbegin(); it != evicted.rend(); ++it) {
    if (it->first->status == TaskStatus::kReleasing) ssn.UndoEvict(*it->first, it->second);
  }
  if (!fits) return false;
  std::reverse(chosen.begin(), chosen.end());
  for (TaskInfo* v : chosen) node_stmt.Evict(*v, reason);
  return true;
}

}  // namespace muster::core
