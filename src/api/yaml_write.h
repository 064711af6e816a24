#pragma once

// JSON to YAML for manifests muster writes (`muster manifests`): block style, keys in the JSON
// object's order, and every string that YAML 1.1 would read as something else (true, yes, on,
// null, ~, a number, a timestamp-like or an empty text, or one with leading or trailing spaces)
// double-quoted, so that ParseYamlDocuments (yaml.h) and kubectl read back exactly the JSON given.

#include <string>

#include "boost/json/value.hpp"

namespace muster::api {

// One YAML document (no "---"), ending in a newline.
std::string JsonToYaml(const boost::json::value& value);

}  // namespace muster::api
