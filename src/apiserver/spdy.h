#pragma once

// The server's side of SPDY/3.1 framing, the subset kubectl's port-forward speaks (client-go's
// portforward over github.com/moby/spdystream): SYN_STREAM, SYN_REPLY, DATA, RST_STREAM, PING,
// GOAWAY read and written; SETTINGS, HEADERS and WINDOW_UPDATE read and left alone (spdystream
// keeps no flow-control windows, so none is kept here). Header blocks are compressed as SPDY/3
// says: one zlib stream per direction for the whole connection, primed with the protocol's
// dictionary. No I/O: the connection code feeds the bytes (a raw upgraded connection, or the
// binary messages of a WebSocket tunnel) and writes what it encodes.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace muster::apiserver::spdy {

// Header names as sent (lower case in SPDY/3), values with their NULs between multiple values.
using Headers = std::vector<std::pair<std::string, std::string>>;

inline constexpr uint8_t kFlagFin = 0x01;
// RST_STREAM status codes used here.
inline constexpr uint32_t kProtocolError = 1;
inline constexpr uint32_t kCancel = 5;

struct Frame {
  enum class Type { kData, kSynStream, kSynReply, kRstStream, kSettings, kPing, kGoAway,
                    kHeaders, kWindowUpdate, kOther };
  Type type = Type::kOther;
  uint32_t stream_id = 0;  // data and stream frames
  uint8_t flags = 0;
  std::string data;   // a DATA frame's payload
  Headers headers;    // SYN_STREAM, SYN_REPLY, HEADERS
  uint32_t id = 0;    // PING
  uint32_t status = 0;  // RST_STREAM, GOAWAY

  [[nodiscard]] bool fin() const { return (flags & kFlagFin) != 0; }
  // The first value of header `name`; "" when absent.
  [[nodiscard]] std::string Header(std::string_view name) const;
};

// The SPDY/3 header compression dictionary (1423 bytes).
const std::string& HeaderDictionary();

// One connection's framing, both directions. Not thread-safe.
class Codec {
 public:
  Codec();
  ~Codec();
  Codec(const Codec&) = delete;
  Codec& operator=(const Codec&) = delete;

  void Feed(std::string_view bytes) { buffer_.append(bytes); }
  // The next whole frame; nullopt when more bytes are needed. An error for a frame that is not
  // SPDY/3 or whose header block does not decompress: the connection must then be closed.
  absl::StatusOr<std::optional<Frame>> Next();

  std::string SynReply(uint32_t stream_id, const Headers& headers, bool fin);
  std::string Data(uint32_t stream_id, std::string_view data, bool fin);
  std::string RstStream(uint32_t stream_id, uint32_t status);
  std::string Ping(uint32_t id);
  std::string GoAway(uint32_t last_good_stream_id);

  // For tests: a header block compressed as a client would send it (this codec's own sending
  // zlib stream is separate from the one that decompresses).
  std::string SynStreamForTest(uint32_t stream_id, const Headers& headers, bool fin);

 private:
  struct Zlib;
  absl::StatusOr<Headers> Inflate(std::string_view block);
  std::string Deflate(const Headers& headers);
  std::string Deflate(const Headers& headers, Zlib& z);

  std::string buffer_;
  std::unique_ptr<Zlib> in_, out_, test_out_;
};

}  // namespace muster::apiserver::spdy
