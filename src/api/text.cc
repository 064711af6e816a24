#include "api/text.h"

#include <cstdint>

#include "fmt/format.h"

namespace muster::api {

size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const unsigned char c = static_cast<unsigned char>(text[i]);
  size_t len = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (c < 0x80) {
    return 1;
  } else if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) low = 0xA0;   // overlong
    if (c == 0xED) high = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) low = 0x90;   // overlong
    if (c == 0xF4) high = 0x8F;  // past U+10FFFF
  }
  if (len == 0 || i + len > text.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const unsigned char b = static_cast<unsigned char>(text[i + k]);
    if (k == 1 ? (b < low || b > high) : (b & 0xC0) != 0x80) return 0;
  }
  return len;
}

std::string ToValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (size_t len = Utf8SequenceLength(text, i); len > 0) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    }
  }
  return out;
}

std::string GoQuote(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    size_t len = Utf8SequenceLength(text, i);
    if (len == 0) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
      continue;
    }
    if (len == 2 && c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[i + 1]));  // C1 control
    } else if (len > 1) {
      out.append(text.substr(i, len));
    } else {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\a':
          out += "\\a";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\v':
          out += "\\v";
          break;
        default:
          if (c < 0x20 || c == 0x7F) {
            out += fmt::format("\\x{:02x}", c);
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
    }
    i += len;
  }
  out += '"';
  return out;
}

absl::StatusOr<int64_t> ParseGoInt64(std::string_view text) {
  const auto error = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        fmt::format("strconv.ParseInt: parsing {}: {}", GoQuote(text), why));
  };
  std::string_view digits = text;
  const bool negative = !digits.empty() && digits.front() == '-';
  if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) digits.remove_prefix(1);
  if (digits.empty()) return error("invalid syntax");
  // As ParseUint reads it: a digit too many is out of range at once, before later characters.
  uint64_t magnitude = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return error("invalid syntax");
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (magnitude > (UINT64_MAX - d) / 10) return error("value out of range");
    magnitude = magnitude * 10 + d;
  }
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (magnitude > limit) return error("value out of range");
  if (negative) return static_cast<int64_t>(0 - magnitude);
  return static_cast<int64_t>(magnitude);
}

}  // namespace muster::api
