#include "cmd/process.h"

#include <pthread.h>

#include <cstdlib>
#include <ctime>

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

absl::StatusOr<RemoteApi> ConnectWithKubeconfig(const std::string& path,
                                                const std::string& context) {
  auto config = client::LoadKubeconfig(path, context);
  if (!config.ok()) return config.status();
  auto transport = client::MakeHttpTransport(*config);
  if (!transport.ok()) return transport.status();
  return RemoteApi{config->server, *transport};
}

}  // namespace muster::cmd
