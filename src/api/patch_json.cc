// RFC 6902 JSON patch with RFC 6901 pointers (patch.h): application/json-patch+json, which
// kube-apiserver applies with the evanphx/json-patch package.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "api/patch.h"
#include "api/patch_internal.h"
#include "boost/json/object.hpp"
#include "fmt/format.h"

namespace muster::api {
namespace {

namespace json = boost::json;
using patch_internal::Abbreviated;
using patch_internal::JsonEqual;
using patch_internal::View;

using PointerTokens = std::vector<std::string>;

absl::StatusOr<PointerTokens> ParsePointer(std::string_view pointer) {
  PointerTokens tokens;
  if (pointer.empty()) return tokens;
  if (pointer.front() != '/') {
    return absl::InvalidArgumentError("a JSON pointer must be empty or start with '/'");
  }
  std::string token;
  for (size_t i = 1; i <= pointer.size(); ++i) {
    if (i == pointer.size() || pointer[i] == '/') {
      tokens.push_back(std::move(token));
      token.clear();
      continue;
    }
    if (pointer[i] != '~') {
      token.push_back(pointer[i]);
      continue;
    }
    const char escaped = i + 1 < pointer.size() ? pointer[i + 1] : '\0';
    if (escaped != '0' && escaped != '1') {
      return absl::InvalidArgumentError("'~' must be followed by '0' or '1' in a JSON pointer");
    }
    token.push_back(escaped == '0' ? '~' : '/');
    ++i;
  }
  return tokens;
}

// An RFC 6901 array index ("0" or digits without a leading zero) below `size`, or equal to it
// when `allow_end` (add may insert at the end; "-" names that position).
absl::StatusOr<size_t> ArrayIndex(std::string_view token, size_t size, bool allow_end) {
  if (token == "-") {
    if (allow_end) return size;
    return absl::InvalidArgumentError("path not found: \"-\" names no existing element");
  }
  const bool digits_only = !token.empty() && std::all_of(token.begin(), token.end(), [](char c) {
    return c >= '0' && c <= '9';
  });
  if (!digits_only || (token.size() > 1 && token.front() == '0')) {
    return absl::InvalidArgumentError(fmt::format("invalid array index \"{}\"", token));
  }
  // 19 digits always fit in 64 bits; longer indexes are out of range anyway.
  uint64_t index = 0;
  if (token.size() <= 19) {
    for (char c : token) index = index * 10 + static_cast<uint64_t>(c - '0');
  }
  const bool in_range = token.size() <= 19 && (allow_end ? index <= size : index < size);
  if (!in_range) {
    return absl::InvalidArgumentError(
        fmt::format("path not found: array index {} out of range (array size {})", token, size));
  }
  return static_cast<size_t>(index);
}

// The value that the first `count` tokens lead to.
absl::StatusOr<json::value*> Resolve(json::value& document, const PointerTokens& tokens,
                                     size_t count) {
  json::value* current = &document;
  for (size_t i = 0; i < count; ++i) {
    const std::string& token = tokens[i];
    if (current->is_object()) {
      current = current->get_object().if_contains(token);
      if (current == nullptr) return absl::InvalidArgumentError("path not found");
    } else if (current->is_array()) {
      json::array& array = current->get_array();
      absl::StatusOr<size_t> index = ArrayIndex(token, array.size(), /*allow_end=*/false);
      if (!index.ok()) return index.status();
      current = &array[*index];
    } else {
      return absl::InvalidArgumentError("path not found");
    }
  }
  return current;
}

absl::Status AddAt(json::value& document, const PointerTokens& tokens, json::value value) {
  if (tokens.empty()) {
    document = std::move(value);
    return absl::OkStatus();
  }
  absl::StatusOr<json::value*> parent = Resolve(document, tokens, tokens.size() - 1);
  if (!parent.ok()) return parent.status();
  const std::string& last = tokens.back();
  if ((*parent)->is_object()) {
    (*parent)->get_object()[last] = std::move(value);
    return absl::OkStatus();
  }
  if ((*parent)->is_array()) {
    json::array& array = (*parent)->get_array();
    absl::StatusOr<size_t> index = ArrayIndex(last, array.size(), /*allow_end=*/true);
    if (!index.ok()) return index.status();
    array.insert(array.begin() + static_cast<std::ptrdiff_t>(*index), std::move(value));
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError("path not found: the parent is not an object or array");
}

absl::StatusOr<json::value> RemoveAt(json::value& document, const PointerTokens& tokens) {
  if (tokens.empty()) return absl::InvalidArgumentError("cannot remove the whole document");
  absl::StatusOr<json::value*> parent = Resolve(document, tokens, tokens.size() - 1);
  if (!parent.ok()) return parent.status();
  const std::string& last = tokens.back();
  if ((*parent)->is_object()) {
    json::object& object = (*parent)->get_object();
    auto it = object.find(last);
    if (it == object.end()) return absl::InvalidArgumentError("path not found");
    json::value removed = std::move(it->value());
    object.stable_erase(it);
    return removed;
  }
  if ((*parent)->is_array()) {
    json::array& array = (*parent)->get_array();
    absl::StatusOr<size_t> index = ArrayIndex(last, array.size(), /*allow_end=*/false);
    if (!index.ok()) return index.status();
    json::value removed = std::move(array[*index]);
    array.erase(array.begin() + static_cast<std::ptrdiff_t>(*index));
    return removed;
  }
  return absl::InvalidArgumentError("path not found");
}

bool IsProperPrefix(const PointerTokens& prefix, const PointerTokens& tokens) {
  return prefix.size() < tokens.size() && std::equal(prefix.begin(), prefix.end(), tokens.begin());
}

absl::Status ApplyJsonPatchOperation(json::value& document, const json::value& operation,
                                     size_t index) {
  if (!operation.is_object()) {
    return absl::InvalidArgumentError(fmt::format("op {}: not a JSON object", index));
  }
  const json::object& fields = operation.get_object();
  const json::value* op_field = fields.if_contains("op");
  if (op_field == nullptr || !op_field->is_string()) {
    return absl::InvalidArgumentError(fmt::format("op {}: missing \"op\" string", index));
  }
  const std::string_view op = View(op_field->get_string());
  const json::value* path_field = fields.if_contains("path");
  if (path_field == nullptr || !path_field->is_string()) {
    return absl::InvalidArgumentError(
        fmt::format("op {} ({}): missing \"path\" string", index, op));
  }
  const std::string_view path = View(path_field->get_string());

  const bool needs_from = op == "move" || op == "copy";
  std::string_view from;
  if (needs_from) {
    const json::value* from_field = fields.if_contains("from");
    if (from_field == nullptr || !from_field->is_string()) {
      return absl::InvalidArgumentError(
          fmt::format("op {} ({} {}): missing \"from\" string", index, op, path));
    }
    from = View(from_field->get_string());
  }
  const std::string where = needs_from ? fmt::format("op {} ({} {} from {})", index, op, path, from)
                                       : fmt::format("op {} ({} {})", index, op, path);
  const auto fail = [&where](std::string_view why) {
    return absl::InvalidArgumentError(fmt::format("{}: {}", where, why));
  };
  const auto fail_with = [&fail](const absl::Status& status, std::string_view prefix = "") {
    return fail(fmt::format("{}{}", prefix, std::string(status.message())));
  };

  if (op != "add" && op != "remove" && op != "replace" && op != "move" && op != "copy" &&
      op != "test") {
    return fail("unknown op");
  }
  const json::value* value = fields.if_contains("value");
  if (value == nullptr && (op == "add" || op == "replace" || op == "test")) {
    return fail("missing \"value\"");
  }
  absl::StatusOr<PointerTokens> tokens = ParsePointer(path);
  if (!tokens.ok()) return fail_with(tokens.status());
  absl::StatusOr<PointerTokens> from_tokens = PointerTokens{};
  if (needs_from) {
    from_tokens = ParsePointer(from);
    if (!from_tokens.ok()) return fail_with(from_tokens.status(), "from: ");
  }

  if (op == "add") {
    absl::Status added = AddAt(document, *tokens, *value);
    return added.ok() ? added : fail_with(added);
  }
  if (op == "remove") {
    absl::StatusOr<json::value> removed = RemoveAt(document, *tokens);
    return removed.ok() ? absl::OkStatus() : fail_with(removed.status());
  }
  if (op == "replace") {
    absl::StatusOr<json::value*> target = Resolve(document, *tokens, tokens->size());
    if (!target.ok()) return fail_with(target.status());
    **target = *value;
    return absl::OkStatus();
  }
  if (op == "test") {
    absl::StatusOr<json::value*> target = Resolve(document, *tokens, tokens->size());
    if (!target.ok()) return fail_with(target.status());
    if (!JsonEqual(**target, *value)) {
      return fail(fmt::format("test failed: the value is {}, not {}", Abbreviated(**target),
                              Abbreviated(*value)));
    }
    return absl::OkStatus();
  }
  if (op == "copy") {
    absl::StatusOr<json::value*> source = Resolve(document, *from_tokens, from_tokens->size());
    if (!source.ok()) return fail_with(source.status(), "from: ");
    json::value copy = **source;
    absl::Status added = AddAt(document, *tokens, std::move(copy));
    return added.ok() ? added : fail_with(added);
  }
  // move
  if (*from_tokens == *tokens) {
    absl::StatusOr<json::value*> source = Resolve(document, *from_tokens, from_tokens->size());
    return source.ok() ? absl::OkStatus() : fail_with(source.status(), "from: ");
  }
  if (IsProperPrefix(*from_tokens, *tokens)) {
    return fail("cannot move a value into one of its own children");
  }
  absl::StatusOr<json::value> moved = RemoveAt(document, *from_tokens);
  if (!moved.ok()) return fail_with(moved.status(), "from: ");
  absl::Status added = AddAt(document, *tokens, std::move(*moved));
  return added.ok() ? added : fail_with(added);
}

}  // namespace

absl::StatusOr<json::value> ApplyJsonPatch(const json::value& target, const json::value& patch) {
  if (!patch.is_array()) {
    return absl::InvalidArgumentError("a JSON patch must be a JSON array of operations");
  }
  json::value document = target;
  const json::array& operations = patch.get_array();
  for (size_t i = 0; i < operations.size(); ++i) {
    if (absl::Status applied = ApplyJsonPatchOperation(document, operations[i], i); !applied.ok()) {
      return applied;
    }
  }
  return document;
}

}  // namespace muster::api
