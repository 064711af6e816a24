#pragma once

// Selector and matching semantics shared by the API server, the scheduler and the controllers:
// label selectors, node selectors and node affinity, taints and tolerations, and the text forms
// of label and field selectors (`kubectl get -l ... --field-selector ...`).
//
// Rationale. Every rule here copies the behaviour of Kubernetes' own code, because muster is
// driven by the real kubectl and must place pods where kube-scheduler would:
//   - label selectors:   apimachinery metav1.LabelSelectorAsSelector + labels.Requirement.Matches
//   - node affinity:     component-helpers nodeaffinity (LazyErrorNodeSelector,
//                        RequiredNodeAffinity, PreferredSchedulingTerms)
//   - taints:            component-helpers Toleration.ToleratesTaint, FindMatchingUntoleratedTaint
//                        and the TaintToleration plugin's messages
//   - selector text:     apimachinery labels.Parse and fields.ParseSelector
// Objects that the API server validated never carry an invalid requirement; for those that do
// (objects read from another API server, hand-written scenario files) the rule is kube's: an
// invalid label selector matches nothing, and an invalid node selector term matches no node
// while the other terms still count.
//
// Thread-safety: every function is pure; compiled matchers are immutable after construction and
// safe to share between threads.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "api/model.h"

namespace muster::api {

inline constexpr char kTaintEffectNoSchedule[] = "NoSchedule";
inline constexpr char kTaintEffectPreferNoSchedule[] = "PreferNoSchedule";
inline constexpr char kTaintEffectNoExecute[] = "NoExecute";
// The only field a NodeSelectorTerm's matchFields may name.
inline constexpr char kNodeNameField[] = "metadata.name";

// --- Label keys and values -----------------------------------------------------------------------

// A label key is a qualified name: an optional DNS-1123 subdomain prefix and '/', then a name of
// at most 63 characters of [A-Za-z0-9-_.] that starts and ends alphanumeric. The error names the
// key and the rule it breaks.
absl::Status ValidateLabelKey(std::string_view key);
// A label value is empty, or at most 63 characters of [A-Za-z0-9-_.] starting and ending
// alphanumeric.
absl::Status ValidateLabelValue(std::string_view value);

// --- Label selectors -----------------------------------------------------------------------------

// Checks what metav1.LabelSelectorAsSelector checks: operators In, NotIn, Exists, DoesNotExist;
// In/NotIn carry at least one value, Exists/DoesNotExist none; keys and values are valid.
absl::Status ValidateLabelSelector(const LabelSelector& selector);

// matchLabels AND matchExpressions. An empty selector matches every label set (including an
// empty one); an invalid selector matches nothing. A missing key fails In and Exists and
// satisfies NotIn and DoesNotExist. Callers holding an absent (nullopt) selector decide
// themselves: kube treats a nil selector as matching nothing.
// Allocates nothing for a valid selector; for one evaluated against many objects prefer
// LabelSelectorMatcher.
bool MatchesLabelSelector(const LabelSelector& selector, const StringMap& labels);

// kubectl's rendering of a selector: requirements sorted by key, "a=b,c in (x,y),!d"; "<none>"
// for an empty selector and "<error>" for an invalid one (metav1.FormatLabelSelector).
std::string FormatLabelSelector(const LabelSelector& selector);

// The precompiled form of a label selector for hot paths: values sorted, requirements in key
// order. Default-constructed, it matches everything.
class LabelSelectorMatcher {
 public:
  LabelSelectorMatcher() = default;
  // Fails with InvalidArgument where ValidateLabelSelector does.
  static absl::StatusOr<LabelSelectorMatcher> Compile(const LabelSelector& selector);
  // The selector that matches no label set (what kube makes of a nil or invalid selector).
  static LabelSelectorMatcher Nothing();
  // Label selector text as labels.Parse reads it (a list's or watch's labelSelector):
  // comma-separated requirements `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`,
  // `a>1`, `a<1`; whitespace between tokens is ignored, "()" is the set of the empty value and
  // "in"/"notin" may be keys. Refused where labels.Parse refuses, InvalidArgument with its
  // message ("unable to parse requirement: <nil>: Invalid value: \"-a\": name part must ...",
  // "found ',', expected: identifier after ','"). An empty string matches everything.
  static absl::StatusOr<LabelSelectorMatcher> Parse(std::string_view text);

  bool Matches(const StringMap& labels) const;
  bool MatchesEverything() const { return !nothing_ && requirements_.empty(); }
  // Selector text in kube's form ("a=b,c notin (x)"); "" for everything, "<nothing>" for nothing.
  std::string ToString() const;

  // One compiled requirement. Public so that other matchers in this library can reuse it; not
  // meant to be built by hand.
  enum class Op { kEquals, kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };
  struct Requirement {
    std::string key;
    Op op = Op::kExists;
    std::vector<std::string> values;  // sorted, unique
    int64_t bound = 0;                // Gt/Lt only
  };

 private:
  std::vector<Requirement> requirements_;
  bool nothing_ = false;
};

// --- Node selectors and node affinity ------------------------------------------------------------

// Terms are ORed; within a term matchExpressions and matchFields are ANDed. Operators In, NotIn,
// Exists, DoesNotExist, Gt, Lt on labels (Gt/Lt compare the label value and the requirement's
// single value as int64; a label that does not parse fails the requirement); matchFields takes
// In/NotIn with exactly one value on metadata.name. A term with no expressions and no fields
// matches nothing, so does an empty list, and so does an invalid term.
bool MatchesNodeSelectorTerms(const std::vector<NodeSelectorTerm>& terms, const Node& node);

// Every key=value of a pod's spec.nodeSelector is present on the node. An empty map matches.
bool MatchesNodeSelector(const StringMap& node_selector, const StringMap& node_labels);

// Checks a term as the API server does (ValidateNodeSelectorTerm plus the parse rules of
// nodeaffinity): valid operators and keys, In/NotIn with values, Exists/DoesNotExist without,
// Gt/Lt with one integer; matchFields only metadata.name, In/NotIn, one valid node name. An
// empty term is valid (it just matches nothing). Errors name the offending requirement.
absl::Status ValidateNodeSelectorTerm(const NodeSelectorTerm& term);
// As above for every term of a required node selector, which must have at least one term.
absl::Status ValidateNodeSelectorTerms(const std::vector<NodeSelectorTerm>& terms);

// kube-scheduler's NodeAffinity filter: spec.nodeSelector AND, when present,
// affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution. A present but empty list
// of required terms admits no node.
bool PodMatchesNodeAffinity(const Pod& pod, const Node& node);

// Sum of the weights of the pod's preferred node-affinity terms that the node matches (the raw
// NodeAffinity score before normalisation). Terms of weight 0, empty terms and invalid terms add
// nothing (kube-scheduler would reject the whole pod in PreScore; API validation prevents it).
int64_t PreferredNodeAffinityScore(const Pod& pod, const Node& node);

// A pod's node affinity compiled once and evaluated against many nodes, with exactly the results
// of PodMatchesNodeAffinity and PreferredNodeAffinityScore.
class NodeAffinityMatcher {
 public:
  explicit NodeAffinityMatcher(const Pod& pod);

  bool Matches(const Node& node) const;
  int64_t PreferredScore(const Node& node) const;
  // True when the pod constrains placement at all (nodeSelector or required terms present).
  bool HasRequired() const { return !node_selector_.empty() || has_required_terms_; }

 private:
  struct Term {
    std::vector<LabelSelectorMatcher::Requirement> expressions;
    std::vector<LabelSelectorMatcher::Requirement> fields;  // key metadata.name, In/NotIn
    int32_t weight = 0;
  };
  // nullopt for an empty or invalid term, which can never match.
  static std::optional<Term> CompileTerm(const NodeSelectorTerm& term, int32_t weight);
  static bool TermMatches(const Term& term, const Node& node);

  StringMap node_selector_;
  bool has_required_terms_ = false;
  std::vector<Term> required_;   // valid, non-empty terms only
  std::vector<Term> preferred_;  // valid, non-empty terms of non-zero weight only
};

// --- Taints and tolerations ----------------------------------------------------------------------

// Toleration.ToleratesTaint: an empty toleration effect matches every effect; an empty key with
// operator Exists tolerates every taint; operator Exists ignores the value; Equal (or an empty
// operator) compares values exactly; any other operator tolerates nothing.
bool TolerationToleratesTaint(const Toleration& toleration, const Taint& taint);
bool TolerationsTolerateTaint(const std::vector<Toleration>& tolerations, const Taint& taint);

// Which taint effects a lookup considers. The default is the scheduler filter's set.
struct TaintEffectFilter {
  bool no_schedule = true;
  bool prefer_no_schedule = false;
  bool no_execute = true;

  bool Includes(std::string_view effect) const;
};

// The first taint, in node order, whose effect the filter includes and that no toleration
// tolerates; nullptr when the pod tolerates them all. The pointer is into `taints`.
const Taint* FindUntoleratedTaint(const std::vector<Taint>& taints,
                                  const std::vector<Toleration>& tolerations,
                                  TaintEffectFilter filter = {});

// Taints with effect PreferNoSchedule that no toleration tolerates (TaintToleration score input).
int CountIntolerablePreferNoSchedule(const std::vector<Taint>& taints,
                                     const std::vector<Toleration>& tolerations);

// kube-scheduler's TaintToleration filter reason:
// "node(s) had untolerated taint {nvidia.com/gpu: present}".
std::string UntoleratedTaintReason(const Taint& taint);

// --- Selector text -------------------------------------------------------------------------------

// (Label selector text: LabelSelectorMatcher::Parse.)

struct FieldRequirement {
  std::string field;
  bool equal = true;  // false for !=
  std::string value;

  friend bool operator==(const FieldRequirement&, const FieldRequirement&) = default;
};

// Parses field selector text (fields.ParseSelector grammar): `f=v`, `f==v`, `f!=v` joined by
// commas; empty terms are skipped; in values `\,` `\=` `\\` escape those characters. Errors are
// InvalidArgument with fields.ParseSelector's messages ("invalid selector: 'x'; can't understand
// 'x'"). Which fields exist, the empty one included, is the caller's business (the API server per
// kind).
absl::StatusOr<std::vector<FieldRequirement>> ParseFieldSelector(std::string_view text);

// All requirements hold; a field missing from `fields` reads as "" (fields.Set.Get).
bool MatchesFieldSelector(const std::vector<FieldRequirement>& requirements,
                          const StringMap& fields);

}  // namespace muster::api
