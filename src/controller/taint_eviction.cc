// The taint eviction controller (taint_eviction.h), after kube's
// pkg/controller/tainteviction/taint_eviction.go (processPodOnNode, getMinTolerationTime,
// handleNodeUpdate, handlePodUpdate, deletePodHandler, addConditionAndDeletePod) and
// pkg/apis/core/v1/helper (GetMatchingTolerations).

#include "controller/taint_eviction.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "api/json_access.h"
#include "api/json_codec.h"
#include "api/selector.h"
#include "api/time.h"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "client/informer.h"
#include "controller/work_queue.h"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr char kTaintEvictionComponent[] = "taint-eviction-controller";
constexpr char kTaintManagerEviction[] = "TaintManagerEviction";

// The node's NoExecute taints, read from its JSON (every pod's look and every node update come
// here, so the node is not decoded whole).
std::vector<api::Taint> NoExecuteTaintsOf(const json::object& node) {
  std::vector<api::Taint> out;
  const json::object* spec = api::ObjectAt(node, "spec");
  const json::array* taints = spec == nullptr ? nullptr : api::ArrayAt(*spec, "taints");
  if (taints == nullptr) return out;
  for (const json::value& t : *taints) {
    const json::object* taint = t.if_object();
    if (taint == nullptr || api::StringViewAt(taint, "effect") != api::kTaintEffectNoExecute) {
      continue;
    }
    out.push_back({api::StringAt(*taint, "key"), api::StringAt(*taint, "value"),
                   api::kTaintEffectNoExecute});
  }
  return out;
}

// The fields of a pod the taint manager looks at: where it runs and what it tolerates.
bool TaintRelevantChange(const json::object& before, const json::object& after) {
  const json::object* a = api::ObjectAt(before, "spec");
  const json::object* b = api::ObjectAt(after, "spec");
  if (api::StringAt(a, "nodeName") != api::StringAt(b, "nodeName")) return true;
  const json::value* ta = a == nullptr ? nullptr : a->if_contains("tolerations");
  const json::value* tb = b == nullptr ? nullptr : b->if_contains("tolerations");
  if ((ta == nullptr) != (tb == nullptr)) return true;
  return ta != nullptr && *ta != *tb;
}

}  // namespace

TaintVerdict JudgeNoExecuteTaints(const std::vector<api::Taint>& node_taints,
                                  const std::vector<api::Toleration>& tolerations) {
  std::vector<const api::Toleration*> used;
  bool any = false;
  for (const api::Taint& taint : node_taints) {
    if (taint.effect != api::kTaintEffectNoExecute) continue;
    any = true;
    auto tolerating = std::find_if(tolerations.begin(), tolerations.end(),
                                   [&](const api::Toleration& t) {
                                     return api::TolerationToleratesTaint(t, taint);
                                   });
    if (tolerating == tolerations.end()) return {TaintVerdict::Kind::kEvictNow, 0};
    used.push_back(&*tolerating);
  }
  if (!any) return {};
  int64_t least = std::numeric_limits<int64_t>::max();
  for (const api::Toleration* t : used) {
    if (!t->toleration_seconds) continue;
    if (*t->toleration_seconds <= 0) return {TaintVerdict::Kind::kEvictNow, 0};
    least = std::min(least, *t->toleration_seconds);
  }
  if (least == std::numeric_limits<int64_t>::max()) return {};  // tolerated for ever
  return {TaintVerdict::Kind::kEvictAfter, least};
}

namespace {

// The controller NewTaintEvictionController makes: its watches, queues and workers.
struct TaintEvictionController final : public Controller {
  TaintEvictionController(client::Client& c, TaintEvictionControllerOptions o)
      : client(c),
        options(std::move(o)),
        nodes(c, client::Nodes()),
        pods(c, client::Pods(), "", client::ListOptions{"", "spec.nodeName!="}),
        queues({options.workers, options.backoff_base, options.backoff_max},
               [this](const WorkItem& item, int) { return Handle(item.key); }) {}

  ~TaintEvictionController() override { Stop(); }
  absl::Status Start(std::chrono::milliseconds sync_timeout) override;
  void Stop() override;
  bool WaitIdle(std::chrono::milliseconds timeout) override;

  // A pod on a node with NoExecute taints it tolerates for a while, or one deleted for them.
  struct Tracked {
    std::string node;
    SteadyClock::time_point since;  // first seen tolerating the taints there
    bool deleted = false;           // its deletion was made (kube's finished work item)
  };

  client::Client& client;
  TaintEvictionControllerOptions options;
  client::Informer nodes;
  client::Informer pods;
  WorkQueues queues;
  std::mutex mu;
  std::map<std::string, Tracked> tracked;  // by "ns/name"; guarded by mu
  bool started = false;

  SteadyClock::time_point Now() const {
    return options.now ? options.now() : SteadyClock::now();
  }

  void Enqueue(const std::string& key) {
    WorkItem item;
    item.key = key;
    queues.Add(std::move(item));
  }
  static std::string KeyOf(const json::object& pod) {
    return api::MetaString(pod, "namespace") + "/" + api::MetaString(pod, "name");
  }

  void OnNode(const json::object* before, const json::object& node) {
    if (before != nullptr && NoExecuteTaintsOf(*before) == NoExecuteTaintsOf(node)) return;
    const std::string name = api::MetaString(node, "name");
    for (const json::object& pod : pods.List()) {
      if (api::StringAt(api::ObjectAt(pod, "spec"), "nodeName") == name) Enqueue(KeyOf(pod));
    }
  }

  void OnPodDeleted(const json::object& pod) {
    std::lock_guard<std::mutex> lock(mu);
    tracked.erase(KeyOf(pod));
  }

  void Log(const std::string& message) {
    std::fprintf(stderr, "taint eviction controller: %s\n", message.c_str());
  }

  void RecordEvent(const std::string& ns, const std::string& name, const std::string& uid,
                   std::string message) {
    client::EventRecord event = client::EventRecord::AboutPod(ns, name, uid);
    event.reason = kTaintManagerEviction;
    event.message = std::move(message);
    event.source_component = kTaintEvictionComponent;
    if (absl::Status s = client.RecordEvent(event); !s.ok()) {
      Log(fmt::format("cannot record event about pod {}/{}: {}", ns, name,
                      std::string(s.message())));
    }
  }

  // addConditionAndDeletePod. False when a write was refused (retried with backoff).
  bool DeletePod(const std::string& ns, const std::string& name, const std::string& uid) {
    RecordEvent(ns, name, uid, fmt::format("Marking for deletion Pod {}/{}", ns, name));
    const std::string now = api::FormatTime(std::chrono::system_clock::now());
    json::object condition{{"type", "DisruptionTarget"},
                           {"status", "True"},
                           {"lastTransitionTime", now},
                           {"reason", "DeletionByTaintManager"},
                           {"message", "Taint manager: deleting due to NoExecute taint"}};
    json::object patch{{"status", json::object{{"conditions", json::array{condition}}}}};
    absl::Status patched =
        client.PatchWithoutResult(client::Pods(), ns, name, client::PatchType::kStrategic,
                                  json::serialize(patch), "status");
    if (absl::IsNotFound(patched)) return true;
    if (!patched.ok()) {
      Log(fmt::format("cannot mark pod {}/{} as a disruption target: {}", ns, name,
                      std::string(patched.message())));
      return false;
    }
    client::DeleteOptions options;
    options.precondition_uid = uid;
    absl::Status deleted = client.Delete(client::Pods(), ns, name, options);
    if (deleted.ok() || absl::IsNotFound(deleted)) return true;
    Log(fmt::format("cannot delete pod {}/{}: {}", ns, name, std::string(deleted.message())));
    return absl::IsAborted(deleted);  // a conflict: another pod of the name, not ours to delete
  }

  // processPodOnNode for one pod, at its current state.
  bool Handle(const std::string& key) {
    const size_t slash = key.find('/');
    const std::string ns = key.substr(0, slash);
    const std::string name = key.substr(slash + 1);
    std::optional<json::object> object = pods.Get(ns, name);
    const std::string node_name =
        object ? api::StringAt(api::ObjectAt(*object, "spec"), "nodeName") : "";
    std::optional<json::object> node;
    if (!node_name.empty()) node = nodes.Get("", node_name);
    const std::vector<api::Taint> taints =
        node ? NoExecuteTaintsOf(*node) : std::vector<api::Taint>{};
    {
      // Most pods run where no NoExecute taint is, and were never looked at for one.
      std::lock_guard<std::mutex> lock(mu);
      if (taints.empty() && !tracked.contains(key)) return true;
    }
    absl::StatusOr<api::Pod> pod =
        object ? api::DecodePod(json::value(*object)) : absl::NotFoundError("gone");
    if (!pod.ok() || pod->spec.node_name.empty()) {
      std::lock_guard<std::mutex> lock(mu);
      tracked.erase(key);
      return true;
    }
    const TaintVerdict verdict = JudgeNoExecuteTaints(taints, pod->spec.tolerations);
    const SteadyClock::time_point now = Now();
    {
      std::unique_lock<std::mutex> lock(mu);
      auto it = tracked.find(key);
      if (it != tracked.end() && it->second.node != pod->spec.node_name) {
        tracked.erase(it);
        it = tracked.end();
      }
      if (verdict.kind == TaintVerdict::Kind::kKeep) {
        const bool was_pending = it != tracked.end() && !it->second.deleted;
        if (it != tracked.end()) tracked.erase(it);
        lock.unlock();
        if (was_pending) {
          RecordEvent(ns, name, pod->meta.uid,
                      fmt::format("Cancelling deletion of Pod {}/{}", ns, name));
        }
        return true;
      }
      if (it != tracked.end() && it->second.deleted) return true;  // once, as kube's work item
      if (it == tracked.end()) {
        it = tracked.emplace(key, Tracked{pod->spec.node_name, now, false}).first;
      }
      if (verdict.kind == TaintVerdict::Kind::kEvictAfter) {
        const SteadyClock::time_point due =
            it->second.since + std::chrono::seconds(verdict.after_seconds);
        if (now < due) {
          lock.unlock();
          WorkItem item;
          item.key = key;
          queues.AddAfter(std::move(item), due - now);
          return true;
        }
      }
      it->second.deleted = true;
    }
    if (DeletePod(ns, name, pod->meta.uid)) return true;
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = tracked.find(key); it != tracked.end()) it->second.deleted = false;
    return false;
  }
};

}  // namespace

absl::Status TaintEvictionController::Start(std::chrono::milliseconds sync_timeout) {
  TaintEvictionController& s = *this;
  if (s.started) return absl::OkStatus();
  s.started = true;
  client::InformerHandlers nodes;
  nodes.on_add = [&s](const json::object& o) { s.OnNode(nullptr, o); };
  nodes.on_update = [&s](const json::object& before, const json::object& o) {
    s.OnNode(&before, o);
  };
  s.nodes.AddHandlers(std::move(nodes));
  client::InformerHandlers pods;
  pods.on_add = [&s](const json::object& o) { s.Enqueue(TaintEvictionController::KeyOf(o)); };
  pods.on_update = [&s](const json::object& before, const json::object& o) {
    if (TaintRelevantChange(before, o)) s.Enqueue(TaintEvictionController::KeyOf(o));
  };
  pods.on_delete = [&s](const json::object& o) { s.OnPodDeleted(o); };
  s.pods.AddHandlers(std::move(pods));
  // Nodes first: a pod's first look then finds its node's taints.
  for (absl::Status started : {s.queues.Start(), s.nodes.Start()}) {
    if (!started.ok()) {
      Stop();
      return started;
    }
  }
  if (!s.nodes.WaitForSync(sync_timeout)) {
    Stop();
    return absl::DeadlineExceededError(fmt::format(
        "taint eviction controller: the nodes watch did not sync within {} ms",
        sync_timeout.count()));
  }
  if (absl::Status started = s.pods.Start(); !started.ok()) {
    Stop();
    return started;
  }
  if (!s.pods.WaitForSync(sync_timeout)) {
    Stop();
    return absl::DeadlineExceededError(fmt::format(
        "taint eviction controller: the pods watch did not sync within {} ms",
        sync_timeout.count()));
  }
  return absl::OkStatus();
}

void TaintEvictionController::Stop() {
  TaintEvictionController& s = *this;
  s.pods.Stop();
  s.nodes.Stop();
  s.queues.Stop();
}

bool TaintEvictionController::WaitIdle(std::chrono::milliseconds timeout) {
  return queues.WaitIdle(timeout);
}

std::unique_ptr<Controller> NewTaintEvictionController(client::Client& client,
                                                       TaintEvictionControllerOptions options) {
  return std::make_unique<TaintEvictionController>(client, std::move(options));
}

}  // namespace muster::controller
