#include "client/informer.h"

#include <algorithm>
#include <set>
#include <utility>

#include "api/json_access.h"
#include "common/thread.h"

namespace muster::client {

namespace json = boost::json;

namespace {

// Retry pacing after a failed list or watch (server down, network): doubles up to the cap.
constexpr auto kInitialBackoff = std::chrono::milliseconds(200);
constexpr auto kMaxBackoff = std::chrono::seconds(10);

using api::MetaString;

std::string CacheKey(std::string_view ns, std::string_view name) {
  if (ns.empty()) return std::string(name);
  std::string key(ns);
  key += '/';
  key += name;
  return key;
}

std::string KeyOf(const json::object& obj) {
  return CacheKey(MetaString(obj, "namespace"), MetaString(obj, "name"));
}

}  // namespace

Informer::Informer(Client& client, Resource resource, std::string ns, ListOptions options)
    : client_(client),
      resource_(std::move(resource)),
      ns_(std::move(ns)),
      options_(std::move(options)) {}

Informer::~Informer() { Stop(); }

void Informer::AddHandlers(InformerHandlers handlers) { handlers_.push_back(std::move(handlers)); }

absl::Status Informer::Start() {
  if (thread_.joinable() || stop_.load()) return absl::OkStatus();
  return common::StartThread(thread_, "the " + resource_.plural + " informer", [this] { Run(); });
}

void Informer::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_.store(true);
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Informer::Synced() const {
  std::lock_guard lock(mu_);
  return synced_;
}

bool Informer::WaitForSync(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return synced_cv_.wait_for(lock, timeout, [this] { return synced_; });
}

std::optional<json::object> Informer::Get(std::string_view ns, std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = cache_.find(CacheKey(resource_.namespaced ? ns : std::string_view(), name));
  if (it == cache_.end()) return std::nullopt;
  return *it->second;
}

std::vector<json::object> Informer::List(std::string_view ns) const {
  std::vector<std::pair<std::pair<std::string, std::string>, const json::object*>> sorted;
  std::vector<json::object> out;
  std::lock_guard lock(mu_);
  sorted.reserve(cache_.size());
  for (const auto& [key, obj] : cache_) {
    std::string obj_ns = MetaString(*obj, "namespace");
    if (!ns.empty() && obj_ns != ns) continue;
    sorted.push_back({{std::move(obj_ns), MetaString(*obj, "name")}, obj.get()});
  }
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  out.reserve(sorted.size());
  for (const auto& [key, obj] : sorted) out.push_back(*obj);
  return out;
}

std::string Informer::LastResourceVersion() const {
  std::lock_guard lock(mu_);
  return last_resource_version_;
}

bool Informer::SleepUnlessStopped(std::chrono::milliseconds duration) {
  std::unique_lock lock(mu_);
  return !stop_cv_.wait_for(lock, duration, [this] { return stop_.load(); });
}

void Informer::Replace(std::vector<json::object> items, const std::string& resource_version) {
  // The difference between the cache and the fresh list, computed and applied under the lock,
  // delivered after it.
  using Shared = std::shared_ptr<const json::object>;
  std::vector<Shared> added;
  std::vector<std::pair<Shared, Shared>> updated;  // old, new
  std::vector<Shared> deleted;
  bool first;
  {
    std::lock_guard lock(mu_);
    first = !synced_;
    std::map<std::string, Shared> next;
    for (json::object& item : items) {
      auto shared = std::make_shared<const json::object>(std::move(item));
      std::string key = KeyOf(*shared);
      auto old = cache_.find(key);
      if (old == cache_.end()) {
        added.push_back(shared);
      } else if (MetaString(*old->second, "resourceVersion") !=
                 MetaString(*shared, "resourceVersion")) {
        updated.emplace_back(old->second, shared);
      }
      next[std::move(key)] = std::move(shared);
    }
    for (auto& [key, obj] : cache_) {
      if (!next.contains(key)) deleted.push_back(std::move(obj));
    }
    cache_ = std::move(next);
    last_resource_version_ = resource_version;
  }
  for (const Shared& obj : added) {
    for (const auto& h : handlers_) {
      if (h.on_add) h.on_add(*obj);
      if (h.on_upsert) h.on_upsert(obj);
    }
  }
  for (const auto& [old_obj, obj] : updated) {
    for (const auto& h : handlers_) {
      if (h.on_update) h.on_update(*old_obj, *obj);
      if (h.on_upsert) h.on_upsert(obj);
    }
  }
  for (const Shared& obj : deleted) {
    for (const auto& h : handlers_) {
      if (h.on_delete) h.on_delete(*obj);
    }
  }
  if (first) {
    {
      std::lock_guard lock(mu_);
      synced_ = true;
    }
    synced_cv_.notify_all();
  }
}

void Informer::Apply(WatchEvent& event) {
  std::string rv = MetaString(*event.object, "resourceVersion");
  if (event.type == WatchEventType::kBookmark) {
    std::lock_guard lock(mu_);
    if (!rv.empty()) last_resource_version_ = rv;
    return;
  }
  std::string key = KeyOf(*event.object);
  // What the handlers see: the cached state itself, immutable and shared (no copy).
  std::shared_ptr<const json::object> old;
  const std::shared_ptr<const json::object> current = std::move(event.object);
  {
    std::lock_guard lock(mu_);
    auto it = cache_.find(key);
    if (event.type == WatchEventType::kDeleted) {
      if (it != cache_.end()) cache_.erase(it);
    } else if (it != cache_.end()) {
      old = std::exchange(it->second, current);  // the handlers' "before"
    } else {
      cache_.emplace(std::move(key), current);
    }
    if (!rv.empty()) last_resource_version_ = rv;
  }
  for (const auto& h : handlers_) {
    if (event.type == WatchEventType::kDeleted) {
      if (h.on_delete) h.on_delete(*current);
    } else {
      if (old && h.on_update) h.on_update(*old, *current);
      if (!old && h.on_add) h.on_add(*current);
      if (h.on_upsert) h.on_upsert(current);
    }
  }
}

void Informer::Run() {
  bool need_list = true;
  auto backoff = kInitialBackoff;
  while (!stop_.load()) {
    if (need_list) {
      auto list = client_.List(resource_, ns_, options_);
      if (!list.ok()) {
        if (!SleepUnlessStopped(backoff)) return;
        backoff = std::min<std::chrono::milliseconds>(backoff * 2, kMaxBackoff);
        continue;
      }
      Replace(std::move(list->items), list->resource_version);
      need_list = false;
    }
    const std::string from = LastResourceVersion();
    bool got_event = false;
    absl::Status s = client_.Watch(
        resource_, ns_, from, options_,
        [this, &got_event](WatchEvent& event) {
          got_event = true;
          Apply(event);
          return !stop_.load();
        },
        stop_);
    if (stop_.load()) return;
    if (absl::IsOutOfRange(s)) {
      // The server no longer has the events after our version: relist and diff.
      need_list = true;
      continue;
    }
    if (s.ok()) {
      backoff = kInitialBackoff;
      // A watch the server ended at once, without events, is re-opened after a pause so that a
      // misbehaving server is not hammered.
      if (!got_event && !SleepUnlessStopped(std::chrono::milliseconds(50))) return;
      continue;
    }
    // Any other failure (server gone, transport error): relist once it answers again, so that
    // nothing that happened meanwhile is missed.
    need_list = true;
    if (!SleepUnlessStopped(backoff)) return;
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, kMaxBackoff);
  }
}

}  // namespace muster::client
