#include "common/quantity.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "fmt/format.h"

namespace muster::common {
namespace {

// The grammar resource.ParseQuantity reports when the text is not a number followed by a suffix.
constexpr std::string_view kQuantityRegex = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";

// Exponents are clamped to this magnitude: any larger one either overflows or rounds the value to
// one milli unit, so the exact figure no longer matters, and clamping keeps the arithmetic on
// exponents and digit counts far from int64 overflow.
constexpr int64_t kMaxExponent = 1'000'000'000'000'000;

// A quantity's value is its digits times 10^decimal_exponent times 2^binary_exponent.
struct Scale {
  int64_t decimal_exponent = 0;
  int binary_exponent = 0;
};

struct NamedSuffix {
  std::string_view text;
  Scale scale;
};

constexpr std::array<NamedSuffix, 16> kSuffixes = {{
    {"n", {-9, 0}},
    {"u", {-6, 0}},
    {"m", {-3, 0}},
    {"", {0, 0}},
    {"k", {3, 0}},
    {"M", {6, 0}},
    {"G", {9, 0}},
    {"T", {12, 0}},
    {"P", {15, 0}},
    {"E", {18, 0}},
    {"Ki", {0, 10}},
    {"Mi", {0, 20}},
    {"Gi", {0, 30}},
    {"Ti", {0, 40}},
    {"Pi", {0, 50}},
    {"Ei", {0, 60}},
}};

// Largest first, for ToString.
constexpr std::array<NamedSuffix, 6> kBinarySuffixes = {{
    {"Ei", {0, 60}},
    {"Pi", {0, 50}},
    {"Ti", {0, 40}},
    {"Gi", {0, 30}},
    {"Mi", {0, 20}},
    {"Ki", {0, 10}},
}};
constexpr std::array<NamedSuffix, 6> kDecimalSuffixes = {{
    {"E", {18, 0}},
    {"P", {15, 0}},
    {"T", {12, 0}},
    {"G", {9, 0}},
    {"M", {6, 0}},
    {"k", {3, 0}},
}};

// The input in double quotes, C-escaped so that an error stays one printable line.
std::string Quoted(std::string_view text) {
  // This absl may be built with its own string_view type, so convert explicitly.
  return fmt::format("\"{}\"", absl::CEscape(absl::string_view(text.data(), text.size())));
}

absl::Status Invalid(std::string_view text, std::string_view problem) {
  return absl::InvalidArgumentError(fmt::format("quantity {}: {}", Quoted(text), problem));
}

// 10^exponent, for 0 <= exponent <= 19.
uint64_t PowerOfTen(int64_t exponent) {
  uint64_t power = 1;
  for (int64_t i = 0; i < exponent; ++i) power *= 10;
  return power;
}

// Reads "e<int>" / "E<int>" with an optional sign on the integer, clamping to kMaxExponent.
std::optional<int64_t> ParseExponent(std::string_view suffix) {
  if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) return std::nullopt;
  std::string_view digits = suffix.substr(1);
  bool negative = false;
  if (digits[0] == '+' || digits[0] == '-') {
    negative = digits[0] == '-';
    digits.remove_prefix(1);
  }
  if (digits.empty()) return std::nullopt;
  int64_t exponent = 0;
  for (char c : digits) {
    if (!absl::ascii_isdigit(c)) return std::nullopt;
    exponent = exponent * 10 + (c - '0');
    if (exponent > kMaxExponent) exponent = kMaxExponent;
  }
  return negative ? -exponent : exponent;
}

std::optional<Scale> ParseSuffix(std::string_view suffix) {
  for (const NamedSuffix& named : kSuffixes) {
    if (named.text == suffix) return named.scale;
  }
  if (std::optional<int64_t> exponent = ParseExponent(suffix)) return Scale{*exponent, 0};
  return std::nullopt;
}

// digits *= factor, for a decimal string (most significant digit first) and factor <= 2^30.
void MultiplyDigits(std::string& digits, uint64_t factor) {
  uint64_t carry = 0;
  for (size_t i = digits.size(); i-- > 0;) {
    const uint64_t product = static_cast<uint64_t>(digits[i] - '0') * factor + carry;
    digits[i] = static_cast<char>('0' + product % 10);
    carry = product / 10;
  }
  std::string head;
  for (; carry > 0; carry /= 10) head.insert(head.begin(), static_cast<char>('0' + carry % 10));
  digits.insert(0, head);
}

// ceil(digits * 10^exponent), for a non-empty decimal string with no leading zero (so a non-zero
// value); nullopt when it has more than 19 integer digits, which is above any int64 magnitude.
// The result is at most 10^19, so it fits.
std::optional<uint64_t> RoundUpScaled(std::string_view digits, int64_t exponent) {
  const int64_t integer_digits = static_cast<int64_t>(digits.size()) + exponent;
  if (integer_digits > std::numeric_limits<uint64_t>::digits10) return std::nullopt;
  uint64_t value = 0;
  for (int64_t i = 0; i < integer_digits; ++i) {
    const auto index = static_cast<size_t>(i);
    value = value * 10 + (index < digits.size() ? static_cast<uint64_t>(digits[index] - '0') : 0);
  }
  const size_t fraction_start = integer_digits > 0 ? static_cast<size_t>(integer_digits) : 0;
  if (fraction_start < digits.size() &&
      digits.substr(fraction_start).find_first_not_of('0') != std::string_view::npos) {
    ++value;
  }
  return value;
}

}  // namespace

absl::StatusOr<Quantity> Quantity::Parse(std::string_view text) {
  if (text.empty()) return Invalid(text, "empty");

  std::string_view rest = text;
  bool negative = false;
  if (rest[0] == '+' || rest[0] == '-') {
    negative = rest[0] == '-';
    rest.remove_prefix(1);
  }
  size_t number_size = rest.find_first_not_of("0123456789.");
  if (number_size == std::string_view::npos) number_size = rest.size();
  const std::string_view number = rest.substr(0, number_size);
  const std::string_view suffix_text = rest.substr(number_size);
  if (number.empty()) {
    return Invalid(text, fmt::format("must match the regular expression '{}'", kQuantityRegex));
  }
  const size_t point = number.find('.');
  const std::string_view whole = number.substr(0, point);
  const std::string_view fraction =
      point == std::string_view::npos ? std::string_view() : number.substr(point + 1);
  if (fraction.find('.') != std::string_view::npos) {
    return Invalid(text, "more than one decimal point");
  }
  if (whole.empty() && fraction.empty()) return Invalid(text, "no digits");

  const std::optional<Scale> scale = ParseSuffix(suffix_text);
  if (!scale) return Invalid(text, fmt::format("unknown suffix {}", Quoted(suffix_text)));

  // The value in milli units is digits * 10^exponent * 2^binary_exponent, with the decimal point
  // folded into the exponent.
  std::string digits = fmt::format("{}{}", whole, fraction);
  digits.erase(0, digits.find_first_not_of('0'));
  if (digits.empty()) return Quantity();
  const int64_t exponent = scale->decimal_exponent - static_cast<int64_t>(fraction.size()) + 3;
  for (int left = scale->binary_exponent; left > 0; left -= 30) {
    MultiplyDigits(digits, uint64_t{1} << (left < 30 ? left : 30));
  }

  // Negation of the most negative int64 does not fit, hence the asymmetric limits.
  const uint64_t limit = negative ? uint64_t{1} << 63 : std::numeric_limits<int64_t>::max();
  const std::optional<uint64_t> magnitude = RoundUpScaled(digits, exponent);
  if (!magnitude || *magnitude > limit) {
    return Invalid(text, fmt::format("out of range: the limit is {}{}m (about 9.2e15 units)",
                                     negative ? "-" : "", limit));
  }
  // Two's complement: 0 - magnitude is the negative value, including -2^63.
  return Quantity(static_cast<int64_t>(negative ? uint64_t{0} - *magnitude : *magnitude));
}

std::string Quantity::ToString() const {
  const std::string_view sign = milli_ < 0 ? "-" : "";
  const uint64_t magnitude =
      milli_ < 0 ? uint64_t{0} - static_cast<uint64_t>(milli_) : static_cast<uint64_t>(milli_);
  if (magnitude == 0) return "0";
  if (magnitude % 1000 != 0) return fmt::format("{}{}m", sign, magnitude);
  const uint64_t units = magnitude / 1000;

  uint64_t best_mantissa = units;
  std::string_view best_suffix;
  for (const NamedSuffix& named : kBinarySuffixes) {
    const uint64_t divisor = uint64_t{1} << named.scale.binary_exponent;
    if (units % divisor == 0) {
      best_mantissa = units / divisor;
      best_suffix = named.text;
      break;
    }
  }
  for (const NamedSuffix& named : kDecimalSuffixes) {
    const uint64_t divisor = PowerOfTen(named.scale.decimal_exponent);
    if (units % divisor == 0) {
      if (units / divisor < best_mantissa) {
        best_mantissa = units / divisor;
        best_suffix = named.text;
      }
      break;
    }
  }
  return fmt::format("{}{}{}", sign, best_mantissa, best_suffix);
}

}  // namespace muster::common
