// Selector text (selector.h): label selector text as apimachinery's labels.Parse reads it
// (pkg/labels/selector.go) and field selector text as fields.ParseSelector reads it
// (pkg/fields/selector.go).

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_join.h"
#include "api/names.h"
#include "api/selector.h"
#include "api/selector_internal.h"
#include "api/text.h"

namespace muster::api {
namespace {

using selector_internal::Cat;
using selector_internal::Op;
using selector_internal::ParseInt64;
using selector_internal::Requirement;

// labels.Parse (apimachinery pkg/labels/selector.go), ported token for token so that what it
// accepts and the messages it refuses with are kube's: the lexer (a NUL byte reads as the end of
// the text), the parser's lookahead that reads "in" and "notin" as identifiers where a key or a
// value may stand, and the checks of NewRequirement.
enum class Tok {
  kError,
  kEnd,
  kClosePar,
  kComma,
  kNot,  // !
  kDoubleEquals,
  kEquals,
  kGreater,
  kIdentifier,
  kIn,
  kLess,
  kNotEquals,
  kNotIn,
  kOpenPar,
};

struct Scanned {
  Tok tok = Tok::kEnd;
  std::string literal;
};

std::optional<Tok> KeywordToken(std::string_view s) {
  static constexpr std::pair<std::string_view, Tok> kTokens[] = {
      {")", Tok::kClosePar},      {",", Tok::kComma},   {"!", Tok::kNot},
      {"==", Tok::kDoubleEquals}, {"=", Tok::kEquals},  {">", Tok::kGreater},
      {"in", Tok::kIn},           {"<", Tok::kLess},    {"!=", Tok::kNotEquals},
      {"notin", Tok::kNotIn},     {"(", Tok::kOpenPar},
  };
  for (const auto& [text, tok] : kTokens) {
    if (text == s) return tok;
  }
  return std::nullopt;
}

bool IsSelectorSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool IsSelectorSymbol(char c) {
  return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  Scanned Lex() {
    char c = Read();
    while (IsSelectorSpace(c)) c = Read();
    if (c == '\0') return {Tok::kEnd, ""};
    Unread();
    return IsSelectorSymbol(c) ? ScanSymbol() : ScanIdentifierOrKeyword();
  }

 private:
  char Read() { return pos_ < text_.size() ? text_[pos_++] : '\0'; }
  void Unread() { --pos_; }

  Scanned ScanIdentifierOrKeyword() {
    std::string buffer;
    while (true) {
      const char c = Read();
      if (c == '\0') break;
      if (IsSelectorSymbol(c) || IsSelectorSpace(c)) {
        Unread();
        break;
      }
      buffer.push_back(c);
    }
    std::optional<Tok> keyword = KeywordToken(buffer);
    return {keyword.value_or(Tok::kIdentifier), std::move(buffer)};
  }

  // The longest run of symbols that is a token ("!=" over "!").
  Scanned ScanSymbol() {
    std::string buffer;
    std::optional<Scanned> last;
    while (true) {
      const char c = Read();
      if (c == '\0') break;
      if (!IsSelectorSymbol(c)) {
        Unread();
        break;
      }
      buffer.push_back(c);
      if (std::optional<Tok> tok = KeywordToken(buffer)) {
        last = Scanned{*tok, buffer};
      } else if (last) {
        Unread();
        break;
      }
    }
    if (!last) return {Tok::kError, Cat("error expected: keyword found '", buffer, "'")};
    return *std::move(last);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// selection.Operator, as the parser tells them apart.
enum class KubeOp {
  kNone,
  kIn,
  kNotIn,
  kEquals,
  kDoubleEquals,
  kNotEquals,
  kGt,
  kLt,
  kExists,
  kDoesNotExist
};

// A field.Error's text: `<field>: Invalid value: "<value>": <detail>`.
std::string InvalidValue(std::string_view field, std::string_view value, std::string_view detail) {
  return Cat(field, ": Invalid value: ", GoQuote(value), ": ", detail);
}

class LabelSelectorParser {
 public:
  explicit LabelSelectorParser(std::string_view text) {
    Lexer lexer(text);
    do {
      items_.push_back(lexer.Lex());
    } while (items_.back().tok != Tok::kEnd);
  }

  absl::StatusOr<std::vector<Requirement>> Parse() {
    std::vector<Requirement> requirements;
    while (true) {
      const Scanned& next = Lookahead(kValues);
      if (next.tok == Tok::kEnd) return requirements;
      if (next.tok != Tok::kIdentifier && next.tok != Tok::kNot) {
        return Error(
            Cat("found '", next.literal, "', expected: !, identifier, or 'end of string'"));
      }
      absl::StatusOr<Requirement> requirement = ParseRequirement();
      if (!requirement.ok()) {
        return Error(
            Cat("unable to parse requirement: ", std::string(requirement.status().message())));
      }
      requirements.push_back(*std::move(requirement));
      const Scanned& after = Consume(kValues);
      if (after.tok == Tok::kEnd) return requirements;
      if (after.tok != Tok::kComma) {
        return Error(Cat("found '", after.literal, "', expected: ',' or 'end of string'"));
      }
      const Scanned& key = Lookahead(kValues);
      if (key.tok != Tok::kIdentifier && key.tok != Tok::kNot) {
        return Error(Cat("found '", key.literal, "', expected: identifier after ','"));
      }
    }
  }

 private:
  // Where values may stand, "in" and "notin" are identifiers.
  enum Context { kKeyAndOperator, kValues };

  static absl::Status Error(std::string message) {
    return absl::InvalidArgumentError(std::move(message));
  }

  Scanned Lookahead(Context context) const {
    Scanned item = items_[std::min(pos_, items_.size() - 1)];
    if (context == kValues && (item.tok == Tok::kIn || item.tok == Tok::kNotIn)) {
      item.tok = Tok::kIdentifier;
    }
    return item;
  }
  Scanned Consume(Context context) {
    Scanned item = Lookahead(context);
    ++pos_;
    return item;
  }

  absl::StatusOr<Requirement> ParseRequirement() {
    Scanned token = Consume(kValues);
    KubeOp op = KubeOp::kNone;
    if (token.tok == Tok::kNot) {
      op = KubeOp::kDoesNotExist;
      token = Consume(kValues);
    }
    if (token.tok != Tok::kIdentifier) {
      return Error(Cat("found '", token.literal, "', expected: identifier"));
    }
    const std::string key = std::move(token.literal);
    if (std::vector<std::string> errs = QualifiedNameErrors(key); !errs.empty()) {
      return Error(InvalidValue("<nil>", key, absl::StrJoin(errs, "; ")));
    }
    const Tok next = Lookahead(kValues).tok;
    if ((next == Tok::kEnd || next == Tok::kComma) && op != KubeOp::kDoesNotExist) {
      op = KubeOp::kExists;
    }
    if (op == KubeOp::kExists || op == KubeOp::kDoesNotExist) return NewRequirement(key, op, {});

    const Scanned op_token = Consume(kKeyAndOperator);
    switch (op_token.tok) {
      case Tok::kIn:
        op = KubeOp::kIn;
        break;
      case Tok::kNotIn:
        op = KubeOp::kNotIn;
        break;
      case Tok::kEquals:
        op = KubeOp::kEquals;
        break;
      case Tok::kDoubleEquals:
        op = KubeOp::kDoubleEquals;
        break;
      case Tok::kNotEquals:
        op = KubeOp::kNotEquals;
        break;
      case Tok::kGreater:
        op = KubeOp::kGt;
        break;
      case Tok::kLess:
        op = KubeOp::kLt;
        break;
      default:
        return Error(Cat("found '", op_token.literal, "', expected: in, notin, =, ==, !=, gt, lt"));
    }
    absl::StatusOr<std::set<std::string>> values =
        op == KubeOp::kIn || op == KubeOp::kNotIn ? ParseValues() : ParseExactValue();
    if (!values.ok()) return values.status();
    return NewRequirement(key, op, {values->begin(), values->end()});
  }

  // "(a,b)"; empty items are the empty value ("()" is {""}).
  absl::StatusOr<std::set<std::string>> ParseValues() {
    const Scanned open = Consume(kValues);
    if (open.tok != Tok::kOpenPar) return Error(Cat("found '", open.literal, "' expected: '('"));
    const Scanned first = Lookahead(kValues);
    switch (first.tok) {
      case Tok::kIdentifier:
      case Tok::kComma: {
        absl::StatusOr<std::set<std::string>> values = ParseIdentifierList();
        if (!values.ok()) return values;
        if (Consume(kValues).tok != Tok::kClosePar) {
          return Error(Cat("found '", first.literal, "', expected: ')'"));
        }
        return values;
      }
      case Tok::kClosePar:
        Consume(kValues);
        return std::set<std::string>{""};
      default:
        return Error(Cat("found '", first.literal, "', expected: ',', ')' or identifier"));
    }
  }

  absl::StatusOr<std::set<std::string>> ParseIdentifierList() {
    std::set<std::string> values;
    while (true) {
      const Scanned token = Consume(kValues);
      if (token.tok == Tok::kIdentifier) {
        values.insert(token.literal);
        const Scanned next = Lookahead(kValues);
        if (next.tok == Tok::kComma) continue;
        if (next.tok == Tok::kClosePar) return values;
        return Error(Cat("found '", next.literal, "', expected: ',' or ')'"));
      }
      if (token.tok != Tok::kComma) {
        return Error(Cat("found '", token.literal, "', expected: ',', or identifier"));
      }
      // "(,", ",)" and ",," stand for the empty value.
      if (values.empty()) values.insert("");
      const Tok next = Lookahead(kValues).tok;
      if (next == Tok::kClosePar) {
        values.insert("");
        return values;
      }
      if (next == Tok::kComma) values.insert("");
    }
  }

  // The value after =, == or !=; a missing one is the empty value ("a=" selects a="").
  absl::StatusOr<std::set<std::string>> ParseExactValue() {
    const Tok next = Lookahead(kValues).tok;
    if (next == Tok::kEnd || next == Tok::kComma) return std::set<std::string>{""};
    const Scanned token = Consume(kValues);
    if (token.tok == Tok::kIdentifier) return std::set<std::string>{token.literal};
    return Error(Cat("found '", token.literal, "', expected: identifier"));
  }

  // labels.NewRequirement's checks that text can fail (the key was checked already, and the
  // grammar gives every operator its number of values), aggregated as utilerrors does.
  static absl::StatusOr<Requirement> NewRequirement(const std::string& key, KubeOp op,
                                                    std::vector<std::string> values) {
    std::vector<std::string> errs;
    int64_t bound = 0;
    if (op == KubeOp::kGt || op == KubeOp::kLt) {
      for (size_t i = 0; i < values.size(); ++i) {
        std::optional<int64_t> parsed = ParseInt64(values[i]);
        if (parsed) {
          bound = *parsed;
        } else {
          errs.push_back(InvalidValue(Cat("values[", i, "]"), values[i],
                                      "for 'Gt', 'Lt' operators, the value must be an integer"));
        }
      }
    }
    for (size_t i = 0; i < values.size(); ++i) {
      if (std::vector<std::string> problems = LabelValueErrors(values[i]); !problems.empty()) {
        errs.push_back(InvalidValue(Cat("values[", i, "][", key, "]"), values[i],
                                    absl::StrJoin(problems, "; ")));
      }
    }
    if (errs.size() == 1) return Error(errs[0]);
    if (!errs.empty()) return Error(Cat("[", absl::StrJoin(errs, ", "), "]"));
    Op matcher_op = Op::kEquals;
    switch (op) {
      case KubeOp::kIn:
        matcher_op = Op::kIn;
        break;
      case KubeOp::kNotIn:
      case KubeOp::kNotEquals:  // one value: the same sets as NotIn
        matcher_op = Op::kNotIn;
        break;
      case KubeOp::kExists:
        matcher_op = Op::kExists;
        break;
      case KubeOp::kDoesNotExist:
        matcher_op = Op::kDoesNotExist;
        break;
      case KubeOp::kGt:
        matcher_op = Op::kGt;
        break;
      case KubeOp::kLt:
        matcher_op = Op::kLt;
        break;
      default:
        break;
    }
    return Requirement{key, matcher_op, std::move(values), bound};
  }

  std::vector<Scanned> items_;
  size_t pos_ = 0;
};

// fields.UnescapeValue: `\\`, `\,` and `\=` are the only escapes; a bare '=' is an error (a bare
// ',' ended the term already).
absl::StatusOr<std::string> UnescapeFieldValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    if (c == '\\') {
      if (i + 1 == value.size()) {
        return absl::InvalidArgumentError("invalid field selector: invalid escape sequence: \\");
      }
      const char next = value[i + 1];
      if (next != '\\' && next != ',' && next != '=') {
        // The escaped character whole (U+FFFD for a byte that is not UTF-8, as Go decodes it).
        const size_t len = Utf8SequenceLength(value, i + 1);
        return absl::InvalidArgumentError(
            Cat("invalid field selector: invalid escape sequence: \\",
                len == 0 ? std::string_view("\uFFFD") : value.substr(i + 1, len)));
      }
      out.push_back(next);
      ++i;
    } else if (c == '=' || c == ',') {
      // Go formats the rune as its number.
      return absl::InvalidArgumentError(
          Cat("invalid field selector: unescaped character in value: ", static_cast<int>(c)));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<LabelSelectorMatcher> LabelSelectorMatcher::Parse(std::string_view text) {
  absl::StatusOr<std::vector<Requirement>> requirements = LabelSelectorParser(text).Parse();
  if (!requirements.ok()) return requirements.status();
  LabelSelectorMatcher matcher;
  matcher.requirements_ = *std::move(requirements);
  std::stable_sort(matcher.requirements_.begin(), matcher.requirements_.end(),
                   [](const Requirement& a, const Requirement& b) { return a.key < b.key; });
  return matcher;
}

absl::StatusOr<std::vector<FieldRequirement>> ParseFieldSelector(std::string_view text) {
  std::vector<std::string_view> terms;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == ',') {
      terms.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  terms.push_back(text.substr(std::min(start, text.size())));
  // fields.ParseSelector sorts the terms first: its error names the first bad one in that order.
  std::sort(terms.begin(), terms.end());

  std::vector<FieldRequirement> requirements;
  for (std::string_view term : terms) {
    if (term.empty()) continue;
    size_t op_at = term.find_first_of("!=");
    while (op_at != std::string_view::npos && term[op_at] == '!' &&
           (op_at + 1 == term.size() || term[op_at + 1] != '=')) {
      op_at = term.find_first_of("!=", op_at + 1);
    }
    if (op_at == std::string_view::npos) {
      return absl::InvalidArgumentError(
          Cat("invalid selector: '", text, "'; can't understand '", term, "'"));
    }
    FieldRequirement requirement;
    requirement.field = std::string(term.substr(0, op_at));
    size_t op_length = 1;
    if (term[op_at] == '!') {
      requirement.equal = false;
      op_length = 2;
    } else if (op_at + 1 < term.size() && term[op_at + 1] == '=') {
      op_length = 2;
    }
    absl::StatusOr<std::string> value = UnescapeFieldValue(term.substr(op_at + op_length));
    if (!value.ok()) return value.status();
    requirement.value = *std::move(value);
    requirements.push_back(std::move(requirement));
  }
  return requirements;
}

bool MatchesFieldSelector(const std::vector<FieldRequirement>& requirements,
                          const StringMap& fields) {
  return std::all_of(requirements.begin(), requirements.end(), [&](const FieldRequirement& r) {
    auto it = fields.find(r.field);
    std::string_view actual =
        it == fields.end() ? std::string_view() : std::string_view(it->second);
    return (actual == r.value) == r.equal;
  });
}

}  // namespace muster::api
