#pragma once

// How the API server reaches the containers the node agents of its own process run, for
// `kubectl exec`, `attach`, `cp` and `port-forward` (pods/exec, pods/attach, pods/portforward).
// The interface lives here, below both, because the API server may not depend on the node layer:
// the node agent implements it (node/agent.h) and `muster up` hands it to the API server
// (apiserver::Handlers::SetPodStreams). The streams are plain descriptors, so that the API server
// carries them over its own connections without a thread per stream.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace muster::common {

// One exec or attach: which container, and which of its streams the client wants.
struct PodStreamRequest {
  std::string ns;
  std::string pod;
  std::string uid;        // the pod the API server looked up; another pod of the name is refused
  std::string container;  // chosen by the API server (never empty)
  std::vector<std::string> command;  // exec only
  bool use_stdin = false;
  bool use_stdout = false;
  bool use_stderr = false;
  bool tty = false;  // exec: a pseudo-terminal carries stdin and stdout (stderr joins stdout)
};

// The process side of an exec or attach. The descriptors are the caller's to close; each is -1
// where the stream was not asked for (or, for attach, where the container has no such stream).
// Destroying it ends the session: an exec'd command still running is killed (SIGKILL to its
// process group), an attach detaches. Thread-safety: every method may be called from any thread.
class PodStreamSession {
 public:
  virtual ~PodStreamSession() = default;

  int stdin_fd = -1;   // write end; closing it is the command's end of input
  int stdout_fd = -1;  // read end; with a tty, the terminal (also the command's stderr)
  int stderr_fd = -1;  // read end

  // A terminal's new size (TIOCSWINSZ); ignored without a tty.
  virtual void Resize(uint16_t width, uint16_t height) = 0;
  // The client closed its stdin (the caller closes stdin_fd itself). An attach to a container
  // with `stdinOnce` closes the container's stdin then.
  virtual void StdinClosed() {}
  // Calls `done` once, from any thread (at once when already known), with the command's exit
  // code (128 + N when signal N killed it) once it has ended. An attach reports 0 at once: it
  // ends when the container's output ends.
  virtual void OnExit(std::function<void(int exit_code)> done) = 0;
};

class PodStreams {
 public:
  virtual ~PodStreams() = default;

  // Errors carry the message the client is to see: NotFound (the pod is not run by these
  // nodes), FailedPrecondition (the container is not running, or runs on a simulated node),
  // InvalidArgument (the command cannot run: no such executable), Unavailable (the nodes are
  // stopping), Internal.
  virtual absl::StatusOr<std::unique_ptr<PodStreamSession>> Exec(
      const PodStreamRequest& request) = 0;
  virtual absl::StatusOr<std::unique_ptr<PodStreamSession>> Attach(
      const PodStreamRequest& request) = 0;
  // Whether Exec or Attach of `request` could start now; with no container, whether the pod's
  // ports can be reached on this machine (a process pod these nodes run: the caller then
  // connects to its status.podIP itself). The same errors as Exec.
  virtual absl::Status Check(const PodStreamRequest& request) = 0;
};

}  // namespace muster::common
