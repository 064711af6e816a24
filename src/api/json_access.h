#pragma once

// Small readers for the boost::json objects the API serves (timestamps: api/time.h), the one set
// every layer uses. A missing field, a field of another type or a null object reads as empty
// (nullptr, "", nullopt), because a reader of kube objects meets partial objects all the time and
// a missing field means its zero value. The admission readers (apiserver/admission/json_access.h)
// are richer: they report where a field went wrong. EnsureObject and EnsureArray are the writers'
// counterpart: the member, made (or replaced) when it is missing or of another type.

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/string.hpp"
#include "boost/json/value.hpp"

namespace muster::api {

// A JSON string or key as std::string_view.
inline std::string_view View(const boost::json::string& s) { return {s.data(), s.size()}; }
inline std::string_view View(boost::json::string_view s) { return {s.data(), s.size()}; }

inline const boost::json::object* ObjectAt(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_object() ? &v->get_object() : nullptr;
}

inline const boost::json::object* ObjectAt(const boost::json::object* o, std::string_view key) {
  return o == nullptr ? nullptr : ObjectAt(*o, key);
}

inline const boost::json::array* ArrayAt(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_array() ? &v->get_array() : nullptr;
}

inline std::string StringAt(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

inline std::string StringAt(const boost::json::object* o, std::string_view key) {
  return o == nullptr ? std::string() : StringAt(*o, key);
}

// The strings of the array member `key` (its other elements left out); empty when there is none.
inline std::vector<std::string> StringsAt(const boost::json::object* o, std::string_view key) {
  std::vector<std::string> out;
  const boost::json::value* v = o == nullptr ? nullptr : o->if_contains(key);
  if (v == nullptr || !v->is_array()) return out;
  for (const boost::json::value& s : v->get_array()) {
    if (s.is_string()) out.emplace_back(s.get_string());
  }
  return out;
}

// As StringAt, without a copy: a view into `o`, valid while `o` is unchanged (for hot paths that
// only compare).
inline std::string_view StringViewAt(const boost::json::object* o, std::string_view key) {
  const boost::json::value* v = o == nullptr ? nullptr : o->if_contains(key);
  return v != nullptr && v->is_string() ? std::string_view(v->get_string()) : std::string_view();
}

// A JSON number that is an int64 exactly (2, 2.0); nullopt for 2.5, for anything beyond int64, or
// for a non-number.
inline std::optional<int64_t> ExactInt64(const boost::json::value& v) {
  if (const int64_t* i = v.if_int64()) return *i;
  if (const uint64_t* u = v.if_uint64()) {
    if (*u > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  const double* d = v.if_double();
  if (d == nullptr || std::trunc(*d) != *d || *d < -0x1p63 || *d >= 0x1p63) return std::nullopt;
  return static_cast<int64_t>(*d);
}

// o[key] as ExactInt64 reads it.
inline std::optional<int64_t> IntAt(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v == nullptr ? std::nullopt : ExactInt64(*v);
}

// Any JSON number as an int64: a double truncates toward zero and a uint64 is cast as it is;
// nullopt for a non-number. For numbers muster writes itself or only shows (lease times, table
// columns, generations), where refusing 2.0 would help no one.
inline std::optional<int64_t> TruncatedInt64(const boost::json::value& v) {
  if (const int64_t* i = v.if_int64()) return *i;
  if (const uint64_t* u = v.if_uint64()) return static_cast<int64_t>(*u);
  if (const double* d = v.if_double()) return static_cast<int64_t>(*d);
  return std::nullopt;
}

// o[key] as TruncatedInt64 reads it.
inline std::optional<int64_t> TruncatedIntAt(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v == nullptr ? std::nullopt : TruncatedInt64(*v);
}

// metadata.<key> of an object.
inline std::string MetaString(const boost::json::object& o, std::string_view key) {
  return StringAt(ObjectAt(o, "metadata"), key);
}

inline boost::json::object& EnsureObject(boost::json::object& o, std::string_view key) {
  boost::json::value& v = o[key];
  if (!v.is_object()) v = boost::json::object();
  return v.get_object();
}

inline boost::json::array& EnsureArray(boost::json::object& o, std::string_view key) {
  boost::json::value& v = o[key];
  if (!v.is_array()) v = boost::json::array();
  return v.get_array();
}

}  // namespace muster::api
