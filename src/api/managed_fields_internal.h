#pragma once

// What the two implementations of field ownership share (managed_fields.cc, on parsed
// managedFields, and managed_fields_text.cc, on the text the store keeps): a managedFields entry
// read and written, and the fields a write changes. kube's fieldmanager (managedfields/internal:
// managedfields.go, the entry codec; structuredmerge.go and the update manager, what an update
// owns). Internal to the api library; callers use managed_fields.h.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/field_set.h"
#include "api/managed_fields.h"
#include "boost/json/object.hpp"
#include "boost/json/value.hpp"

namespace muster::api::managed_internal {

// One managedFields entry.
struct Entry {
  std::string manager;
  std::string operation;  // "Apply" or "Update"
  std::string api_version;
  std::string time;
  std::string subresource;
  field_set::FieldSet fields;
  // The stored entry this one was read from, while it is unchanged: written back as it is, since
  // every stored entry is as EncodeEntry writes it. Null for one a client sent.
  const boost::json::value* stored = nullptr;

  bool operator==(const Entry& o) const {
    return manager == o.manager && operation == o.operation && api_version == o.api_version &&
           time == o.time && subresource == o.subresource && fields == o.fields;
  }
};

// `item`'s manager, operation, apiVersion, time and subresource into `e`, and its FieldsV1 (a
// JSON object) into `fields`, not decoded; false when the entry is malformed.
bool ReadHeader(const boost::json::value& item, Entry& e, const boost::json::object*& fields);

// The entries of `managed` (a managedFields value); nullopt when any entry is malformed. Each
// keeps a pointer to its item when `stored`.
std::optional<std::vector<Entry>> DecodeEntries(const boost::json::value* managed,
                                                bool stored = false);

// An entry as managedFields holds it; `fields`, when given, is its FieldsV1 as already encoded.
boost::json::object EncodeEntry(const Entry& e, const boost::json::object* fields = nullptr);

// Whether `e` is the entry `who` writes.
bool IsWho(const Entry& e, const FieldManager& who);

// What an update by `who` from `live` to `next` changes: the fields it sets that are absent from
// or differ in `live`, less those no manager owns; and the top-level members it left as they were
// (field_set::Unchanged), which are neither compared again nor looked into.
struct Changes {
  field_set::FieldSet changed;
  std::vector<std::string_view> unchanged;
};
Changes ChangesOf(const boost::json::object& live, const boost::json::object& next,
                  std::string_view kind, const FieldManager& who);

}  // namespace muster::api::managed_internal
