// api::ManagedFieldsInText (managed_fields.h): one member of a stored text, found with simdjson's
// On Demand API, which skips what it is not asked for. In a file of its own so that simdjson's
// header is compiled once.

#include <optional>
#include <string_view>

#include "api/json_parse.h"
#include "api/managed_fields.h"
#include "boost/json/parse.hpp"
#include "simdjson.h"

namespace muster::api {

std::optional<boost::json::value> ManagedFieldsInText(std::string_view json) {
  // A parser per thread: it keeps its buffers between calls.
  thread_local simdjson::ondemand::parser parser;
  const simdjson::padded_string padded(json);
  simdjson::ondemand::document doc;
  if (parser.iterate(padded).get(doc) != simdjson::SUCCESS) return std::nullopt;
  simdjson::ondemand::object root;
  if (doc.get_object().get(root) != simdjson::SUCCESS) return std::nullopt;
  simdjson::ondemand::object meta;
  if (root.find_field_unordered("metadata").get_object().get(meta) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  // kube writes managedFields as a list; anything else a client stored counts as none
  // (managed_fields.h), as it would parsed.
  simdjson::ondemand::array managed;
  std::string_view raw;
  if (meta.find_field_unordered("managedFields").get_array().get(managed) != simdjson::SUCCESS ||
      managed.raw_json().get(raw) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  boost::system::error_code error;
  boost::json::value value = ParseJsonText(raw, error);
  if (error) return std::nullopt;
  return value;
}

}  // namespace muster::api
