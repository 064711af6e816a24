#pragma once

// A connection the handlers switch to a streaming protocol (HttpResponse::upgrade): the
// subresources pods/exec and pods/attach (WebSocket, v5.channel.k8s.io or v4.channel.k8s.io) and
// pods/portforward (SPDY/3.1, tunnelled in WebSocket or over the upgraded connection itself).
// The handlers (pod_streams.cc) decide and prepare everything that can fail with a Status; the
// connection code (server_upgrade.cc) writes `head` (the 101 answer) and then carries the
// streams: between the client and the session's descriptors, or between the client and TCP
// connections to the pod's address.

#include <memory>
#include <string>
#include <vector>

#include "common/pod_streams.h"

namespace muster::apiserver {

struct Upgrade {
  enum class Kind {
    kRemoteCommand,       // exec or attach over WebSocket channels
    kPortForwardTunnel,   // SPDY in WebSocket binary messages
    kPortForwardSpdy,     // SPDY over the connection itself
  };
  Kind kind = Kind::kRemoteCommand;
  std::string head;  // the whole 101 response, headers and the blank line

  // kRemoteCommand.
  std::unique_ptr<common::PodStreamSession> session;
  bool v5 = true;                    // the CLOSE channel exists
  bool exec = true;                  // false: attach (its end is the container's output end)
  std::vector<std::string> command;  // for the exit Status's message
  // Without a session: why the command could not start, said on the error channel at once (as
  // the kubelet says a failed exec, after the upgrade).
  std::string failure;

  // Port forwarding: the pod's address at request time (status.podIP), and its name and uid
  // for error messages as the kubelet words them.
  std::string pod_ip;
  std::string pod_name;
  std::string pod_uid;
};

}  // namespace muster::apiserver
