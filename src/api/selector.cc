#include "api/selector.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/str_join.h"
#include "api/names.h"
#include "api/text.h"
#include "fmt/format.h"

namespace muster::api {
namespace {

using Op = LabelSelectorMatcher::Op;
using Requirement = LabelSelectorMatcher::Requirement;

// absl::StrCat here takes absl::string_view, which is not std::string_view in this build.
template <typename... Args>
std::string Cat(const Args&... args) {
  std::string out;
  (fmt::format_to(std::back_inserter(out), "{}", args), ...);
  return out;
}

constexpr size_t kMaxLabelNameLength = 63;
constexpr size_t kMaxDnsSubdomainLength = 253;

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], the shape of label names and non-empty values.
bool IsLabelToken(std::string_view s) {
  if (s.empty() || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '_' || c == '.'; });
}

bool IsDns1123Label(std::string_view s) {
  auto lower_alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (s.empty() || !lower_alnum(s.front()) || !lower_alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return lower_alnum(c) || c == '-'; });
}

bool IsDns1123Subdomain(std::string_view s) {
  if (s.empty() || s.size() > kMaxDnsSubdomainLength) return false;
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    if (!IsDns1123Label(s.substr(start, dot == std::string_view::npos ? dot : dot - start))) {
      return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

// What is wrong with a label key, or nullptr when nothing is (validation.IsQualifiedName).
const char* LabelKeyProblem(std::string_view key) {
  std::string_view name = key;
  size_t slash = key.find('/');
  if (slash != std::string_view::npos) {
    if (key.find('/', slash + 1) != std::string_view::npos) {
      return "a qualified name must consist of an optional DNS subdomain prefix and '/' and a "
             "name (e.g. 'example.com/MyName')";
    }
    std::string_view prefix = key.substr(0, slash);
    if (prefix.empty()) return "prefix part must be non-empty";
    if (!IsDns1123Subdomain(prefix)) {
      return "prefix part must be a lowercase RFC 1123 subdomain of at most 253 characters";
    }
    name = key.substr(slash + 1);
  }
  if (name.empty()) return "name part must be non-empty";
  if (name.size() > kMaxLabelNameLength) return "name part must be no more than 63 characters";
  if (!IsLabelToken(name)) {
    return "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
           "and end with an alphanumeric character";
  }
  return nullptr;
}

const char* LabelValueProblem(std::string_view value) {
  if (value.size() > kMaxLabelNameLength) return "must be no more than 63 characters";
  if (!value.empty() && !IsLabelToken(value)) {
    return "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
           "with an alphanumeric character";
  }
  return nullptr;
}

// strconv.ParseInt(s, 10, 64): an optional sign, then one or more decimal digits, in range.
std::optional<int64_t> ParseInt64(std::string_view s) {
  if (!s.empty() && s.front() == '+') {
    s.remove_prefix(1);
    if (!s.empty() && s.front() == '-') return std::nullopt;
  }
  if (s.empty()) return std::nullopt;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value, 10);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<Op> ParseLabelSelectorOp(std::string_view op) {
  if (op == "In") return Op::kIn;
  if (op == "NotIn") return Op::kNotIn;
  if (op == "Exists") return Op::kExists;
  if (op == "DoesNotExist") return Op::kDoesNotExist;
  return std::nullopt;
}

std::optional<Op> ParseNodeSelectorOp(std::string_view op) {
  if (op == "Gt") return Op::kGt;
  if (op == "Lt") return Op::kLt;
  return ParseLabelSelectorOp(op);
}

// labels.NewRequirement's checks. Returns the Gt/Lt bound (0 for other operators).
absl::StatusOr<int64_t> CheckRequirement(const std::string& key, Op op,
                                         const std::vector<std::string>& values) {
  if (const char* problem = LabelKeyProblem(key)) {
    return absl::InvalidArgumentError(Cat("key \"", key, "\": ", problem));
  }
  int64_t bound = 0;
  switch (op) {
    case Op::kEquals:
      if (values.size() != 1) {
        return absl::InvalidArgumentError(
            Cat("key \"", key, "\": exact match requires exactly one value"));
      }
      break;
    case Op::kIn:
    case Op::kNotIn:
      if (values.empty()) {
        return absl::InvalidArgumentError(
            Cat("key \"", key, "\": values must be non-empty for operators In and NotIn"));
      }
      break;
    case Op::kExists:
    case Op::kDoesNotExist:
      if (!values.empty()) {
        return absl::InvalidArgumentError(
            Cat("key \"", key, "\": values must be empty for operators Exists and DoesNotExist"));
      }
      break;
    case Op::kGt:
    case Op::kLt: {
      if (values.size() != 1) {
        return absl::InvalidArgumentError(
            Cat("key \"", key, "\": operators Gt and Lt require exactly one value"));
      }
      std::optional<int64_t> parsed = ParseInt64(values[0]);
      if (!parsed) {
        return absl::InvalidArgumentError(
            Cat("key \"", key, "\": value \"", values[0], "\" for Gt or Lt must be an integer"));
      }
      bound = *parsed;
      break;
    }
  }
  for (const std::string& value : values) {
    if (const char* problem = LabelValueProblem(value)) {
      return absl::InvalidArgumentError(Cat("key \"", key, "\": value \"", value, "\" ", problem));
    }
  }
  return bound;
}

absl::StatusOr<Requirement> MakeRequirement(const std::string& key, Op op,
                                            const std::vector<std::string>& values) {
  absl::StatusOr<int64_t> bound = CheckRequirement(key, op, values);
  if (!bound.ok()) return bound.status();
  Requirement requirement{key, op, values, *bound};
  std::sort(requirement.values.begin(), requirement.values.end());
  requirement.values.erase(std::unique(requirement.values.begin(), requirement.values.end()),
                           requirement.values.end());
  return requirement;
}

bool Contains(const std::vector<std::string>& values, const std::string& value) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

// labels.Requirement.Matches. `bound` is the parsed Gt/Lt value.
bool RequirementMatches(const std::string& key, Op op, const std::vector<std::string>& values,
                        int64_t bound, const StringMap& labels) {
  auto it = labels.find(key);
  bool present = it != labels.end();
  switch (op) {
    case Op::kEquals:
    case Op::kIn:
      return present && Contains(values, it->second);
    case Op::kNotIn:
      return !present || !Contains(values, it->second);
    case Op::kExists:
      return present;
    case Op::kDoesNotExist:
      return !present;
    case Op::kGt:
    case Op::kLt: {
      if (!present) return false;
      std::optional<int64_t> label_value = ParseInt64(it->second);
      if (!label_value) return false;
      return op == Op::kGt ? *label_value > bound : *label_value < bound;
    }
  }
  return false;
}

bool RequirementMatches(const Requirement& r, const StringMap& labels) {
  return RequirementMatches(r.key, r.op, r.values, r.bound, labels);
}

// extractNodeFields: metadata.name is the only node field; any other reads as "".
std::string_view NodeField(const Node& node, std::string_view field) {
  return field == kNodeNameField ? std::string_view(node.meta.name) : std::string_view();
}

std::string RequirementString(const Requirement& r) {
  switch (r.op) {
    case Op::kEquals:
      return Cat(r.key, "=", r.values.empty() ? "" : r.values[0]);
    case Op::kIn:
      return Cat(r.key, " in (", absl::StrJoin(r.values, ","), ")");
    case Op::kNotIn:
      return Cat(r.key, " notin (", absl::StrJoin(r.values, ","), ")");
    case Op::kExists:
      return r.key;
    case Op::kDoesNotExist:
      return Cat("!", r.key);
    case Op::kGt:
      return Cat(r.key, ">", r.values.empty() ? "" : r.values[0]);
    case Op::kLt:
      return Cat(r.key, "<", r.values.empty() ? "" : r.values[0]);
  }
  return r.key;
}

bool IsEmptyTerm(const NodeSelectorTerm& term) {
  return term.match_expressions.empty() && term.match_fields.empty();
}

absl::Status CheckFieldRequirement(const NodeSelectorRequirement& field) {
  if (field.values.size() != 1) {
    return absl::InvalidArgumentError(
        Cat("field \"", field.key, "\": operators In and NotIn take exactly one value on fields"));
  }
  if (field.op != "In" && field.op != "NotIn") {
    return absl::InvalidArgumentError(
        Cat("field \"", field.key, "\": operator \"", field.op, "\" is not valid for fields"));
  }
  return absl::OkStatus();
}

// A term's verdict without compiling it; false for invalid terms.
bool RawTermMatches(const NodeSelectorTerm& term, const Node& node) {
  if (IsEmptyTerm(term)) return false;
  for (const NodeSelectorRequirement& expr : term.match_expressions) {
    std::optional<Op> op = ParseNodeSelectorOp(expr.op);
    if (!op) return false;
    absl::StatusOr<int64_t> bound = CheckRequirement(expr.key, *op, expr.values);
    if (!bound.ok()) return false;
    if (!RequirementMatches(expr.key, *op, expr.values, *bound, node.meta.labels)) return false;
  }
  for (const NodeSelectorRequirement& field : term.match_fields) {
    if (!CheckFieldRequirement(field).ok()) return false;
    bool equal = NodeField(node, field.key) == field.values[0];
    if (equal != (field.op == "In")) return false;
  }
  return true;
}

absl::Status Annotate(const absl::Status& status, std::string_view where) {
  std::string_view message(status.message().data(), status.message().size());
  return absl::Status(status.code(), Cat(where, ": ", message));
}

}  // namespace

// --- Label keys and values -----------------------------------------------------------------------

absl::Status ValidateLabelKey(std::string_view key) {
  if (const char* problem = LabelKeyProblem(key)) {
    return absl::InvalidArgumentError(Cat("invalid label key \"", key, "\": ", problem));
  }
  return absl::OkStatus();
}

absl::Status ValidateLabelValue(std::string_view value) {
  if (const char* problem = LabelValueProblem(value)) {
    return absl::InvalidArgumentError(Cat("invalid label value \"", value, "\": ", problem));
  }
  return absl::OkStatus();
}

// --- Label selectors -----------------------------------------------------------------------------

absl::Status ValidateLabelSelector(const LabelSelector& selector) {
  return LabelSelectorMatcher::Compile(selector).status();
}

bool MatchesLabelSelector(const LabelSelector& selector, const StringMap& labels) {
  for (const auto& [key, value] : selector.match_labels) {
    if (LabelKeyProblem(key) != nullptr || LabelValueProblem(value) != nullptr) return false;
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  for (const LabelSelectorRequirement& expr : selector.match_expressions) {
    std::optional<Op> op = ParseLabelSelectorOp(expr.op);
    if (!op) return false;
    absl::StatusOr<int64_t> bound = CheckRequirement(expr.key, *op, expr.values);
    if (!bound.ok()) return false;
    if (!RequirementMatches(expr.key, *op, expr.values, *bound, labels)) return false;
  }
  return true;
}

std::string FormatLabelSelector(const LabelSelector& selector) {
  absl::StatusOr<LabelSelectorMatcher> matcher = LabelSelectorMatcher::Compile(selector);
  if (!matcher.ok()) return "<error>";
  std::string text = matcher->ToString();
  return text.empty() ? "<none>" : text;
}

absl::StatusOr<LabelSelectorMatcher> LabelSelectorMatcher::Compile(const LabelSelector& selector) {
  LabelSelectorMatcher matcher;
  matcher.requirements_.reserve(selector.match_labels.size() + selector.match_expressions.size());
  for (const auto& [key, value] : selector.match_labels) {
    absl::StatusOr<Requirement> r = MakeRequirement(key, Op::kEquals, {value});
    if (!r.ok()) return Annotate(r.status(), "matchLabels");
    matcher.requirements_.push_back(*std::move(r));
  }
  for (size_t i = 0; i < selector.match_expressions.size(); ++i) {
    const LabelSelectorRequirement& expr = selector.match_expressions[i];
    std::string where = Cat("matchExpressions[", i, "]");
    std::optional<Op> op = ParseLabelSelectorOp(expr.op);
    if (!op) {
      return absl::InvalidArgumentError(
          Cat(where, ": \"", expr.op, "\" is not a valid label selector operator"));
    }
    absl::StatusOr<Requirement> r = MakeRequirement(expr.key, *op, expr.values);
    if (!r.ok()) return Annotate(r.status(), where);
    matcher.requirements_.push_back(*std::move(r));
  }
  std::stable_sort(matcher.requirements_.begin(), matcher.requirements_.end(),
                   [](const Requirement& a, const Requirement& b) { return a.key < b.key; });
  return matcher;
}

LabelSelectorMatcher LabelSelectorMatcher::Nothing() {
  LabelSelectorMatcher matcher;
  matcher.nothing_ = true;
  return matcher;
}

bool LabelSelectorMatcher::Matches(const StringMap& labels) const {
  if (nothing_) return false;
  return std::all_of(requirements_.begin(), requirements_.end(),
                     [&](const Requirement& r) { return RequirementMatches(r, labels); });
}

std::string LabelSelectorMatcher::ToString() const {
  if (nothing_) return "<nothing>";
  return absl::StrJoin(requirements_, ",", [](std::string* out, const Requirement& r) {
    out->append(RequirementString(r));
  });
}

// --- Node selectors and node affinity ------------------------------------------------------------

bool MatchesNodeSelectorTerms(const std::vector<NodeSelectorTerm>& terms, const Node& node) {
  return std::any_of(terms.begin(), terms.end(),
                     [&](const NodeSelectorTerm& term) { return RawTermMatches(term, node); });
}

bool MatchesNodeSelector(const StringMap& node_selector, const StringMap& node_labels) {
  return std::all_of(node_selector.begin(), node_selector.end(), [&](const auto& entry) {
    auto it = node_labels.find(entry.first);
    return it != node_labels.end() && it->second == entry.second;
  });
}

absl::Status ValidateNodeSelectorTerm(const NodeSelectorTerm& term) {
  for (size_t i = 0; i < term.match_expressions.size(); ++i) {
    const NodeSelectorRequirement& expr = term.match_expressions[i];
    std::string where = Cat("matchExpressions[", i, "]");
    std::optional<Op> op = ParseNodeSelectorOp(expr.op);
    if (!op) {
      return absl::InvalidArgumentError(
          Cat(where, ": \"", expr.op, "\" is not a valid node selector operator"));
    }
    absl::Status status = CheckRequirement(expr.key, *op, expr.values).status();
    if (!status.ok()) return Annotate(status, where);
  }
  for (size_t i = 0; i < term.match_fields.size(); ++i) {
    const NodeSelectorRequirement& field = term.match_fields[i];
    std::string where = Cat("matchFields[", i, "]");
    if (field.key != kNodeNameField) {
      return absl::InvalidArgumentError(Cat(
          where, ": \"", field.key, "\" is not a valid field selector key (only metadata.name)"));
    }
    absl::Status status = CheckFieldRequirement(field);
    if (!status.ok()) return Annotate(status, where);
    if (!IsDns1123Subdomain(field.values[0])) {
      return absl::InvalidArgumentError(
          Cat(where, ": value \"", field.values[0], "\" is not a valid node name"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateNodeSelectorTerms(const std::vector<NodeSelectorTerm>& terms) {
  if (terms.empty()) {
    return absl::InvalidArgumentError("nodeSelectorTerms: must have at least one term");
  }
  for (size_t i = 0; i < terms.size(); ++i) {
    absl::Status status = ValidateNodeSelectorTerm(terms[i]);
    if (!status.ok()) return Annotate(status, Cat("nodeSelectorTerms[", i, "]"));
  }
  return absl::OkStatus();
}

bool PodMatchesNodeAffinity(const Pod& pod, const Node& node) {
  if (!MatchesNodeSelector(pod.spec.node_selector, node.meta.labels)) return false;
  if (!pod.spec.affinity || !pod.spec.affinity->node_affinity ||
      !pod.spec.affinity->node_affinity->required) {
    return true;
  }
  return MatchesNodeSelectorTerms(*pod.spec.affinity->node_affinity->required, node);
}

int64_t PreferredNodeAffinityScore(const Pod& pod, const Node& node) {
  if (!pod.spec.affinity || !pod.spec.affinity->node_affinity) return 0;
  int64_t score = 0;
  for (const PreferredSchedulingTerm& term : pod.spec.affinity->node_affinity->preferred) {
    if (term.weight != 0 && RawTermMatches(term.preference, node)) score += term.weight;
  }
  return score;
}

std::optional<NodeAffinityMatcher::Term> NodeAffinityMatcher::CompileTerm(
    const NodeSelectorTerm& term, int32_t weight) {
  if (IsEmptyTerm(term)) return std::nullopt;
  Term compiled;
  compiled.weight = weight;
  for (const NodeSelectorRequirement& expr : term.match_expressions) {
    std::optional<Op> op = ParseNodeSelectorOp(expr.op);
    if (!op) return std::nullopt;
    absl::StatusOr<Requirement> r = MakeRequirement(expr.key, *op, expr.values);
    if (!r.ok()) return std::nullopt;
    compiled.expressions.push_back(*std::move(r));
  }
  for (const NodeSelectorRequirement& field : term.match_fields) {
    if (!CheckFieldRequirement(field).ok()) return std::nullopt;
    compiled.fields.push_back(
        Requirement{field.key, field.op == "In" ? Op::kIn : Op::kNotIn, field.values, 0});
  }
  return compiled;
}

NodeAffinityMatcher::NodeAffinityMatcher(const Pod& pod) : node_selector_(pod.spec.node_selector) {
  if (!pod.spec.affinity || !pod.spec.affinity->node_affinity) return;
  const NodeAffinity& affinity = *pod.spec.affinity->node_affinity;
  if (affinity.required) {
    has_required_terms_ = true;
    for (const NodeSelectorTerm& term : *affinity.required) {
      if (std::optional<Term> compiled = CompileTerm(term, 0)) {
        required_.push_back(*std::move(compiled));
      }
    }
  }
  for (const PreferredSchedulingTerm& term : affinity.preferred) {
    if (term.weight == 0) continue;
    if (std::optional<Term> compiled = CompileTerm(term.preference, term.weight)) {
      preferred_.push_back(*std::move(compiled));
    }
  }
}

bool NodeAffinityMatcher::TermMatches(const Term& term, const Node& node) {
  for (const Requirement& r : term.expressions) {
    if (!RequirementMatches(r, node.meta.labels)) return false;
  }
  for (const Requirement& f : term.fields) {
    if ((NodeField(node, f.key) == f.values[0]) != (f.op == Op::kIn)) return false;
  }
  return true;
}

bool NodeAffinityMatcher::Matches(const Node& node) const {
  if (!MatchesNodeSelector(node_selector_, node.meta.labels)) return false;
  if (!has_required_terms_) return true;
  return std::any_of(required_.begin(), required_.end(),
                     [&](const Term& term) { return TermMatches(term, node); });
}

int64_t NodeAffinityMatcher::PreferredScore(const Node& node) const {
  int64_t score = 0;
  for (const Term& term : preferred_) {
    if (TermMatches(term, node)) score += term.weight;
  }
  return score;
}

// --- Taints and tolerations ----------------------------------------------------------------------

bool TolerationToleratesTaint(const Toleration& toleration, const Taint& taint) {
  if (!toleration.effect.empty() && toleration.effect != taint.effect) return false;
  if (!toleration.key.empty() && toleration.key != taint.key) return false;
  if (toleration.op.empty() || toleration.op == "Equal") return toleration.value == taint.value;
  return toleration.op == "Exists";
}

bool TolerationsTolerateTaint(const std::vector<Toleration>& tolerations, const Taint& taint) {
  return std::any_of(tolerations.begin(), tolerations.end(),
                     [&](const Toleration& t) { return TolerationToleratesTaint(t, taint); });
}

bool TaintEffectFilter::Includes(std::string_view effect) const {
  return (no_schedule && effect == kTaintEffectNoSchedule) ||
         (prefer_no_schedule && effect == kTaintEffectPreferNoSchedule) ||
         (no_execute && effect == kTaintEffectNoExecute);
}

const Taint* FindUntoleratedTaint(const std::vector<Taint>& taints,
                                  const std::vector<Toleration>& tolerations,
                                  TaintEffectFilter filter) {
  for (const Taint& taint : taints) {
    if (filter.Includes(taint.effect) && !TolerationsTolerateTaint(tolerations, taint)) {
      return &taint;
    }
  }
  return nullptr;
}

int CountIntolerablePreferNoSchedule(const std::vector<Taint>& taints,
                                     const std::vector<Toleration>& tolerations) {
  return static_cast<int>(std::count_if(taints.begin(), taints.end(), [&](const Taint& taint) {
    return taint.effect == kTaintEffectPreferNoSchedule &&
           !TolerationsTolerateTaint(tolerations, taint);
  }));
}

std::string UntoleratedTaintReason(const Taint& taint) {
  return Cat("node(s) had untolerated taint {", taint.key, ": ", taint.value, "}");
}

// --- Selector text -------------------------------------------------------------------------------

namespace {

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
