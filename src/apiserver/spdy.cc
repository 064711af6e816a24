#include "apiserver/spdy.h"

#include <zlib.h>

#include <array>

#include "absl/status/status.h"

namespace muster::apiserver::spdy {

namespace {

constexpr uint16_t kVersion = 3;
enum : uint16_t {
  kSynStream = 1,
  kSynReply = 2,
  kRstStream = 3,
  kSettings = 4,
  kPing = 6,
  kGoAway = 7,
  kHeaders = 8,
  kWindowUpdate = 9,
};
// A frame's payload is at most 2^24 - 1 bytes; header blocks past this are refused.
constexpr size_t kMaxHeaderBlock = size_t{1} << 20;

uint32_t Read32(std::string_view s, size_t at) {
  return (uint32_t{static_cast<uint8_t>(s[at])} << 24) |
         (uint32_t{static_cast<uint8_t>(s[at + 1])} << 16) |
         (uint32_t{static_cast<uint8_t>(s[at + 2])} << 8) | static_cast<uint8_t>(s[at + 3]);
}

void Put32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((v >> shift) & 0xFF));
  }
}

std::string ControlFrame(uint16_t type, uint8_t flags, std::string_view payload) {
  std::string out;
  out.push_back(static_cast<char>(0x80 | (kVersion >> 8)));
  out.push_back(static_cast<char>(kVersion & 0xFF));
  out.push_back(static_cast<char>(type >> 8));
  out.push_back(static_cast<char>(type & 0xFF));
  Put32(out, (uint32_t{flags} << 24) | static_cast<uint32_t>(payload.size()));
  out.append(payload);
  return out;
}

std::string BuildDictionary() {
  // SPDY/3 (draft 3.1, section 2.6.10.1): these words, each after its length as 4 bytes, then
  // the text below as it is.
  static constexpr std::array<std::string_view, 64> kWords = {
      "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset",
      "accept-encoding", "accept-language", "accept-ranges", "age", "allow", "authorization",
      "cache-control", "connection", "content-base", "content-encoding", "content-language",
      "content-length", "content-location", "content-md5", "content-range", "content-type",
      "date", "etag", "expect", "expires", "from", "host", "if-match", "if-modified-since",
      "if-none-match", "if-range", "if-unmodified-since", "last-modified", "location",
      "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer",
      "retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent",
      "vary", "via", "warning", "www-authenticate", "method", "get", "status", "200 OK",
      "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive"};
  std::string out;
  for (std::string_view w : kWords) {
    Put32(out, static_cast<uint32_t>(w.size()));
    out.append(w);
  }
  Put32(out, 6);
  out.append("origin");
  out.append(
      "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
      "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request"
      "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented"
      "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 "
      "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
      "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
      "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.");
  return out;
}

std::string EncodeHeaderBlock(const Headers& headers) {
  std::string raw;
  Put32(raw, static_cast<uint32_t>(headers.size()));
  for (const auto& [name, value] : headers) {
    Put32(raw, static_cast<uint32_t>(name.size()));
    raw.append(name);
    Put32(raw, static_cast<uint32_t>(value.size()));
    raw.append(value);
  }
  return raw;
}

absl::StatusOr<Headers> DecodeHeaderBlock(std::string_view raw) {
  auto bad = [] { return absl::InvalidArgumentError("malformed SPDY header block"); };
  if (raw.size() < 4) return bad();
  const uint32_t count = Read32(raw, 0);
  size_t at = 4;
  Headers out;
  for (uint32_t i = 0; i < count; ++i) {
    std::string parts[2];
    for (std::string& part : parts) {
      if (raw.size() - at < 4) return bad();
      const uint32_t n = Read32(raw, at);
      at += 4;
      if (raw.size() - at < n) return bad();
      part = std::string(raw.substr(at, n));
      at += n;
    }
    out.emplace_back(std::move(parts[0]), std::move(parts[1]));
  }
  return out;
}

}  // namespace

struct Codec::Zlib {
  z_stream z{};
  bool deflating = false;
  ~Zlib() {
    if (deflating) {
      deflateEnd(&z);
    } else {
      inflateEnd(&z);
    }
  }
};

std::string Frame::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n == name) return v.substr(0, v.find('\0'));
  }
  return "";
}

const std::string& HeaderDictionary() {
  static const std::string* const kDictionary = new std::string(BuildDictionary());
  return *kDictionary;
}

Codec::Codec() : in_(new Zlib), out_(new Zlib), test_out_(new Zlib) {
  inflateInit(&in_->z);
  const std::string& dict = HeaderDictionary();
  for (Zlib* z : {out_.get(), test_out_.get()}) {
    z->deflating = true;
    deflateInit(&z->z, Z_DEFAULT_COMPRESSION);
    deflateSetDictionary(&z->z, reinterpret_cast<const Bytef*>(dict.data()),
                         static_cast<uInt>(dict.size()));
  }
}

Codec::~Codec() = default;

absl::StatusOr<Headers> Codec::Inflate(std::string_view block) {
  z_stream& z = in_->z;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(block.data()));
  z.avail_in = static_cast<uInt>(block.size());
  std::string raw;
  char chunk[4096];
  while (z.avail_in > 0) {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof(chunk);
    int r = inflate(&z, Z_SYNC_FLUSH);
    if (r == Z_NEED_DICT) {
      const std::string& dict = HeaderDictionary();
      r = inflateSetDictionary(&z, reinterpret_cast<const Bytef*>(dict.data()),
                               static_cast<uInt>(dict.size()));
      if (r != Z_OK) return absl::InvalidArgumentError("SPDY header block: wrong dictionary");
      continue;
    }
    if (r != Z_OK && r != Z_BUF_ERROR) {
      return absl::InvalidArgumentError("SPDY header block does not decompress");
    }
    raw.append(chunk, sizeof(chunk) - z.avail_out);
    if (raw.size() > kMaxHeaderBlock) return absl::InvalidArgumentError("SPDY headers too large");
    if (r == Z_BUF_ERROR && z.avail_out != 0) break;  // no progress possible
  }
  return DecodeHeaderBlock(raw);
}

std::string Codec::Deflate(const Headers& headers, Zlib& zlib) {
  std::string raw = EncodeHeaderBlock(headers);
  z_stream& z = zlib.z;
  z.next_in = reinterpret_cast<Bytef*>(raw.data());
  z.avail_in = static_cast<uInt>(raw.size());
  std::string out;
  char chunk[4096];
  do {
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof(chunk);
    deflate(&z, Z_SYNC_FLUSH);
    out.append(chunk, sizeof(chunk) - z.avail_out);
  } while (z.avail_out == 0);
  return out;
}

std::string Codec::Deflate(const Headers& headers) { return Deflate(headers, *out_); }

absl::StatusOr<std::optional<Frame>> Codec::Next() {
  if (buffer_.size() < 8) return std::nullopt;
  const std::string head = buffer_.substr(0, 8);
  const uint32_t length = Read32(head, 4) & 0xFFFFFF;
  if (buffer_.size() < 8 + size_t{length}) return std::nullopt;
  const std::string payload = buffer_.substr(8, length);
  buffer_.erase(0, 8 + size_t{length});
  Frame f;
  f.flags = static_cast<uint8_t>(head[4]);
  if ((static_cast<uint8_t>(head[0]) & 0x80) == 0) {
    f.type = Frame::Type::kData;
    f.stream_id = Read32(head, 0) & 0x7FFFFFFF;
    f.data = payload;
    return f;
  }
  const uint16_t version = static_cast<uint16_t>(((static_cast<uint8_t>(head[0]) & 0x7F) << 8) |
                                                 static_cast<uint8_t>(head[1]));
  if (version != kVersion) return absl::InvalidArgumentError("not SPDY/3");
  const uint16_t type = static_cast<uint16_t>((static_cast<uint8_t>(head[2]) << 8) |
                                              static_cast<uint8_t>(head[3]));
  auto need = [&](size_t n) -> absl::Status {
    if (payload.size() < n) return absl::InvalidArgumentError("short SPDY control frame");
    return absl::OkStatus();
  };
  auto headers_from = [&](size_t at) -> absl::Status {
    absl::StatusOr<Headers> h = Inflate(std::string_view(payload).substr(at));
    if (!h.ok()) return h.status();
    f.headers = *std::move(h);
    return absl::OkStatus();
  };
  switch (type) {
    case kSynStream:
      if (absl::Status s = need(10); !s.ok()) return s;
      f.type = Frame::Type::kSynStream;
      f.stream_id = Read32(payload, 0) & 0x7FFFFFFF;
      if (absl::Status s = headers_from(10); !s.ok()) return s;
      return f;
    case kSynReply:
    case kHeaders:
      if (absl::Status s = need(4); !s.ok()) return s;
      f.type = type == kSynReply ? Frame::Type::kSynReply : Frame::Type::kHeaders;
      f.stream_id = Read32(payload, 0) & 0x7FFFFFFF;
      if (absl::Status s = headers_from(4); !s.ok()) return s;
      return f;
    case kRstStream:
      if (absl::Status s = need(8); !s.ok()) return s;
      f.type = Frame::Type::kRstStream;
      f.stream_id = Read32(payload, 0) & 0x7FFFFFFF;
      f.status = Read32(payload, 4);
      return f;
    case kPing:
      if (absl::Status s = need(4); !s.ok()) return s;
      f.type = Frame::Type::kPing;
      f.id = Read32(payload, 0);
      return f;
    case kGoAway:
      if (absl::Status s = need(4); !s.ok()) return s;
      f.type = Frame::Type::kGoAway;
      f.stream_id = Read32(payload, 0) & 0x7FFFFFFF;
      if (payload.size() >= 8) f.status = Read32(payload, 4);
      return f;
    case kSettings:
      f.type = Frame::Type::kSettings;
      return f;
    case kWindowUpdate:
      f.type = Frame::Type::kWindowUpdate;
      return f;
    default:
      return f;  // kOther: ignored, as SPDY/3 asks of unknown control frames
  }
}

std::string Codec::SynReply(uint32_t stream_id, const Headers& headers, bool fin) {
  std::string payload;
  Put32(payload, stream_id & 0x7FFFFFFF);
  payload += Deflate(headers);
  return ControlFrame(kSynReply, fin ? kFlagFin : 0, payload);
}

std::string Codec::Data(uint32_t stream_id, std::string_view data, bool fin) {
  std::string out;
  Put32(out, stream_id & 0x7FFFFFFF);
  Put32(out, (uint32_t{fin ? kFlagFin : uint8_t{0}} << 24) | static_cast<uint32_t>(data.size()));
  out.append(data);
  return out;
}

std::string Codec::RstStream(uint32_t stream_id, uint32_t status) {
  std::string payload;
  Put32(payload, stream_id & 0x7FFFFFFF);
  Put32(payload, status);
  return ControlFrame(kRstStream, 0, payload);
}

std::string Codec::Ping(uint32_t id) {
  std::string payload;
  Put32(payload, id);
  return ControlFrame(kPing, 0, payload);
}

std::string Codec::GoAway(uint32_t last_good_stream_id) {
  std::string payload;
  Put32(payload, last_good_stream_id & 0x7FFFFFFF);
  Put32(payload, 0);  // OK
  return ControlFrame(kGoAway, 0, payload);
}

std::string Codec::SynStreamForTest(uint32_t stream_id, const Headers& headers, bool fin) {
  std::string payload;
  Put32(payload, stream_id & 0x7FFFFFFF);
  Put32(payload, 0);
  payload.push_back(0);
  payload.push_back(0);
  payload += Deflate(headers, *test_out_);
  return ControlFrame(kSynStream, fin ? kFlagFin : 0, payload);
}

}  // namespace muster::apiserver::spdy
