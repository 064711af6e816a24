#include "apiserver/websocket.h"

#include <openssl/sha.h>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"

namespace muster::apiserver::websocket {

namespace {

constexpr std::string_view kHandshakeGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

bool IsControl(Opcode op) { return (static_cast<uint8_t>(op) & 0x8) != 0; }

bool KnownOpcode(uint8_t op) {
  return op == 0x0 || op == 0x1 || op == 0x2 || op == 0x8 || op == 0x9 || op == 0xA;
}

}  // namespace

std::string AcceptKey(std::string_view client_key) {
  std::string input(client_key);
  input += kHandshakeGuid;
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  return absl::Base64Escape(
      std::string(reinterpret_cast<const char*>(digest), sizeof(digest)));
}

std::string EncodeFrame(Opcode opcode, std::string_view payload) {
  std::string out;
  out.reserve(payload.size() + 10);
  out.push_back(static_cast<char>(0x80 | static_cast<uint8_t>(opcode)));
  const uint64_t n = payload.size();
  if (n < 126) {
    out.push_back(static_cast<char>(n));
  } else if (n <= 0xFFFF) {
    out.push_back(static_cast<char>(126));
    out.push_back(static_cast<char>(n >> 8));
    out.push_back(static_cast<char>(n & 0xFF));
  } else {
    out.push_back(static_cast<char>(127));
    for (int shift = 56; shift >= 0; shift -= 8) {
      out.push_back(static_cast<char>((n >> shift) & 0xFF));
    }
  }
  out.append(payload);
  return out;
}

std::string EncodeClose(uint16_t code, std::string_view reason) {
  std::string payload;
  payload.push_back(static_cast<char>(code >> 8));
  payload.push_back(static_cast<char>(code & 0xFF));
  payload.append(reason.substr(0, 123));
  return EncodeFrame(Opcode::kClose, payload);
}

absl::StatusOr<std::optional<Message>> Decoder::Next() {
  while (true) {
    const std::string_view in = std::string_view(buffer_).substr(offset_);
    if (in.size() < 2) return std::nullopt;
    const auto b0 = static_cast<uint8_t>(in[0]);
    const auto b1 = static_cast<uint8_t>(in[1]);
    const bool fin = (b0 & 0x80) != 0;
    if ((b0 & 0x70) != 0) return absl::InvalidArgumentError("reserved bits set");
    const uint8_t op_bits = b0 & 0x0F;
    if (!KnownOpcode(op_bits)) return absl::InvalidArgumentError("unknown opcode");
    const auto opcode = static_cast<Opcode>(op_bits);
    if ((b1 & 0x80) == 0) return absl::InvalidArgumentError("a client frame must be masked");
    uint64_t length = b1 & 0x7F;
    size_t at = 2;
    if (length == 126) {
      if (in.size() < 4) return std::nullopt;
      length = (uint64_t{static_cast<uint8_t>(in[2])} << 8) | static_cast<uint8_t>(in[3]);
      at = 4;
    } else if (length == 127) {
      if (in.size() < 10) return std::nullopt;
      length = 0;
      for (size_t i = 2; i < 10; ++i) length = (length << 8) | static_cast<uint8_t>(in[i]);
      at = 10;
    }
    if (IsControl(opcode) && (!fin || length > 125)) {
      return absl::InvalidArgumentError("a control frame must be whole and at most 125 bytes");
    }
    const size_t so_far = partial_ && !IsControl(opcode) ? partial_->payload.size() : 0;
    if (length > max_message_ || so_far + length > max_message_) {
      return absl::InvalidArgumentError("message too large");
    }
    if (in.size() < at + 4 + length) return std::nullopt;
    const std::string_view mask = in.substr(at, 4);
    std::string payload(in.substr(at + 4, length));
    for (size_t i = 0; i < payload.size(); ++i) payload[i] ^= mask[i % 4];
    offset_ += at + 4 + length;
    if (offset_ == buffer_.size() || offset_ > (size_t{1} << 16)) {
      buffer_.erase(0, offset_);
      offset_ = 0;
    }
    if (IsControl(opcode)) return Message{opcode, std::move(payload)};
    if (opcode == Opcode::kContinuation) {
      if (!partial_) return absl::InvalidArgumentError("continuation without a message");
      partial_->payload += payload;
    } else {
      if (partial_) return absl::InvalidArgumentError("a new message inside a fragmented one");
      partial_ = Message{opcode, std::move(payload)};
    }
    if (fin) {
      Message done = std::move(*partial_);
      partial_.reset();
      return done;
    }
  }
}

}  // namespace muster::apiserver::websocket
