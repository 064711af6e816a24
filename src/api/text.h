#pragma once

// Text as Go handles it, for what muster copies from kube: UTF-8 validity (RFC 3629, as Go's
// unicode/utf8 and Boost.JSON read it), the replacement of invalid bytes that Go's JSON encoder
// makes, and strconv.Quote, which kube's messages use for values (`Invalid value: "x"`).
//
// Thread-safety: every function is pure.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace muster::api {

// The length of the UTF-8 sequence that starts at text[i] (1 to 4), or 0 when the bytes there are
// not one: no overlong forms, surrogates or code points past U+10FFFF.
size_t Utf8SequenceLength(std::string_view text, size_t i);

// `text` with each byte that starts no valid sequence replaced by U+FFFD, as encoding/json writes
// a Go string; valid text comes back unchanged.
std::string ToValidUtf8(std::string_view text);

// strconv.Quote: `text` in double quotes with `"` and `\` escaped, control characters as \n, \t,
// \x1f ..., C1 controls as \u0080 ..., and bytes that are not UTF-8 as \xff. Always valid UTF-8.
std::string GoQuote(std::string_view text);

// strconv.ParseInt(text, 10, 64): an optional sign and decimal digits, nothing else. Refusals are
// Go's messages, which kube-apiserver answers 400 with for a bad integer query parameter:
// `strconv.ParseInt: parsing "abc": invalid syntax`, `... "99999999999999999999": value out of
// range`.
absl::StatusOr<int64_t> ParseGoInt64(std::string_view text);

}  // namespace muster::api
