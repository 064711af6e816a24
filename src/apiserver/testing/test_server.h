#pragma once

// An API server as the in-process tests of the layers above it start one (client, controller,
// node, scheduler): over a fresh data directory under /tmp, on loopback port 0. Header-only; a
// test links muster_apiserver already.

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "apiserver/apiserver.h"

namespace muster::apiserver::testing {

// A new directory "/tmp/muster-<name>-XXXXXX"; empty when it could not be made.
inline std::string MakeTempDir(std::string_view name) {
  std::string pattern = "/tmp/muster-" + std::string(name) + "-XXXXXX";
  return ::mkdtemp(pattern.data()) == nullptr ? std::string() : pattern;
}

// Starts a server over `data_dir` on 127.0.0.1:0 with two threads; the other fields of
// `options` are the caller's.
inline absl::StatusOr<std::unique_ptr<ApiServer>> StartTestServer(std::string data_dir,
                                                                  ApiServerOptions options = {}) {
  options.data_dir = std::move(data_dir);
  options.listen = "127.0.0.1:0";
  options.threads = 2;
  return ApiServer::Start(options);
}

// Stops `server` (when there is one) and removes `dir`: a fixture's TearDown, after whatever
// used the server has stopped.
inline void StopTestServer(std::unique_ptr<ApiServer>& server, const std::string& dir) {
  if (server) server->Stop();
  server.reset();
  if (!dir.empty()) std::filesystem::remove_all(dir);
}

}  // namespace muster::apiserver::testing
