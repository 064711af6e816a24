// The one protobuf request body kubectl sends that muster accepts: `kubectl create namespace X`
// POSTs a v1.Namespace as application/vnd.kubernetes.protobuf and does not retry as JSON
// (kube-api.md §10). The envelope is "k8s\0" + runtime.Unknown{1 typeMeta{1 apiVersion,
// 2 kind}, 2 raw, 3 contentEncoding, 4 contentType}; raw is v1.Namespace{1 metadata, 2 spec
// {1 finalizers}, 3 status}; ObjectMeta: 1 name, 2 generateName, 11 labels, 12 annotations
// (map entries {1 key, 2 value}). Everything else in those messages is skipped.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "apiserver/handlers.h"
#include "boost/json/array.hpp"
#include "boost/json/object.hpp"

namespace muster::apiserver {

namespace json = boost::json;

namespace {

// A forward-only protobuf wire-format reader over one message's bytes.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}

  bool done() const { return pos_ >= data_.size(); }

  // The next field's number and wire type; false at the end or on malformed input.
  bool Next(uint32_t& field, uint32_t& wire) {
    uint64_t key;
    if (done() || !Varint(key)) return false;
    field = static_cast<uint32_t>(key >> 3);
    wire = static_cast<uint32_t>(key & 7);
    return field != 0;
  }

  bool Bytes(std::string_view& out) {
    uint64_t len;
    if (!Varint(len) || len > data_.size() - pos_) return false;
    out = data_.substr(pos_, len);
    pos_ += len;
    return true;
  }

  bool Skip(uint32_t wire) {
    uint64_t v;
    std::string_view s;
    switch (wire) {
      case 0:
        return Varint(v);
      case 1:
        return Advance(8);
      case 2:
        return Bytes(s);
      case 5:
        return Advance(4);
      default:
        return false;
    }
  }

 private:
  bool Varint(uint64_t& out) {
    out = 0;
    for (int shift = 0; shift < 64 && pos_ < data_.size(); shift += 7) {
      uint8_t b = static_cast<uint8_t>(data_[pos_++]);
      out |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  bool Advance(size_t n) {
    if (n > data_.size() - pos_) return false;
    pos_ += n;
    return true;
  }

  std::string_view data_;
  size_t pos_ = 0;
};

// Reads every length-delimited field of `msg` by number; other wire types are skipped.
template <class F>
bool ForEachBytesField(std::string_view msg, F&& on_field) {
  Reader r(msg);
  uint32_t field, wire;
  while (!r.done()) {
    if (!r.Next(field, wire)) return false;
    if (wire != 2) {
      if (!r.Skip(wire)) return false;
      continue;
    }
    std::string_view value;
    if (!r.Bytes(value)) return false;
    if (!on_field(field, value)) return false;
  }
  return true;
}

bool MapEntry(std::string_view entry, json::object& into) {
  std::string key, value;
  bool ok = ForEachBytesField(entry, [&](uint32_t f, std::string_view v) {
    if (f == 1) key = std::string(v);
    if (f == 2) value = std::string(v);
    return true;
  });
  if (ok) into[key] = value;
  return ok;
}

}  // namespace

std::optional<json::object> DecodeProtobufNamespace(std::string_view body) {
  static constexpr std::string_view kMagic("k8s\0", 4);
  if (body.substr(0, 4) != kMagic) return std::nullopt;
  std::string api_version, kind;
  std::string_view raw;
  bool ok = ForEachBytesField(body.substr(4), [&](uint32_t f, std::string_view v) {
    if (f == 1) {
      return ForEachBytesField(v, [&](uint32_t g, std::string_view w) {
        if (g == 1) api_version = std::string(w);
        if (g == 2) kind = std::string(w);
        return true;
      });
    }
    if (f == 2) raw = v;
    return true;
  });
  if (!ok || api_version != "v1" || kind != "Namespace") return std::nullopt;

  json::object meta, spec, status;
  ok = ForEachBytesField(raw, [&](uint32_t f, std::string_view v) {
    switch (f) {
      case 1:
        return ForEachBytesField(v, [&](uint32_t g, std::string_view w) {
          if (g == 1) meta["name"] = std::string(w);
          if (g == 2) meta["generateName"] = std::string(w);
          if (g == 11 || g == 12) {
            json::value& m = meta[g == 11 ? "labels" : "annotations"];
            if (!m.is_object()) m.emplace_object();
            return MapEntry(w, m.get_object());
          }
          return true;
        });
      case 2:
        return ForEachBytesField(v, [&](uint32_t g, std::string_view w) {
          if (g == 1) {
            json::value& list = spec["finalizers"];
            if (!list.is_array()) list.emplace_array();
            list.get_array().emplace_back(std::string(w));
          }
          return true;
        });
      case 3:
        return ForEachBytesField(v, [&](uint32_t g, std::string_view w) {
          if (g == 1 && !w.empty()) status["phase"] = std::string(w);
          return true;
        });
      default:
        return true;
    }
  });
  if (!ok) return std::nullopt;
  json::object ns;
  ns["apiVersion"] = "v1";
  ns["kind"] = "Namespace";
  ns["metadata"] = std::move(meta);
  if (!spec.empty()) ns["spec"] = std::move(spec);
  if (!status.empty()) ns["status"] = std::move(status);
  return ns;
}

}  // namespace muster::apiserver
