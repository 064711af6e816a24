#pragma once

// What every long-running subcommand needs from the process: stop signals taken in ordinary code,
// a connection to an API server named by a kubeconfig or, inside a pod, by its service account
// (as client-go's clientcmd.BuildConfigFromFlags falls back to rest.InClusterConfig), and the
// --reset of a data directory.

#include <signal.h>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/client.h"
#include "client/http_transport.h"

namespace muster::cmd {

// Blocks `signals` (SIGINT and SIGTERM unless told otherwise) in this thread and, by
// inheritance, every thread started after it, so that they are only taken by WaitForSignal. Also
// restores their default disposition (a shell starts background jobs with SIGINT ignored, and an
// ignored signal is discarded before sigwait could take it) and ignores SIGPIPE. Call before
// starting any thread.
sigset_t BlockSignals(std::initializer_list<int> signals = {SIGINT, SIGTERM});

// The next of the blocked signals; with a timeout, 0 when none came in time.
int WaitForSignal(const sigset_t& signals);
int WaitForSignal(const sigset_t& signals, std::chrono::milliseconds timeout);

// "SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT" or "signal N".
std::string SignalName(int signal);

// The API server a kubeconfig names, with a transport to it.
struct RemoteApi {
  std::string server;  // its URL
  std::string source;  // "kubeconfig FILE" or "in-cluster service account"
  client::HttpTransportConfig config;  // what the transport was made from
  std::shared_ptr<client::Transport> transport;
};

// Client-side rate limit of the transport Connect makes (HttpTransportConfig::qps, burst).
struct ClientLimits {
  double qps = 0;  // 0: unlimited
  int burst = 0;
};

// The kubeconfig of `flag`, else $KUBECONFIG; "" when neither is set.
std::string KubeconfigPath(const std::string& flag);

// Loads the kubeconfig at `path` (context "" for its current-context) and makes an HTTP(S)
// transport to its server. Errors say what is wrong with the file.
absl::StatusOr<RemoteApi> ConnectWithKubeconfig(const std::string& path,
                                                const std::string& context,
                                                const ClientLimits& limits = {});

// The API server to talk to: the kubeconfig of `kubeconfig_flag`, else of $KUBECONFIG, else the
// cluster this process runs in (client::InClusterConfig). When there is neither a kubeconfig nor
// a cluster, NotFound saying so ("no kubeconfig and not running in a cluster:
// KUBERNETES_SERVICE_HOST is not set; pass --kubeconfig FILE or set KUBECONFIG"), and when the
// kubeconfig does not exist; other errors name the file at fault.
absl::StatusOr<RemoteApi> Connect(const std::string& kubeconfig_flag, const std::string& context,
                                  const ClientLimits& limits = {});

// --reset of `muster up` and `muster apiserver`: removes what muster left in the data directory
// `dir` (the store with its -wal and -shm files, the kubeconfig and credentials, logs and pod
// working directories). Other files are left alone.
absl::Status ResetDataDir(const std::string& dir);

}  // namespace muster::cmd
