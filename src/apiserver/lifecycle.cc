#include "apiserver/lifecycle.h"

// Deletion follows kube-apiserver's generic registry (rest.BeforeDelete,
// Store.updateForGracefulDeletionAndFinalizers) and the pod strategy's CheckGracefulDelete; the
// background duties are what kube-controller-manager's garbage collector and namespace controller
// do, reduced to one pass over the store.

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "api/json_parse.h"
#include "absl/status/status.h"
#include "apiserver/descriptors/custom_resource.h"
#include "apiserver/resource_registry.h"
#include "api/json_access.h"
#include "api/time.h"
#include "boost/json.hpp"
#include "common/thread.h"
#include "fmt/format.h"

namespace muster::apiserver {
namespace {

namespace json = boost::json;

constexpr char kOrphanFinalizer[] = "orphan";
constexpr char kForegroundFinalizer[] = "foregroundDeletion";

using api::View;

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

using api::ObjectAt;
using api::StringAt;
using api::TruncatedIntAt;

json::object* EnsureObject(json::object& o, std::string_view key) {
  json::value& v = o[key];
  if (!v.is_object()) v = json::object();
  return &v.as_object();
}

std::vector<std::string> Finalizers(const json::object& meta) {
  std::vector<std::string> out;
  const json::value* v = meta.if_contains("finalizers");
  if (v == nullptr || !v->is_array()) return out;
  for (const json::value& f : v->get_array()) {
    if (f.is_string()) out.emplace_back(View(f.get_string()));
  }
  return out;
}

void SetFinalizers(json::object& meta, const std::vector<std::string>& finalizers) {
  if (finalizers.empty()) {
    meta.erase("finalizers");
    return;
  }
  json::array arr;
  for (const std::string& f : finalizers) arr.emplace_back(f);
  meta["finalizers"] = std::move(arr);
}

bool Contains(const std::vector<std::string>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

void Remove(std::vector<std::string>& list, std::string_view item) {
  list.erase(std::remove(list.begin(), list.end(), item), list.end());
}

bool IsProtectedNamespace(std::string_view name) {
  return name == "default" || name == "kube-system" || name == "kube-public" ||
         name == "kube-node-lease";
}

bool IsProtectedQueue(std::string_view name) { return name == "default" || name == "root"; }

bool IsNamespaces(const ResourceInfo& r) { return r.group.empty() && r.resource == "namespaces"; }
bool IsPods(const ResourceInfo& r) { return r.group.empty() && r.resource == "pods"; }
bool IsQueues(const ResourceInfo& r) {
  return r.group == "scheduling.volcano.sh" && r.resource == "queues";
}

// The pod strategy's CheckGracefulDelete: the grace period a delete gets.
int64_t PodGracePeriod(const json::object& pod, const DeleteOptions& options) {
  const json::object* spec = ObjectAt(pod, "spec");
  const json::object* status = ObjectAt(pod, "status");
  int64_t period = 0;
  if (options.grace_period_seconds) {
    period = *options.grace_period_seconds;
  } else if (spec != nullptr) {
    period = TruncatedIntAt(*spec, "terminationGracePeriodSeconds").value_or(0);
  }
  if (spec == nullptr || StringAt(*spec, "nodeName").empty()) period = 0;
  std::string phase = status == nullptr ? "" : StringAt(*status, "phase");
  if (phase == "Failed" || phase == "Succeeded") period = 0;
  if (period < 0) period = 1;
  return period;
}

store::Op UpdateOp(const store::Object& live, json::object obj) {
  store::Op op;
  op.kind = store::OpKind::kUpdate;
  op.key = live.key;
  op.object = std::move(obj);
  op.expected_revision = live.revision;
  return op;
}

store::Op DeleteOp(const store::Key& key, int64_t revision) {
  store::Op op;
  op.kind = store::OpKind::kDelete;
  op.key = key;
  op.expected_revision = revision;
  return op;
}

// A damaged object (store::Object::damaged) cannot be read, nor can its finalizers or grace
// period: it is deleted outright, reported as a stub of its kind and name. A namespace is
// replaced by a Terminating stub instead, so that its content goes the usual way before it.
DeletePlan DamagedDelete(const ResourceInfo& resource, const store::Object& live,
                         int64_t now_unix) {
  json::object meta{{"name", live.key.name}};
  if (!live.key.ns.empty()) meta["namespace"] = live.key.ns;
  json::object stub{{"apiVersion", resource.ApiVersion()}, {"kind", resource.kind}};
  DeletePlan p;
  if (IsNamespaces(resource)) {
    meta["deletionTimestamp"] = api::FormatUnixTime(now_unix);
    meta["deletionGracePeriodSeconds"] = 0;
    stub["metadata"] = std::move(meta);
    stub["status"] = json::object{{"phase", "Terminating"}};
    p.ops.push_back(UpdateOp(live, stub));
  } else {
    stub["metadata"] = std::move(meta);
    store::Op op = DeleteOp(live.key, live.revision);
    op.object = stub;
    p.ops.push_back(std::move(op));
    p.deleted_now = true;
  }
  p.result = std::move(stub);
  return p;
}

}  // namespace

absl::StatusOr<DeletePlan> PlanDelete(const ResourceInfo& resource, const store::Object& live,
                                      const DeleteOptions& options, int64_t now_unix) {
  if (live.json == nullptr) return absl::InternalError("stored object has no body");
  const std::string name = live.key.name;

  if (options.precondition_revision && *options.precondition_revision != live.revision) {
    // The "why" of kube's 409 `Operation cannot be fulfilled on <resource> "<name>": <why>`.
    return absl::AbortedError(fmt::format(
        "Precondition failed: ResourceVersion in precondition: {}, ResourceVersion in object "
        "meta: {}",
        *options.precondition_revision, live.revision));
  }
  const std::string& policy = options.propagation_policy;
  if (!policy.empty() && policy != "Background" && policy != "Foreground" && policy != "Orphan") {
    return absl::InvalidArgumentError(fmt::format(
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: {}: "
        "supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"",
        Quote(policy)));
  }
  if (IsQueues(resource) && IsProtectedQueue(name)) {
    // validatequeue.volcano.sh's refusal, as kube-apiserver passes it on.
    return absl::FailedPreconditionError(fmt::format(
        "admission webhook \"validatequeue.volcano.sh\" denied the request: `{}` queue can not "
        "be deleted",
        name));
  }
  if (IsNamespaces(resource) && IsProtectedNamespace(name)) {
    // The NamespaceLifecycle admission plugin's refusal: 403 Forbidden, "namespaces \"default\"
    // is forbidden: this namespace may not be deleted" (FromStatus adds the prefix).
    return absl::PermissionDeniedError("this namespace may not be deleted");
  }
  if (live.damaged) {
    DeletePlan p = DamagedDelete(resource, live, now_unix);
    if (options.dry_run) p.ops.clear();
    return p;
  }
  boost::system::error_code ec;
  json::value parsed = api::ParseJsonText(*live.json, ec);
  if (ec || !parsed.is_object()) {
    return absl::InternalError(fmt::format("stored object {} does not parse", live.key.name));
  }
  json::object obj = std::move(parsed.as_object());
  json::object& meta = *EnsureObject(obj, "metadata");

  const bool marked = meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null();
  auto finish = [&](DeletePlan p) -> absl::StatusOr<DeletePlan> {
    if (options.dry_run) p.ops.clear();
    return p;
  };
  auto delete_now = [&]() {
    DeletePlan p;
    p.ops.push_back(DeleteOp(live.key, live.revision));
    p.deleted_now = true;
    p.result = obj;
    return p;
  };
  auto unchanged = [&]() {
    DeletePlan p;
    p.result = obj;
    return p;
  };

  if (IsNamespaces(resource)) {
    // The namespace registry: the first delete starts termination; later ones change nothing.
    if (marked) return finish(unchanged());
    meta["deletionTimestamp"] = api::FormatUnixTime(now_unix);
    meta["deletionGracePeriodSeconds"] = 0;
    (*EnsureObject(obj, "status"))["phase"] = "Terminating";
    DeletePlan p;
    p.result = obj;
    p.ops.push_back(UpdateOp(live, obj));
    return finish(std::move(p));
  }

  std::vector<std::string> finalizers = Finalizers(meta);
  if (marked) {
    int64_t grace = TruncatedIntAt(meta, "deletionGracePeriodSeconds").value_or(0);
    if (grace <= 0) {
      // Already due: only finalizers hold it.
      return finish(finalizers.empty() ? delete_now() : unchanged());
    }
    if (!options.grace_period_seconds || *options.grace_period_seconds >= grace) {
      return finish(unchanged());  // a graceful deletion is pending; only shorter ones count
    }
    int64_t shorter = std::max<int64_t>(0, *options.grace_period_seconds);
    if (shorter == 0 && finalizers.empty()) return finish(delete_now());
    int64_t deadline = api::ParseUnixTime(StringAt(meta, "deletionTimestamp")).value_or(now_unix);
    meta["deletionTimestamp"] = api::FormatUnixTime(deadline - grace + shorter);
    meta["deletionGracePeriodSeconds"] = shorter;
    DeletePlan p;
    p.result = obj;
    p.ops.push_back(UpdateOp(live, obj));
    return finish(std::move(p));
  }

  // The garbage collector's finalizers for the propagation policy.
  if (policy == "Orphan") {
    Remove(finalizers, kForegroundFinalizer);
    if (!Contains(finalizers, kOrphanFinalizer)) finalizers.push_back(kOrphanFinalizer);
  } else if (policy == "Foreground") {
    Remove(finalizers, kOrphanFinalizer);
    if (!Contains(finalizers, kForegroundFinalizer)) finalizers.push_back(kForegroundFinalizer);
  } else if (policy == "Background") {
    Remove(finalizers, kOrphanFinalizer);
    Remove(finalizers, kForegroundFinalizer);
  }

  if (resource.group == kCrdGroup && resource.resource == kCrdResource) {
    // apiextensions' CRD REST Delete: held until the finalizer controller removed its objects.
    if (!Contains(finalizers, kCrdCleanupFinalizer)) {
      finalizers.emplace_back(kCrdCleanupFinalizer);
    }
    json::object& status = *EnsureObject(obj, "status");
    json::value& conditions = status["conditions"];
    if (!conditions.is_array()) conditions = json::array();
    json::array& list = conditions.get_array();
    json::object terminating{{"type", "Terminating"},
                             {"status", "True"},
                             {"lastTransitionTime", api::FormatUnixTime(now_unix)},
                             {"reason", "InstanceDeletionInProgress"},
                             {"message", "CustomResource deletion is in progress"}};
    auto it = std::find_if(list.begin(), list.end(), [](const json::value& c) {
      return c.is_object() && StringAt(c.get_object(), "type") == "Terminating";
    });
    if (it == list.end()) {
      list.emplace_back(std::move(terminating));
    } else {
      *it = std::move(terminating);
    }
  }

  int64_t period = IsPods(resource) ? PodGracePeriod(obj, options) : 0;
  if (period == 0 && finalizers.empty()) return finish(delete_now());
  meta["deletionTimestamp"] = api::FormatUnixTime(now_unix + period);
  meta["deletionGracePeriodSeconds"] = period;
  SetFinalizers(meta, finalizers);
  DeletePlan p;
  p.result = obj;
  p.ops.push_back(UpdateOp(live, obj));
  return finish(std::move(p));
}

// --- Lifecycle -----------------------------------------------------------------------------------

namespace {

struct OwnerRef {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool blocks = false;  // blockOwnerDeletion: a foreground deletion of the owner waits for it
};

// What a pass needs to know of one stored object.
struct Summary {
  std::string uid;
  std::vector<OwnerRef> owners;
  bool marked = false;              // deletionTimestamp set
  std::optional<int64_t> due_unix;  // deletionTimestamp
  int64_t grace = 0;                // deletionGracePeriodSeconds
  std::vector<std::string> finalizers;
  bool terminating = false;  // namespaces: status.phase Terminating
};

Summary Summarize(const std::string& text) {
  Summary s;
  boost::system::error_code ec;
  json::value v = api::ParseJsonText(text, ec);
  if (ec || !v.is_object()) return s;
  const json::object& obj = v.get_object();
  const json::object* meta = ObjectAt(obj, "metadata");
  if (meta == nullptr) return s;
  s.uid = StringAt(*meta, "uid");
  if (const json::value* refs = meta->if_contains("ownerReferences"); refs && refs->is_array()) {
    for (const json::value& rv : refs->get_array()) {
      const json::object* ref = rv.if_object();
      if (ref == nullptr) continue;
      const json::value* blocks = ref->if_contains("blockOwnerDeletion");
      s.owners.push_back({StringAt(*ref, "apiVersion"), StringAt(*ref, "kind"),
                          StringAt(*ref, "name"), StringAt(*ref, "uid"),
                          blocks != nullptr && blocks->is_bool() && blocks->get_bool()});
    }
  }
  if (const json::value* ts = meta->if_contains("deletionTimestamp"); ts && ts->is_string()) {
    s.marked = true;
    s.due_unix = api::ParseUnixTime(View(ts->get_string()));
  }
  s.grace = TruncatedIntAt(*meta, "deletionGracePeriodSeconds").value_or(0);
  s.finalizers = Finalizers(*meta);
  if (const json::object* status = ObjectAt(obj, "status")) {
    s.terminating = StringAt(*status, "phase") == "Terminating";
  }
  return s;
}

// The object `text` with its references to owner `uid` no longer blocking that owner's
// deletion; nullopt when it does not parse.
std::optional<json::object> Unblocked(const std::string& text, const std::string& uid) {
  boost::system::error_code ec;
  json::value v = api::ParseJsonText(text, ec);
  if (ec || !v.is_object()) return std::nullopt;
  json::value* refs = EnsureObject(v.as_object(), "metadata")->if_contains("ownerReferences");
  if (refs != nullptr && refs->is_array()) {
    for (json::value& ref : refs->get_array()) {
      if (ref.is_object() && StringAt(ref.get_object(), "uid") == uid) {
        ref.get_object()["blockOwnerDeletion"] = false;
      }
    }
  }
  return std::move(v.as_object());
}

std::string CacheKey(const store::Key& key) {
  std::string k = key.resource;
  k.push_back('\0');
  k += key.ns;
  k.push_back('\0');
  k += key.name;
  return k;
}

struct Entry {
  const ResourceInfo* resource = nullptr;
  store::Object object;
  std::shared_ptr<const Summary> summary;
};

}  // namespace

struct Lifecycle::Cache {
  struct Item {
    int64_t revision = 0;
    std::shared_ptr<const Summary> summary;
  };
  std::unordered_map<std::string, Item> items;
};

Lifecycle::Lifecycle(store::Store& store, LifecycleOptions options)
    : store_(store),
      registry_(std::make_unique<ResourceRegistry>(store)),
      options_(options),
      cache_(std::make_unique<Cache>()) {}

Lifecycle::~Lifecycle() { Stop(); }

absl::Status Lifecycle::Start() {
  if (thread_.joinable()) return absl::OkStatus();
  stop_ = false;
  return common::StartThread(thread_, "the API server's lifecycle duties", [this] { Loop(); });
}

void Lifecycle::Stop() {
  {
    std::lock_guard<std::mutex> lock(wake_mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Lifecycle::Loop() {
  using Clock = std::chrono::steady_clock;
  int64_t last_revision = -1;
  std::optional<Clock::time_point> last_run;
  Clock::time_point not_before;  // pass pacing (LifecycleOptions::pass_spacing)
  while (!stop_) {
    int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    int64_t revision = store_.Revision();
    int64_t due;
    {
      std::lock_guard<std::mutex> lock(run_mu_);
      due = next_due_unix_;
    }
    bool idle_too_long = !last_run || Clock::now() - *last_run >= options_.max_idle;
    if ((revision != last_revision || (due > 0 && now >= due) || idle_too_long) &&
        Clock::now() >= not_before) {
      // The revision from before the pass: writes of the pass itself wake the next one, so
      // multi-step work (a namespace's content, then the namespace) converges.
      last_revision = revision;
      last_run = Clock::now();
      RunOnce(now);
      not_before = Clock::now() + (Clock::now() - *last_run) * options_.pass_spacing;
    }
    Clock::time_point wake_at =
        std::max(Clock::now() + options_.poll_interval, not_before);
    std::unique_lock<std::mutex> lock(wake_mu_);
    wake_.wait_until(lock, wake_at, [this] { return stop_.load(); });
  }
}

void Lifecycle::RunOnce(int64_t now_unix) {
  std::lock_guard<std::mutex> run_lock(run_mu_);

  // The stored resources of the registry, each once (a custom resource served in several
  // versions is one store resource). The snapshot holds them for the pass.
  const std::shared_ptr<const ServedResources> served = registry_->Current();
  std::vector<const ResourceInfo*> resources;
  std::map<std::string, const ResourceInfo*> by_store_resource;
  for (const auto& info : served->resources->all()) {
    if (info->review) continue;
    if (by_store_resource.emplace(info->StoreResource(), info.get()).second) {
      resources.push_back(info.get());
    }
  }
  auto commit = [this](std::vector<store::Op> ops) {
    if (ops.empty()) return false;
    // NotFound, Aborted (a concurrent write) and AlreadyExists are settled by a later pass.
    return store_.Commit(std::move(ops)).ok();
  };

  // Snapshot.
  std::vector<Entry> entries;
  std::unordered_map<std::string, Cache::Item> next_cache;
  for (const ResourceInfo* r : resources) {
    store::ListResult list = store_.List(r->StoreResource(), "");
    for (store::Object& object : list.items) {
      if (object.json == nullptr) continue;
      std::string ck = CacheKey(object.key);
      std::shared_ptr<const Summary> summary;
      if (auto it = cache_->items.find(ck);
          it != cache_->items.end() && it->second.revision == object.revision) {
        summary = it->second.summary;
      } else {
        summary = std::make_shared<const Summary>(Summarize(*object.json));
      }
      next_cache[ck] = {object.revision, summary};
      entries.push_back({r, std::move(object), std::move(summary)});
    }
  }
  cache_->items = std::move(next_cache);

  std::unordered_set<std::string> live_uids;
  std::unordered_map<std::string, std::vector<size_t>> dependents;  // owner uid -> entries
  for (size_t i = 0; i < entries.size(); ++i) {
    const Summary& s = *entries[i].summary;
    if (!s.uid.empty()) live_uids.insert(s.uid);
    for (const OwnerRef& owner : s.owners) {
      if (!owner.uid.empty()) dependents[owner.uid].push_back(i);
    }
  }
  std::set<std::string> deleted;  // cache keys this pass removed or marked

  auto plan_and_commit = [&](const Entry& e) {
    absl::StatusOr<DeletePlan> plan = PlanDelete(*e.resource, e.object, DeleteOptions{}, now_unix);
    if (!plan.ok()) return;
    if (commit(std::move(plan->ops))) deleted.insert(CacheKey(e.object.key));
  };

  // 1. Orphan and Foreground propagation for marked owners.
  for (const Entry& e : entries) {
    const Summary& s = *e.summary;
    if (!s.marked || s.uid.empty()) continue;
    bool orphan = Contains(s.finalizers, kOrphanFinalizer);
    bool foreground = Contains(s.finalizers, kForegroundFinalizer);
    if (!orphan && !foreground) continue;
    const std::vector<size_t>* deps = nullptr;
    if (auto it = dependents.find(s.uid); it != dependents.end()) deps = &it->second;
    bool all_released = true;
    if (deps != nullptr) {
      for (size_t i : *deps) {
        const Entry& d = entries[i];
        if (orphan) {
          // Drop the reference to the owner from the dependent.
          boost::system::error_code ec;
          json::value v = api::ParseJsonText(*d.object.json, ec);
          if (ec || !v.is_object()) continue;
          json::object& meta = *EnsureObject(v.as_object(), "metadata");
          json::array kept;
          if (json::value* refs = meta.if_contains("ownerReferences"); refs && refs->is_array()) {
            for (json::value& ref : refs->get_array()) {
              if (ref.is_object() && StringAt(ref.get_object(), "uid") == s.uid) continue;
              kept.push_back(ref);
            }
          }
          if (kept.empty()) {
            meta.erase("ownerReferences");
          } else {
            meta["ownerReferences"] = std::move(kept);
          }
          if (!commit({UpdateOp(d.object, std::move(v.as_object()))})) all_released = false;
        } else {
          // Foreground, as Kubernetes' garbage collector: every dependent is deleted, and the
          // owner waits for those whose reference blocks its deletion. A blocking dependent
          // that waits for its own dependents in the foreground too (the owner itself, or owners
          // in a cycle) would wait for ever: its reference is made non-blocking instead, as the
          // collector breaks such cycles.
          if (!d.summary->marked) plan_and_commit(d);
          const bool blocks = std::any_of(
              d.summary->owners.begin(), d.summary->owners.end(),
              [&](const OwnerRef& o) { return o.uid == s.uid && o.blocks; });
          if (!blocks) continue;
          if (d.summary->marked && Contains(d.summary->finalizers, kForegroundFinalizer)) {
            std::optional<json::object> unblocked = Unblocked(*d.object.json, s.uid);
            if (!unblocked || !commit({UpdateOp(d.object, std::move(*unblocked))})) {
              all_released = false;
            }
            continue;
          }
          all_released = false;
        }
      }
    }
    if (!all_released) continue;
    boost::system::error_code ec;
    json::value v = api::ParseJsonText(*e.object.json, ec);
    if (ec || !v.is_object()) continue;
    json::object& meta = *EnsureObject(v.as_object(), "metadata");
    std::vector<std::string> finalizers = Finalizers(meta);
    Remove(finalizers, kOrphanFinalizer);
    Remove(finalizers, kForegroundFinalizer);
    SetFinalizers(meta, finalizers);
    if (finalizers.empty() && (s.grace <= 0 || (s.due_unix && *s.due_unix <= now_unix))) {
      if (commit({DeleteOp(e.object.key, e.object.revision)})) {
        deleted.insert(CacheKey(e.object.key));
      }
    } else if (commit({UpdateOp(e.object, std::move(v.as_object()))})) {
      deleted.insert(CacheKey(e.object.key));
    }
  }

  // 2. Garbage collection: dependents all of whose owners are gone.
  for (const Entry& e : entries) {
    const Summary& s = *e.summary;
    if (s.owners.empty() || s.marked || deleted.contains(CacheKey(e.object.key))) continue;
    bool owner_alive = false;
    for (const OwnerRef& owner : s.owners) {
      const std::shared_ptr<const ResourceInfo> owner_resource =
          served->resources->FindByKind(owner.api_version, owner.kind);
      // An owner of a kind muster does not serve or store (ResourceInfo::refuse_writes) cannot be
      // looked up: leave the dependent be.
      if (owner_resource == nullptr || !owner_resource->refuse_writes.empty() ||
          owner.uid.empty() || live_uids.contains(owner.uid)) {
        owner_alive = true;
        break;
      }
      // The listing is not atomic across resources: read the owner itself before deciding.
      store::Key owner_key{owner_resource->StoreResource(),
                           owner_resource->namespaced ? e.object.key.ns : "", owner.name};
      if (absl::StatusOr<store::Object> got = store_.Get(owner_key); got.ok() && got->json) {
        if (Summarize(*got->json).uid == owner.uid) {
          owner_alive = true;
          break;
        }
      }
    }
    if (!owner_alive) plan_and_commit(e);
  }

  // 3. Namespace termination: empty Terminating namespaces, then remove them.
  for (const Entry& e : entries) {
    if (!IsNamespaces(*e.resource)) continue;
    const Summary& s = *e.summary;
    if (!s.terminating && !s.marked) continue;
    const std::string& ns = e.object.key.name;
    bool empty = true;
    for (const ResourceInfo* r : resources) {
      if (!r->namespaced) continue;
      // A fresh listing: content may have appeared since the snapshot.
      store::ListResult content = store_.List(r->StoreResource(), ns);
      for (store::Object& object : content.items) {
        empty = false;
        if (object.json == nullptr) continue;
        Summary cs = Summarize(*object.json);
        if (cs.marked) continue;  // graceful or finalizer-held: later passes finish it
        Entry content_entry{r, std::move(object), nullptr};
        plan_and_commit(content_entry);
      }
    }
    if (empty && s.finalizers.empty()) {
      if (commit({DeleteOp(e.object.key, e.object.revision)})) {
        deleted.insert(CacheKey(e.object.key));
      }
    }
  }

  // 4. Deleted CustomResourceDefinitions: their custom resources first, then the finalizer.
  for (const Entry& e : entries) {
    const Summary& s = *e.summary;
    if (e.resource->group != kCrdGroup || e.resource->resource != kCrdResource || !s.marked ||
        !Contains(s.finalizers, kCrdCleanupFinalizer)) {
      continue;
    }
    if (CleanUpCustomResources(e.object, now_unix)) {
      deleted.insert(CacheKey(e.object.key));
    }
  }

  // 5. Marked objects that nothing holds any more: finalizers gone and grace period over.
  int64_t next_due = 0;
  for (const Entry& e : entries) {
    const Summary& s = *e.summary;
    if (!s.marked || IsNamespaces(*e.resource) || deleted.contains(CacheKey(e.object.key))) {
      continue;
    }
    bool expired = s.grace <= 0 || !s.due_unix || *s.due_unix <= now_unix;
    if (s.finalizers.empty() && expired) {
      commit({DeleteOp(e.object.key, e.object.revision)});
    } else if (!expired && s.finalizers.empty()) {
      if (next_due == 0 || *s.due_unix < next_due) next_due = *s.due_unix;
    }
  }
  next_due_unix_ = next_due;
}

bool Lifecycle::CleanUpCustomResources(const store::Object& crd, int64_t now_unix) {
  boost::system::error_code ec;
  json::value v = api::ParseJsonText(*crd.json, ec);
  if (ec || !v.is_object()) return false;
  json::object& obj = v.as_object();
  const json::object* spec = ObjectAt(obj, "spec");
  const std::string group = StringAt(spec, "group");
  const std::string plural = StringAt(ObjectAt(spec, "names"), "plural");
  // A Volcano kind muster serves itself keeps its objects: its CRD only described them.
  bool native = false;
  for (const ResourceInfo& info : AllResources()) {
    native = native || (info.group == group && info.resource == plural);
  }
  if (!native && !group.empty() && !plural.empty()) {
    ResourceInfo custom;  // what PlanDelete needs of a custom resource: not a pod, queue, ...
    custom.group = group;
    custom.resource = plural;
    custom.builtin = false;
    store::ListResult left = store_.List(custom.StoreResource(), "");
    bool empty = true;
    for (const store::Object& object : left.items) {
      empty = false;
      if (object.json == nullptr || Summarize(*object.json).marked) continue;
      absl::StatusOr<DeletePlan> plan = PlanDelete(custom, object, DeleteOptions{}, now_unix);
      if (plan.ok() && !plan->ops.empty()) store_.Commit(std::move(plan->ops)).IgnoreError();
    }
    if (!empty) return false;  // the next pass looks again
  }
  json::object& meta = *EnsureObject(obj, "metadata");
  std::vector<std::string> finalizers = Finalizers(meta);
  Remove(finalizers, kCrdCleanupFinalizer);
  SetFinalizers(meta, finalizers);
  return store_.Commit({UpdateOp(crd, std::move(obj))}).ok();
}

}  // namespace muster::apiserver
