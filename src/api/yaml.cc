#include "api/yaml.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "api/text.h"
#include "boost/json/array.hpp"
#include "boost/json/object.hpp"
#include "boost/json/string.hpp"
#include "common/strings.h"
#include "fmt/format.h"
#include "yaml-cpp/eventhandler.h"
#include "yaml-cpp/yaml.h"

namespace muster::api {
namespace {

using boost::json::array;
using boost::json::object;
using boost::json::value;

using common::Cat;

constexpr std::string_view kStandardTagPrefix = "tag:yaml.org,2002:";

absl::Status ErrorAt(const YAML::Mark& mark, std::string_view message) {
  if (mark.is_null()) return absl::InvalidArgumentError(std::string(message));
  return absl::InvalidArgumentError(Cat("line ", mark.line + 1, ": ", message));
}

// The YAML 1.1 words go-yaml v2 resolves before trying numbers.
struct Word {
  std::string_view text;
  enum { kTrue, kFalse, kNull, kNaN, kPlusInf, kMinusInf } meaning;
};
constexpr auto kWords = std::to_array<Word>({
    {"y", Word::kTrue},         {"Y", Word::kTrue},         {"yes", Word::kTrue},
    {"Yes", Word::kTrue},       {"YES", Word::kTrue},       {"true", Word::kTrue},
    {"True", Word::kTrue},      {"TRUE", Word::kTrue},      {"on", Word::kTrue},
    {"On", Word::kTrue},        {"ON", Word::kTrue},        {"n", Word::kFalse},
    {"N", Word::kFalse},        {"no", Word::kFalse},       {"No", Word::kFalse},
    {"NO", Word::kFalse},       {"false", Word::kFalse},    {"False", Word::kFalse},
    {"FALSE", Word::kFalse},    {"off", Word::kFalse},      {"Off", Word::kFalse},
    {"OFF", Word::kFalse},      {"~", Word::kNull},         {"null", Word::kNull},
    {"Null", Word::kNull},      {"NULL", Word::kNull},      {".nan", Word::kNaN},
    {".NaN", Word::kNaN},       {".NAN", Word::kNaN},       {".inf", Word::kPlusInf},
    {".Inf", Word::kPlusInf},   {".INF", Word::kPlusInf},   {"+.inf", Word::kPlusInf},
    {"+.Inf", Word::kPlusInf},  {"+.INF", Word::kPlusInf},  {"-.inf", Word::kMinusInf},
    {"-.Inf", Word::kMinusInf}, {"-.INF", Word::kMinusInf},
});

// strconv.ParseInt(text, 0, 64), falling back to ParseUint: an optional sign, then a 0x/0o/0b
// prefix, a leading 0 (octal) or decimal digits.
std::optional<value> ParseGoInteger(std::string_view text) {
  bool negative = false;
  bool signed_text = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    signed_text = true;
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  uint64_t base = 10;
  if (text.size() >= 2 && text[0] == '0') {
    switch (text[1] | 0x20) {
      case 'x':
        base = 16;
        text.remove_prefix(2);
        break;
      case 'o':
        base = 8;
        text.remove_prefix(2);
        break;
      case 'b':
        base = 2;
        text.remove_prefix(2);
        break;
      default:
        base = 8;
        text.remove_prefix(1);
        break;
    }
  }
  if (text.empty()) return std::nullopt;
  uint64_t magnitude = 0;
  for (char c : text) {
    uint64_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<uint64_t>(c - '0');
    } else if (const char lower = static_cast<char>(c | 0x20); lower >= 'a' && lower <= 'f') {
      digit = static_cast<uint64_t>(lower - 'a') + 10;
    } else {
      return std::nullopt;
    }
    if (digit >= base) return std::nullopt;
    if (magnitude > (std::numeric_limits<uint64_t>::max() - digit) / base) return std::nullopt;
    magnitude = magnitude * base + digit;
  }
  constexpr uint64_t kInt64Max = std::numeric_limits<int64_t>::max();
  if (negative) {
    if (magnitude > kInt64Max + 1) return std::nullopt;
    return value(static_cast<int64_t>(uint64_t{0} - magnitude));
  }
  if (magnitude <= kInt64Max) return value(static_cast<int64_t>(magnitude));
  if (signed_text) return std::nullopt;  // ParseUint takes no sign
  return value(magnitude);
}

size_t CountDigits(std::string_view text, size_t from) {
  size_t end = from;
  while (end < text.size() && text[end] >= '0' && text[end] <= '9') ++end;
  return end - from;
}

// go-yaml's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
bool IsYamlStyleFloat(std::string_view text) {
  size_t i = 0;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  const size_t whole = CountDigits(text, i);
  i += whole;
  if (i < text.size() && text[i] == '.') {
    const size_t fraction = CountDigits(text, i + 1);
    if (whole == 0 && fraction == 0) return false;
    i += 1 + fraction;
  } else if (whole == 0) {
    return false;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    const size_t exponent = CountDigits(text, i);
    if (exponent == 0) return false;
    i += exponent;
  }
  return i == text.size();
}

// strconv.ParseFloat for text that passed IsYamlStyleFloat; nullopt when out of range, where Go
// reports ErrRange and go-yaml falls back to a string.
std::optional<value> ParseYamlFloat(std::string_view text) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  double parsed = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), parsed);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value(parsed);
}

// How go-yaml v2 types a plain scalar: a YAML 1.1 word, an integer, a float, else the string.
value ResolvePlain(std::string_view text) {
  for (const Word& word : kWords) {
    if (word.text != text) continue;
    switch (word.meaning) {
      case Word::kTrue:
        return value(true);
      case Word::kFalse:
        return value(false);
      case Word::kNull:
        return value(nullptr);
      case Word::kNaN:
        return value(std::numeric_limits<double>::quiet_NaN());
      case Word::kPlusInf:
        return value(std::numeric_limits<double>::infinity());
      case Word::kMinusInf:
        return value(-std::numeric_limits<double>::infinity());
    }
  }
  if (text.empty()) return value(nullptr);
  const char first = text[0];
  if (first == '+' || first == '-' || (first >= '0' && first <= '9')) {
    std::string plain(text);
    std::erase(plain, '_');
    if (std::optional<value> integer = ParseGoInteger(plain)) return *std::move(integer);
    if (IsYamlStyleFloat(plain)) {
      if (std::optional<value> number = ParseYamlFloat(plain)) return *std::move(number);
    }
  } else if (first == '.' && IsYamlStyleFloat(text)) {
    if (std::optional<value> number = ParseYamlFloat(text)) return *std::move(number);
  }
  return value(text);
}

std::string_view ShortTagOf(const value& v) {
  if (v.is_null()) return "!!null";
  if (v.is_bool()) return "!!bool";
  if (v.is_int64() || v.is_uint64()) return "!!int";
  if (v.is_double()) return "!!float";
  return "!!str";
}

// A scalar with its tag: "!" is a quoted or block scalar, "?" (or none) a plain one, otherwise an
// explicit tag.
absl::StatusOr<value> ResolveScalar(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  const std::string& tag = node.Tag();
  value resolved;
  if (tag == "?" || tag.empty()) {
    resolved = ResolvePlain(text);
  } else if (tag.starts_with(kStandardTagPrefix)) {
    const std::string_view wanted = std::string_view(tag).substr(kStandardTagPrefix.size());
    if (wanted == "str" || wanted == "binary" || wanted == "timestamp") return value(text);
    if (wanted != "null" && wanted != "bool" && wanted != "int" && wanted != "float") {
      return value(text);
    }
    resolved = ResolvePlain(text);
    const std::string_view got = ShortTagOf(resolved).substr(2);
    if (wanted == "float" && got == "int") {
      resolved = value(resolved.is_int64() ? static_cast<double>(resolved.get_int64())
                                           : static_cast<double>(resolved.get_uint64()));
    } else if (got != wanted) {
      return ErrorAt(node.Mark(),
                     Cat("cannot decode ", ShortTagOf(resolved), " `", text, "` as a !!", wanted));
    }
  } else {
    return value(text);  // "!" and application tags: the text itself
  }
  if (resolved.is_double() && !std::isfinite(resolved.get_double())) {
    return ErrorAt(node.Mark(), Cat("`", text, "` is not a number JSON can represent"));
  }
  return resolved;
}

// strconv.FormatFloat(f, 'g', -1, 32): the shortest float32 digits, in exponent form when the
// decimal exponent is below -4 or at least 6.
std::string FormatGoFloat32(double number) {
  if (std::isnan(number)) return ".nan";
  if (std::isinf(number)) return number > 0 ? ".inf" : "-.inf";
  const float single = static_cast<float>(number);
  // Beyond float32's range the value is infinite, as strconv writes it.
  if (std::isinf(single)) return single > 0 ? "+Inf" : "-Inf";
  std::array<char, 64> buffer;
  const auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), single,
                                    std::chars_format::scientific);
  const std::string_view scientific(buffer.data(), static_cast<size_t>(result.ptr - buffer.data()));
  const size_t e = scientific.find('e');
  std::string_view mantissa = scientific.substr(0, e);
  int exponent = 0;
  std::from_chars(scientific.data() + e + (scientific[e + 1] == '+' ? 2 : 1),
                  scientific.data() + scientific.size(), exponent);
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.remove_prefix(1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  std::string out = negative ? "-" : "";
  if (exponent < -4 || exponent >= 6) {
    out += Cat(digits.substr(0, 1), digits.size() > 1 ? "." : "", digits.substr(1), "e",
               exponent < 0 ? "-" : "+", std::abs(exponent) < 10 ? "0" : "", std::abs(exponent));
  } else if (exponent < 0) {
    out += Cat("0.", std::string(static_cast<size_t>(-exponent - 1), '0'), digits);
  } else {
    const size_t point = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= point) {
      out += Cat(digits, std::string(point - digits.size(), '0'));
    } else {
      out += Cat(digits.substr(0, point), ".", digits.substr(point));
    }
  }
  return out;
}

bool IsMergeKey(const YAML::Node& key) {
  return key.IsScalar() && ((key.Tag() == "?" && key.Scalar() == "<<") ||
                            key.Tag() == Cat(kStandardTagPrefix, "merge"));
}

// One conversion, carrying the alias-expansion budget.
size_t FirstInvalidUtf8Line(std::string_view text);

// What yaml-cpp makes of a scalar need not be UTF-8 even when the text is: 0.7 decodes the escapes
// \N and \_ (and a NUL before N in a plain scalar, by way of its own escaping) to the single
// Latin-1 bytes 0x85 and 0xA0. The store must never keep such a string: every later response
// carrying it would be JSON that does not parse (found by fuzz/handlers_fuzz).
absl::Status CheckUtf8(const YAML::Node& node, std::string_view text, std::string_view what) {
  if (FirstInvalidUtf8Line(text) == 0) return absl::OkStatus();
  return ErrorAt(node.Mark(), Cat(what, " is not valid UTF-8 once its escapes are decoded"));
}

class Converter {
 public:
  explicit Converter(const YamlLimits& limits) : limits_(limits) {}

  absl::StatusOr<value> Convert(const YAML::Node& node) {
    if (alias_depth_ > 0 && ++alias_values_ > limits_.max_alias_values) {
      return ErrorAt(node.Mark(), Cat("aliases expand the document by more than ",
                                      limits_.max_alias_values, " values"));
    }
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return value(nullptr);
      case YAML::NodeType::Scalar: {
        absl::StatusOr<value> scalar = ResolveScalar(node);
        if (scalar.ok() && scalar->is_string()) {
          if (absl::Status s = CheckUtf8(node, scalar->get_string(), "a string"); !s.ok()) return s;
        }
        return scalar;
      }
      case YAML::NodeType::Sequence:
      case YAML::NodeType::Map:
        break;
    }
    // yaml-cpp resolves an alias to the anchored node itself, so a collection met again starts
    // at a position already seen; each collection node has its own start position.
    const bool again = !node.Mark().is_null() && !seen_collections_.insert(node.Mark().pos).second;
    // An alias inside the collection it names ("a: &a [*a]") would recurse forever, and very deep
    // nesting would exhaust the stack: both are refused.
    for (const YAML::Node& ancestor : ancestors_) {
      if (ancestor.is(node)) {
        return ErrorAt(node.Mark(), "an alias refers to a collection that contains it");
      }
    }
    if (ancestors_.size() >= kMaxDepth) {
      return ErrorAt(node.Mark(), Cat("nesting deeper than ", kMaxDepth, " levels"));
    }
    ancestors_.push_back(node);
    if (again) ++alias_depth_;
    absl::StatusOr<value> converted = node.IsMap() ? ConvertMap(node) : ConvertSequence(node);
    if (again) --alias_depth_;
    ancestors_.pop_back();
    return converted;
  }

 private:
  absl::StatusOr<value> ConvertSequence(const YAML::Node& node) {
    array out;
    out.reserve(node.size());
    for (const YAML::Node& element : node) {
      absl::StatusOr<value> converted = Convert(element);
      if (!converted.ok()) return converted.status();
      out.push_back(*std::move(converted));
    }
    return value(std::move(out));
  }

  // Explicit keys first (a repeated key keeps its last value), then the merged maps in order,
  // each adding only the keys not yet present: the YAML merge-key rule.
  absl::StatusOr<value> ConvertMap(const YAML::Node& node) {
    object out;
    std::vector<YAML::Node> merged;
    for (const auto& entry : node) {
      if (IsMergeKey(entry.first)) {
        merged.push_back(entry.second);
        continue;
      }
      absl::StatusOr<std::string> key = KeyText(entry.first);
      if (!key.ok()) return key.status();
      if (absl::Status s = CheckUtf8(entry.first, *key, "a key"); !s.ok()) return s;
      absl::StatusOr<value> converted = Convert(entry.second);
      if (!converted.ok()) return converted.status();
      out[*key] = *std::move(converted);
    }
    for (const YAML::Node& source : merged) {
      std::vector<YAML::Node> maps;
      if (source.IsSequence()) {
        for (const YAML::Node& element : source) maps.push_back(element);
      } else {
        maps.push_back(source);
      }
      for (const YAML::Node& map : maps) {
        if (!map.IsMap()) {
          return ErrorAt(map.Mark(), "a merge key (<<) needs a map or a sequence of maps");
        }
        absl::StatusOr<value> converted = Convert(map);
        if (!converted.ok()) return converted.status();
        for (boost::json::key_value_pair& entry : converted->get_object()) {
          if (!out.contains(entry.key())) out.emplace(entry.key(), std::move(entry.value()));
        }
      }
    }
    return value(std::move(out));
  }

  // JSON keys are strings; sigs.k8s.io/yaml turns numeric and boolean keys into their text.
  absl::StatusOr<std::string> KeyText(const YAML::Node& key) {
    if (!key.IsScalar()) {
      return ErrorAt(key.Mark(), key.IsNull() ? "a map key may not be null"
                                              : "a map key must be a scalar, not a collection");
    }
    absl::StatusOr<value> resolved = ResolveScalar(key);
    if (!resolved.ok()) return resolved.status();
    switch (resolved->kind()) {
      case boost::json::kind::string:
        return std::string(resolved->get_string());
      case boost::json::kind::int64:
        return Cat(resolved->get_int64());
      case boost::json::kind::uint64:
        return Cat(resolved->get_uint64());
      case boost::json::kind::double_:
        return FormatGoFloat32(resolved->get_double());
      case boost::json::kind::bool_:
        return std::string(resolved->get_bool() ? "true" : "false");
      default:
        break;
    }
    return ErrorAt(key.Mark(), "a map key may not be null");
  }

  const YamlLimits& limits_;
  std::unordered_set<int> seen_collections_;  // Mark().pos of each map and sequence converted
  static constexpr size_t kMaxDepth = 512;
  std::vector<YAML::Node> ancestors_;  // the collections being converted, outermost first
  int alias_depth_ = 0;  // how many collections met again enclose the node being converted
  size_t alias_values_ = 0;
};

}  // namespace

absl::StatusOr<value> YamlToJson(const YAML::Node& node, const YamlLimits& limits) {
  try {
    return Converter(limits).Convert(node);
  } catch (const YAML::Exception& e) {
    return ErrorAt(e.mark, e.msg);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(Cat("converting YAML to JSON: ", e.what()));
  }
}

namespace {

// Counts documents without building them.
class DocumentCounter : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override { ++documents; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
  size_t documents = 0;
};

// The line of the first byte that is not valid UTF-8, or 0 when the text is valid. Valid as RFC
// 3629 (and Boost.JSON, which later parses what the store keeps) means it (Utf8SequenceLength).
size_t FirstInvalidUtf8Line(std::string_view text) {
  size_t line = 1;
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '\n') ++line;
    const size_t len = Utf8SequenceLength(text, i);
    if (len == 0) return line;
    i += len;
  }
  return 0;
}

}  // namespace

absl::StatusOr<std::vector<value>> ParseYamlDocuments(std::string_view text,
                                                      const YamlLimits& limits) {
  // JSON text must be UTF-8, and so must everything the store keeps.
  if (size_t line = FirstInvalidUtf8Line(text); line != 0) {
    return absl::InvalidArgumentError(Cat("line ", line, ": invalid UTF-8"));
  }
  std::vector<YAML::Node> documents;
  try {
    // yaml-cpp 0.7 can report documents forever on some malformed input (a lone ","): count
    // them first and stop once they outnumber the bytes, which no real stream can do.
    {
      std::string copy(text);
      std::istringstream in(copy);
      YAML::Parser parser(in);
      DocumentCounter counter;
      while (parser.HandleNextDocument(counter)) {
        if (counter.documents > text.size() + 1) {
          return absl::InvalidArgumentError("line 1: malformed YAML: the stream never ends");
        }
      }
    }
    documents = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    return ErrorAt(e.mark, e.msg);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(Cat("line 1: parsing YAML: ", e.what()));
  }
  std::vector<value> out;
  for (const YAML::Node& document : documents) {
    absl::StatusOr<value> converted = YamlToJson(document, limits);
    if (!converted.ok()) return converted.status();
    if (!converted->is_null()) out.push_back(*std::move(converted));
  }
  return out;
}

}  // namespace muster::api
