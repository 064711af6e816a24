// Field ownership on the text the store keeps (managed_fields.h): api::ManagedFieldsInText,
// ParseManagedFieldsText and RecordUpdateText. The store's parsed states leave metadata.
// managedFields out and its text keeps it (store::Object::ManagedFieldsText); an update computes
// what kube's fieldmanager records (managed_fields.cc's RecordUpdate, step for step) but reads only
// the entries it must change, writes the others back as the text they are, and hands the store
// text, which it splices into the new state without parsing or serialising it again. simdjson's
// On Demand API finds the pieces of a text (one file, so that its header is compiled once).

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/field_set.h"
#include "api/json_parse.h"
#include "api/managed_fields.h"
#include "api/managed_fields_internal.h"
#include "boost/json/monotonic_resource.hpp"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "simdjson.h"

namespace muster::api {
namespace {

namespace json = boost::json;

using field_set::ContainsAll;
using field_set::Decode;
using field_set::ExistsWritten;
using field_set::FieldSet;
using field_set::Minus;
using field_set::OverlapsEncoded;
using field_set::Prune;
using field_set::RestrictWritten;
using field_set::Union;
using managed_internal::Entry;

// A simdjson parser per thread: it keeps its buffers between calls.
simdjson::ondemand::parser& Parser() {
  thread_local simdjson::ondemand::parser parser;
  return parser;
}

// The text of each element of `array` (a JSON array's text), in order; nullopt when an element
// is not an object or the text does not read.
std::optional<std::vector<std::string_view>> ElementTexts(std::string_view array) {
  const simdjson::padded_string padded(array);
  simdjson::ondemand::document doc;
  if (Parser().iterate(padded).get(doc) != simdjson::SUCCESS) return std::nullopt;
  simdjson::ondemand::array items;
  if (doc.get_array().get(items) != simdjson::SUCCESS) return std::nullopt;
  std::vector<std::string_view> out;
  for (auto item : items) {
    simdjson::ondemand::object o;
    std::string_view raw;
    if (item.get_object().get(o) != simdjson::SUCCESS || o.raw_json().get(raw) != simdjson::SUCCESS) {
      return std::nullopt;
    }
    // The same piece of `array`, which outlives the padded copy.
    out.push_back(array.substr(static_cast<size_t>(raw.data() - padded.data()), raw.size()));
  }
  return out;
}

// A stored entry, its fields decoded only when the update must change them.
struct Lazy {
  Entry e;                                // fields empty until Fields() decodes them
  const json::object* encoded = nullptr;  // the stored FieldsV1; null for a new entry
  bool decoded = false;
  bool kept = true;       // written back as the stored text
  bool retimed = false;   // the stored FieldsV1 with a new time

  FieldSet& Fields() {
    if (!decoded) {
      e.fields = Decode(*encoded);
      Prune(e.fields);
      decoded = true;
    }
    return e.fields;
  }
  // Whether the fields are empty (Decode leaves a FieldsV1 empty only when it names nothing).
  bool Empty() const { return decoded ? e.fields.empty() : encoded->empty(); }
};

}  // namespace

std::optional<json::value> ManagedFieldsInText(std::string_view json) {
  const simdjson::padded_string padded(json);
  simdjson::ondemand::document doc;
  if (Parser().iterate(padded).get(doc) != simdjson::SUCCESS) return std::nullopt;
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
  return ParseManagedFieldsText(raw);
}

std::optional<json::value> ParseManagedFieldsText(std::string_view text,
                                                  json::storage_ptr storage) {
  if (text.empty()) return std::nullopt;
  boost::system::error_code error;
  json::value value = json::parse(text, error, std::move(storage), JsonParseOptions());
  if (error || !value.is_array()) return std::nullopt;
  return value;
}

std::string RecordUpdateText(const json::object& live, std::string_view stored,
                             const json::object& next, std::string_view kind,
                             const FieldManager& who, std::string_view now) {
  // The stored entries are read in one arena: they live as long as this write.
  const std::optional<json::value> parsed = ParseManagedFieldsText(
      stored, stored.empty()
                  ? json::storage_ptr()
                  : json::make_shared_resource<json::monotonic_resource>(stored.size() * 4 + 256));
  managed_internal::Changes changes = managed_internal::ChangesOf(live, next, kind, who);
  const FieldSet& changed = changes.changed;
  const std::vector<std::string_view>& unchanged = changes.unchanged;

  // RecordUpdate's general path for an update that sends no managedFields of its own.
  std::vector<Lazy> entries;
  bool differ = false;  // whether the entries differ from the stored ones
  if (parsed) {
    for (const json::value& item : parsed->get_array()) {
      Lazy l;
      if (!managed_internal::ReadHeader(item, l.e, l.encoded)) {
        entries.clear();  // unreadable stored entries are dropped
        differ = true;
        break;
      }
      l.e.stored = &item;
      entries.push_back(std::move(l));
    }
  }

  std::ptrdiff_t mine = -1;
  for (size_t i = 0; i < entries.size(); ++i) {
    Lazy& l = entries[i];
    if (managed_internal::IsWho(l.e, who)) {
      mine = static_cast<std::ptrdiff_t>(i);
    } else if (OverlapsEncoded(*l.encoded, changed)) {
      // What the write changed is no longer another's: managed_fields.h.
      l.e.fields = Minus(l.Fields(), changed);
      l.kept = false;
      differ = true;
    }
  }
  // A new entry of `who` holds what the write changed alone, all of it in `next`.
  std::ptrdiff_t fresh = -1;
  if (mine < 0 && !changed.empty()) {
    Lazy l;
    l.e.manager = who.manager;
    l.e.operation = "Update";
    l.e.api_version = who.api_version;
    l.e.subresource = who.subresource;
    l.e.time = std::string(now);
    l.e.fields = changed;
    l.decoded = true;
    l.kept = false;
    entries.push_back(std::move(l));
    fresh = static_cast<std::ptrdiff_t>(entries.size()) - 1;
    differ = true;
  } else if (mine >= 0 && !changed.empty()) {
    Lazy& l = entries[static_cast<size_t>(mine)];
    if (ContainsAll(*l.encoded, changed)) {
      l.retimed = true;  // the union is the stored FieldsV1 itself
    } else {
      Union(l.Fields(), changed);
    }
    l.e.time = std::string(now);
    l.kept = false;
    differ = true;
  }
  // Stored entries need a look only where the write changed something.
  for (size_t i = 0; i < entries.size(); ++i) {
    if (static_cast<std::ptrdiff_t>(i) == fresh) continue;
    Lazy& l = entries[i];
    if (!l.decoded && ExistsWritten(*l.encoded, next, unchanged)) continue;
    if (RestrictWritten(l.Fields(), next, unchanged)) {
      l.kept = false;
      l.retimed = false;
      differ = true;
    }
  }
  const size_t before_drop = entries.size();
  std::erase_if(entries, [](const Lazy& l) { return l.Empty(); });
  differ = differ || entries.size() != before_drop;

  // Nothing changed hands: managedFields exactly as stored.
  if (!differ) return parsed ? std::string(stored) : std::string();
  if (entries.empty()) return std::string();
  // The entries written back as they are keep their stored text.
  std::optional<std::vector<std::string_view>> texts;
  for (const Lazy& l : entries) {
    if (l.kept) {
      texts = ElementTexts(stored);
      if (texts && texts->size() != parsed->get_array().size()) texts.reset();
      break;
    }
  }
  std::string out = "[";
  for (const Lazy& l : entries) {
    if (out.size() > 1) out.push_back(',');
    if (l.kept && texts) {
      out.append((*texts)[static_cast<size_t>(l.e.stored - parsed->get_array().data())]);
    } else if (l.kept) {
      out.append(json::serialize(*l.e.stored));
    } else {
      out.append(json::serialize(managed_internal::EncodeEntry(l.e, l.retimed ? l.encoded : nullptr)));
    }
  }
  out.push_back(']');
  return out;
}

}  // namespace muster::api
