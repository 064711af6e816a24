#pragma once

// JSON literals for the api layer's tests: Json(R"({"a": [1, 2]})") is the parsed value. A
// literal that does not parse throws, which fails the test at the literal.
//
// Thread-safety: pure.

#include <string_view>

#include "boost/json/parse.hpp"
#include "boost/json/value.hpp"

namespace muster::api::test {

inline boost::json::value Json(std::string_view text) { return boost::json::parse(text); }

}  // namespace muster::api::test
