// libFuzzer target for the typed JSON decoders (json_codec.h).
//
// The input is JSON text. Every decoder must return a value or an InvalidArgument error without
// crashing, and what decodes must survive the documented round trip: Encode, Decode again and
// Encode again gives the same JSON (json_codec.h: Decode(Encode(x)) == x for every x).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "api/json_codec.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"

namespace {

using muster::api::Object;

// Decode(Encode(x)) must succeed and encode to the same JSON.
void CheckRoundTrip(const Object& decoded) {
  const boost::json::value encoded = muster::api::EncodeObject(decoded);
  absl::StatusOr<Object> again = muster::api::DecodeObject(encoded);
  if (!again.ok()) __builtin_trap();
  if (boost::json::serialize(muster::api::EncodeObject(*again)) !=
      boost::json::serialize(encoded)) {
    __builtin_trap();
  }
}

// The same for one typed decoder, applied whatever apiVersion and kind say.
template <class T>
void CheckKind(const boost::json::value& json,
               absl::StatusOr<T> (*decode)(const boost::json::value&),
               boost::json::value (*encode)(const T&)) {
  absl::StatusOr<T> decoded = decode(json);
  if (!decoded.ok()) {
    if (!absl::IsInvalidArgument(decoded.status())) __builtin_trap();
    return;
  }
  const boost::json::value encoded = encode(*decoded);
  absl::StatusOr<T> again = decode(encoded);
  if (!again.ok()) __builtin_trap();
  if (boost::json::serialize(encode(*again)) != boost::json::serialize(encoded)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  boost::json::error_code error;
  const boost::json::value json = boost::json::parse(text, error);
  if (error) return 0;

  absl::StatusOr<Object> any = muster::api::DecodeObject(json);
  if (any.ok()) {
    CheckRoundTrip(*any);
  } else if (!absl::IsInvalidArgument(any.status())) {
    __builtin_trap();
  }
  CheckKind(json, muster::api::DecodePod, muster::api::EncodePod);
  CheckKind(json, muster::api::DecodeNode, muster::api::EncodeNode);
  CheckKind(json, muster::api::DecodePodGroup, muster::api::EncodePodGroup);
  CheckKind(json, muster::api::DecodeQueue, muster::api::EncodeQueue);
  CheckKind(json, muster::api::DecodePriorityClass, muster::api::EncodePriorityClass);
  return 0;
}
