#include "api/selector.h"

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::api {
namespace {

using ::testing::HasSubstr;

// --- Builders ------------------------------------------------------------------------------------

NodeSelectorRequirement Req(std::string key, std::string op, std::vector<std::string> values = {}) {
  return NodeSelectorRequirement{std::move(key), std::move(op), std::move(values)};
}

LabelSelectorRequirement Expr(std::string key, std::string op,
                              std::vector<std::string> values = {}) {
  return LabelSelectorRequirement{std::move(key), std::move(op), std::move(values)};
}

NodeSelectorTerm Term(std::vector<NodeSelectorRequirement> expressions,
                      std::vector<NodeSelectorRequirement> fields = {}) {
  return NodeSelectorTerm{std::move(expressions), std::move(fields)};
}

class MakeNode {
 public:
  explicit MakeNode(std::string name) { node_.meta.name = std::move(name); }
  MakeNode& Label(std::string key, std::string value) {
    node_.meta.labels[std::move(key)] = std::move(value);
    return *this;
  }
  MakeNode& WithTaint(std::string key, std::string value, std::string effect) {
    node_.spec.taints.push_back(Taint{std::move(key), std::move(value), std::move(effect)});
    return *this;
  }
  Node Obj() const { return node_; }

 private:
  Node node_;
};

class MakePod {
 public:
  explicit MakePod(std::string name) { pod_.meta.name = std::move(name); }
  MakePod& NodeSelector(std::string key, std::string value) {
    pod_.spec.node_selector[std::move(key)] = std::move(value);
    return *this;
  }
  MakePod& Required(std::vector<NodeSelectorTerm> terms) {
    MutableNodeAffinity().required = std::move(terms);
    return *this;
  }
  MakePod& Preferred(int32_t weight, NodeSelectorTerm term) {
    MutableNodeAffinity().preferred.push_back(PreferredSchedulingTerm{weight, std::move(term)});
    return *this;
  }
  Pod Obj() const { return pod_; }

 private:
  NodeAffinity& MutableNodeAffinity() {
    if (!pod_.spec.affinity) pod_.spec.affinity.emplace();
    if (!pod_.spec.affinity->node_affinity) pod_.spec.affinity->node_affinity.emplace();
    return *pod_.spec.affinity->node_affinity;
  }
  Pod pod_;
};

Toleration Tol(std::string key, std::string op, std::string value, std::string effect) {
  Toleration t;
  t.key = std::move(key);
  t.op = std::move(op);
  t.value = std::move(value);
  t.effect = std::move(effect);
  return t;
}

// --- Label keys and values -----------------------------------------------------------------------

TEST(ValidateLabelKeyTest, Table) {
  struct Case {
    std::string key;
    bool ok;
  };
  const std::vector<Case> cases = {
      {"app", true},
      {"nvidia.com/gpu.product", true},
      {"a", true},
      {"A_b-c.D", true},
      {"kubernetes.io/hostname", true},
      {std::string(63, 'a'), true},
      {std::string(64, 'a'), false},
      {"", false},
      {"-app", false},
      {"app-", false},
      {"a b", false},
      {"/name", false},
      {"example.com/", false},
      {"Example.com/name", false},  // prefix must be lowercase
      {"a/b/c", false},
      {"exa_mple.com/name", false},
      {std::string(254, 'a') + "/x", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.key);
    EXPECT_EQ(ValidateLabelKey(c.key).ok(), c.ok);
  }
  EXPECT_THAT(ValidateLabelKey("-app").message(), HasSubstr("\"-app\""));
}

TEST(ValidateLabelValueTest, Table) {
  struct Case {
    std::string value;
    bool ok;
  };
  const std::vector<Case> cases = {
      {"", true},
      {"a100", true},
      {"A-b_c.d", true},
      {"-5", false},
      {"x.", false},
      {"has space", false},
      {"a/b", false},
      {std::string(63, 'v'), true},
      {std::string(64, 'v'), false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.value);
    EXPECT_EQ(ValidateLabelValue(c.value).ok(), c.ok);
  }
}

// --- Label selectors -----------------------------------------------------------------------------

struct LabelCase {
  std::string name;
  LabelSelector selector;
  StringMap labels;
  bool want;
};

std::vector<LabelCase> LabelCases() {
  const StringMap gpu = {{"app", "train"}, {"gpu", "a100"}, {"tier", "batch"}};
  return {
      {"empty selector matches empty labels", {}, {}, true},
      {"empty selector matches any labels", {}, gpu, true},
      {"matchLabels equal", {{{"app", "train"}}, {}}, gpu, true},
      {"matchLabels different value", {{{"app", "serve"}}, {}}, gpu, false},
      {"matchLabels missing key", {{{"zone", "a"}}, {}}, gpu, false},
      {"matchLabels all must hold", {{{"app", "train"}, {"gpu", "h100"}}, {}}, gpu, false},
      {"matchLabels empty value needs key", {{{"zone", ""}}, {}}, gpu, false},
      {"matchLabels empty value present", {{{"zone", ""}}, {}}, {{"zone", ""}}, true},
      {"In hit", {{}, {Expr("gpu", "In", {"h100", "a100"})}}, gpu, true},
      {"In miss", {{}, {Expr("gpu", "In", {"h100"})}}, gpu, false},
      {"In missing key", {{}, {Expr("zone", "In", {"a"})}}, gpu, false},
      {"NotIn hit", {{}, {Expr("gpu", "NotIn", {"a100"})}}, gpu, false},
      {"NotIn miss", {{}, {Expr("gpu", "NotIn", {"h100"})}}, gpu, true},
      {"NotIn missing key matches", {{}, {Expr("zone", "NotIn", {"a"})}}, gpu, true},
      {"Exists present", {{}, {Expr("gpu", "Exists")}}, gpu, true},
      {"Exists missing", {{}, {Expr("zone", "Exists")}}, gpu, false},
      {"Exists with empty label value", {{}, {Expr("zone", "Exists")}}, {{"zone", ""}}, true},
      {"DoesNotExist missing", {{}, {Expr("zone", "DoesNotExist")}}, gpu, true},
      {"DoesNotExist present", {{}, {Expr("gpu", "DoesNotExist")}}, gpu, false},
      {"labels and expressions ANDed",
       {{{"app", "train"}}, {Expr("gpu", "In", {"a100"}), Expr("zone", "DoesNotExist")}},
       gpu,
       true},
      {"one failing expression fails all",
       {{{"app", "train"}}, {Expr("gpu", "In", {"a100"}), Expr("tier", "NotIn", {"batch"})}},
       gpu,
       false},
      // Invalid selectors match nothing, even where the requirement would hold.
      {"invalid: unknown operator", {{}, {Expr("gpu", "Equals", {"a100"})}}, gpu, false},
      {"invalid: Gt not a label selector operator",
       {{}, {Expr("n", "Gt", {"1"})}},
       {{"n", "5"}},
       false},
      {"invalid: NotIn without values", {{}, {Expr("zone", "NotIn")}}, gpu, false},
      {"invalid: In without values", {{}, {Expr("zone", "In")}}, gpu, false},
      {"invalid: Exists with values", {{}, {Expr("gpu", "Exists", {"a100"})}}, gpu, false},
      {"invalid: DoesNotExist with values",
       {{}, {Expr("zone", "DoesNotExist", {"a"})}},
       gpu,
       false},
      {"invalid: bad key", {{}, {Expr("bad key", "DoesNotExist")}}, gpu, false},
      {"invalid: bad value", {{}, {Expr("gpu", "NotIn", {"-x"})}}, gpu, false},
      {"invalid: bad matchLabels key", {{{"-zone", "a"}}, {}}, {{"-zone", "a"}}, false},
  };
}

TEST(MatchesLabelSelectorTest, Table) {
  for (const LabelCase& c : LabelCases()) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(MatchesLabelSelector(c.selector, c.labels), c.want);
  }
}

TEST(LabelSelectorMatcherTest, AgreesWithMatchesLabelSelector) {
  for (const LabelCase& c : LabelCases()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<LabelSelectorMatcher> matcher = LabelSelectorMatcher::Compile(c.selector);
    bool invalid = c.name.starts_with("invalid");
    EXPECT_EQ(matcher.ok(), !invalid) << matcher.status();
    EXPECT_EQ(ValidateLabelSelector(c.selector).ok(), !invalid);
    if (matcher.ok()) {
      EXPECT_EQ(matcher->Matches(c.labels), c.want);
    }
  }
}

TEST(LabelSelectorMatcherTest, DefaultMatchesEverythingAndNothingMatchesNothing) {
  LabelSelectorMatcher everything;
  EXPECT_TRUE(everything.MatchesEverything());
  EXPECT_TRUE(everything.Matches({}));
  EXPECT_TRUE(everything.Matches({{"a", "b"}}));
  LabelSelectorMatcher nothing = LabelSelectorMatcher::Nothing();
  EXPECT_FALSE(nothing.MatchesEverything());
  EXPECT_FALSE(nothing.Matches({}));
  EXPECT_FALSE(nothing.Matches({{"a", "b"}}));
}

TEST(ValidateLabelSelectorTest, ErrorsNameTheBadPart) {
  struct Case {
    LabelSelector selector;
    std::vector<std::string> want_parts;
  };
  const std::vector<Case> cases = {
      {{{}, {Expr("a", "Exists"), Expr("b", "Gt", {"1"})}}, {"matchExpressions[1]", "\"Gt\""}},
      {{{}, {Expr("zone", "In")}}, {"matchExpressions[0]", "\"zone\"", "non-empty"}},
      {{{}, {Expr("zone", "Exists", {"x"})}}, {"\"zone\"", "must be empty"}},
      {{{{"app", "bad value!"}}, {}}, {"matchLabels", "\"bad value!\""}},
      {{{{"/app", "x"}}, {}}, {"matchLabels", "\"/app\"", "prefix"}},
  };
  for (const Case& c : cases) {
    absl::Status status = ValidateLabelSelector(c.selector);
    SCOPED_TRACE(status.ToString());
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    for (const std::string& part : c.want_parts) EXPECT_THAT(status.message(), HasSubstr(part));
  }
}

TEST(FormatLabelSelectorTest, KubectlRendering) {
  struct Case {
    LabelSelector selector;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{}, "<none>"},
      {{{{"app", "train"}}, {}}, "app=train"},
      {{{{"b", "1"}, {"a", "2"}}, {}}, "a=2,b=1"},
      {{{{"z", "1"}},
        {Expr("gpu", "In", {"h100", "a100", "a100"}), Expr("x", "DoesNotExist"),
         Expr("m", "Exists"), Expr("c", "NotIn", {"q"})}},
       "c notin (q),gpu in (a100,h100),m,!x,z=1"},
      {{{}, {Expr("gpu", "Bogus", {"x"})}}, "<error>"},
  };
  for (const Case& c : cases) EXPECT_EQ(FormatLabelSelector(c.selector), c.want);
  EXPECT_EQ(LabelSelectorMatcher::Nothing().ToString(), "<nothing>");
  EXPECT_EQ(LabelSelectorMatcher().ToString(), "");
}

// --- Node selectors ------------------------------------------------------------------------------

TEST(MatchesNodeSelectorTest, Table) {
  const StringMap labels = {{"gpu", "a100"}, {"zone", "a"}};
  struct Case {
    std::string name;
    StringMap selector;
    bool want;
  };
  const std::vector<Case> cases = {
      {"empty matches", {}, true},
      {"one pair", {{"gpu", "a100"}}, true},
      {"all pairs", {{"gpu", "a100"}, {"zone", "a"}}, true},
      {"wrong value", {{"gpu", "h100"}}, false},
      {"missing key", {{"rack", "r1"}}, false},
      {"one of two wrong", {{"gpu", "a100"}, {"zone", "b"}}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(MatchesNodeSelector(c.selector, labels), c.want);
  }
  EXPECT_FALSE(MatchesNodeSelector({{"gpu", ""}}, {}));
}

struct TermsCase {
  std::string name;
  std::vector<NodeSelectorTerm> terms;
  bool want;
};

std::vector<TermsCase> NodeTermCases() {
  return {
      {"In hit", {Term({Req("gpu", "In", {"h100", "a100"})})}, true},
      {"In miss", {Term({Req("gpu", "In", {"h100"})})}, false},
      {"In missing label", {Term({Req("rack", "In", {"r1"})})}, false},
      {"NotIn hit", {Term({Req("gpu", "NotIn", {"a100"})})}, false},
      {"NotIn miss", {Term({Req("gpu", "NotIn", {"h100"})})}, true},
      {"NotIn missing label matches", {Term({Req("rack", "NotIn", {"r1"})})}, true},
      {"Exists present", {Term({Req("gpu", "Exists")})}, true},
      {"Exists missing", {Term({Req("rack", "Exists")})}, false},
      {"DoesNotExist missing", {Term({Req("rack", "DoesNotExist")})}, true},
      {"DoesNotExist present", {Term({Req("gpu", "DoesNotExist")})}, false},
      {"Gt greater", {Term({Req("gpu-count", "Gt", {"4"})})}, true},
      {"Gt equal is not greater", {Term({Req("gpu-count", "Gt", {"8"})})}, false},
      {"Gt smaller", {Term({Req("gpu-count", "Gt", {"9"})})}, false},
      {"Lt smaller", {Term({Req("gpu-count", "Lt", {"9"})})}, true},
      {"Lt equal is not less", {Term({Req("gpu-count", "Lt", {"8"})})}, false},
      {"Lt greater", {Term({Req("gpu-count", "Lt", {"2"})})}, false},
      {"Gt large numbers", {Term({Req("mem-gib", "Gt", {"1000000000000"})})}, true},
      {"Gt label not a number", {Term({Req("gpu", "Gt", {"1"})})}, false},
      {"Lt label not a number", {Term({Req("gpu", "Lt", {"1"})})}, false},
      {"Gt label overflows int64", {Term({Req("huge", "Gt", {"1"})})}, false},
      {"Gt label with fraction", {Term({Req("frac", "Gt", {"1"})})}, false},
      {"Gt missing label", {Term({Req("rack", "Gt", {"1"})})}, false},
      {"Lt missing label", {Term({Req("rack", "Lt", {"100"})})}, false},
      {"Gt value not a number", {Term({Req("gpu-count", "Gt", {"four"})})}, false},
      {"Lt value not a number", {Term({Req("gpu-count", "Lt", {"1e3"})})}, false},
      {"Gt two values", {Term({Req("gpu-count", "Gt", {"1", "2"})})}, false},
      {"Gt no value", {Term({Req("gpu-count", "Gt")})}, false},
      {"unknown operator", {Term({Req("gpu", "Equals", {"a100"})})}, false},
      {"NotIn with no values is invalid", {Term({Req("rack", "NotIn")})}, false},
      {"DoesNotExist with values is invalid", {Term({Req("rack", "DoesNotExist", {"x"})})}, false},
      {"invalid key", {Term({Req("bad key", "DoesNotExist")})}, false},
      {"expressions ANDed: all hold",
       {Term({Req("gpu", "In", {"a100"}), Req("zone", "Exists"), Req("gpu-count", "Gt", {"7"})})},
       true},
      {"expressions ANDed: one fails",
       {Term({Req("gpu", "In", {"a100"}), Req("zone", "In", {"b"})})},
       false},
      {"terms ORed: second holds",
       {Term({Req("gpu", "In", {"h100"})}), Term({Req("zone", "In", {"a"})})},
       true},
      {"terms ORed: none holds",
       {Term({Req("gpu", "In", {"h100"})}), Term({Req("zone", "In", {"b"})})},
       false},
      {"empty list matches nothing", {}, false},
      {"empty term matches nothing", {Term({})}, false},
      {"empty term ORed with a matching term", {Term({}), Term({Req("gpu", "Exists")})}, true},
      {"invalid term does not poison others",
       {Term({Req("gpu", "Bogus")}), Term({Req("gpu", "Exists")})},
       true},
      {"field In own name", {Term({}, {Req("metadata.name", "In", {"node-1"})})}, true},
      {"field In other name", {Term({}, {Req("metadata.name", "In", {"node-2"})})}, false},
      {"field NotIn own name", {Term({}, {Req("metadata.name", "NotIn", {"node-1"})})}, false},
      {"field NotIn other name", {Term({}, {Req("metadata.name", "NotIn", {"node-2"})})}, true},
      {"field ANDed with expression",
       {Term({Req("gpu", "In", {"h100"})}, {Req("metadata.name", "In", {"node-1"})})},
       false},
      {"field with two values is invalid",
       {Term({}, {Req("metadata.name", "In", {"node-1", "node-2"})})},
       false},
      {"field with Exists is invalid", {Term({}, {Req("metadata.name", "Exists")})}, false},
      // kube reads an unknown node field as "": NotIn anything-but-"" holds.
      {"unknown field reads empty", {Term({}, {Req("metadata.uid", "NotIn", {"x"})})}, true},
  };
}

Node GpuNode() {
  return MakeNode("node-1")
      .Label("gpu", "a100")
      .Label("zone", "a")
      .Label("gpu-count", "8")
      .Label("mem-gib", "2000000000000")
      .Label("huge", "99999999999999999999")
      .Label("frac", "1.5")
      .Obj();
}

TEST(MatchesNodeSelectorTermsTest, Table) {
  const Node node = GpuNode();
  for (const TermsCase& c : NodeTermCases()) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(MatchesNodeSelectorTerms(c.terms, node), c.want);
  }
}

TEST(MatchesNodeSelectorTermsTest, GtLtAcceptSignedLabelValues) {
  // strconv.ParseInt accepts a sign; node label values cannot start with one, but the parse
  // itself must not be what rejects them.
  Node node = MakeNode("n").Label("n", "+12").Label("m", "-3").Obj();
  EXPECT_TRUE(MatchesNodeSelectorTerms({Term({Req("n", "Gt", {"11"})})}, node));
  EXPECT_TRUE(MatchesNodeSelectorTerms({Term({Req("m", "Lt", {"0"})})}, node));
  EXPECT_FALSE(MatchesNodeSelectorTerms({Term({Req("m", "Gt", {"0"})})}, node));
}

TEST(NodeAffinityMatcherTest, AgreesWithTermTable) {
  const Node node = GpuNode();
  for (const TermsCase& c : NodeTermCases()) {
    SCOPED_TRACE(c.name);
    NodeAffinityMatcher matcher(MakePod("p").Required(c.terms).Obj());
    EXPECT_EQ(matcher.Matches(node), c.want);
    EXPECT_TRUE(matcher.HasRequired());
  }
}

TEST(ValidateNodeSelectorTermsTest, Table) {
  struct Case {
    std::string name;
    std::vector<NodeSelectorTerm> terms;
    std::vector<std::string> want_parts;  // empty: valid
  };
  const std::vector<Case> cases = {
      {"valid", {Term({Req("gpu", "In", {"a100"}), Req("n", "Gt", {"3"})})}, {}},
      {"valid field", {Term({}, {Req("metadata.name", "In", {"node-1"})})}, {}},
      {"empty term is valid", {Term({})}, {}},
      {"no terms", {}, {"at least one"}},
      {"bad operator",
       {Term({Req("gpu", "Exists")}), Term({Req("gpu", "Like", {"a"})})},
       {"nodeSelectorTerms[1]", "matchExpressions[0]", "\"Like\""}},
      {"Gt not integer", {Term({Req("n", "Gt", {"x"})})}, {"\"x\"", "integer"}},
      {"Lt two values", {Term({Req("n", "Lt", {"1", "2"})})}, {"exactly one value"}},
      {"field key",
       {Term({}, {Req("spec.unschedulable", "In", {"x"})})},
       {"matchFields[0]", "\"spec.unschedulable\""}},
      {"field operator", {Term({}, {Req("metadata.name", "Exists", {"x"})})}, {"\"Exists\""}},
      {"field node name", {Term({}, {Req("metadata.name", "In", {"Node_1"})})}, {"\"Node_1\""}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::Status status = ValidateNodeSelectorTerms(c.terms);
    if (c.want_parts.empty()) {
      EXPECT_TRUE(status.ok()) << status;
      continue;
    }
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    for (const std::string& part : c.want_parts) EXPECT_THAT(status.message(), HasSubstr(part));
  }
}

// --- Node affinity -------------------------------------------------------------------------------

TEST(PodMatchesNodeAffinityTest, Table) {
  const Node node = GpuNode();
  struct Case {
    std::string name;
    Pod pod;
    bool want;
  };
  const std::vector<Case> cases = {
      {"no constraints", MakePod("p").Obj(), true},
      {"nodeSelector holds", MakePod("p").NodeSelector("gpu", "a100").Obj(), true},
      {"nodeSelector fails", MakePod("p").NodeSelector("gpu", "h100").Obj(), false},
      {"required holds", MakePod("p").Required({Term({Req("zone", "In", {"a"})})}).Obj(), true},
      {"required fails", MakePod("p").Required({Term({Req("zone", "In", {"b"})})}).Obj(), false},
      {"both hold",
       MakePod("p").NodeSelector("gpu", "a100").Required({Term({Req("zone", "Exists")})}).Obj(),
       true},
      {"nodeSelector holds, required fails",
       MakePod("p").NodeSelector("gpu", "a100").Required({Term({Req("rack", "Exists")})}).Obj(),
       false},
      {"required holds, nodeSelector fails",
       MakePod("p").NodeSelector("gpu", "h100").Required({Term({Req("zone", "Exists")})}).Obj(),
       false},
      {"required present but empty admits no node", MakePod("p").Required({}).Obj(), false},
      {"required with only an empty term admits no node", MakePod("p").Required({Term({})}).Obj(),
       false},
      {"preferred only does not constrain",
       MakePod("p").Preferred(10, Term({Req("gpu", "In", {"h100"})})).Obj(), true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(PodMatchesNodeAffinity(c.pod, node), c.want);
    EXPECT_EQ(NodeAffinityMatcher(c.pod).Matches(node), c.want);
  }
  EXPECT_FALSE(NodeAffinityMatcher(MakePod("p").Obj()).HasRequired());
  EXPECT_TRUE(NodeAffinityMatcher(MakePod("p").NodeSelector("a", "b").Obj()).HasRequired());
}

TEST(PreferredNodeAffinityScoreTest, Table) {
  const Node node = GpuNode();
  struct Case {
    std::string name;
    Pod pod;
    int64_t want;
  };
  const std::vector<Case> cases = {
      {"no affinity", MakePod("p").Obj(), 0},
      {"one matching term", MakePod("p").Preferred(7, Term({Req("gpu", "In", {"a100"})})).Obj(), 7},
      {"non-matching term", MakePod("p").Preferred(7, Term({Req("gpu", "In", {"h100"})})).Obj(), 0},
      {"sum of matching terms",
       MakePod("p")
           .Preferred(7, Term({Req("gpu", "In", {"a100"})}))
           .Preferred(30, Term({Req("gpu", "In", {"h100"})}))
           .Preferred(100, Term({Req("gpu-count", "Gt", {"4"})}))
           .Preferred(5, Term({}, {Req("metadata.name", "In", {"node-1"})}))
           .Obj(),
       112},
      {"weight zero adds nothing", MakePod("p").Preferred(0, Term({Req("gpu", "Exists")})).Obj(),
       0},
      {"empty term adds nothing", MakePod("p").Preferred(50, Term({})).Obj(), 0},
      {"invalid term adds nothing",
       MakePod("p")
           .Preferred(50, Term({Req("gpu", "Exists", {"x"})}))
           .Preferred(3, Term({Req("zone", "Exists")}))
           .Obj(),
       3},
      {"required terms do not score", MakePod("p").Required({Term({Req("gpu", "Exists")})}).Obj(),
       0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(PreferredNodeAffinityScore(c.pod, node), c.want);
    EXPECT_EQ(NodeAffinityMatcher(c.pod).PreferredScore(node), c.want);
  }
}

// Property: the compiled matcher and the direct functions agree on random pods and nodes.
TEST(NodeAffinityMatcherTest, AgreesWithDirectFunctionsOnRandomInputs) {
  std::mt19937 rng(20240611);
  const std::vector<std::string> keys = {"gpu", "zone", "n", "rack"};
  const std::vector<std::string> values = {"a100", "h100", "a", "b", "1", "5", "10", "x"};
  const std::vector<std::string> ops = {"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bad"};
  auto pick = [&](const std::vector<std::string>& from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
  };
  auto coin = [&](int percent) { return std::uniform_int_distribution<int>(0, 99)(rng) < percent; };
  auto random_requirement = [&]() {
    NodeSelectorRequirement r{pick(keys), pick(ops), {}};
    int n = std::uniform_int_distribution<int>(0, 2)(rng);
    for (int i = 0; i < n; ++i) r.values.push_back(pick(values));
    return r;
  };
  auto random_term = [&]() {
    NodeSelectorTerm term;
    int n = std::uniform_int_distribution<int>(0, 3)(rng);
    for (int i = 0; i < n; ++i) term.match_expressions.push_back(random_requirement());
    if (coin(20)) {
      term.match_fields.push_back(
          Req("metadata.name", coin(50) ? "In" : "NotIn", {coin(50) ? "node-0" : "node-1"}));
    }
    return term;
  };
  int matched = 0;
  int scored = 0;
  for (int iteration = 0; iteration < 2000; ++iteration) {
    MakeNode node_builder(coin(50) ? "node-0" : "node-1");
    for (const std::string& key : keys) {
      if (coin(70)) node_builder.Label(key, pick(values));
    }
    Node node = node_builder.Obj();
    MakePod pod_builder("p");
    if (coin(30)) pod_builder.NodeSelector(pick(keys), pick(values));
    if (coin(70)) {
      std::vector<NodeSelectorTerm> terms;
      int n = std::uniform_int_distribution<int>(0, 3)(rng);
      for (int i = 0; i < n; ++i) terms.push_back(random_term());
      pod_builder.Required(std::move(terms));
    }
    int preferred = std::uniform_int_distribution<int>(0, 3)(rng);
    for (int i = 0; i < preferred; ++i) {
      pod_builder.Preferred(std::uniform_int_distribution<int32_t>(0, 100)(rng), random_term());
    }
    Pod pod = pod_builder.Obj();
    NodeAffinityMatcher matcher(pod);
    bool direct = PodMatchesNodeAffinity(pod, node);
    int64_t direct_score = PreferredNodeAffinityScore(pod, node);
    ASSERT_EQ(matcher.Matches(node), direct) << "iteration " << iteration;
    ASSERT_EQ(matcher.PreferredScore(node), direct_score) << "iteration " << iteration;
    matched += direct ? 1 : 0;
    scored += direct_score > 0 ? 1 : 0;
  }
  // The generator must exercise both outcomes, or the property says nothing.
  EXPECT_GT(matched, 100);
  EXPECT_LT(matched, 1900);
  EXPECT_GT(scored, 100);
}

// --- Taints and tolerations ----------------------------------------------------------------------

TEST(TolerationToleratesTaintTest, Table) {
  const Taint gpu{"nvidia.com/gpu", "present", "NoSchedule"};
  struct Case {
    std::string name;
    Toleration toleration;
    Taint taint;
    bool want;
  };
  const std::vector<Case> cases = {
      {"Exists with empty key tolerates everything", Tol("", "Exists", "", ""), gpu, true},
      {"Exists with empty key tolerates NoExecute too", Tol("", "Exists", "", ""),
       Taint{"x", "y", "NoExecute"}, true},
      {"Exists with empty key but effect limits it", Tol("", "Exists", "", "NoExecute"), gpu,
       false},
      {"Exists on key ignores value", Tol("nvidia.com/gpu", "Exists", "", "NoSchedule"), gpu, true},
      {"Exists on other key", Tol("other", "Exists", "", ""), gpu, false},
      {"Equal same value", Tol("nvidia.com/gpu", "Equal", "present", "NoSchedule"), gpu, true},
      {"Equal other value", Tol("nvidia.com/gpu", "Equal", "absent", "NoSchedule"), gpu, false},
      {"Equal empty value vs non-empty taint value", Tol("nvidia.com/gpu", "Equal", "", ""), gpu,
       false},
      {"Equal empty value vs empty taint value", Tol("k", "Equal", "", ""),
       Taint{"k", "", "NoSchedule"}, true},
      {"empty operator means Equal", Tol("nvidia.com/gpu", "", "present", ""), gpu, true},
      {"empty operator compares value", Tol("nvidia.com/gpu", "", "other", ""), gpu, false},
      {"empty effect matches every effect", Tol("nvidia.com/gpu", "Equal", "present", ""), gpu,
       true},
      {"empty effect matches PreferNoSchedule", Tol("k", "Exists", "", ""),
       Taint{"k", "", "PreferNoSchedule"}, true},
      {"effect mismatch", Tol("nvidia.com/gpu", "Equal", "present", "NoExecute"), gpu, false},
      {"key mismatch", Tol("nvidia.com/mig", "Equal", "present", "NoSchedule"), gpu, false},
      {"unknown operator tolerates nothing", Tol("nvidia.com/gpu", "Gt", "present", ""), gpu,
       false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(TolerationToleratesTaint(c.toleration, c.taint), c.want);
    EXPECT_EQ(TolerationsTolerateTaint({c.toleration}, c.taint), c.want);
  }
  EXPECT_FALSE(TolerationsTolerateTaint({}, gpu));
  EXPECT_TRUE(
      TolerationsTolerateTaint({Tol("a", "Exists", "", ""), Tol("", "Exists", "", "")}, gpu));
}

TEST(FindUntoleratedTaintTest, Table) {
  const Node node = MakeNode("n")
                        .WithTaint("soft", "", "PreferNoSchedule")
                        .WithTaint("nvidia.com/gpu", "present", "NoSchedule")
                        .WithTaint("maintenance", "true", "NoExecute")
                        .Obj();
  const std::vector<Taint>& taints = node.spec.taints;
  struct Case {
    std::string name;
    std::vector<Toleration> tolerations;
    TaintEffectFilter filter;
    const Taint* want;
  };
  const std::vector<Case> cases = {
      {"no tolerations: first NoSchedule/NoExecute taint, PreferNoSchedule skipped",
       {},
       {},
       &taints[1]},
      {"gpu tolerated: next is NoExecute",
       {Tol("nvidia.com/gpu", "Exists", "", "")},
       {},
       &taints[2]},
      {"all hard taints tolerated",
       {Tol("nvidia.com/gpu", "Equal", "present", "NoSchedule"),
        Tol("maintenance", "Equal", "true", "NoExecute")},
       {},
       nullptr},
      {"wildcard toleration", {Tol("", "Exists", "", "")}, {}, nullptr},
      {"NoExecute only filter", {}, {.no_schedule = false, .no_execute = true}, &taints[2]},
      {"PreferNoSchedule included on request", {}, {.prefer_no_schedule = true}, &taints[0]},
      {"toleration for wrong effect",
       {Tol("nvidia.com/gpu", "Exists", "", "NoExecute")},
       {},
       &taints[1]},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(FindUntoleratedTaint(taints, c.tolerations, c.filter), c.want);
  }
  EXPECT_EQ(FindUntoleratedTaint({}, {}), nullptr);
}

TEST(CountIntolerablePreferNoScheduleTest, Table) {
  const std::vector<Taint> taints = {{"a", "1", "PreferNoSchedule"},
                                     {"b", "2", "PreferNoSchedule"},
                                     {"c", "3", "NoSchedule"},
                                     {"d", "4", "NoExecute"}};
  EXPECT_EQ(CountIntolerablePreferNoSchedule(taints, {}), 2);
  EXPECT_EQ(CountIntolerablePreferNoSchedule(taints, {Tol("a", "Equal", "1", "")}), 1);
  EXPECT_EQ(CountIntolerablePreferNoSchedule(taints, {Tol("a", "Equal", "9", "")}), 2);
  EXPECT_EQ(CountIntolerablePreferNoSchedule(taints, {Tol("", "Exists", "", "")}), 0);
  EXPECT_EQ(CountIntolerablePreferNoSchedule(taints, {Tol("b", "Exists", "", "NoSchedule")}), 2);
  EXPECT_EQ(CountIntolerablePreferNoSchedule({}, {}), 0);
}

TEST(UntoleratedTaintReasonTest, KubeSchedulerText) {
  EXPECT_EQ(UntoleratedTaintReason({"nvidia.com/gpu", "present", "NoSchedule"}),
            "node(s) had untolerated taint {nvidia.com/gpu: present}");
  EXPECT_EQ(UntoleratedTaintReason({"node.kubernetes.io/not-ready", "", "NoExecute"}),
            "node(s) had untolerated taint {node.kubernetes.io/not-ready: }");
}

// --- Label selector text -------------------------------------------------------------------------

// The rules of apimachinery's IsQualifiedName and IsValidLabelValue, as labels.Parse quotes them.
constexpr char kNameRule[] =
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
constexpr char kValueRule[] =
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

TEST(ParseLabelSelectorTextTest, AcceptsWhatLabelsParseAccepts) {
  struct Case {
    std::string text;
    std::string want;  // ToString() of the result
  };
  const std::vector<Case> cases = {
      {"", ""},
      {"   ", ""},
      {"a=b", "a=b"},
      {"a==b", "a=b"},
      {"a!=b", "a notin (b)"},
      {"a in (x,y)", "a in (x,y)"},
      {"a in (y,x,y)", "a in (x,y)"},
      {"a notin (x)", "a notin (x)"},
      {"a", "a"},
      {"!a", "!a"},
      {"! a", "!a"},
      {"a=", "a="},
      {"a in ()", "a in ()"},  // the empty value: {""}
      {"a notin ()", "a notin ()"},
      {"a in (x,)", "a in (,x)"},
      {"a=b,c!=d,e in (f),g,!h", "a=b,c notin (d),e in (f),g,!h"},
      {" a = b , c in ( x , y ) , ! d ", "a=b,c in (x,y),!d"},
      {"a in(x)", "a in (x)"},
      {"nvidia.com/gpu.product=A100-SXM4-80GB", "nvidia.com/gpu.product=A100-SXM4-80GB"},
      {"a in (in,notin)", "a in (in,notin)"},
      {"a=b,a=c", "a=b,a=c"},
      {"in=b,notin", "in=b,notin"},  // keywords are keys where a key stands
      {"n>3,m<10", "m<10,n>3"},
      {std::string("a=b \0ignored", 12), "a=b"},  // the lexer reads a NUL byte as the end
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<LabelSelectorMatcher> matcher = LabelSelectorMatcher::Parse(c.text);
    ASSERT_TRUE(matcher.ok()) << matcher.status();
    EXPECT_EQ(matcher->ToString(), c.want);
  }
}

TEST(ParseLabelSelectorTextTest, ParsedSelectorsMatchAsKubectlDoes) {
  struct Case {
    std::string text;
    StringMap labels;
    bool want;
  };
  const std::vector<Case> cases = {
      {"", {}, true},
      {"app=train", {{"app", "train"}}, true},
      {"app=train", {{"app", "serve"}}, false},
      {"app!=train", {}, true},  // != holds on a missing key
      {"app!=train", {{"app", "train"}}, false},
      {"app=train,app=serve", {{"app", "train"}}, false},  // contradictory requirements
      {"gpu in (a100,h100),!spot", {{"gpu", "h100"}}, true},
      {"gpu in (a100,h100),!spot", {{"gpu", "h100"}, {"spot", "true"}}, false},
      {"tier notin (batch)", {}, true},
      {"zone=", {{"zone", ""}}, true},
      {"zone=", {}, false},
      {"zone in ()", {{"zone", ""}}, true},
      {"zone in ()", {{"zone", "a"}}, false},
      {"n>3", {{"n", "4"}}, true},
      {"n>3", {{"n", "3"}}, false},
      {"n>3", {{"n", "four"}}, false},  // a value that is no integer fails Gt and Lt
      {"n<3", {}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<LabelSelectorMatcher> matcher = LabelSelectorMatcher::Parse(c.text);
    ASSERT_TRUE(matcher.ok()) << matcher.status();
    EXPECT_EQ(matcher->Matches(c.labels), c.want);
  }
}

// Each refusal with the message labels.Parse gives (apimachinery pkg/labels/selector.go).
TEST(ParseLabelSelectorTextTest, RefusesWithLabelsParseMessages) {
  struct Case {
    std::string text;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"=a", "found '=', expected: !, identifier, or 'end of string'"},
      {",a", "found ',', expected: !, identifier, or 'end of string'"},
      {"!=a", "found '!=', expected: !, identifier, or 'end of string'"},
      {"a,", "found '', expected: identifier after ','"},
      {"a,,b", "found ',', expected: identifier after ','"},
      {"a=b=c", "found '=', expected: ',' or 'end of string'"},
      {"!a=b", "found '=', expected: ',' or 'end of string'"},
      {"!", "unable to parse requirement: found '', expected: identifier"},
      {"a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"},
      {"a in x", "unable to parse requirement: found 'x' expected: '('"},
      {"a in (", "unable to parse requirement: found '', expected: ',', ')' or identifier"},
      {"a in (x", "unable to parse requirement: found '', expected: ',' or ')'"},
      {"a in (x y)", "unable to parse requirement: found 'y', expected: ',' or ')'"},
      {"a in (x,=)", "unable to parse requirement: found '=', expected: ',', or identifier"},
      {"a=(b)", "unable to parse requirement: found '(', expected: identifier"},
      {"-a=b",
       absl::StrCat("unable to parse requirement: <nil>: Invalid value: \"-a\": ", kNameRule)},
      {"a$b",
       absl::StrCat("unable to parse requirement: <nil>: Invalid value: \"a$b\": ", kNameRule)},
      {"/a=b",
       "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty"},
      {"example.com/a/b=c",
       absl::StrCat("unable to parse requirement: <nil>: Invalid value: \"example.com/a/b\": a "
                    "qualified name ",
                    std::string(kNameRule).substr(10),
                    " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")},
      {"a=-b", absl::StrCat("unable to parse requirement: values[0][a]: Invalid value: \"-b\": ",
                            kValueRule)},
      {"a in (x,-y)",
       absl::StrCat("unable to parse requirement: values[0][a]: Invalid value: \"-y\": ",
                    kValueRule)},
      {"a>x",
       "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, "
       "the value must be an integer"},
      {"a>-1", absl::StrCat("unable to parse requirement: values[0][a]: Invalid value: \"-1\": ",
                            kValueRule)},
      {"a>x-", absl::StrCat("unable to parse requirement: [values[0]: Invalid value: \"x-\": for "
                            "'Gt', 'Lt' operators, the value must be an integer, values[0][a]: "
                            "Invalid value: \"x-\": ",
                            kValueRule, "]")},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<LabelSelectorMatcher> matcher = LabelSelectorMatcher::Parse(c.text);
    ASSERT_FALSE(matcher.ok()) << matcher->ToString();
    EXPECT_EQ(matcher.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(matcher.status().message(), c.want);
  }
}

// Property: kubectl's rendering of a selector parses back to a selector with the same verdicts.
TEST(ParseLabelSelectorTextTest, FormatThenParseKeepsSemantics) {
  std::mt19937 rng(7);
  const std::vector<std::string> keys = {"app", "gpu", "example.com/zone"};
  const std::vector<std::string> values = {"a", "b", "c", ""};
  const std::vector<std::string> ops = {"In", "NotIn", "Exists", "DoesNotExist"};
  auto pick = [&](const std::vector<std::string>& from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
  };
  int matched = 0;
  for (int iteration = 0; iteration < 1000; ++iteration) {
    LabelSelector selector;
    if (rng() % 2 == 0) selector.match_labels[pick(keys)] = pick(values);
    int expressions = static_cast<int>(rng() % 3);
    for (int i = 0; i < expressions; ++i) {
      LabelSelectorRequirement expr{pick(keys), pick(ops), {}};
      if (expr.op == "In" || expr.op == "NotIn") {
        int n = 1 + static_cast<int>(rng() % 2);
        for (int v = 0; v < n; ++v) expr.values.push_back(pick(values));
      }
      selector.match_expressions.push_back(expr);
    }
    std::string text = FormatLabelSelector(selector);
    absl::StatusOr<LabelSelectorMatcher> parsed =
        LabelSelectorMatcher::Parse(text == "<none>" ? "" : text);
    ASSERT_TRUE(parsed.ok()) << text << ": " << parsed.status();
    for (int trial = 0; trial < 5; ++trial) {
      StringMap labels;
      for (const std::string& key : keys) {
        if (rng() % 3 != 0) labels[key] = pick(values);
      }
      bool want = MatchesLabelSelector(selector, labels);
      ASSERT_EQ(parsed->Matches(labels), want) << text;
      matched += want ? 1 : 0;
    }
  }
  EXPECT_GT(matched, 500);
  EXPECT_LT(matched, 4500);
}

// --- Field selector text -------------------------------------------------------------------------

TEST(ParseFieldSelectorTest, Accepts) {
  struct Case {
    std::string text;
    std::vector<FieldRequirement> want;
  };
  const std::vector<Case> cases = {
      {"", {}},
      {"metadata.name=p1", {{"metadata.name", true, "p1"}}},
      {"metadata.name==p1", {{"metadata.name", true, "p1"}}},
      {"status.phase!=Running", {{"status.phase", false, "Running"}}},
      {"spec.nodeName=", {{"spec.nodeName", true, ""}}},
      {"spec.nodeName!=", {{"spec.nodeName", false, ""}}},
      {"metadata.namespace=default,status.phase!=Failed",
       {{"metadata.namespace", true, "default"}, {"status.phase", false, "Failed"}}},
      {"a=b,,c=d", {{"a", true, "b"}, {"c", true, "d"}}},
      {"a=b,", {{"a", true, "b"}}},
      {R"(a=x\,y)", {{"a", true, "x,y"}}},
      {R"(a=x\=y\\z)", {{"a", true, R"(x=y\z)"}}},
      {"a!b=c", {{"a!b", true, "c"}}},
      {"=Running", {{"", true, "Running"}}},  // the empty field is for the caller to refuse
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<std::vector<FieldRequirement>> parsed = ParseFieldSelector(c.text);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, c.want);
  }
}

// Each refusal with the message fields.ParseSelector gives (apimachinery pkg/fields/selector.go).
TEST(ParseFieldSelectorTest, RefusesWithFieldsParseSelectorMessages) {
  struct Case {
    std::string text;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"status.phase", "invalid selector: 'status.phase'; can't understand 'status.phase'"},
      {"a=b,oops", "invalid selector: 'a=b,oops'; can't understand 'oops'"},
      {"a=b=c", "invalid field selector: unescaped character in value: 61"},
      {"zz,a=b=c", "invalid field selector: unescaped character in value: 61"},  // sorted first
      {R"(a=x\y)", R"(invalid field selector: invalid escape sequence: \y)"},
      {R"(a=x\)", R"(invalid field selector: invalid escape sequence: \)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<std::vector<FieldRequirement>> parsed = ParseFieldSelector(c.text);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().message(), c.want);
  }
}

TEST(MatchesFieldSelectorTest, Table) {
  const StringMap fields = {{"metadata.name", "p1"}, {"status.phase", "Running"}};
  struct Case {
    std::string text;
    bool want;
  };
  const std::vector<Case> cases = {
      {"", true},
      {"metadata.name=p1", true},
      {"metadata.name=p2", false},
      {"status.phase!=Running", false},
      {"status.phase!=Pending", true},
      {"metadata.name=p1,status.phase=Running", true},
      {"metadata.name=p1,status.phase=Pending", false},
      {"spec.nodeName=", true},  // a missing field reads as ""
      {"spec.nodeName!=", false},
      {"spec.nodeName=n1", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<std::vector<FieldRequirement>> parsed = ParseFieldSelector(c.text);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(MatchesFieldSelector(*parsed, fields), c.want);
  }
}

}  // namespace
}  // namespace muster::api
