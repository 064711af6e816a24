// libFuzzer target for the patch engines (patch.h).
//
// Input layout: byte 0 picks the kind; the rest is "<target JSON>\0<patch JSON>" (without a NUL,
// the rest is split in half). Text that does not parse as JSON becomes a small fixed document, so
// that mutations of either half still reach the engines. Every engine must return (a value or
// an error) without crashing, and the documented invariants below must hold.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/patch.h"
#include "boost/json/parse.hpp"
#include "boost/json/serialize.hpp"
#include "boost/json/value.hpp"

namespace {

boost::json::value ParseOr(std::string_view text, std::string_view fallback) {
  boost::json::error_code error;
  boost::json::value parsed = boost::json::parse(text, error);
  if (!error) return parsed;
  return boost::json::parse(fallback);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static constexpr std::string_view kKinds[] = {"Pod", "Node", "Namespace", "Event", "Queue"};
  const std::string_view kind = kKinds[data[0] % 5];
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  size_t split = rest.find('\0');
  const bool has_separator = split != std::string_view::npos;
  if (!has_separator) split = rest.size() / 2;
  const std::string_view target_text = rest.substr(0, split);
  const std::string_view patch_text = rest.substr(has_separator ? split + 1 : split);

  const boost::json::value target =
      ParseOr(target_text, R"({"metadata":{"name":"x","finalizers":["a"]},"spec":{}})");
  const boost::json::value patch = ParseOr(patch_text, R"({"spec":{"x":null}})");
  const std::string before = boost::json::serialize(target);

  // RFC 7386 merge patch never fails, and applying the same patch twice changes nothing more.
  absl::StatusOr<boost::json::value> merged = muster::api::ApplyMergePatch(target, patch);
  if (!merged.ok()) __builtin_trap();
  absl::StatusOr<boost::json::value> merged_twice = muster::api::ApplyMergePatch(*merged, patch);
  if (!merged_twice.ok() || *merged_twice != *merged) __builtin_trap();

  absl::StatusOr<boost::json::value> json_patched = muster::api::ApplyJsonPatch(target, patch);
  if (json_patched.ok()) (void)boost::json::serialize(*json_patched);

  absl::StatusOr<boost::json::value> strategic =
      muster::api::ApplyStrategicMergePatch(target, patch, kind);
  if (strategic.ok()) {
    (void)boost::json::serialize(*strategic);
    // Feeding the result back in exercises merges of lists that now hold the patch's elements.
    (void)muster::api::ApplyStrategicMergePatch(*strategic, patch, kind);
  }

  absl::StatusOr<boost::json::value> applied =
      muster::api::ApplyServerSideApply(target, patch, kind);
  if (applied.ok()) (void)boost::json::serialize(*applied);

  // The inputs are never modified.
  if (boost::json::serialize(target) != before) __builtin_trap();
  return 0;
}
