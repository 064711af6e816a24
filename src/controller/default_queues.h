#pragma once

// The `default` and `root` Queues every Volcano cluster has: made, when missing, as Volcano's
// scheduler makes them at start (pkg/scheduler/cache/cache.go, newDefaultAndRootQueue: weight 1;
// default reclaimable, root not). `muster scheduler` calls it once it leads, and the queue
// controller once its watches have synced, so that on a cluster either component alone gives
// Jobs that name no queue a queue, and queue trees (spec.parent) their top. `muster up`'s API
// server stores both when it starts.

#include "absl/status/status.h"
#include "client/client.h"

namespace muster::controller {

// Creates whichever of `default` and `root` does not exist (a create that finds it made by
// another component meanwhile is fine). An error names the queue and what the server answered.
absl::Status EnsureDefaultQueues(client::Client& api);

}  // namespace muster::controller
