#pragma once

// What a component checks before it starts against an API server, so that a cluster it cannot
// work with says so in one line (and on /readyz) instead of failing silently or crash-looping: the
// server is reachable, accepts the credentials, serves every resource the component uses (a
// missing CRD is named, with how to install it), and lets it list them.

#include <signal.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "client/client.h"

namespace muster::cmd {

// OK, or the first thing that stops the component: Unavailable (unreachable), Unauthenticated
// (401: a bad or expired token), PermissionDenied (403, naming the verb and resource), NotFound
// (a group-version or resource not served: the CRD to install).
absl::Status CheckApi(client::Client& api, const std::vector<client::Resource>& resources);

// CheckApi until it passes (0) or one of `signals` comes (that signal). Each new reason is
// printed once as "COMMAND: not ready: REASON" and handed to `unready` (for /readyz); "" is handed
// to it once the check passes. Retries every `retry`.
int WaitForApi(client::Client& api, const std::vector<client::Resource>& resources,
               const sigset_t& signals, const std::string& command,
               const std::function<void(const std::string&)>& unready,
               std::chrono::milliseconds retry = std::chrono::seconds(5));

}  // namespace muster::cmd
