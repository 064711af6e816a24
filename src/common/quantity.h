#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace muster::common {

// A Kubernetes resource quantity ("500m", "4Gi", "1G", "1e3", "0.5"), held exactly as an integer
// number of thousandths of the base unit. This is the precision kube-scheduler works at
// (MilliValue); finer inputs ("1u", "100n") round up to the next milli unit, away from zero for
// negative values ("-1u" is -1m), as resource.Quantity.MilliValue() does. The range is +/- 9.2e15
// base units (about 8 PiB of memory).
class Quantity {
 public:
  constexpr Quantity() = default;
  static constexpr Quantity FromMilli(int64_t milli) { return Quantity(milli); }
  static constexpr Quantity FromUnits(int64_t units) { return Quantity(units * 1000); }

  // Parses the Kubernetes quantity grammar: sign, digits with an optional fraction, then one
  // suffix of: binary SI (Ki Mi Gi Ti Pi Ei), decimal SI (n u m "" k M G T P E) or a decimal
  // exponent (e3, E-2). Errors name the input and what is wrong; overflow is an error.
  static absl::StatusOr<Quantity> Parse(std::string_view text);

  constexpr int64_t MilliValue() const { return milli_; }
  // Whole base units, rounded away from zero (resource.Quantity.Value()): 1500m is 2, -1500m is -2.
  constexpr int64_t Value() const {
    const int64_t units = milli_ / 1000;
    const int64_t rest = milli_ % 1000;
    return rest > 0 ? units + 1 : rest < 0 ? units - 1 : units;
  }
  constexpr bool IsZero() const { return milli_ == 0; }

  // Canonical text, which Parse reads back to the same value: "0"; "<n>m" when not a whole number
  // of units ("500m", "1500m"); otherwise the whole value with whichever suffix leaves the smallest
  // whole mantissa, binary (Ki..Ei, using the largest power of 1024 that divides exactly) or
  // decimal (k..E, largest power of 1000 that divides exactly), else plain digits. So 1024 is
  // "1Ki" and 4Gi is "4Gi", but 2000000000 is "2G" (not "1953125Ki") and 1000 is "1k".
  std::string ToString() const;

  constexpr Quantity& operator+=(Quantity o) {
    milli_ += o.milli_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity o) {
    milli_ -= o.milli_;
    return *this;
  }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return a += b; }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return a -= b; }
  friend constexpr auto operator<=>(Quantity a, Quantity b) = default;

 private:
  explicit constexpr Quantity(int64_t milli) : milli_(milli) {}
  int64_t milli_ = 0;
};

}  // namespace muster::common
