// libFuzzer target for the YAML front end (yaml.h) and what the API server does with a manifest
// next: decode the JSON of each document by its apiVersion and kind (json_codec.h).
//
// The input is a YAML stream. ParseYamlDocuments must return documents or an InvalidArgument
// error ("line N: ...") and never throw; errors and successes alike must not crash. A small
// alias budget keeps "billion laughs" inputs within the fuzzer's time and memory limits, which
// is what the budget is for.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/json_codec.h"
#include "api/yaml.h"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  muster::api::YamlLimits limits;
  limits.max_alias_values = size_t{1} << 14;
  absl::StatusOr<std::vector<boost::json::value>> docs =
      muster::api::ParseYamlDocuments(text, limits);
  if (!docs.ok()) {
    if (!absl::IsInvalidArgument(docs.status())) __builtin_trap();
    if (docs.status().message().substr(0, 5) != "line ") __builtin_trap();
    return 0;
  }
  for (const boost::json::value& doc : *docs) {
    if (doc.is_null()) __builtin_trap();  // null documents are skipped
    (void)boost::json::serialize(doc);
    absl::StatusOr<muster::api::Object> object = muster::api::DecodeObject(doc);
    if (object.ok()) (void)muster::api::EncodeObject(*object);
  }
  return 0;
}
