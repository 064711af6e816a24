// capacity: queue quotas by resource name. Each queue states what it may use at most
// (spec.capability), what it is always left (spec.guarantee.resource) and what it deserves when
// the cluster is contended (spec.deserved); a queue below its deserved share may reclaim from
// queues above theirs, never below their guarantee. With enableHierarchy the queues form a tree
// under `root` by spec.parent: jobs run in leaf queues only, a child inherits the capability
// dimensions it leaves out from its parent, and every check (enqueue, allocate) holds for the
// queue and each of its ancestors, so a parent's capability caps its children together.
// GPUs and MIG devices are resources like any other, by name (nvidia.com/gpu,
// nvidia.com/mig-1g.10gb). Follows Volcano's pkg/scheduler/plugins/capacity/capacity.go
// (v1.16); its DRA quotas, queue admission gates and ancestorReclaimLevel are not restated.

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/framework/conf.h"
#include "core/framework/session.h"

namespace muster::core {
namespace {

constexpr int64_t kUnlimited = std::numeric_limits<int64_t>::max() / 4;
constexpr const char* kRootQueue = "root";

// The dimensions a spec's resource list names, zero values included: Volcano's resource maps
// tell a scalar set to 0 from one left out, and several rules depend on it.
using Named = std::vector<char>;

bool Has(const Named& named, ResourceId r) {
  return r < static_cast<int>(named.size()) && named[r] != 0;
}

void Mark(Named& named, ResourceId r) {
  if (r >= static_cast<int>(named.size())) named.resize(r + 1, 0);
  named[r] = 1;
}

Resources FromSpec(const api::ResourceList& list, Named& named) {
  Resources out = Resources::FromList(list);
  for (const auto& [name, quantity] : list) {
    if (name != "pods") Mark(named, ResourceNames::Id(name));
  }
  return out;
}

// The part of `left` above `right`, dimension by dimension (Volcano's ExceededPart).
Resources ExceededPart(const Resources& left, const Resources& right, int dims) {
  Resources out;
  for (ResourceId r = 0; r < dims; ++r) {
    out.Set(r, std::max<int64_t>(0, left.Get(r) - right.Get(r)));
  }
  return out;
}

// The names of the dimensions `req` asks for where `used` exceeds `limit` (Volcano's
// LessEqualWithDimensionAndResourcesName).
std::vector<std::string> Insufficient(const Resources& used, const Resources& limit,
                                      const Resources& req) {
  std::vector<std::string> out;
  for (ResourceId r = 0; r < req.Size(); ++r) {
    if (req.Get(r) > 0 && used.Get(r) > limit.Get(r)) out.push_back(ResourceNames::Name(r));
  }
  return out;
}

// Some dimension `req` asks for, used by `used` or `limit`, where `used` is within `limit`
// (Volcano's LessEqualPartlyWithDimensionZeroFiltered).
bool WithinOnSomeDimension(const Resources& used, const Resources& limit, const Resources& req) {
  for (ResourceId r = 0; r < req.Size(); ++r) {
    if (req.Get(r) <= 0 || (used.Get(r) == 0 && limit.Get(r) == 0)) continue;
    if (used.Get(r) <= limit.Get(r)) return true;
  }
  return false;
}

// A dimension `req` asks for that `deserved` speaks of (cpu and memory when above zero, other
// resources when named) where `allocated` exceeds it (Volcano's
// GreaterPartlyWithRelevantDimensions).
bool AboveDeservedOnRelevantDimension(const Resources& allocated, const Resources& deserved,
                                      const Named& deserved_named, const Resources& req) {
  for (ResourceId r = 0; r < req.Size(); ++r) {
    if (req.Get(r) <= 0) continue;
    bool relevant = r == kCpu || r == kMemory ? deserved.Get(r) > 0 : Has(deserved_named, r);
    if (relevant && allocated.Get(r) > deserved.Get(r)) return true;
  }
  return false;
}

// Both ask for some resource (Volcano's Intersection over non-zero dimensions).
bool Intersects(const Resources& a, const Resources& b) {
  for (ResourceId r = 0; r < std::min(a.Size(), b.Size()); ++r) {
    if (a.Get(r) > 0 && b.Get(r) > 0) return true;
  }
  return false;
}

struct CapacityAttr {
  int id = -1;
  std::string name;
  std::vector<int> ancestors;  // root first
  std::vector<int> children;
  Resources deserved, allocated, request, elastic, inqueue, capability, real_capability, guarantee;
  Named deserved_named, capability_named, guarantee_named;
  double share = 0;
};

void UpdateCapacityShare(CapacityAttr& a) {
  // A queue that deserves nothing is best effort: share 1, behind every queue below its share.
  if (a.deserved.IsEmpty()) {
    a.share = 1;
    return;
  }
  double share = 0;
  for (ResourceId r = 0; r < a.deserved.Size(); ++r) {
    double d = static_cast<double>(a.deserved.Get(r));
    if (d <= 0) continue;
    share = std::max(share, static_cast<double>(a.allocated.Get(r)) / d);
  }
  a.share = share;
}

// Share first; at equal shares a queue with a deserved share goes before a best-effort one.
int CompareShare(const CapacityAttr& l, const CapacityAttr& r) {
  if (l.share == r.share) {
    bool lh = !l.deserved.IsEmpty(), rh = !r.deserved.IsEmpty();
    if (lh == rh) return 0;
    return lh ? -1 : 1;
  }
  return l.share < r.share ? -1 : 1;
}

// The depth below which two queues' ancestor lists part (Volcano's getQueueLevel).
int CommonLevel(const CapacityAttr& l, const CapacityAttr& r) {
  int level = 0;
  for (size_t i = 0; i < std::min(l.ancestors.size(), r.ancestors.size()); ++i) {
    if (l.ancestors[i] != r.ancestors[i]) return level;
    level = static_cast<int>(i);
  }
  return level;
}

class CapacityPlugin : public Plugin {
 public:
  explicit CapacityPlugin(bool hierarchy) : hierarchy_(hierarchy) {}

  void OnSessionOpen(Session& ssn) override {
    dims_ = ResourceNames::Count();
    total_ = ssn.total_resource();
    ready_ = hierarchy_ ? BuildHierarchy(ssn) : (BuildFlat(ssn), true);
    for (auto& [id, a] : attrs_) UpdateCapacityShare(a);
    Cluster& c = ssn.cluster();
    for (int qid : c.QueueIds()) {
      if (!c.queue(qid).queue) continue;
      auto it = attrs_.find(qid);
      ssn.result().queue_deserved[c.queue(qid).name] =
          it != attrs_.end() ? it->second.deserved
                             : Resources::FromList(c.queue(qid).queue->spec.deserved);
    }
    Register(ssn);
  }

 private:
  // --- attributes --------------------------------------------------------------------------

  CapacityAttr NewAttr(const QueueInfo& q) const {
    CapacityAttr a;
    a.id = q.id;
    a.name = q.name;
    if (q.queue) {
      a.deserved = FromSpec(q.queue->spec.deserved, a.deserved_named);
      a.capability = FromSpec(q.queue->spec.capability, a.capability_named);
      a.guarantee = FromSpec(q.queue->spec.guarantee, a.guarantee_named);
    }
    return a;
  }

  // What the queue's jobs hold, ask for, have been admitted with and hold beyond their minimum.
  void AddJob(Session& ssn, CapacityAttr& a, const JobInfo& j) {
    Cluster& c = ssn.cluster();
    a.allocated.Add(j.allocated);
    a.request.Add(j.allocated);
    for (int tid : j.tasks) {
      const TaskInfo& t = c.task(tid);
      if (t.status == TaskStatus::kPending) a.request.Add(t.resreq);
    }
    if (!j.min_resources) return;
    const Resources& min = *j.min_resources;
    bool inqueue = j.phase == PodGroupPhase::kInqueue;
    if (j.phase == PodGroupPhase::kRunning) {
      int allocated_tasks = 0;
      for (int tid : j.tasks) allocated_tasks += IsAllocatedStatus(c.task(tid).status) ? 1 : 0;
      inqueue = allocated_tasks >= j.min_available;
    }
    if (inqueue) a.inqueue.Add(ExceededPart(min, j.allocated, dims_));
    a.elastic.Add(ExceededPart(j.allocated, min, dims_));
  }

  void BuildFlat(Session& ssn) {
    Cluster& c = ssn.cluster();
    Resources total_guarantee;
    for (int qid : c.QueueIds()) {
      const QueueInfo& q = c.queue(qid);
      if (q.queue) total_guarantee.Add(Resources::FromList(q.queue->spec.guarantee));
    }
    ssn.ForEachCountedJob([&](const JobInfo& j) {
      auto [it, inserted] = attrs_.try_emplace(j.queue);
      CapacityAttr& a = it->second;
      if (inserted) {
        a = NewAttr(c.queue(j.queue));
        bool capped = c.queue(j.queue).queue && !c.queue(j.queue).queue->spec.capability.empty();
        if (capped) {
          for (ResourceId r : {kCpu, kMemory}) {
            if (a.capability.Get(r) <= 0) a.capability.Set(r, kUnlimited);
          }
        }
        a.real_capability = ExceededPart(total_, total_guarantee, dims_).Add(a.guarantee);
        if (capped) MinNamed(a.real_capability, a.capability, a.capability_named);
      }
      AddJob(ssn, a, j);
    });
    for (auto& [id, a] : attrs_) {
      // Deserved within the real capability, where the real capability speaks of the dimension.
      for (ResourceId r = 0; r < dims_; ++r) {
        bool known = r == kCpu || r == kMemory || total_.Get(r) > 0 || Has(a.guarantee_named, r);
        if (known) a.deserved.Set(r, std::min(a.deserved.Get(r), a.real_capability.Get(r)));
      }
      RaiseToGuarantee(a);
    }
  }

  // false: the tree is broken (a cycle, a missing parent or root, a job in an inner queue), and
  // the plugin then refuses every vote, as Volcano's does.
  bool BuildHierarchy(Session& ssn) {
    Cluster& c = ssn.cluster();
    QueueInfo* root = c.FindQueue(kRootQueue);
    if (!root) return false;
    for (int qid : c.QueueIds()) attrs_.emplace(qid, NewAttr(c.queue(qid)));
    for (int qid : c.QueueIds()) {
      std::vector<int> chain;  // from the queue up to root's child
      int at = qid;
      while (at != root->id) {
        if (std::find(chain.begin(), chain.end(), at) != chain.end()) return false;  // a cycle
        chain.push_back(at);
        const std::string& parent = c.queue(at).parent.empty() ? kRootQueue : c.queue(at).parent;
        QueueInfo* p = c.FindQueue(parent);
        if (!p) return false;
        at = p->id;
      }
      if (chain.empty()) continue;
      CapacityAttr& a = attrs_.at(qid);
      a.ancestors.assign(chain.rbegin(), chain.rend() - 1);
      a.ancestors.insert(a.ancestors.begin(), root->id);
      attrs_.at(a.ancestors.back()).children.push_back(qid);
    }
    bool ok = true;
    ssn.ForEachCountedJob([&](const JobInfo& j) {
      auto it = attrs_.find(j.queue);
      if (it == attrs_.end()) return;
      CapacityAttr& a = it->second;
      if (!a.children.empty()) ok = false;
      CapacityAttr before = a;
      AddJob(ssn, a, j);
      for (int anc : a.ancestors) {
        CapacityAttr& p = attrs_.at(anc);
        p.allocated.Add(a.allocated).Sub(before.allocated);
        p.request.Add(a.request).Sub(before.request);
        p.inqueue.Add(a.inqueue).Sub(before.inqueue);
        p.elastic.Add(a.elastic).Sub(before.elastic);
      }
    });
    if (!ok) return false;
    // root is bounded by nothing but its own capability: jobs may ask beyond today's cluster.
    CapacityAttr& r = attrs_.at(root->id);
    if (r.capability.IsEmpty()) {
      for (ResourceId d = 0; d < dims_; ++d) {
        if (d == kCpu || d == kMemory || total_.Get(d) > 0) {
          r.capability.Set(d, kUnlimited);
          Mark(r.capability_named, d);
        }
      }
    }
    r.real_capability = r.capability;
    SettleChildren(r, /*is_root=*/true);
    return true;
  }

  // Volcano's checkHierarchicalQueue: children's deserved at least their guarantee, capability
  // inherited where left out, real capability = what the parent may use beyond its children's
  // guarantees, plus the child's own guarantee, within the child's capability.
  void SettleChildren(CapacityAttr& parent, bool is_root) {
    Resources total_guarantee, total_deserved;
    for (int cid : parent.children) {
      CapacityAttr& child = attrs_.at(cid);
      RaiseToGuarantee(child);
      total_deserved.Add(child.deserved);
      total_guarantee.Add(child.guarantee);
      for (ResourceId r : {kCpu, kMemory}) {
        if (child.capability.Get(r) <= 0) child.capability.Set(r, parent.capability.Get(r));
      }
      for (ResourceId r = 0; r < dims_; ++r) {
        if (r == kCpu || r == kMemory || !Has(parent.capability_named, r)) continue;
        if (!Has(child.capability_named, r)) {
          child.capability.Set(r, parent.capability.Get(r));
          Mark(child.capability_named, r);
        }
      }
    }
    if (is_root) {
      parent.guarantee = total_guarantee;
      parent.deserved = total_deserved;
    }
    for (int cid : parent.children) {
      CapacityAttr& child = attrs_.at(cid);
      child.real_capability =
          ExceededPart(parent.real_capability, total_guarantee, dims_).Add(child.guarantee);
      MinNamed(child.real_capability, child.capability, child.capability_named);
    }
    for (int cid : parent.children) SettleChildren(attrs_.at(cid), false);
  }

  // Volcano's MinDimensionResource with an infinite default: cpu and memory, and the other
  // dimensions `limit` names.
  void MinNamed(Resources& r, const Resources& limit, const Named& named) const {
    for (ResourceId d = 0; d < dims_; ++d) {
      if (d == kCpu || d == kMemory || Has(named, d)) r.Set(d, std::min(r.Get(d), limit.Get(d)));
    }
  }

  static void RaiseToGuarantee(CapacityAttr& a) {
    a.deserved.Max(a.guarantee);
    for (ResourceId r = 0; r < static_cast<int>(a.guarantee_named.size()); ++r) {
      if (a.guarantee_named[r]) Mark(a.deserved_named, r);
    }
  }

  bool IsLeaf(int qid) const {
    auto it = attrs_.find(qid);
    return it == attrs_.end() || it->second.children.empty();
  }

  // The queue, then its ancestors up to root (only the queue without enableHierarchy).
  std::vector<CapacityAttr*> Chain(int qid) {
    std::vector<CapacityAttr*> out;
    auto it = attrs_.find(qid);
    if (it == attrs_.end()) return out;
    out.push_back(&it->second);
    for (auto a = it->second.ancestors.rbegin(); a != it->second.ancestors.rend(); ++a) {
      out.push_back(&attrs_.at(*a));
    }
    return out;
  }

  // --- votes -------------------------------------------------------------------------------

  void Register(Session& ssn) {
    Session* s = &ssn;
    ssn.AddQueueOrderFn("capacity", [this](const QueueInfo& l, const QueueInfo& r) {
      if (l.priority != r.priority) return l.priority > r.priority ? -1 : 1;
      auto li = attrs_.find(l.id), ri = attrs_.find(r.id);
      if (li == attrs_.end() || ri == attrs_.end()) return 0;
      if (!hierarchy_) return CompareShare(li->second, ri->second);
      bool ll = li->second.children.empty(), rl = ri->second.children.empty();
      if (ll != rl) return ll ? -1 : 1;
      if (!ll) return CompareShare(li->second, ri->second);
      // Two leaves: compare their ancestors where the branches part.
      const CapacityAttr& la = li->second;
      const CapacityAttr& ra = ri->second;
      size_t level = static_cast<size_t>(CommonLevel(la, ra)) + 1;
      int lp = level < la.ancestors.size() ? la.ancestors[level] : la.id;
      int rp = level < ra.ancestors.size() ? ra.ancestors[level] : ra.id;
      return CompareShare(attrs_.at(lp), attrs_.at(rp));
    });
    if (hierarchy_) {
      // Victims from the queues closest to the preemptor's in the tree first.
      ssn.AddVictimQueueOrderFn("capacity", [this](const QueueInfo& l, const QueueInfo& r,
                                                   const QueueInfo& p) {
        auto li = attrs_.find(l.id), ri = attrs_.find(r.id), pi = attrs_.find(p.id);
        if (li == attrs_.end() || ri == attrs_.end() || pi == attrs_.end()) return 0;
        int ll = CommonLevel(li->second, pi->second), rl = CommonLevel(ri->second, pi->second);
        if (ll == rl) return 0;
        return ll > rl ? -1 : 1;
      });
    }
    ssn.AddReclaimableFn("capacity", [this, s](const TaskInfo& reclaimer,
                                               const std::vector<const TaskInfo*>& reclaimees) {
      return Reclaimable(*s, reclaimer, reclaimees);
    });
    ssn.AddPreemptiveFn("capacity", [this](const QueueInfo& q, const TaskInfo& t) {
      if (!ready_ || !q.open) return false;
      auto it = attrs_.find(q.id);
      if (it == attrs_.end()) return false;
      CapacityAttr& a = it->second;
      Resources future = a.allocated;
      future.Add(t.resreq);
      if (!Insufficient(future, a.real_capability, t.resreq).empty()) return false;
      // Reclaiming is worth it where one dimension the task asks for is still within deserved.
      return WithinOnSomeDimension(future, a.deserved, t.resreq);
    });
    ssn.AddAllocatableFn("capacity", [this](const QueueInfo& q, const TaskInfo& t) {
      if (!q.open || !ready_) return false;
      if (hierarchy_ && !IsLeaf(q.id)) return false;
      for (CapacityAttr* a : Chain(q.id)) {
        Resources future = a->allocated;
        future.Add(t.resreq);
        if (!Insufficient(future, a->real_capability, t.resreq).empty()) return false;
      }
      return true;
    });
    ssn.AddJobEnqueueableFn("capacity", [this, s](const JobInfo& j) {
      if (!ready_) return kReject;
      if (hierarchy_ && !IsLeaf(j.queue)) return kReject;
      const QueueInfo* q = s->QueueOf(j);
      if (!q || !q->open) return kReject;
      if (!j.min_resources) return kPermit;
      const Resources& want = *j.min_resources;
      for (CapacityAttr* a : Chain(j.queue)) {
        Resources future = want;
        future.Add(a->allocated).Add(a->inqueue).Sub(a->elastic);
        std::vector<std::string> names = Insufficient(future, a->real_capability, want);
        if (names.empty()) continue;
        std::string why = "queue resource quota insufficient";
        for (size_t i = 0; i < names.size(); ++i) {
          why += (i == 0 ? ": " : ", ") + std::string("insufficient ") + names[i];
        }
        // The enqueue action records it on the PodGroup as an Unschedulable event.
        if (s->options().diagnostics) s->enqueue_rejections()[j.id] = why;
        return kReject;
      }
      return kPermit;
    });
    ssn.AddJobEnqueuedFn("capacity", [this](const JobInfo& j) {
      if (!j.min_resources) return;
      for (CapacityAttr* a : Chain(j.queue)) a->inqueue.Add(*j.min_resources);
    });
    ssn.AddEventHandler({[this, s](const TaskInfo& t) { Update(*s, t, +1); },
                         [this, s](const TaskInfo& t) { Update(*s, t, -1); }});
  }

  std::pair<std::vector<const TaskInfo*>, int> Reclaimable(
      Session& ssn, const TaskInfo& reclaimer, const std::vector<const TaskInfo*>& reclaimees) {
    std::vector<const TaskInfo*> victims;
    if (!ready_) return {victims, kReject};
    const JobInfo* rj = ssn.JobOf(reclaimer);
    if (!rj || !attrs_.count(rj->queue)) return {victims, kReject};
    std::map<int, Resources> allocations;  // each victim queue's allocation as victims leave it
    for (const TaskInfo* t : ssn.OrderVictims(reclaimees, reclaimer)) {
      const JobInfo* j = ssn.JobOf(*t);
      if (!j) continue;
      auto it = attrs_.find(j->queue);
      if (it == attrs_.end()) continue;
      const CapacityAttr& a = it->second;
      // Nothing to gain from a pod that holds none of what the reclaimer asks for.
      if (!Intersects(t->resreq, reclaimer.resreq)) continue;
      Resources& allocated = allocations.try_emplace(j->queue, a.allocated).first->second;
      Resources after = allocated;
      after.Sub(t->resreq);
      if (!a.guarantee.LessEqual(after)) continue;
      // A victim when it holds none of what its queue deserves, or when its queue is above
      // deserved on a dimension it holds.
      bool victim = !Intersects(t->resreq, a.deserved) ||
                    AboveDeservedOnRelevantDimension(allocated, a.deserved, a.deserved_named,
                                                     t->resreq);
      if (!victim) continue;
      allocated = after;
      victims.push_back(t);
    }
    return {victims, kPermit};
  }

  void Update(Session& ssn, const TaskInfo& t, int sign) {
    const JobInfo* j = ssn.JobOf(t);
    if (!j) return;
    std::vector<CapacityAttr*> chain = Chain(j->queue);
    for (CapacityAttr* a : chain) {
      if (sign > 0) a->allocated.Add(t.resreq); else a->allocated.Sub(t.resreq);
    }
    if (!chain.empty()) UpdateCapacityShare(*chain.front());
  }

  const bool hierarchy_;
  int dims_ = 0;
  bool ready_ = true;
  Resources total_;
  std::map<int, CapacityAttr> attrs_;
};

}  // namespace

std::unique_ptr<Plugin> NewCapacityPlugin(const PluginOption& opt) {
  return std::make_unique<CapacityPlugin>(opt.Enabled("enableHierarchy"));
}

}  // namespace muster::core
