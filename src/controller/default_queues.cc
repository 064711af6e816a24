// The default and root Queues (default_queues.h), after Volcano's
// pkg/scheduler/cache/cache.go newDefaultAndRootQueue.

#include "controller/default_queues.h"

#include <string>
#include <string_view>

#include "boost/json/object.hpp"
#include "fmt/format.h"

namespace muster::controller {

namespace json = boost::json;

absl::Status EnsureDefaultQueues(client::Client& api) {
  for (const char* name : {"default", "root"}) {
    auto existing = api.Get(client::Queues(), "", name);
    if (existing.ok()) continue;
    if (!absl::IsNotFound(existing.status())) {
      return absl::Status(existing.status().code(),
                          fmt::format("reading Queue {}: {}", name,
                                      std::string(existing.status().message())));
    }
    json::object queue{{"apiVersion", "scheduling.volcano.sh/v1beta1"},
                       {"kind", "Queue"},
                       {"metadata", json::object{{"name", name}}},
                       // Volcano's scheduler makes root not reclaimable, default reclaimable.
                       {"spec", json::object{{"weight", 1},
                                             {"reclaimable", std::string_view(name) != "root"}}}};
    auto created = api.Create(client::Queues(), "", queue);
    if (!created.ok() && !absl::IsAlreadyExists(created.status())) {
      return absl::Status(created.status().code(),
                          fmt::format("creating Queue {}: {}", name,
                                      std::string(created.status().message())));
    }
  }
  return absl::OkStatus();
}

}  // namespace muster::controller
