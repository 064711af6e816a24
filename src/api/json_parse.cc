#include "api/json_parse.h"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "boost/json/basic_parser_impl.hpp"
#include "boost/json/parse.hpp"
#include "fmt/format.h"

namespace muster::api {
namespace {

namespace json = boost::json;

bool HasNonFinite(const json::value& v) {
  switch (v.kind()) {
    case json::kind::double_:
      return !std::isfinite(v.get_double());
    case json::kind::array:
      for (const json::value& e : v.get_array()) {
        if (HasNonFinite(e)) return true;
      }
      return false;
    case json::kind::object:
      for (const auto& [key, e] : v.get_object()) {
        if (HasNonFinite(e)) return true;
      }
      return false;
    default:
      return false;
  }
}

// A basic_parser handler that stops at the first number beyond a double's range, keeping the
// number as written and its path ("spec.containers[0].x"; "" for the document itself).
class OutOfRangeFinder {
 public:
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code&) { return true; }
  bool on_array_begin(json::error_code&) { return Open(true); }
  bool on_array_end(std::size_t, json::error_code&) { return Close(); }
  bool on_object_begin(json::error_code&) { return Open(false); }
  bool on_object_end(std::size_t, json::error_code&) { return Close(); }
  bool on_string_part(json::string_view, std::size_t, json::error_code&) { return true; }
  bool on_string(json::string_view, std::size_t, json::error_code&) { return Scalar(); }
  bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
    key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(json::string_view s, std::size_t, json::error_code&) {
    key_.append(s.data(), s.size());
    frames_.back().key = std::move(key_);
    key_.clear();
    return true;
  }
  bool on_number_part(json::string_view s, json::error_code&) {
    number_.append(s.data(), s.size());
    return true;
  }
  bool on_int64(int64_t, json::string_view, json::error_code&) { return Scalar(); }
  bool on_uint64(uint64_t, json::string_view, json::error_code&) { return Scalar(); }
  bool on_double(double d, json::string_view s, json::error_code& ec) {
    if (std::isfinite(d)) return Scalar();
    Begin();
    number_.append(s.data(), s.size());
    path_ = Path();
    found_ = true;
    ec = json::error::exponent_overflow;  // stops the parser
    return false;
  }
  bool on_bool(bool, json::error_code&) { return Scalar(); }
  bool on_null(json::error_code&) { return Scalar(); }
  bool on_comment_part(json::string_view, json::error_code&) { return true; }
  bool on_comment(json::string_view, json::error_code&) { return true; }

  bool found() const { return found_; }
  const std::string& number() const { return number_; }
  const std::string& path() const { return path_; }

 private:
  struct Frame {
    bool array = false;
    std::size_t next = 0;  // arrays: the index of the next element
    std::string key;       // objects: the current member's key
  };

  // A value starts: in an array, it takes the next index.
  void Begin() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().next;
  }
  bool Scalar() {
    Begin();
    number_.clear();
    return true;
  }
  bool Open(bool array) {
    Begin();
    frames_.push_back(Frame{.array = array, .next = 0, .key = {}});
    return true;
  }
  bool Close() {
    frames_.pop_back();
    return true;
  }
  // The path of the value being parsed; each frame's current element is the one inside it.
  std::string Path() const {
    std::string path;
    for (const Frame& f : frames_) {
      if (f.array) {
        path += fmt::format("[{}]", f.next - 1);
      } else {
        if (!path.empty()) path += '.';
        path += f.key;
      }
    }
    return path;
  }

  std::vector<Frame> frames_;
  std::string key_;
  std::string number_;
  std::string path_;
  bool found_ = false;
};

}  // namespace

json::value ParseJsonText(std::string_view text, json::error_code& ec) {
  return json::parse(text, ec, {}, JsonParseOptions());
}

absl::StatusOr<json::value> ParseJson(std::string_view text) {
  json::error_code ec;
  json::value value = ParseJsonText(text, ec);
  if (ec) return absl::InvalidArgumentError(ec.message());
  if (!HasNonFinite(value)) return value;
  // Parse once more, only to say which number and where.
  json::basic_parser<OutOfRangeFinder> finder(JsonParseOptions());
  finder.write_some(false, text.data(), text.size(), ec);
  const OutOfRangeFinder& found = finder.handler();
  if (!found.found()) return absl::InvalidArgumentError("a number is out of range");
  // encoding/json's error for a number strconv.ParseFloat refuses (decodeState.convertNumber).
  // unverified: kube names the Go struct before the field ("ConfigMap.x"); we name the path.
  if (found.path().empty()) {
    return absl::InvalidArgumentError(fmt::format(
        "json: cannot unmarshal number {} into Go value of type float64", found.number()));
  }
  return absl::InvalidArgumentError(
      fmt::format("json: cannot unmarshal number {} into Go struct field {} of type float64",
                  found.number(), found.path()));
}

}  // namespace muster::api
