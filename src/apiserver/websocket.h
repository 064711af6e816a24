#pragma once

// The server's side of RFC 6455 WebSocket, as much as the streaming subresources need
// (pods/exec, pods/attach, pods/portforward): the handshake's accept key, frames written
// unmasked, and a decoder for what a client sends (masked frames, fragmented messages, control
// frames between fragments). No extensions (kubectl asks for none). Beast-free and without I/O:
// the connection code (server_upgrade.cc) feeds it bytes and writes what it encodes.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace muster::apiserver::websocket {

enum class Opcode : uint8_t {
  kContinuation = 0x0,
  kText = 0x1,
  kBinary = 0x2,
  kClose = 0x8,
  kPing = 0x9,
  kPong = 0xA,
};

// Sec-WebSocket-Accept for a client's Sec-WebSocket-Key: base64(SHA-1(key + RFC 6455's GUID)).
std::string AcceptKey(std::string_view client_key);

// One whole frame from the server (FIN set, unmasked).
std::string EncodeFrame(Opcode opcode, std::string_view payload);
// A close frame with a status code (1000 normal closure) and reason.
std::string EncodeClose(uint16_t code, std::string_view reason);

// A complete message (the fragments of a data message joined) or a control frame.
struct Message {
  Opcode opcode = Opcode::kBinary;
  std::string payload;
};

// Reads a client's frames from the bytes as they come. Not thread-safe.
class Decoder {
 public:
  // A message (or control frame) over `max_message` bytes is a protocol error.
  explicit Decoder(size_t max_message) : max_message_(max_message) {}

  void Feed(std::string_view bytes) { buffer_.append(bytes); }
  // The next message, nullopt when more bytes are needed. An error (the connection must then be
  // closed) for what RFC 6455 forbids of a client: an unmasked frame, a reserved bit or opcode,
  // a fragmented or oversized control frame, a continuation without a start, a data frame inside
  // a fragmented message, a message over the limit.
  absl::StatusOr<std::optional<Message>> Next();

 private:
  size_t max_message_;
  std::string buffer_;
  size_t offset_ = 0;  // bytes of buffer_ already taken
  std::optional<Message> partial_;  // a fragmented data message so far
};

}  // namespace muster::apiserver::websocket
