// libFuzzer target for the protobuf body decoder (protobuf.h): the input is a request body as
// kubectl would send it ("k8s\0" + runtime.Unknown), seeded with bodies client-go wrote
// (src/apiserver/protobuf/testdata).
//
// Properties: DecodeProtobufObject returns (never crashes, never recurses without bound); an
// object it returns serializes to JSON that Boost.JSON (muster's JSON reader, its default depth
// limit included) parses back to the same value, with "kind" and "apiVersion" strings first; an
// error is InvalidArgument (400) or Unimplemented (415) with a message that is valid UTF-8 (it
// goes into a Status body).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "apiserver/protobuf/protobuf.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/string.hpp"
#include "boost/json/value.hpp"

namespace {

[[noreturn]] void Fail(const char* property, std::string_view detail) {
  std::fprintf(stderr, "protobuf_fuzz: %s\n  %.*s\n", property, static_cast<int>(detail.size()),
               detail.data());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace json = boost::json;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<json::object> object = muster::apiserver::DecodeProtobufObject(body);
  json::error_code error;
  if (!object.ok()) {
    const absl::Status& status = object.status();
    if (status.code() != absl::StatusCode::kInvalidArgument &&
        status.code() != absl::StatusCode::kUnimplemented) {
      Fail("an error that is neither InvalidArgument nor Unimplemented", status.ToString());
    }
    const std::string message(status.message());
    if (message.empty()) Fail("an error without a message", "");
    (void)json::parse(json::serialize(json::string(message)), error);
    if (error) Fail("an error message that is not UTF-8", message);
    return 0;
  }
  const std::string text = json::serialize(*object);
  const json::value back = json::parse(text, error);
  if (error) Fail("the object's JSON does not parse back", text.substr(0, 400));
  if (back != json::value(*object)) Fail("the object's JSON parses back different", text);
  if (object->size() < 2 || object->begin()->key() != "kind" ||
      (object->begin() + 1)->key() != "apiVersion" || !object->begin()->value().is_string() ||
      !(object->begin() + 1)->value().is_string()) {
    Fail("an object without kind and apiVersion first", text.substr(0, 400));
  }
  return 0;
}
