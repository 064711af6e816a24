// Node selectors, node affinity and taints (selector.h), following component-helpers'
// nodeaffinity package (LazyErrorNodeSelector, RequiredNodeAffinity, PreferredSchedulingTerms)
// and Toleration.ToleratesTaint / FindMatchingUntoleratedTaint, with the TaintToleration
// plugin's filter message.

#include <algorithm>
#include <optional>
#include <utility>

#include "api/names.h"
#include "api/selector.h"
#include "api/selector_internal.h"

namespace muster::api {
namespace {

using selector_internal::Annotate;
using selector_internal::Cat;
using selector_internal::CheckRequirement;
using selector_internal::MakeRequirement;
using selector_internal::Op;
using selector_internal::ParseLabelSelectorOp;
using selector_internal::Requirement;
using selector_internal::RequirementMatches;

std::optional<Op> ParseNodeSelectorOp(std::string_view op) {
  if (op == "Gt") return Op::kGt;
  if (op == "Lt") return Op::kLt;
  return ParseLabelSelectorOp(op);
}

// extractNodeFields: metadata.name is the only node field; any other reads as "".
std::string_view NodeField(const Node& node, std::string_view field) {
  return field == kNodeNameField ? std::string_view(node.meta.name) : std::string_view();
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

}  // namespace

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

}  // namespace muster::api
