#include "api/selector.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <optional>
#include <utility>

#include "absl/strings/str_join.h"
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

// The label selector lexer of apimachinery's labels package: identifiers run until whitespace or
// one of the symbols below; "in" and "notin" are keywords only where an operator is expected.
enum class TokenKind {
  kEnd,
  kIdentifier,
  kNot,           // !
  kNotEquals,     // !=
  kEquals,        // =
  kDoubleEquals,  // ==
  kGreater,       // >
  kLess,          // <
  kOpenParen,
  kCloseParen,
  kComma,
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string_view text;
  size_t offset = 0;
};

bool IsSelectorSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

bool IsSelectorSymbol(char c) {
  return c == '=' || c == '!' || c == '(' || c == ')' || c == ',' || c == '>' || c == '<';
}

std::vector<Token> LexLabelSelector(std::string_view text) {
  std::vector<Token> tokens;
  size_t i = 0;
  while (true) {
    while (i < text.size() && IsSelectorSpace(text[i])) ++i;
    if (i == text.size()) break;
    size_t start = i;
    char c = text[i];
    bool next_is_equals = i + 1 < text.size() && text[i + 1] == '=';
    TokenKind kind = TokenKind::kIdentifier;
    if (IsSelectorSymbol(c)) {
      size_t length = 1;
      switch (c) {
        case '!':
          kind = next_is_equals ? TokenKind::kNotEquals : TokenKind::kNot;
          length = next_is_equals ? 2 : 1;
          break;
        case '=':
          kind = next_is_equals ? TokenKind::kDoubleEquals : TokenKind::kEquals;
          length = next_is_equals ? 2 : 1;
          break;
        case '>':
          kind = TokenKind::kGreater;
          break;
        case '<':
          kind = TokenKind::kLess;
          break;
        case '(':
          kind = TokenKind::kOpenParen;
          break;
        case ')':
          kind = TokenKind::kCloseParen;
          break;
        default:
          kind = TokenKind::kComma;
          break;
      }
      i += length;
    } else {
      while (i < text.size() && !IsSelectorSpace(text[i]) && !IsSelectorSymbol(text[i])) ++i;
    }
    tokens.push_back(Token{kind, text.substr(start, i - start), start});
  }
  tokens.push_back(Token{TokenKind::kEnd, "", text.size()});
  return tokens;
}

class LabelSelectorParser {
 public:
  explicit LabelSelectorParser(std::string_view text)
      : text_(text), tokens_(LexLabelSelector(text)) {}

  absl::StatusOr<LabelSelector> Parse() {
    LabelSelector selector;
    if (Peek().kind == TokenKind::kEnd) return selector;
    while (true) {
      const Token& start = Peek();
      if (start.kind != TokenKind::kIdentifier && start.kind != TokenKind::kNot) {
        return Unexpected(start, "'!' or a key");
      }
      absl::Status status = ParseRequirement(selector);
      if (!status.ok()) return status;
      const Token& next = Next();
      if (next.kind == TokenKind::kEnd) return selector;
      if (next.kind != TokenKind::kComma) return Unexpected(next, "',' or end of string");
      if (Peek().kind != TokenKind::kIdentifier && Peek().kind != TokenKind::kNot) {
        return Unexpected(Peek(), "'!' or a key after ','");
      }
    }
  }

 private:
  const Token& Peek() const { return tokens_[pos_]; }
  const Token& Next() {
    const Token& token = tokens_[pos_];
    if (token.kind != TokenKind::kEnd) ++pos_;
    return token;
  }

  absl::Status Error(std::string_view detail) const {
    return absl::InvalidArgumentError(Cat("invalid label selector \"", text_, "\": ", detail));
  }

  absl::Status Unexpected(const Token& token, std::string_view expected) const {
    std::string found =
        token.kind == TokenKind::kEnd ? std::string("end of string") : Cat("'", token.text, "'");
    return Error(Cat("found ", found, " at offset ", token.offset, ", expected ", expected));
  }

  static bool IsKeyword(std::string_view text) { return text == "in" || text == "notin"; }

  absl::StatusOr<std::string> ParseKey() {
    const Token& token = Next();
    if (token.kind != TokenKind::kIdentifier || IsKeyword(token.text)) {
      return Unexpected(token, "a key");
    }
    if (const char* problem = LabelKeyProblem(token.text)) {
      return Error(Cat("key \"", token.text, "\": ", problem));
    }
    return std::string(token.text);
  }

  absl::Status CheckValue(std::string_view key, std::string_view value) const {
    if (const char* problem = LabelValueProblem(value)) {
      return Error(Cat("value \"", value, "\" for key \"", key, "\" ", problem));
    }
    return absl::OkStatus();
  }

  // "(v1,v2)"; empty items are the empty value, as in labels.Parse ("()" is {""}).
  absl::StatusOr<std::vector<std::string>> ParseValueList(std::string_view key) {
    const Token& open = Next();
    if (open.kind != TokenKind::kOpenParen) return Unexpected(open, "'('");
    std::vector<std::string> values;
    while (true) {
      std::string value;
      if (Peek().kind == TokenKind::kIdentifier) value = std::string(Next().text);
      absl::Status status = CheckValue(key, value);
      if (!status.ok()) return status;
      values.push_back(std::move(value));
      const Token& separator = Next();
      if (separator.kind == TokenKind::kCloseParen) break;
      if (separator.kind != TokenKind::kComma) return Unexpected(separator, "',', ')' or a value");
    }
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return values;
  }

  // The value after =, == or !=; a missing one is the empty value ("a=" selects a="").
  absl::StatusOr<std::string> ParseExactValue(std::string_view key) {
    const Token& token = Peek();
    if (token.kind == TokenKind::kEnd || token.kind == TokenKind::kComma) return std::string();
    if (token.kind != TokenKind::kIdentifier) return Unexpected(token, "a value");
    std::string value(Next().text);
    absl::Status status = CheckValue(key, value);
    if (!status.ok()) return status;
    return value;
  }

  absl::Status ParseRequirement(LabelSelector& selector) {
    if (Peek().kind == TokenKind::kNot) {
      Next();
      absl::StatusOr<std::string> key = ParseKey();
      if (!key.ok()) return key.status();
      selector.match_expressions.push_back({*std::move(key), "DoesNotExist", {}});
      return absl::OkStatus();
    }
    absl::StatusOr<std::string> key = ParseKey();
    if (!key.ok()) return key.status();
    if (Peek().kind == TokenKind::kEnd || Peek().kind == TokenKind::kComma) {
      selector.match_expressions.push_back({*std::move(key), "Exists", {}});
      return absl::OkStatus();
    }
    const Token& op = Next();
    switch (op.kind) {
      case TokenKind::kEquals:
      case TokenKind::kDoubleEquals: {
        absl::StatusOr<std::string> value = ParseExactValue(*key);
        if (!value.ok()) return value.status();
        if (selector.match_labels.contains(*key)) {
          selector.match_expressions.push_back({*std::move(key), "In", {*std::move(value)}});
        } else {
          selector.match_labels.emplace(*std::move(key), *std::move(value));
        }
        return absl::OkStatus();
      }
      case TokenKind::kNotEquals: {
        absl::StatusOr<std::string> value = ParseExactValue(*key);
        if (!value.ok()) return value.status();
        selector.match_expressions.push_back({*std::move(key), "NotIn", {*std::move(value)}});
        return absl::OkStatus();
      }
      case TokenKind::kGreater:
      case TokenKind::kLess:
        return Error(Cat("operator '", op.text, "' after key \"", *key,
                         "\" is not supported in label selectors"));
      case TokenKind::kIdentifier:
        if (op.text == "in" || op.text == "notin") {
          absl::StatusOr<std::vector<std::string>> values = ParseValueList(*key);
          if (!values.ok()) return values.status();
          selector.match_expressions.push_back(
              {*std::move(key), op.text == "in" ? "In" : "NotIn", *std::move(values)});
          return absl::OkStatus();
        }
        break;
      default:
        break;
    }
    return Unexpected(op, Cat("an operator (=, ==, !=, in, notin) after key \"", *key, "\""));
  }

  std::string_view text_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
};

// fields.UnescapeValue: `\\`, `\,` and `\=` are the only escapes; a bare ',' or '=' is an error.
absl::StatusOr<std::string> UnescapeFieldValue(std::string_view text, std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    char c = value[i];
    if (c == '\\') {
      if (i + 1 == value.size() ||
          (value[i + 1] != '\\' && value[i + 1] != ',' && value[i + 1] != '=')) {
        return absl::InvalidArgumentError(Cat("invalid field selector \"", text,
                                              "\": invalid escape sequence '", value.substr(i, 2),
                                              "' in value \"", value, "\""));
      }
      out.push_back(value[++i]);
    } else if (c == '=' || c == ',') {
      return absl::InvalidArgumentError(Cat("invalid field selector \"", text, "\": unescaped '",
                                            std::string(1, c), "' in value \"", value, "\""));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<LabelSelector> ParseLabelSelector(std::string_view text) {
  return LabelSelectorParser(text).Parse();
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

  std::vector<FieldRequirement> requirements;
  for (std::string_view term : terms) {
    if (term.empty()) continue;
    size_t op_at = term.find_first_of("!=");
    while (op_at != std::string_view::npos && term[op_at] == '!' &&
           (op_at + 1 == term.size() || term[op_at + 1] != '=')) {
      op_at = term.find_first_of("!=", op_at + 1);
    }
    if (op_at == std::string_view::npos) {
      return absl::InvalidArgumentError(Cat("invalid field selector \"", text, "\": term \"", term,
                                            "\" has no operator (=, == or !=)"));
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
    if (requirement.field.empty()) {
      return absl::InvalidArgumentError(Cat("invalid field selector \"", text, "\": term \"", term,
                                            "\" has an empty field name"));
    }
    absl::StatusOr<std::string> value = UnescapeFieldValue(text, term.substr(op_at + op_length));
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
