#pragma once

// Small readers for the boost::json objects the API serves (timestamps: api/time.h). A missing
// field or a field of another type reads as empty.

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>

#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/value.hpp"
#include "common/strings.h"
#include "fmt/format.h"

namespace muster::node {

using common::Cat;

inline const boost::json::object* ObjectAt(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
}

inline const boost::json::array* ArrayAt(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_array() ? &v->get_array() : nullptr;
}

inline std::string StringAt(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

inline std::optional<int64_t> IntAt(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_int64()) return v->get_int64();
  if (v->is_uint64() && v->get_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
    return static_cast<int64_t>(v->get_uint64());
  }
  if (v->is_double() && static_cast<double>(static_cast<int64_t>(v->get_double())) == v->get_double()) {
    return static_cast<int64_t>(v->get_double());
  }
  return std::nullopt;
}

// metadata.<key> of an object.
inline std::string MetaString(const boost::json::object& o, std::string_view key) {
  const boost::json::object* meta = ObjectAt(o, "metadata");
  return meta == nullptr ? std::string() : StringAt(*meta, key);
}

}  // namespace muster::node
