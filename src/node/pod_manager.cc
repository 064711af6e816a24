#include "node/pod_manager.h"

#include <functional>
#include <future>
#include <optional>
#include <utility>

#include "api/managed_fields.h"
#include "boost/json/serialize.hpp"
#include "common/thread.h"
#include "node/json_access.h"

namespace muster::node {

namespace json = boost::json;

class PodManager::Shard {
 public:
  explicit Shard(PodManager& manager) : manager_(manager) {}
  ~Shard() { Stop(); }

  absl::Status Start() {
    return common::StartThread(thread_, "a pod manager", [this] { Loop(); });
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    // Whoever waits on a lookup hears that the nodes stop.
    std::deque<Item> left;
    {
      std::lock_guard<std::mutex> lock(mu_);
      left.swap(queue_);
    }
    for (Item& item : left) {
      if (item.kind == Item::Kind::kLookup) item.lookup(nullptr, "", /*stopping=*/true);
    }
  }

  // Runs `lookup` on the shard's thread with the pod's worker (null when it has none); false
  // once stopping (then it never runs).
  using Lookup = std::function<void(const PodWorker*, const std::string& node, bool stopping)>;

  struct Item {
    enum class Kind { kUpsert, kRemove, kExit, kLookup };
    Kind kind = Kind::kUpsert;
    std::shared_ptr<const json::object> pod;
    std::string key, uid;
    ContainerId id = 0;
    ContainerExit exit;
    Lookup lookup;
  };

  bool Push(Item item) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return false;
      queue_.push_back(std::move(item));
    }
    cv_.notify_one();
    return true;
  }

 private:
  using Clock = std::chrono::steady_clock;

  struct Entry {
    std::unique_ptr<PodWorker> worker;
    std::string node;
    std::string written;  // the status last written or found, serialized
    bool confirmed = false;
    std::optional<Clock::time_point> wake_at;
    std::string counted_phase;  // the phase this pod adds to the manager's counts
  };

  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      if (queue_.empty()) {
        if (timers_.empty()) {
          cv_.wait(lock);
        } else {
          cv_.wait_until(lock, timers_.begin()->first);
        }
      }
      if (stop_) break;
      std::deque<Item> items;
      items.swap(queue_);
      lock.unlock();
      for (Item& item : items) Handle(item);
      const auto now = Clock::now();
      while (!timers_.empty() && timers_.begin()->first <= now) {
        auto [key, uid] = timers_.begin()->second;
        timers_.erase(timers_.begin());
        if (Entry* e = Find(key, uid)) {
          e->wake_at.reset();
          Sync(key, *e);
        }
      }
      lock.lock();
    }
  }

  Entry* Find(const std::string& key, const std::string& uid) {
    if (auto it = pods_.find(key); it != pods_.end() && it->second.worker->uid() == uid) {
      return &it->second;
    }
    if (auto it = orphans_.find(uid); it != orphans_.end()) return &it->second;
    return nullptr;
  }

  void Count(Entry& e, const std::string& phase) {
    if (e.counted_phase == phase) return;
    auto counter = [this](const std::string& p) -> std::atomic<int>* {
      if (p == "Pending") return &manager_.pending_;
      if (p == "Running") return &manager_.running_;
      if (p == "Succeeded") return &manager_.succeeded_;
      if (p == "Failed") return &manager_.failed_;
      return nullptr;
    };
    if (auto* c = counter(e.counted_phase)) --*c;
    if (auto* c = counter(phase)) ++*c;
    e.counted_phase = phase;
  }

  void Handle(Item& item) {
    switch (item.kind) {
      case Item::Kind::kUpsert:
        Upsert(std::move(item.pod));
        break;
      case Item::Kind::kRemove:
        Remove(item.key, item.uid);
        break;
      case Item::Kind::kExit:
        if (Entry* e = Find(item.key, item.uid)) {
          e->worker->OnExit(item.id, item.exit);
          Sync(item.key, *e);
        }
        break;
      case Item::Kind::kLookup: {
        auto it = pods_.find(item.key);
        const bool found = it != pods_.end() &&
                           (item.uid.empty() || it->second.worker->uid() == item.uid);
        item.lookup(found ? it->second.worker.get() : nullptr, found ? it->second.node : "",
                    /*stopping=*/false);
        break;
      }
    }
  }

  void Upsert(std::shared_ptr<const json::object> pod) {
    const std::string ns = MetaString(*pod, "namespace");
    const std::string name = MetaString(*pod, "name");
    const std::string uid = MetaString(*pod, "uid");
    const std::string key = Cat(ns, "/", name);
    const json::object* spec = ObjectAt(*pod, "spec");
    const std::string node = spec == nullptr ? "" : StringAt(*spec, "nodeName");
    auto nit = manager_.nodes_.find(node);
    if (nit == manager_.nodes_.end()) return;
    if (auto it = pods_.find(key); it != pods_.end() && it->second.worker->uid() != uid) {
      Remove(key, it->second.worker->uid());  // replaced by a new pod of the same name
    }
    auto it = pods_.find(key);
    if (it != pods_.end()) {
      if (it->second.worker->Update(std::move(pod))) Sync(key, it->second);
      return;
    }
    Entry e;
    e.node = node;
    if (const json::object* status = ObjectAt(*pod, "status")) e.written = json::serialize(*status);
    NodeResources& resources = *nit->second;
    Runtime& runtime = resources.config().runtime == RuntimeKind::kProcess ? manager_.process_
                                                                           : manager_.simulated_;
    PodWorkerHooks hooks;
    PodSink& sink = manager_.sink_;
    hooks.get_object = [&sink](std::string_view resource, const std::string& cns,
                               const std::string& cname) {
      return sink.GetObject(resource, cns, cname);
    };
    if (resources.config().runtime == RuntimeKind::kProcess) {
      hooks.network = manager_.network_.get();
    }
    hooks.on_exit = [this, key, uid](ContainerId id, const ContainerExit& exit) {
      Item item;
      item.kind = Item::Kind::kExit;
      item.key = key;
      item.uid = uid;
      item.id = id;
      item.exit = exit;
      Push(std::move(item));
    };
    e.worker = std::make_unique<PodWorker>(std::move(pod), resources, runtime,
                                           manager_.options_.worker, std::move(hooks));
    Entry& entry = pods_.emplace(key, std::move(e)).first->second;
    Sync(key, entry);
  }

  void Remove(const std::string& key, const std::string& uid) {
    auto it = pods_.find(key);
    if (it == pods_.end() || it->second.worker->uid() != uid) return;
    Entry e = std::move(it->second);
    pods_.erase(it);
    Count(e, "");
    e.worker->Orphan();
    e.wake_at.reset();
    Sync(key, e);
    if (e.worker->running_containers() == 0) {
      e.worker->RemoveFiles();
      return;
    }
    orphans_[uid] = std::move(e);
  }

  void Schedule(const std::string& key, Entry& e, Clock::time_point at) {
    if (e.wake_at && *e.wake_at <= at) return;
    e.wake_at = at;
    timers_.emplace(at, std::make_pair(key, e.worker->uid()));
  }

  void Sync(const std::string& key, Entry& e) {
    PodWorker& w = *e.worker;
    PodWorker::SyncResult result = w.Sync();
    const PodRef ref{w.ns(), w.name(), w.uid()};
    PodSink& sink = manager_.sink_;
    for (const PodEvent& event : result.events) sink.RecordEvent(ref, e.node, event);
    if (result.wake_at) Schedule(key, e, *result.wake_at);
    const auto retry = Clock::now() + manager_.options_.write_retry;

    if (auto orphan = orphans_.find(w.uid()); orphan != orphans_.end() && &orphan->second == &e) {
      if (w.running_containers() == 0) {
        w.RemoveFiles();
        orphans_.erase(orphan);
      }
      return;
    }
    if (w.deleting()) {
      // The pod goes away once confirmed; its status is not written meanwhile.
      if (result.confirm_deletion && !e.confirmed) {
        absl::Status s = sink.ConfirmDeletion(ref);
        if (s.ok() || absl::IsNotFound(s)) {
          e.confirmed = true;
        } else {
          Schedule(key, e, retry);
        }
      }
      return;
    }
    Count(e, w.phase());
    json::object status = w.Status();
    std::string text = json::serialize(status);
    if (text == e.written) return;
    absl::Status s = sink.WriteStatus(ref, status);
    if (s.ok()) {
      e.written = std::move(text);
    } else if (!absl::IsNotFound(s)) {
      Schedule(key, e, retry);
    }
  }

  PodManager& manager_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stop_ = false;
  std::thread thread_;

  // Shard thread only.
  std::map<std::string, Entry> pods_;     // "ns/name"
  std::map<std::string, Entry> orphans_;  // uid: gone from the API, containers still stopping
  std::multimap<Clock::time_point, std::pair<std::string, std::string>> timers_;  // key, uid
};

PodManager::PodManager(const std::vector<NodeConfig>& nodes, PodSink& sink, Runtime& simulated,
                       Runtime& process, PodManagerOptions options)
    : sink_(sink), simulated_(simulated), process_(process), options_(std::move(options)) {
  bool process_nodes = false;
  for (const NodeConfig& node : nodes) {
    nodes_.emplace(node.name, std::make_unique<NodeResources>(node));
    process_nodes = process_nodes || node.runtime == RuntimeKind::kProcess;
  }
  if (process_nodes && !options_.worker.data_dir.empty()) {
    PodNetwork::Options network;
    network.data_dir = options_.worker.data_dir;
    network.isolation =
        options_.pod_isolation ? *options_.pod_isolation : ProbePodIsolation();
    network_ = std::make_unique<PodNetwork>(std::move(network));
  }
  for (int i = 0; i < std::max(1, options_.shards); ++i) {
    shards_.push_back(std::make_unique<Shard>(*this));
  }
}

PodManager::~PodManager() { Stop(); }

absl::Status PodManager::Start() {
  for (auto& shard : shards_) {
    if (absl::Status s = shard->Start(); !s.ok()) {
      Stop();
      return s;
    }
  }
  return absl::OkStatus();
}

void PodManager::Stop() {
  for (auto& shard : shards_) shard->Stop();
}

PodManager::Shard& PodManager::ShardFor(const std::string& key) {
  return *shards_[std::hash<std::string>{}(key) % shards_.size()];
}

void PodManager::Upsert(std::shared_ptr<const json::object> pod) {
  const json::object* spec = ObjectAt(*pod, "spec");
  if (spec == nullptr || !HasNode(StringAt(*spec, "nodeName"))) return;
  Shard::Item item;
  item.kind = Shard::Item::Kind::kUpsert;
  std::string key = Cat(MetaString(*pod, "namespace"), "/", MetaString(*pod, "name"));
  item.pod = std::move(pod);
  ShardFor(key).Push(std::move(item));
}

void PodManager::Upsert(const json::object& pod) {
  const json::object* spec = ObjectAt(pod, "spec");
  if (spec == nullptr || !HasNode(StringAt(*spec, "nodeName"))) return;
  Upsert(std::make_shared<const json::object>(api::WithoutManagedFields(pod)));
}

void PodManager::Remove(const json::object& pod) {
  Shard::Item item;
  item.kind = Shard::Item::Kind::kRemove;
  item.key = Cat(MetaString(pod, "namespace"), "/", MetaString(pod, "name"));
  item.uid = MetaString(pod, "uid");
  ShardFor(item.key).Push(std::move(item));
}

void PodManager::UpsertService(const json::object& service) {
  if (network_) network_->UpsertService(service);
}

void PodManager::RemoveService(const json::object& service) {
  if (network_) network_->RemoveService(service);
}

absl::StatusOr<PodManager::ContainerLookup> PodManager::Lookup(const std::string& ns,
                                                              const std::string& name,
                                                              const std::string& uid,
                                                              const std::string& container) {
  auto answer = std::make_shared<std::promise<absl::StatusOr<ContainerLookup>>>();
  std::future<absl::StatusOr<ContainerLookup>> result = answer->get_future();
  Shard::Item item;
  item.kind = Shard::Item::Kind::kLookup;
  item.key = Cat(ns, "/", name);
  item.uid = uid;
  item.lookup = [this, answer, name, container](const PodWorker* worker, const std::string& node,
                                                bool stopping) {
    if (stopping) {
      answer->set_value(absl::UnavailableError("the node agents are stopping"));
      return;
    }
    if (worker == nullptr) {
      answer->set_value(absl::NotFoundError(
          Cat("pod \"", name, "\" is not run by the node agents of this process")));
      return;
    }
    ContainerLookup found;
    found.node = node;
    found.runtime = nodes_.at(node)->config().runtime;
    if (!container.empty()) {
      std::optional<PodWorker::ContainerRun> run = worker->Run(container);
      if (!run) {
        answer->set_value(absl::NotFoundError(Cat("container not found (\"", container, "\")")));
        return;
      }
      found.run = *std::move(run);
    }
    answer->set_value(std::move(found));
  };
  if (!ShardFor(item.key).Push(std::move(item))) {
    return absl::UnavailableError("the node agents are stopping");
  }
  return result.get();
}

PodCounts PodManager::Counts() const {
  return PodCounts{pending_.load(), running_.load(), succeeded_.load(), failed_.load()};
}

PodManager::GpuCounts PodManager::Gpus() const {
  GpuCounts counts;
  for (const auto& [name, node] : nodes_) {
    counts.total += node->DeviceCount();
    counts.in_use += node->DevicesInUse();
  }
  return counts;
}

}  // namespace muster::node
