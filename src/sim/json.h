#pragma once

// A small streaming JSON writer for the simulator's reports (compact, keys in call order) and a
// CSV field quoter. Non-finite numbers are written as null.

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fmt/format.h"

namespace muster::sim {

class JsonWriter {
 public:
  void BeginObject(std::string_view key = {}) { Open(key, '{'); }
  void BeginArray(std::string_view key = {}) { Open(key, '['); }
  void End() {
    out_ += stack_.back() == '{' ? '}' : ']';
    stack_.pop_back();
    first_ = false;
  }
  void String(std::string_view key, std::string_view value) {
    Key(key);
    Quote(value);
  }
  void Int(std::string_view key, int64_t value) {
    Key(key);
    out_ += std::to_string(value);
  }
  void Bool(std::string_view key, bool value) {
    Key(key);
    out_ += value ? "true" : "false";
  }
  // A number with `digits` decimals (trailing zeros kept off), or null when not finite.
  void Number(std::string_view key, double value, int digits) {
    Key(key);
    Num(value, digits);
  }
  void Number(double value, int digits) {
    Key({});
    Num(value, digits);
  }
  void Int(int64_t value) {
    Key({});
    out_ += std::to_string(value);
  }
  void String(std::string_view value) {
    Key({});
    Quote(value);
  }
  const std::string& str() const { return out_; }

 private:
  void Open(std::string_view key, char c) {
    Key(key);
    out_ += c;
    stack_.push_back(c);
    first_ = true;
  }
  void Key(std::string_view key) {
    if (!first_) out_ += ',';
    first_ = false;
    if (!key.empty()) {
      Quote(key);
      out_ += ':';
    }
  }
  void Num(double v, int digits) {
    if (!std::isfinite(v)) {
      out_ += "null";
      return;
    }
    std::string s = fmt::format("{:.{}f}", v, digits);
    if (s.find('.') != std::string::npos) {
      while (s.back() == '0') s.pop_back();
      if (s.back() == '.') s.pop_back();
    }
    if (s == "-0") s = "0";
    out_ += s;
  }
  void Quote(std::string_view s) {
    out_ += '"';
    for (char c : s) {
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\r': out_ += "\\r"; break;
        case '\t': out_ += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            out_ += fmt::format("\\u{:04x}", static_cast<int>(c));
          } else {
            out_ += c;
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<char> stack_;
  bool first_ = true;
};

// A CSV field, quoted when it holds a comma, a quote or a line break.
inline std::string CsvField(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace muster::sim
