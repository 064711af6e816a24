#pragma once

// String building shared by every layer. Debian's Abseil has its own string_view type, so
// absl::StrCat does not take std::string_view; Cat does, and anything else fmt can format.
//
// Thread-safety: pure.

#include <iterator>
#include <string>

#include "fmt/format.h"

namespace muster::common {

// The parts formatted with "{}" one after another: Cat("a", 1, std::string_view("b")) is "a1b".
template <typename... Parts>
std::string Cat(const Parts&... parts) {
  std::string out;
  (fmt::format_to(std::back_inserter(out), "{}", parts), ...);
  return out;
}

}  // namespace muster::common
