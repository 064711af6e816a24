// The table code's shared readers and column helpers (table_support.h).

#include "apiserver/descriptors/table_support.h"

#include <cctype>

#include "api/json_access.h"
#include "apiserver/descriptors/tables.h"

namespace muster::apiserver::table {

using boost::json::array;
using boost::json::object;
using boost::json::value;

// --- Reading objects
// ------------------------------------------------------------------------------

const value* Get(const value* v, std::string_view key) {
  if (v == nullptr) return nullptr;
  const object* obj = v->if_object();
  if (obj == nullptr) return nullptr;
  auto it = obj->find(key);
  return it == obj->end() ? nullptr : &it->value();
}

const value* Path(const value& root, std::initializer_list<std::string_view> keys) {
  const value* v = &root;
  for (std::string_view key : keys) v = Get(v, key);
  return v;
}

std::string_view StrAt(const value* v) {
  if (v == nullptr || !v->is_string()) return {};
  return v->get_string();
}

int64_t IntAt(const value* v) { return v == nullptr ? 0 : api::TruncatedInt64(*v).value_or(0); }

bool BoolAt(const value* v) { return v != nullptr && v->is_bool() && v->get_bool(); }

const array& ArrayAt(const value* v) {
  static const auto* const empty = new array();
  if (v == nullptr || !v->is_array()) return *empty;
  return v->get_array();
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

bool HasTrueCondition(const value& pod, std::string_view type) {
  for (const value& condition : ArrayAt(Path(pod, {"status", "conditions"}))) {
    if (StrAt(Get(&condition, "type")) == type) {
      return StrAt(Get(&condition, "status")) == "True";
    }
  }
  return false;
}

// --- Columns -------------------------------------------------------------------------------------

namespace {

constexpr std::string_view kNameDoc =
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
constexpr std::string_view kAgeDoc =
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate operations. "
    "Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\n"
    "Populated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#metadata";

}  // namespace

object ColumnDef(std::string_view name, std::string_view type, std::string_view description,
                 int priority, std::string_view format) {
  return object{{"name", name},
                {"type", type},
                {"format", format},
                {"description", description},
                {"priority", priority}};
}
object NameColumn(int priority) {
  return ColumnDef("Name", "string", kNameDoc, priority, "name");
}
object AgeColumn() { return ColumnDef("Age", "string", kAgeDoc); }

std::string Since(const value& object, std::initializer_list<std::string_view> keys,
                  int64_t now_unix) {
  return AgeCell(Path(object, keys), now_unix);
}

}  // namespace muster::apiserver::table
