// libFuzzer target for the selector text parsers (selector.h): labels.Parse and
// fields.ParseSelector grammars, and the matchers built from what they accept.
//
// Input layout: "<label selector>\0<field selector>\0<labels as k=v lines>" (missing parts are
// empty). Parsers must return a value or InvalidArgument without crashing; an accepted label
// selector's text form must parse back to one that matches the same label sets.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/model.h"
#include "api/selector.h"

namespace {

using muster::api::LabelSelectorMatcher;
using muster::api::StringMap;

std::string_view NextPart(std::string_view& rest) {
  size_t nul = rest.find('\0');
  std::string_view part = rest.substr(0, nul);
  rest = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
  return part;
}

StringMap ParseLabels(std::string_view text) {
  StringMap labels;
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    size_t eq = line.find('=');
    labels[std::string(line.substr(0, eq))] =
        eq == std::string_view::npos ? "" : std::string(line.substr(eq + 1));
  }
  return labels;
}

void CheckLabelSelector(std::string_view text, const StringMap& labels) {
  absl::StatusOr<LabelSelectorMatcher> matcher = LabelSelectorMatcher::Parse(text);
  if (!matcher.ok()) {
    if (!absl::IsInvalidArgument(matcher.status())) __builtin_trap();
    return;
  }
  const bool matches = matcher->Matches(labels);
  absl::StatusOr<LabelSelectorMatcher> reparsed = LabelSelectorMatcher::Parse(matcher->ToString());
  if (!reparsed.ok()) __builtin_trap();
  if (reparsed->Matches(labels) != matches) __builtin_trap();
}

void CheckFieldSelector(std::string_view text, const StringMap& fields) {
  absl::StatusOr<std::vector<muster::api::FieldRequirement>> requirements =
      muster::api::ParseFieldSelector(text);
  if (!requirements.ok()) {
    if (!absl::IsInvalidArgument(requirements.status())) __builtin_trap();
    return;
  }
  (void)muster::api::MatchesFieldSelector(*requirements, fields);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  const std::string_view label_text = NextPart(rest);
  const std::string_view field_text = NextPart(rest);
  const StringMap labels = ParseLabels(rest);
  CheckLabelSelector(label_text, labels);
  CheckFieldSelector(field_text, labels);
  return 0;
}
