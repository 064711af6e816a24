#include "apiserver/admission/kinds.h"

// ConfigMaps and Secrets, the two kinds that hold keyed data for pods: kube's conversion of a v1
// Secret (stringData merged into data, which is base64 and refused as the JSON decoder refuses
// it), SetDefaults_Secret (type Opaque), and pkg/apis/core/validation ValidateConfigMap,
// ValidateSecret and their Update rules (keys as IsConfigMapKey, 1 MiB in all, the fields
// `immutable: true` freezes, a Secret's type never changing, the keys its type requires).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/escaping.h"
#include "apiserver/admission/context.h"
#include "boost/json.hpp"
#include "fmt/format.h"

namespace muster::apiserver::admission {
namespace {

// core.MaxSecretSize and the ConfigMap's limit alike.
constexpr size_t kMaxDataBytes = 1024 * 1024;

// apimachinery validation.IsConfigMapKey.
std::vector<std::string> ConfigKeyErrors(std::string_view key) {
  std::vector<std::string> out;
  if (key.size() > 253) out.push_back("must be no more than 253 characters");
  bool valid = !key.empty();
  for (char ch : key) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.';
    valid = valid && ok;
  }
  if (!valid) {
    out.push_back(
        "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
        "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
        "'[-._a-zA-Z0-9]+')");
  }
  if (key == ".") {
    out.push_back("must not be '.'");
  } else if (key == "..") {
    out.push_back("must not be '..'");
  } else if (key.starts_with("..")) {
    out.push_back("must not start with '..'");
  }
  return out;
}

// Go's base64.StdEncoding, as encoding/json decodes a []byte: the offset of the first byte that
// is not valid base64 (newlines are skipped), nullopt when `text` decodes; `bytes` the decoded
// length.
std::optional<size_t> Base64Problem(std::string_view text, size_t& bytes) {
  size_t quantum = 0;  // characters of the current group of four
  size_t padding = 0;
  bytes = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '\r' || ch == '\n') continue;
    const bool alphabet = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                          (ch >= '0' && ch <= '9') || ch == '+' || ch == '/';
    if (ch == '=') {
      if (quantum < 2) return i;
      ++padding;
      if (quantum + padding > 4) return i;
      continue;
    }
    if (!alphabet || padding > 0) return i;
    if (++quantum == 4) {
      bytes += 3;
      quantum = 0;
    }
  }
  if (quantum == 0 && padding == 0) return std::nullopt;
  if (quantum + padding != 4) return text.size();
  bytes += quantum - 1;
  return std::nullopt;
}

// The keys of obj[field] (an object of strings, type-checked by `reader`), each as
// IsConfigMapKey wants; the bytes of their values counted into `total` (`base64`: decoded).
void CheckKeys(Context& c, const json::object* data, std::string_view field, size_t& total,
               bool base64) {
  if (data == nullptr) return;
  for (const auto& [key, value] : *data) {
    const std::string path = fmt::format("{}[{}]", field, std::string_view(key));
    for (const std::string& msg : ConfigKeyErrors(key)) c.errs.InvalidString(path, key, msg);
    if (!value.is_string()) continue;
    size_t bytes = value.get_string().size();
    if (base64) Base64Problem(value.get_string(), bytes);
    total += bytes;
  }
}

// A map of strings at obj[key]; the type problem recorded (the decoder's 400) otherwise.
json::object* StringMap(Context& c, std::string_view key, std::string_view go_type) {
  json::object* map = c.reader.Obj(c.obj, key, std::string(key), std::string(go_type));
  if (map == nullptr) return nullptr;
  for (auto& [k, v] : *map) c.reader.Str(*map, k, fmt::format("{}.{}", key, std::string_view(k)));
  return map;
}

bool Immutable(const json::object& o) {
  const json::value* v = o.if_contains("immutable");
  return v != nullptr && v->is_bool() && v->get_bool();
}

const json::value* Member(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v == nullptr || v->is_null() ? nullptr : v;
}

// ValidateConfigMapUpdate / ValidateSecretUpdate: once `immutable` is true, it and `fields` stay.
void CheckFrozen(Context& c, std::initializer_list<std::string_view> fields) {
  if (c.req.old == nullptr || !Immutable(*c.req.old)) return;
  if (!Immutable(c.obj)) {
    c.errs.Forbidden("immutable", "field is immutable when `immutable` is set");
  }
  const json::object empty;
  for (std::string_view field : fields) {
    const json::value* now = Member(c.obj, field);
    const json::value* before = Member(*c.req.old, field);
    const json::value& a = now != nullptr ? *now : json::value(empty);
    const json::value& b = before != nullptr ? *before : json::value(empty);
    if (a != b) c.errs.Forbidden(std::string(field), "field is immutable when `immutable` is set");
  }
}

// The keys a Secret of a well-known type must have (ValidateSecret's switch).
void CheckTypedKeys(Context& c, std::string_view type, const json::object* data) {
  auto require = [&](std::string_view key) {
    if (data == nullptr || !data->contains(key)) {
      c.errs.Required(fmt::format("data[{}]", key));
    }
  };
  if (type == "kubernetes.io/dockercfg") require(".dockercfg");
  if (type == "kubernetes.io/dockerconfigjson") require(".dockerconfigjson");
  if (type == "kubernetes.io/ssh-auth") require("ssh-privatekey");
  if (type == "kubernetes.io/tls") {
    require("tls.crt");
    require("tls.key");
  }
  if (type == "kubernetes.io/service-account-token") {
    const json::value* meta = c.obj.if_contains("metadata");
    const json::object* annotations =
        meta != nullptr && meta->is_object() ? FindObject(meta->get_object(), "annotations")
                                             : nullptr;
    if (annotations == nullptr || !annotations->contains("kubernetes.io/service-account.name")) {
      c.errs.Required("metadata.annotations[kubernetes.io/service-account.name]");
    }
  }
}

// The decoder's refusal of the first value of `map` (strings) that is not base64.
std::optional<ApiError> CheckBase64(const Context& c, const json::object* map) {
  if (map == nullptr) return std::nullopt;
  for (const auto& [key, value] : *map) {
    size_t bytes = 0;
    if (std::optional<size_t> at = Base64Problem(value.get_string(), bytes)) {
      return DecodeError(c.res, fmt::format("illegal base64 data at input byte {}", *at));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> AdmitConfigMap(Context& c) {
  if (!c.main_resource()) return std::nullopt;
  json::object* data = StringMap(c, "data", "map[string]string");
  json::object* binary = StringMap(c, "binaryData", "map[string][]uint8");
  if (!c.problems.empty()) return std::nullopt;
  if (std::optional<ApiError> refused = CheckBase64(c, binary)) return refused;
  if (binary != nullptr) {
    for (const auto& [key, value] : *binary) {
      if (data != nullptr && data->contains(key)) {
        c.errs.InvalidString(fmt::format("data[{}]", std::string_view(key)), key,
                             "duplicate of key present in binaryData");
      }
    }
  }
  size_t total = 0;
  CheckKeys(c, data, "data", total, false);
  CheckKeys(c, binary, "binaryData", total, true);
  if (total > kMaxDataBytes) c.errs.TooLong("", kMaxDataBytes);
  CheckFrozen(c, {"data", "binaryData"});
  return std::nullopt;
}

std::optional<ApiError> AdmitSecret(Context& c) {
  if (!c.main_resource()) return std::nullopt;
  json::object* data = StringMap(c, "data", "map[string][]uint8");
  json::object* strings = StringMap(c, "stringData", "map[string]string");
  std::optional<std::string> type = c.reader.Str(c.obj, "type", "type");
  if (!c.problems.empty()) return std::nullopt;
  if (std::optional<ApiError> refused = CheckBase64(c, data)) return refused;
  // Conversion: stringData is write-only, merged into data over what data has.
  if (strings != nullptr) {
    json::object merged = data != nullptr ? *data : json::object();
    for (const auto& [key, value] : *strings) {
      merged[key] = absl::Base64Escape(std::string(value.get_string()));
    }
    c.obj.erase("stringData");
    if (!merged.empty()) c.obj["data"] = std::move(merged);
  }
  if (!type || type->empty()) {
    type = "Opaque";
    c.obj["type"] = *type;
  }
  const json::object* stored_data = FindObject(c.obj, "data");
  size_t total = 0;
  CheckKeys(c, stored_data, "data", total, true);
  if (total > kMaxDataBytes) c.errs.TooLong("data", kMaxDataBytes);
  CheckTypedKeys(c, *type, stored_data);
  if (c.req.old != nullptr) {
    const std::string before = StringAt(*c.req.old, "type");
    if (!before.empty() && before != *type) {
      c.errs.InvalidString("type", *type, "field is immutable");
    }
  }
  CheckFrozen(c, {"data"});
  return std::nullopt;
}

}  // namespace muster::apiserver::admission
