#pragma once

// The streaming subresources' protocols, apart from any connection (k8s.io/apimachinery
// pkg/util/remotecommand and pkg/util/portforward, client-go tools/remotecommand/websocket.go
// and tools/portforward): which WebSocket subprotocol a request gets, what the channels of
// `v4.channel.k8s.io` and `v5.channel.k8s.io` carry, and the Status that ends an exec.
//
// Over WebSocket every binary message is one channel's: its first byte is the channel, the rest
// the data. 0 stdin (client to server), 1 stdout, 2 stderr, 3 error (the Status, once, at the
// end), 4 resize (JSON {"Width":W,"Height":H}); v5 adds 255 close, whose one data byte names a
// channel the sender is done with (kubectl's end of stdin). The server closes the connection
// after the error channel's Status, and the client takes its streams' ends from that.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace muster::apiserver::remote_command {

inline constexpr std::string_view kProtocolV4 = "v4.channel.k8s.io";
inline constexpr std::string_view kProtocolV5 = "v5.channel.k8s.io";
// kubectl port-forward's SPDY/3.1 tunnelled in WebSocket binary messages (client-go
// tools/portforward tunneling_dialer.go), and the SPDY stream protocol of the direct upgrade.
inline constexpr std::string_view kPortForwardTunnel = "SPDY/3.1+portforward.k8s.io";
inline constexpr std::string_view kPortForwardProtocol = "portforward.k8s.io";

enum Channel : uint8_t {
  kStdin = 0,
  kStdout = 1,
  kStderr = 2,
  kError = 3,
  kResize = 4,
  kClose = 255,
};

// The subprotocol to answer from a Sec-WebSocket-Protocol list (comma-separated, in the
// client's order of preference; several header fields joined with commas): the client's first
// that `supported` lists; "" when none is.
std::string ChooseProtocol(std::string_view offered,
                           const std::vector<std::string_view>& supported);

// One channel message: the channel byte, then the data.
std::string ChannelMessage(uint8_t channel, std::string_view data);

// The error channel's Status when an exec has ended: Success for 0, else kube's
// NonZeroExitCode Failure with an ExitCode cause, which kubectl turns into "command terminated
// with exit code N" and its own exit status N.
std::string ExitStatus(int exit_code, const std::vector<std::string>& command);
// The error channel's Status for a session that could not go on (message as the client shows
// it).
std::string FailureStatus(std::string_view message);

struct TerminalSize {
  uint16_t width = 0;
  uint16_t height = 0;
};
// A resize message's data; nullopt for anything but a JSON object with numeric Width and Height
// (kube's TerminalSize), which the session then ignores.
std::optional<TerminalSize> ParseResize(std::string_view json);

}  // namespace muster::apiserver::remote_command
