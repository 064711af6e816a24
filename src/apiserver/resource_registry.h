#pragma once

// The dynamic resource registry: what the API server serves now, the compiled-in table
// (descriptors/resources.h) plus the custom resources of every established
// CustomResourceDefinition in the store (descriptors/custom_resource.h), with their OpenAPI
// documents. It follows the store, not the handlers: a CRD written by any path (a request, the
// lifecycle controller removing one, a restart over an existing store) changes what is served
// from the next request on.
//
// How: a store watch on CRDs whose ready callback only asks for a rebuild (it runs on the
// writer's thread, before that write's Commit returns, so the reply to a CRD write is never
// followed by a request that misses it). The next Current() lists the CRDs and publishes a new
// immutable snapshot; until one changes, Current() is an atomic load and a shared_ptr copy.
// Snapshots are never modified, so a request (or a watch, for up to its timeout) keeps serving
// the shape it started with while a CRD changes.
//
// A CRD naming a resource the compiled-in table serves (Volcano's jobs.batch.volcano.sh, whose
// CRDs `kubectl apply -f deploy/crds/` installs) adds nothing: muster keeps serving its own.
//
// Thread-safety: every method may be called from any thread.

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "apiserver/descriptors/openapi.h"
#include "apiserver/descriptors/resources.h"
#include "store/store.h"

namespace muster::apiserver {

// One state of the registry.
struct ServedResources {
  std::shared_ptr<const ResourceSet> resources;
  std::shared_ptr<const OpenApiDocuments> openapi;
};

class ResourceRegistry {
 public:
  // Starts watching `store`'s CRDs; the first Current() reads them. `store` must outlive it.
  explicit ResourceRegistry(store::Store& store);
  ~ResourceRegistry();
  ResourceRegistry(const ResourceRegistry&) = delete;
  ResourceRegistry& operator=(const ResourceRegistry&) = delete;

  // What is served now.
  std::shared_ptr<const ServedResources> Current();

  // The compiled-in table alone (what a registry with no CRDs serves).
  static std::shared_ptr<const ServedResources> Builtin();

 private:
  void Rebuild();

  // What one CRD revision contributed, kept so that a CRD that did not change is not parsed
  // again (its schema shared by the new snapshot).
  struct CrdEntry {
    int64_t revision = 0;
    std::vector<std::shared_ptr<const ResourceInfo>> resources;
  };

  store::Store& store_;
  // Generations: every CRD change bumps wanted_; built_ is the one current_ shows. The first
  // Current() builds (wanted_ starts ahead).
  std::atomic<uint64_t> wanted_{1};
  std::atomic<uint64_t> built_{0};
  std::mutex rebuild_mu_;                 // one rebuild at a time
  std::map<std::string, CrdEntry> crds_;  // guarded by rebuild_mu_
  std::atomic<std::shared_ptr<const ServedResources>> current_;
  std::unique_ptr<store::Watch> watch_;  // last: its callback stops before the rest goes
};

}  // namespace muster::apiserver
