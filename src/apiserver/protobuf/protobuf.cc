// Kubernetes' protobuf bodies as JSON, against the schemas kube_schemas.cmake embeds (protobuf.h).
//
// The bytes are parsed by protobuf's own parser (DynamicMessage), which bounds recursion and
// checks every length; it says only that a parse failed, so on failure a walk over the same
// bytes (Diagnose) finds what and where. The parser keeps a field whose wire type is not its
// declared one as an unknown field, where gogo's decoder refuses it ("proto: wrong wireType"):
// such fields are refused here too. Fields of numbers the schema lacks are skipped, as gogo does.
//
// The schemas and how they are loaded are protobuf_schemas.h.

#include "apiserver/protobuf/protobuf.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "api/json_parse.h"
#include "api/text.h"
#include "api/time.h"
#include "apiserver/protobuf/protobuf_schemas.h"
#include "boost/json/array.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"
#include "common/go_duration.h"
#include "fmt/format.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/dynamic_message.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/message.h"
#include "google/protobuf/unknown_field_set.h"

namespace muster::apiserver {

namespace json = boost::json;
namespace pb = google::protobuf;

namespace {

using protobuf_schemas::GetSchemas;
using protobuf_schemas::KindMessage;
using protobuf_schemas::Schemas;
using protobuf_schemas::Shape;

constexpr std::string_view kMagic("k8s\0", 4);
// Boost.JSON's default max_depth: the deepest JSON muster parses, so the deepest object it can
// store and read back.
constexpr int kMaxDepth = 32;

// Go's zero time.Time, which a Time or MicroTime of these seconds (and no nanoseconds) is, and
// the range of years Time.MarshalJSON writes ([0, 9999]).
constexpr int64_t kGoZeroTimeUnix = -62135596800;
constexpr int64_t kYear0Unix = -62167219200;
constexpr int64_t kYear10000Unix = 253402300800;

// The wire format, read forward, for Diagnose.
class WireReader {
 public:
  explicit WireReader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }
  size_t pos() const { return pos_; }
  size_t left() const { return data_.size() - pos_; }
  bool Varint(uint64_t& out) {
    out = 0;
    for (int shift = 0; shift < 64 && pos_ < data_.size(); shift += 7) {
      const auto b = static_cast<uint8_t>(data_[pos_++]);
      out |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }
  bool Skip(size_t n) {
    if (n > left()) return false;
    pos_ += n;
    return true;
  }
  std::string_view Take(size_t n) {
    std::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// What is wrong with the fields `r` reads as a `d` message (`d` null: fields of no known type) at
// nesting level `depth`, for the error of a failed parse: "<path>: <what>". Inside a group
// (`group`, its field number) the walk stops after the group's end tag. Empty when it finds
// nothing wrong.
std::string Diagnose(WireReader& r, const pb::Descriptor* d, int depth, const std::string& path,
                     std::optional<uint64_t> group = std::nullopt) {
  while (!r.done()) {
    const size_t at = r.pos();
    uint64_t key;
    if (!r.Varint(key)) {
      return fmt::format("{}: truncated or overlong field key at byte {}", path, at);
    }
    const uint64_t number = key >> 3;
    const auto wire = static_cast<uint32_t>(key & 7);
    if (number == 0 || number > 536870911) {
      return fmt::format("{}: invalid field number {} at byte {}", path, number, at);
    }
    const pb::FieldDescriptor* f =
        d == nullptr ? nullptr : d->FindFieldByNumber(static_cast<int>(number));
    const std::string where = f != nullptr ? fmt::format("{}.{}", path, f->name())
                                           : fmt::format("{} field {}", path, number);
    uint64_t value;
    switch (wire) {
      case 0:
        if (!r.Varint(value)) return fmt::format("{}: truncated varint at byte {}", where, at);
        break;
      case 1:
        if (!r.Skip(8)) return fmt::format("{}: truncated 64-bit value at byte {}", where, at);
        break;
      case 5:
        if (!r.Skip(4)) return fmt::format("{}: truncated 32-bit value at byte {}", where, at);
        break;
      case 2: {
        uint64_t length;
        if (!r.Varint(length)) return fmt::format("{}: truncated length at byte {}", where, at);
        if (length > r.left()) {
          return fmt::format("{}: length {} at byte {} runs past the end ({} bytes left)", where,
                             length, at, r.left());
        }
        WireReader sub(r.Take(length));
        if (f == nullptr) break;
        if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
          if (depth + 1 > kMaxDepth) {
            return fmt::format("{}: nested deeper than {} levels", where, kMaxDepth);
          }
          std::string nested = Diagnose(sub, f->message_type(), depth + 1, where);
          if (!nested.empty()) return nested;
        } else if (f->is_packable()) {
          // A packed run of numbers: varints, or 4 or 8 bytes each.
          int fixed = 0;
          switch (f->type()) {
            case pb::FieldDescriptor::TYPE_FIXED64:
            case pb::FieldDescriptor::TYPE_SFIXED64:
            case pb::FieldDescriptor::TYPE_DOUBLE:
              fixed = 8;
              break;
            case pb::FieldDescriptor::TYPE_FIXED32:
            case pb::FieldDescriptor::TYPE_SFIXED32:
            case pb::FieldDescriptor::TYPE_FLOAT:
              fixed = 4;
              break;
            default:
              break;
          }
          if (fixed != 0 && length % fixed != 0) {
            return fmt::format("{}: packed values of {} bytes each in {} bytes", where, fixed,
                               length);
          }
          while (fixed == 0 && !sub.done()) {
            if (!sub.Varint(value)) {
              return fmt::format("{}: truncated packed varint in the field at byte {}", where, at);
            }
          }
        }
        break;
      }
      case 3: {
        if (depth + 1 > kMaxDepth) {
          return fmt::format("{}: groups nested deeper than {} levels", where, kMaxDepth);
        }
        std::string nested = Diagnose(r, nullptr, depth + 1, where, number);
        if (!nested.empty()) return nested;
        break;
      }
      case 4:
        if (group && *group == number) return "";
        return fmt::format("{}: end-group tag without its group at byte {}", where, at);
      default:
        return fmt::format("{}: invalid wire type {} at byte {}", where, wire, at);
    }
  }
  if (group) return fmt::format("{}: group without its end tag", path);
  return "";
}

// Writes one object's JSON from its message; the path of the value being written is in path_.
class Converter {
 public:
  explicit Converter(const Schemas& schemas) : s_(schemas) {}

  absl::StatusOr<json::object> Envelope(std::string_view body, int depth) {
    if (body.size() < kMagic.size() || body.substr(0, kMagic.size()) != kMagic) {
      return absl::InvalidArgumentError(
          "the body does not start with kube's protobuf magic number \"k8s\\x00\"");
    }
    if (path_.empty()) path_ = "the envelope (runtime.Unknown)";
    absl::StatusOr<std::unique_ptr<pb::Message>> unknown =
        Parse(s_.unknown, body.substr(kMagic.size()), depth);
    if (!unknown.ok()) return unknown.status();
    return UnknownObject(**unknown, depth);
  }

 private:
  // Restores path_ when a value is written.
  class PathScope {
   public:
    PathScope(std::string& path, std::string_view segment) : path_(path), size_(path.size()) {
      path_.append(segment);
    }
    ~PathScope() { path_.resize(size_); }
    PathScope(const PathScope&) = delete;
    PathScope& operator=(const PathScope&) = delete;

   private:
    std::string& path_;
    size_t size_;
  };

  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(fmt::format("{}: {}", path_, what));
  }
  absl::Status TooDeep() const {
    return Error(fmt::format("the object nests deeper than {} levels", kMaxDepth));
  }

  bool IsMap(const pb::FieldDescriptor* f) const {
    return f->is_repeated() && f->message_type() != nullptr &&
           s_.map_entries.contains(f->message_type());
  }

  Shape ShapeOf(const pb::Descriptor* d) const {
    auto it = s_.shapes.find(d);
    return it == s_.shapes.end() ? Shape::kObject : it->second;
  }

  // `bytes` as a `d` message that will be written at JSON depth `depth`.
  absl::StatusOr<std::unique_ptr<pb::Message>> Parse(const pb::Descriptor* d,
                                                     std::string_view bytes, int depth) {
    if (depth > kMaxDepth) return TooDeep();
    if (bytes.size() > static_cast<size_t>(INT_MAX)) return Error("too large");
    std::unique_ptr<pb::Message> message(s_.factory.GetPrototype(d)->New());
    pb::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                static_cast<int>(bytes.size()));
    in.SetRecursionLimit(kMaxDepth - depth);
    if (!message->MergePartialFromCodedStream(&in) || !in.ConsumedEntireMessage()) {
      WireReader reader(bytes);
      std::string why = Diagnose(reader, d, depth, path_);
      if (why.empty()) why = fmt::format("{}: not a valid {} message", path_, d->full_name());
      return absl::InvalidArgumentError(why);
    }
    return message;
  }

  // A field the parser kept as unknown although the schema has its number: its wire type is not
  // the field's, which gogo refuses.
  absl::Status CheckWireTypes(const pb::Message& m) {
    const pb::UnknownFieldSet& unknown = m.GetReflection()->GetUnknownFields(m);
    for (int i = 0; i < unknown.field_count(); ++i) {
      const pb::FieldDescriptor* f =
          m.GetDescriptor()->FindFieldByNumber(unknown.field(i).number());
      if (f == nullptr) continue;
      // UnknownField::Type's order.
      static constexpr std::string_view kWireNames[] = {"a varint", "32-bit data", "64-bit data",
                                                        "length-delimited data", "a group"};
      const auto got = static_cast<size_t>(unknown.field(i).type());
      return Error(fmt::format("field {} ({}) has the wrong wire type: {}", f->name(),
                               s_.text_fields.contains(f) ? "string" : f->type_name(),
                               got < 5 ? kWireNames[got] : "unknown"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<json::object> UnknownObject(const pb::Message& unknown, int depth) {
    if (absl::Status wire = CheckWireTypes(unknown); !wire.ok()) return wire;
    const pb::Reflection& r = *unknown.GetReflection();
    const pb::Descriptor& d = *unknown.GetDescriptor();
    const pb::Message& type_meta = r.GetMessage(unknown, d.FindFieldByNumber(1));
    if (absl::Status wire = CheckWireTypes(type_meta); !wire.ok()) return wire;
    const pb::Reflection& tr = *type_meta.GetReflection();
    const std::string api_version =
        tr.GetString(type_meta, type_meta.GetDescriptor()->FindFieldByName("apiVersion"));
    const std::string kind =
        tr.GetString(type_meta, type_meta.GetDescriptor()->FindFieldByName("kind"));
    const std::string raw = r.GetString(unknown, d.FindFieldByNumber(2));
    const std::string encoding = r.GetString(unknown, d.FindFieldByNumber(3));
    const std::string content_type = r.GetString(unknown, d.FindFieldByNumber(4));
    if (api_version.empty() || kind.empty()) {
      return Error("the envelope's typeMeta names no apiVersion or no kind");
    }
    if (!encoding.empty()) {
      return Error(fmt::format("contentEncoding {} is not supported", api::GoQuote(encoding)));
    }
    if (content_type == "application/json") {
      // The object as JSON; the envelope's kind and apiVersion still name it.
      absl::StatusOr<json::value> value = RawJson(raw, depth);
      if (!value.ok()) return value.status();
      if (!value->is_object()) return Error("the envelope's JSON is not an object");
      json::object out;
      out["kind"] = api::ToValidUtf8(kind);
      out["apiVersion"] = api::ToValidUtf8(api_version);
      for (auto& [key, member] : value->get_object()) {
        if (key != "kind" && key != "apiVersion") out[key] = std::move(member);
      }
      return out;
    }
    if (!content_type.empty() && content_type != kProtobufContentType) {
      return Error(fmt::format("contentType {} is not supported", api::GoQuote(content_type)));
    }
    absl::StatusOr<const pb::Descriptor*> message_type = KindMessage(s_, api_version, kind);
    if (!message_type.ok()) return message_type.status();
    // Errors inside the object name it from its kind: "Service.spec.ports[0]" (a nested one:
    // "List.items[1] (Namespace).metadata").
    const std::string outer_path = path_;
    path_ = depth == 1 ? kind : fmt::format("{} ({})", path_, kind);
    absl::StatusOr<json::object> out = KindObject(*message_type, kind, api_version, raw, depth);
    path_ = outer_path;
    return out;
  }

  absl::StatusOr<json::object> KindObject(const pb::Descriptor* message_type, std::string_view kind,
                                          std::string_view api_version, std::string_view raw,
                                          int depth) {
    absl::StatusOr<std::unique_ptr<pb::Message>> message = Parse(message_type, raw, depth);
    if (!message.ok()) return message.status();
    json::object out;
    out["kind"] = kind;
    out["apiVersion"] = api_version;
    if (absl::Status written = Fields(**message, depth, out); !written.ok()) return written;
    return out;
  }

  // The fields of `m` into `out`, an object at JSON depth `depth`.
  absl::Status Fields(const pb::Message& m, int depth, json::object& out) {
    if (depth > kMaxDepth) return TooDeep();
    if (absl::Status wire = CheckWireTypes(m); !wire.ok()) return wire;
    const pb::Descriptor& d = *m.GetDescriptor();
    const pb::Reflection& r = *m.GetReflection();
    for (int i = 0; i < d.field_count(); ++i) {
      const pb::FieldDescriptor* f = d.field(i);
      PathScope scope(path_, "." + f->name());
      if (IsMap(f)) {
        if (r.FieldSize(m, f) == 0) continue;
        absl::StatusOr<json::object> map = Map(m, f, depth + 1);
        if (!map.ok()) return map.status();
        out[f->name()] = *std::move(map);
      } else if (f->is_repeated()) {
        const int n = r.FieldSize(m, f);
        if (n == 0) continue;
        if (depth + 1 > kMaxDepth) return TooDeep();
        json::array array;
        array.reserve(n);
        for (int j = 0; j < n; ++j) {
          PathScope element(path_, fmt::format("[{}]", j));
          absl::StatusOr<json::value> v = Value(m, f, j, depth + 2);
          if (!v.ok()) return v.status();
          array.push_back(*std::move(v));
        }
        out[f->name()] = std::move(array);
      } else if (s_.inline_fields.contains(f)) {
        // Its fields are the embedding object's, as encoding/json writes an embedded struct.
        if (!r.HasField(m, f)) continue;
        if (absl::Status written = Fields(r.GetMessage(m, f), depth, out); !written.ok()) {
          return written;
        }
      } else {
        if (!r.HasField(m, f)) continue;
        // gogo writes empty strings and bytes of non-pointer fields; encoding/json omits them.
        if ((f->cpp_type() == pb::FieldDescriptor::CPPTYPE_STRING) && r.GetString(m, f).empty()) {
          continue;
        }
        absl::StatusOr<json::value> v = Value(m, f, -1, depth + 1);
        if (!v.ok()) return v.status();
        // A zero Time (Go writes null) and an empty RawExtension: left out, as kube reads null.
        if (v->is_null()) continue;
        out[f->name()] = *std::move(v);
      }
    }
    return absl::OkStatus();
  }

  // A map field as an object (at `depth`) with its keys sorted, as encoding/json writes a map.
  absl::StatusOr<json::object> Map(const pb::Message& m, const pb::FieldDescriptor* f, int depth) {
    if (depth > kMaxDepth) return TooDeep();
    const pb::Reflection& r = *m.GetReflection();
    const pb::FieldDescriptor* key_field = f->message_type()->FindFieldByNumber(1);
    const pb::FieldDescriptor* value_field = f->message_type()->FindFieldByNumber(2);
    std::vector<std::pair<std::string, const pb::Message*>> entries;
    const int n = r.FieldSize(m, f);
    entries.reserve(n);
    for (int i = 0; i < n; ++i) {
      const pb::Message& entry = r.GetRepeatedMessage(m, f, i);
      if (absl::Status wire = CheckWireTypes(entry); !wire.ok()) return wire;
      absl::StatusOr<json::value> key = Value(entry, key_field, -1, depth + 1);
      if (!key.ok()) return key.status();
      std::string text = key->is_string() ? std::string(key->get_string()) : json::serialize(*key);
      entries.emplace_back(std::move(text), &entry);
    }
    // Stable: of two entries with one key the later wins, as in a Go map.
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    json::object out;
    out.reserve(entries.size());
    for (const auto& [key, entry] : entries) {
      PathScope scope(path_, fmt::format("[{}]", api::GoQuote(key)));
      absl::StatusOr<json::value> v = Value(*entry, value_field, -1, depth + 1);
      if (!v.ok()) return v.status();
      out[key] = *std::move(v);
    }
    return out;
  }

  // Field `f` of `m` (element `index` of a repeated one, -1 for a singular one) as a value at
  // JSON depth `depth`.
  absl::StatusOr<json::value> Value(const pb::Message& m, const pb::FieldDescriptor* f, int index,
                                    int depth) {
    const pb::Reflection& r = *m.GetReflection();
    const bool one = index < 0;
    switch (f->cpp_type()) {
      case pb::FieldDescriptor::CPPTYPE_INT32:
        return json::value(one ? r.GetInt32(m, f) : r.GetRepeatedInt32(m, f, index));
      case pb::FieldDescriptor::CPPTYPE_INT64:
        return json::value(one ? r.GetInt64(m, f) : r.GetRepeatedInt64(m, f, index));
      case pb::FieldDescriptor::CPPTYPE_UINT32:
        return json::value(one ? r.GetUInt32(m, f) : r.GetRepeatedUInt32(m, f, index));
      case pb::FieldDescriptor::CPPTYPE_UINT64:
        return json::value(one ? r.GetUInt64(m, f) : r.GetRepeatedUInt64(m, f, index));
      case pb::FieldDescriptor::CPPTYPE_BOOL:
        return json::value(one ? r.GetBool(m, f) : r.GetRepeatedBool(m, f, index));
      case pb::FieldDescriptor::CPPTYPE_FLOAT:
      case pb::FieldDescriptor::CPPTYPE_DOUBLE: {
        const double v = f->cpp_type() == pb::FieldDescriptor::CPPTYPE_FLOAT
                             ? (one ? r.GetFloat(m, f) : r.GetRepeatedFloat(m, f, index))
                             : (one ? r.GetDouble(m, f) : r.GetRepeatedDouble(m, f, index));
        if (!std::isfinite(v)) return Error("a number that is not finite (JSON has none)");
        return json::value(v);
      }
      case pb::FieldDescriptor::CPPTYPE_ENUM:
        return json::value(one ? r.GetEnumValue(m, f) : r.GetRepeatedEnumValue(m, f, index));
      case pb::FieldDescriptor::CPPTYPE_STRING: {
        std::string scratch;
        const std::string& v = one ? r.GetStringReference(m, f, &scratch)
                                   : r.GetRepeatedStringReference(m, f, index, &scratch);
        if (!s_.text_fields.contains(f)) return json::value(absl::Base64Escape(v));
        // Go's encoding/json writes each byte that is not UTF-8 as U+FFFD.
        return json::value(api::ToValidUtf8(v));
      }
      case pb::FieldDescriptor::CPPTYPE_MESSAGE:
        return MessageValue(one ? r.GetMessage(m, f) : r.GetRepeatedMessage(m, f, index), depth);
    }
    return Error("a field of an unknown type");
  }

  // A message as its Go type writes itself, at JSON depth `depth`; null where Go writes null.
  absl::StatusOr<json::value> MessageValue(const pb::Message& m, int depth) {
    if (depth > kMaxDepth) return TooDeep();
    const Shape shape = ShapeOf(m.GetDescriptor());
    if (shape == Shape::kObject) {
      json::object out;
      if (absl::Status written = Fields(m, depth, out); !written.ok()) return written;
      return json::value(std::move(out));
    }
    if (absl::Status wire = CheckWireTypes(m); !wire.ok()) return wire;
    const pb::Reflection& r = *m.GetReflection();
    const pb::Descriptor& d = *m.GetDescriptor();
    auto field = [&](int number) { return d.FindFieldByNumber(number); };
    switch (shape) {
      case Shape::kTime:
      case Shape::kMicroTime: {
        if (!r.HasField(m, field(1)) && !r.HasField(m, field(2))) return json::value(nullptr);
        int64_t seconds = r.GetInt64(m, field(1));
        // Time's Unmarshal drops the nanoseconds (kube's JSON has whole seconds only).
        int64_t nanos = shape == Shape::kTime ? 0 : r.GetInt32(m, field(2));
        // time.Unix normalises nanoseconds outside [0, 1e9).
        seconds += nanos / 1000000000;
        nanos %= 1000000000;
        if (nanos < 0) {
          nanos += 1000000000;
          --seconds;
        }
        if (seconds == kGoZeroTimeUnix && nanos == 0) return json::value(nullptr);
        if (seconds < kYear0Unix || seconds >= kYear10000Unix) {
          return Error("Time.MarshalJSON: year outside of range [0,9999]");
        }
        std::string text = api::FormatUnixTime(seconds);
        if (shape == Shape::kMicroTime) {
          text.insert(text.size() - 1, fmt::format(".{:06}", nanos / 1000));
        }
        return json::value(std::move(text));
      }
      case Shape::kDuration:
        return json::value(common::FormatGoDuration(r.GetInt64(m, field(1))));
      case Shape::kQuantity: {
        // An empty Quantity is Go's zero Quantity, which writes itself as "0".
        const std::string text = r.GetString(m, field(1));
        return json::value(text.empty() ? std::string("0") : api::ToValidUtf8(text));
      }
      case Shape::kIntOrString: {
        const int64_t type = r.GetInt64(m, field(1));
        if (type == 0) return json::value(r.GetInt32(m, field(2)));
        if (type == 1) return json::value(api::ToValidUtf8(r.GetString(m, field(3))));
        return Error(fmt::format("IntOrString of type {}, neither 0 (int) nor 1 (string)", type));
      }
      case Shape::kRawJson: {
        const std::string raw = r.GetString(m, field(1));
        if (raw.empty()) return json::value(nullptr);
        if (std::string_view(raw).starts_with(kMagic)) {
          absl::StatusOr<json::object> object = Envelope(raw, depth);
          if (!object.ok()) return object.status();
          return json::value(*std::move(object));
        }
        return RawJson(raw, depth);
      }
      case Shape::kStringArray: {
        json::array out;
        const int n = r.FieldSize(m, field(1));
        for (int i = 0; i < n; ++i) {
          out.emplace_back(api::ToValidUtf8(r.GetRepeatedString(m, field(1), i)));
        }
        return json::value(std::move(out));
      }
      case Shape::kUnknown: {
        absl::StatusOr<json::object> object = UnknownObject(m, depth);
        if (!object.ok()) return object.status();
        return json::value(*std::move(object));
      }
      case Shape::kObject:
        break;
    }
    return Error("a message of an unknown shape");
  }

  // JSON text held in bytes (RawExtension, FieldsV1), as a value at `depth`.
  absl::StatusOr<json::value> RawJson(std::string_view raw, int depth) {
    absl::StatusOr<json::value> value = api::ParseJson(raw);
    if (!value.ok()) {
      return Error(fmt::format("the raw bytes are neither JSON nor a protobuf envelope: {}",
                               std::string(value.status().message())));
    }
    if (depth - 1 + JsonDepth(*value) > kMaxDepth) return TooDeep();
    return value;
  }

  // The nesting of arrays and objects in `v` (a scalar: 0). `v` came from json::parse, so
  // recursion is bounded by its max_depth.
  static int JsonDepth(const json::value& v) {
    int deepest = 0;
    if (v.is_object()) {
      for (const auto& member : v.get_object()) {
        deepest = std::max(deepest, JsonDepth(member.value()));
      }
      return deepest + 1;
    }
    if (v.is_array()) {
      for (const json::value& e : v.get_array()) deepest = std::max(deepest, JsonDepth(e));
      return deepest + 1;
    }
    return 0;
  }

  const Schemas& s_;
  std::string path_;
};

}  // namespace

absl::StatusOr<json::object> DecodeProtobufObject(std::string_view body) {
  const Schemas& schemas = GetSchemas();
  if (!schemas.status.ok()) return schemas.status;
  Converter converter(schemas);
  return converter.Envelope(body, 1);
}

}  // namespace muster::apiserver
