#pragma once

// The text the store keeps of an object, and where metadata.managedFields lies in it, private to
// the store (sqlite_store.cc). Field ownership (kube's managedFields) is often the larger part of
// a pod's text, and a write that leaves it as it was should neither parse nor serialise it again:
// the writer passes the stored text of it on (Op::managed_fields), and WriteObjectText splices it
// into the new state's text. The serialisation is boost::json::serialize's, member by member, so
// that a text written with the ownership spliced in is byte for byte the text of the object
// holding that ownership as its last metadata member.
//
// Thread-safety: pure.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "boost/json/object.hpp"

namespace muster::store {

// A piece of a text: `size` bytes from `offset`; size 0 for none.
struct TextSpan {
  size_t offset = 0;
  size_t size = 0;
};

// `object` serialised as boost::json::serialize writes it, except that when `managed` is given
// (the JSON text of a managedFields value, or empty for none) it is written as the last member
// of metadata in place of any managedFields `object` holds (an object without metadata gets one).
// `span` is set to where the text holds metadata.managedFields's value.
std::string WriteObjectText(const boost::json::object& object,
                            const std::optional<std::string_view>& managed, TextSpan& span);

// Where `json`, a JSON object's text (valid JSON, as every stored text Open serves is), holds
// metadata.managedFields's value (its last occurrence, as a parse keeps the last of repeated
// members); size 0 when it holds none.
TextSpan FindManagedFields(std::string_view json);

}  // namespace muster::store
