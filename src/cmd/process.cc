// Signals and API server connections for the long-running subcommands (process.h).

#include "cmd/process.h"

#include <pthread.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <system_error>

#include "client/http_transport.h"
#include "fmt/format.h"

namespace muster::cmd {

sigset_t BlockSignals(std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals) {
    signal(s, SIG_DFL);
    sigaddset(&set, s);
  }
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return set;
}

int WaitForSignal(const sigset_t& signals) {
  int received = 0;
  sigwait(&signals, &received);
  return received;
}

int WaitForSignal(const sigset_t& signals, std::chrono::milliseconds timeout) {
  timespec wait{static_cast<time_t>(timeout.count() / 1000),
                static_cast<long>((timeout.count() % 1000) * 1000000)};
  int received = sigtimedwait(&signals, nullptr, &wait);
  return received > 0 ? received : 0;
}

std::string SignalName(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
    default:
      return fmt::format("signal {}", signal);
  }
}

std::string KubeconfigPath(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("KUBECONFIG");
  return env != nullptr ? env : "";
}

namespace {

absl::StatusOr<RemoteApi> ConnectWith(client::HttpTransportConfig config, std::string source,
                                      const ClientLimits& limits) {
  config.qps = limits.qps;
  config.burst = limits.burst;
  auto transport = client::MakeHttpTransport(config);
  if (!transport.ok()) {
    return absl::Status(transport.status().code(),
                        fmt::format("{}: {}", source, std::string(transport.status().message())));
  }
  std::string server = config.server;
  return RemoteApi{std::move(server), std::move(source), std::move(config), *transport};
}

}  // namespace

absl::StatusOr<RemoteApi> ConnectWithKubeconfig(const std::string& path,
                                                const std::string& context,
                                                const ClientLimits& limits) {
  auto config = client::LoadKubeconfig(path, context);
  if (!config.ok()) return config.status();
  return ConnectWith(std::move(*config), "kubeconfig " + path, limits);
}

absl::StatusOr<RemoteApi> Connect(const std::string& kubeconfig_flag, const std::string& context,
                                  const ClientLimits& limits) {
  if (std::string path = KubeconfigPath(kubeconfig_flag); !path.empty()) {
    return ConnectWithKubeconfig(path, context, limits);
  }
  auto config = client::InClusterConfig();
  if (absl::IsNotFound(config.status())) {
    return absl::NotFoundError(
        fmt::format("no kubeconfig and {}; pass --kubeconfig FILE or set KUBECONFIG",
                    std::string(config.status().message())));
  }
  if (!config.ok()) {
    return absl::Status(config.status().code(),
                        fmt::format("in-cluster configuration: {}",
                                    std::string(config.status().message())));
  }
  return ConnectWith(std::move(*config), "in-cluster service account", limits);
}

absl::Status ResetDataDir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const char* name : {"store.db", "store.db-wal", "store.db-shm", "kubeconfig", "token",
                           "ca.crt", "ca.key", "server.crt", "server.key", "logs", "pods"}) {
    fs::remove_all(fs::path(dir) / name, ec);
    if (ec) {
      return absl::FailedPreconditionError(fmt::format(
          "--reset: cannot remove {}: {}", (fs::path(dir) / name).string(), ec.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace muster::cmd
