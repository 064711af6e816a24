#pragma once

// JSON request bodies parsed as Kubernetes' decoder (encoding/json) reads them. boost::json keeps
// a number beyond a double's range (1e400, -1e999) as an infinity, which no JSON text can hold:
// serialised it becomes the bare token Infinity and the object can never be read back.
// encoding/json refuses such a number (strconv.ParseFloat: value out of range), and so does
// ParseJson. Numbers within range are kept as boost::json parses them: an integer beyond int64
// and uint64 becomes a double, as kube's unstructured decoding makes it a float64.
//
// Thread-safety: pure.

#include <cstddef>
#include <string_view>

#include "absl/status/statusor.h"
#include "boost/json/parse_options.hpp"
#include "boost/json/value.hpp"

namespace muster::api {

// How deep a stored or sent object may nest. Boost.JSON's default, 32, is below what
// CustomResourceDefinitions reach (an operator's schema holding a pod template nests 60 levels
// and more), and kube-apiserver reads far deeper (encoding/json: 10000). 256 is past any real
// object while keeping every recursive walk of muster's (patches, field sets, schemas) shallow.
inline constexpr std::size_t kMaxJsonDepth = 256;

// The options every parse of an API object uses: Boost.JSON's defaults, nesting to kMaxJsonDepth.
inline boost::json::parse_options JsonParseOptions() {
  boost::json::parse_options options;
  options.max_depth = kMaxJsonDepth;
  return options;
}

// boost::json::parse with JsonParseOptions: for stored objects and texts muster wrote.
boost::json::value ParseJsonText(std::string_view text, boost::json::error_code& ec);

// What boost::json::parse accepts, less non-finite numbers. Errors are InvalidArgument: the
// syntax error as boost::json words it ("syntax error"), or for a number out of range the
// number as written and its path in the document:
//   json: cannot unmarshal number 1e400 into Go struct field spec.containers[0].x of type float64
absl::StatusOr<boost::json::value> ParseJson(std::string_view text);

}  // namespace muster::api
