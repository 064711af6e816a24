#include "apiserver/resource_registry.h"

#include <utility>

#include "api/json_parse.h"
#include "apiserver/descriptors/custom_resource.h"
#include "boost/json/parse.hpp"

namespace muster::apiserver {

ResourceRegistry::ResourceRegistry(store::Store& store) : store_(store) {
  // From now: Rebuild lists what is there already. A watch that cannot be made leaves the
  // registry to rebuild on every call (correct, only slower).
  if (auto watch = store_.WatchFrom(std::string(kCrdStoreResource), "", 0); watch.ok()) {
    watch_ = std::move(*watch);
    watch_->SetReadyCallback([this] { wanted_.fetch_add(1, std::memory_order_acq_rel); });
  }
}

ResourceRegistry::~ResourceRegistry() {
  if (watch_) watch_->Close();
  watch_.reset();
}

std::shared_ptr<const ServedResources> ResourceRegistry::Builtin() {
  static const auto* const builtin = new std::shared_ptr<const ServedResources>(
      std::make_shared<const ServedResources>(ServedResources{
          BuiltinResources(), OpenApiDocuments::Build(*BuiltinResources())}));
  return *builtin;
}

std::shared_ptr<const ServedResources> ResourceRegistry::Current() {
  // A caller that comes while another rebuilds waits for that rebuild (Rebuild takes the lock)
  // rather than take the snapshot before it: never none, never one older than a CRD write it
  // follows.
  if (watch_ == nullptr ||
      built_.load(std::memory_order_acquire) < wanted_.load(std::memory_order_acquire)) {
    Rebuild();
  }
  return current_.load(std::memory_order_acquire);
}

void ResourceRegistry::Rebuild() {
  std::lock_guard lock(rebuild_mu_);
  // The generation read before listing: a CRD written from here on asks for another rebuild.
  const uint64_t target = wanted_.load(std::memory_order_acquire);
  if (watch_ != nullptr && built_.load(std::memory_order_acquire) >= target) {
    return;  // another caller rebuilt it meanwhile
  }
  struct MarkBuilt {
    std::atomic<uint64_t>& built;
    uint64_t target;
    ~MarkBuilt() { built.store(target, std::memory_order_release); }
  } mark_built{built_, target};
  const ResourceSet& builtin = *BuiltinResources();
  store::ListResult crds = store_.List(std::string(kCrdStoreResource), "");
  std::map<std::string, CrdEntry> next;
  bool changed = current_.load() == nullptr;
  for (const store::Object& object : crds.items) {
    if (object.damaged || object.json == nullptr) continue;
    const std::string& name = object.key.name;
    if (auto it = crds_.find(name); it != crds_.end() && it->second.revision == object.revision) {
      next.emplace(name, std::move(it->second));
      continue;
    }
    changed = true;
    CrdEntry entry;
    entry.revision = object.revision;
    boost::json::error_code ec;
    boost::json::value crd = api::ParseJsonText(*object.json, ec);
    std::vector<ResourceInfo> infos;
    if (!ec && crd.is_object()) infos = CustomResourcesOf(crd.get_object());
    // A resource muster serves itself stays its own (a Volcano CRD applied over it).
    if (!infos.empty()) {
      bool native = false;
      for (const auto& served : builtin.all()) {
        native = native || (served->group == infos[0].group &&
                            served->resource == infos[0].resource);
      }
      if (!native) {
        for (ResourceInfo& info : infos) {
          entry.resources.push_back(std::make_shared<const ResourceInfo>(std::move(info)));
        }
      }
    }
    next.emplace(name, std::move(entry));
  }
  if (next.size() != crds_.size()) changed = true;
  crds_ = std::move(next);
  if (!changed) return;

  std::vector<std::shared_ptr<const ResourceInfo>> all = builtin.all();
  for (const auto& [name, entry] : crds_) {
    all.insert(all.end(), entry.resources.begin(), entry.resources.end());
  }
  auto resources = std::make_shared<const ResourceSet>(std::move(all));
  auto openapi = OpenApiDocuments::Build(*resources);
  current_.store(std::make_shared<const ServedResources>(
                     ServedResources{std::move(resources), std::move(openapi)}),
                 std::memory_order_release);
}

}  // namespace muster::apiserver
