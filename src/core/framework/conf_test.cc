#include "core/framework/conf.h"

#include <string>

#include "absl/status/status.h"
#include "core/framework/plugin.h"
#include "core/framework/registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace muster::core {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

constexpr char kKnownActionList[] = "enqueue, allocate, backfill, preempt, reclaim";
constexpr char kKnownPluginList[] =
    "priority, gang, conformance, drf, proportion, capacity, sla, overcommit, predicates, "
    "nodeorder, binpack, network-topology-aware, nvlink, gpu-fgd, gpu-bestfit, gpu-dotproduct, "
    "gpu-packing, gpu-clustering, "
    "gpu-random, gpu-muster";

// Parses text that must be valid; fails the test (and returns an empty conf) otherwise.
SchedulerConf MustParse(std::string_view text, const ConfParseOptions& options = {}) {
  absl::StatusOr<SchedulerConf> conf = ParseSchedulerConf(text, options);
  EXPECT_TRUE(conf.ok()) << conf.status() << "\n" << text;
  return conf.ok() ? *std::move(conf) : SchedulerConf{};
}

// The message of a parse that must fail with InvalidArgument.
std::string ParseError(std::string_view text) {
  absl::StatusOr<SchedulerConf> conf = ParseSchedulerConf(text);
  EXPECT_FALSE(conf.ok()) << "parsed, but should not have:\n" << text;
  if (conf.ok()) return "";
  EXPECT_EQ(conf.status().code(), absl::StatusCode::kInvalidArgument) << conf.status();
  return std::string(conf.status().message());
}

std::vector<std::string> PluginNames(const Tier& tier) {
  std::vector<std::string> names;
  for (const PluginOption& plugin : tier.plugins) names.push_back(plugin.name);
  return names;
}

// A plugin option with the given arguments, for the typed lookups.
PluginOption PluginWithArguments(std::map<std::string, std::string> arguments) {
  PluginOption plugin;
  plugin.name = "sla";
  plugin.arguments = std::move(arguments);
  return plugin;
}

// --- Defaults ------------------------------------------------------------------------------------

TEST(DefaultSchedulerConfTest, MatchesVolcanoBuiltInDefault) {
  const SchedulerConf& conf = DefaultSchedulerConf();
  EXPECT_THAT(conf.actions, ElementsAre("enqueue", "allocate", "backfill"));
  ASSERT_EQ(conf.tiers.size(), 2u);
  EXPECT_THAT(PluginNames(conf.tiers[0]), ElementsAre("priority", "gang", "conformance"));
  EXPECT_THAT(PluginNames(conf.tiers[1]),
              ElementsAre("overcommit", "drf", "predicates", "proportion", "nodeorder"));
  EXPECT_THAT(conf.configurations, IsEmpty());
  EXPECT_FALSE(conf.HasAction("preempt"));
  EXPECT_EQ(conf.FindPlugin("binpack"), nullptr);
}

TEST(DefaultSchedulerConfTest, EqualsParsedDefaultText) {
  // pkg/scheduler/util.go defaultSchedulerConf, verbatim.
  constexpr char kVolcanoDefault[] = R"(
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
)";
  EXPECT_EQ(MustParse(kVolcanoDefault), DefaultSchedulerConf());
}

TEST(KubeSchedulerConfTest, EqualsItsText) {
  EXPECT_EQ(MustParse(R"(
actions: "allocate, backfill"
tiers:
- plugins:
  - name: priority
- plugins:
  - name: predicates
  - name: nodeorder
)"),
            KubeSchedulerConf());
}

TEST(DefaultSchedulerConfTest, IsOneObject) {
  EXPECT_EQ(&DefaultSchedulerConf(), &DefaultSchedulerConf());
}

// --- Conformance shapes (tests/conformance/volcano) ---------------------------------------------

TEST(ParseSchedulerConfTest, AllocateShape) {
  // allocate-two-jobs-one-node.yaml
  SchedulerConf conf = MustParse(R"(
actions: "enqueue, allocate"
tiers:
- plugins:
  - name: gang
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
)");
  EXPECT_THAT(conf.actions, ElementsAre("enqueue", "allocate"));
  ASSERT_EQ(conf.tiers.size(), 2u);
  EXPECT_THAT(PluginNames(conf.tiers[0]), ElementsAre("gang"));
  EXPECT_THAT(PluginNames(conf.tiers[1]),
              ElementsAre("drf", "predicates", "proportion", "nodeorder"));
  EXPECT_TRUE(conf.tiers[0].plugins[0].flags.empty());
}

TEST(ParseSchedulerConfTest, NodeorderWeightsShape) {
  // nodeorder-balanced.yaml
  SchedulerConf conf = MustParse(R"(
actions: "allocate"
tiers:
- plugins:
  - name: gang
    enableJobOrder: false
    enableJobReady: true
    enableJobPipelined: false
    enablePreemptable: false
    enableReclaimable: false
    enableJobStarving: false
    enabledSubJobReady: false
    enabledSubJobPipelined: false
    enabledSubJobOrder: false
  - name: nodeorder
    enableNodeOrder: true
    arguments:
      leastrequested.weight: 0
      mostrequested.weight: 0
      balancedresource.weight: 10
      nodeaffinity.weight: 0
      tainttoleration.weight: 0
      podaffinity.weight: 0
      podtopologyspread.weight: 0
      imagelocality.weight: 0
)");
  const PluginOption* gang = conf.FindPlugin("gang");
  ASSERT_NE(gang, nullptr);
  EXPECT_FALSE(gang->Enabled("enableJobOrder"));
  EXPECT_TRUE(gang->Enabled("enableJobReady"));
  EXPECT_FALSE(gang->Enabled("enabledSubJobOrder"));
  EXPECT_TRUE(gang->Enabled("enableQueueOrder"));  // not written: on

  const PluginOption* nodeorder = conf.FindPlugin("nodeorder");
  ASSERT_NE(nodeorder, nullptr);
  EXPECT_EQ(nodeorder->arguments.size(), 8u);
  EXPECT_EQ(nodeorder->Text("leastrequested.weight", "1"), "0");
  EXPECT_EQ(nodeorder->Text("balancedresource.weight", "1"), "10");
  EXPECT_EQ(nodeorder->Number("leastrequested.weight", 1).value(), 0);
  EXPECT_EQ(nodeorder->Number("balancedresource.weight", 1).value(), 10);
  EXPECT_EQ(nodeorder->Number("not-written.weight", 2).value(), 2);
}

TEST(ParseSchedulerConfTest, EnqueueWithSlaShape) {
  // enqueue-pending-to-inqueue.yaml (first tier)
  SchedulerConf conf = MustParse(R"(
actions: "enqueue"
tiers:
- plugins:
  - name: sla
    arguments:
      sla-waiting-time: "3m"
  - name: gang
    enableJobOrder: true
    enableJobReady: false
    enableJobPipelined: false
)");
  const PluginOption* sla = conf.FindPlugin("sla");
  ASSERT_NE(sla, nullptr);
  EXPECT_EQ(sla->Text("sla-waiting-time", ""), "3m");
  EXPECT_THAT(sla->DurationSeconds("sla-waiting-time").value(), Optional(180.0));
}

TEST(ParseSchedulerConfTest, PreemptWithConfigurationsShape) {
  // preempt-enough-idle.yaml
  SchedulerConf conf = MustParse(R"(
actions: "preempt"
tiers:
- plugins:
  - name: conformance
    enablePreemptable: true
    enableReclaimable: false
  - name: gang
    enablePreemptable: true
  - name: priority
    enableJobOrder: true
    enableTaskOrder: true
  - name: proportion
    enablePreemptive: false
    enabledOverused: true
  - name: predicates
    enablePredicate: true
    enableNodeOrder: false
configurations:
- name: preempt
  arguments:
    enableTopologyAwarePreemption: false
)");
  EXPECT_THAT(conf.actions, ElementsAre("preempt"));
  EXPECT_TRUE(conf.HasAction("preempt"));
  EXPECT_FALSE(conf.HasAction("allocate"));
  EXPECT_EQ(conf.ActionArgument("preempt", "enableTopologyAwarePreemption", "true"), "false");
  EXPECT_EQ(conf.ActionArgument("preempt", "not-written", "dflt"), "dflt");
  EXPECT_EQ(conf.ActionArgument("reclaim", "enableTopologyAwarePreemption", "dflt"), "dflt");
  EXPECT_TRUE(conf.FindPlugin("proportion")->Enabled("enabledOverused"));
  EXPECT_FALSE(conf.FindPlugin("proportion")->Enabled("enablePreemptive"));
}

constexpr char kTopologyPreemptConf[] = R"(
actions: "preempt"
tiers:
- plugins:
  - name: gang
  - name: proportion
    enableQueueOrder: true
  - name: capacity
    enablePreemptable: false
    enableQueueOrder: true
configurations:
- name: preempt
  arguments:
    enableTopologyAwarePreemption: true
)";

TEST(ParseSchedulerConfTest, ProportionWithCapacityRejectedByDefault) {
  EXPECT_EQ(ParseError(kTopologyPreemptConf),
            "plugins proportion and capacity are both configured; they divide queue resources in "
            "conflicting ways, keep one");
}

TEST(ParseSchedulerConfTest, ProportionWithCapacityAllowedByOption) {
  // preempt-topo-*.yaml restate Volcano tests that list both plugins.
  SchedulerConf conf =
      MustParse(kTopologyPreemptConf, ConfParseOptions{.allow_proportion_with_capacity = true});
  ASSERT_NE(conf.FindPlugin("capacity"), nullptr);
  EXPECT_FALSE(conf.FindPlugin("capacity")->Enabled("enablePreemptable"));
  EXPECT_EQ(conf.ActionArgument("preempt", "enableTopologyAwarePreemption", ""), "true");
}

TEST(ParseSchedulerConfTest, CapacityArgumentsMusterDoesNotImplementAreRefused) {
  EXPECT_EQ(ParseError("actions: reclaim\ntiers:\n- plugins:\n  - name: capacity\n"
                       "    arguments: {ancestorReclaimLevel: 2}\n"),
            "plugin \"capacity\": argument \"ancestorReclaimLevel\": 2 is not implemented by "
            "muster (reclaim decided at ancestor queues); remove the argument or set it to 0");
  MustParse("actions: reclaim\ntiers:\n- plugins:\n  - name: capacity\n"
            "    arguments: {ancestorReclaimLevel: 0}\n");
}

TEST(ParseSchedulerConfTest, AnNvLinkWeightIsANumberNotBelowZero) {
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: nvlink\n"
                       "    arguments: {nvlink.weight: heavy}\n"),
            "plugin \"nvlink\" argument \"nvlink.weight\": \"heavy\" is not a number");
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: nvlink\n"
                       "    arguments: {nvlink.weight: -2}\n"),
            "plugin \"nvlink\" argument \"nvlink.weight\": -2 is negative; give 0 or more");
  MustParse("actions: allocate\ntiers:\n- plugins:\n  - name: nvlink\n"
            "    arguments: {nvlink.weight: 10}\n");
}

// Every plugin name the parser accepts builds a plugin: none is skipped by the session.
TEST(PluginRegistryTest, EveryKnownPluginNameBuildsAPlugin) {
  for (std::string_view name : muster::core::PluginNames()) {
    PluginOption option;
    option.name = std::string(name);
    EXPECT_NE(NewPlugin(option), nullptr) << name;
  }
}

// --- Actions -------------------------------------------------------------------------------------

TEST(ParseSchedulerConfTest, ActionsAreTrimmedAndEmptyEntriesIgnored) {
  SchedulerConf conf = MustParse("actions: \" enqueue ,,allocate,\tbackfill , reclaim,preempt,\"");
  EXPECT_THAT(conf.actions, ElementsAre("enqueue", "allocate", "backfill", "reclaim", "preempt"));
  EXPECT_THAT(conf.tiers, IsEmpty());
}

TEST(ParseSchedulerConfTest, ActionsKeepTheirOrder) {
  EXPECT_THAT(MustParse("actions: reclaim, allocate").actions, ElementsAre("reclaim", "allocate"));
}

// --- Flags ---------------------------------------------------------------------------------------

TEST(PluginOptionTest, FlagsDefaultOnExceptHierarchy) {
  SchedulerConf conf = MustParse(R"(
actions: allocate
tiers:
- plugins:
  - name: drf
)");
  const PluginOption* drf = conf.FindPlugin("drf");
  ASSERT_NE(drf, nullptr);
  EXPECT_TRUE(drf->flags.empty());
  EXPECT_TRUE(drf->Enabled("enableJobOrder"));
  EXPECT_TRUE(drf->Enabled("enablePreemptable"));
  EXPECT_TRUE(drf->Enabled("enabledOverused"));
  EXPECT_FALSE(drf->Enabled("enableHierarchy"));
}

TEST(PluginOptionTest, FlagsAsWritten) {
  SchedulerConf conf = MustParse(R"(
actions: allocate
tiers:
- plugins:
  - name: drf
    enableHierarchy: true
    enablePreemptable: false
    enabledVictim: false
    enableJobOrder: no
    enableJobReady: yes
)");
  const PluginOption* drf = conf.FindPlugin("drf");
  ASSERT_NE(drf, nullptr);
  EXPECT_THAT(drf->flags,
              UnorderedElementsAre(Pair("enableHierarchy", true), Pair("enablePreemptable", false),
                                   Pair("enabledVictim", false), Pair("enableJobOrder", false),
                                   Pair("enableJobReady", true)));
  EXPECT_TRUE(drf->Enabled("enableHierarchy"));
  EXPECT_FALSE(drf->Enabled("enablePreemptable"));
  EXPECT_FALSE(drf->Enabled("enabledVictim"));
}

TEST(PluginOptionTest, HierarchyFlagOffIsAllowedWithProportion) {
  SchedulerConf conf = MustParse(R"(
actions: allocate
tiers:
- plugins:
  - name: drf
    enableHierarchy: false
  - name: proportion
)");
  EXPECT_FALSE(conf.FindPlugin("drf")->Enabled("enableHierarchy"));
}

// --- Arguments -----------------------------------------------------------------------------------

TEST(PluginOptionTest, ArgumentScalarsKeepTheirText) {
  SchedulerConf conf = MustParse(R"(
actions: allocate
tiers:
- plugins:
  - name: overcommit
    arguments:
      overcommit-factor: 1.50
      int: 10
      exp: 1e3
      flag: true
      quoted: "007"
      text: hello world
      nothing:
)");
  const PluginOption* overcommit = conf.FindPlugin("overcommit");
  ASSERT_NE(overcommit, nullptr);
  EXPECT_THAT(overcommit->arguments,
              UnorderedElementsAre(Pair("overcommit-factor", "1.50"), Pair("int", "10"),
                                   Pair("exp", "1e3"), Pair("flag", "true"), Pair("quoted", "007"),
                                   Pair("text", "hello world")));
  EXPECT_EQ(overcommit->Number("overcommit-factor", 1.2).value(), 1.5);
  EXPECT_EQ(overcommit->Number("exp", 0).value(), 1000);
  EXPECT_EQ(overcommit->Number("nothing", 7).value(), 7);  // null: as if not written
}

TEST(PluginOptionTest, BinpackDottedKeysStayFlat) {
  SchedulerConf conf = MustParse(R"(
actions: allocate
tiers:
- plugins:
  - name: binpack
    arguments:
      binpack.weight: 10
      binpack.cpu: 1
      binpack.resources: nvidia.com/gpu
      binpack.resources.nvidia.com/gpu: 5
)");
  const PluginOption* binpack = conf.FindPlugin("binpack");
  ASSERT_NE(binpack, nullptr);
  EXPECT_THAT(binpack->arguments,
              UnorderedElementsAre(Pair("binpack.weight", "10"), Pair("binpack.cpu", "1"),
                                   Pair("binpack.resources", "nvidia.com/gpu"),
                                   Pair("binpack.resources.nvidia.com/gpu", "5")));
  EXPECT_EQ(binpack->Number("binpack.resources.nvidia.com/gpu", 1).value(), 5);
  EXPECT_EQ(binpack->Number("binpack.memory", 1).value(), 1);
}

TEST(PluginOptionTest, NestedArgumentsFlattenWithDots) {
  SchedulerConf conf = MustParse(R"(
actions: allocate
tiers:
- plugins:
  - name: binpack
    arguments:
      binpack:
        weight: 10
        resources:
          nvidia.com/gpu: 5
        empty: {}
  - name: nodeorder
    arguments:
      leastrequested: {weight: 0}
      tainttoleration.weight: 3
)");
  EXPECT_THAT(conf.FindPlugin("binpack")->arguments,
              UnorderedElementsAre(Pair("binpack.weight", "10"),
                                   Pair("binpack.resources.nvidia.com/gpu", "5")));
  EXPECT_THAT(conf.FindPlugin("nodeorder")->arguments,
              UnorderedElementsAre(Pair("leastrequested.weight", "0"),
                                   Pair("tainttoleration.weight", "3")));
}

TEST(SchedulerConfTest, ConfigurationArgumentsFlattenToo) {
  SchedulerConf conf = MustParse(R"(
actions: enqueue, allocate
configurations:
- name: allocate
  arguments:
    predicateErrorCacheEnable: true
    topology: {maxDomains: 4}
- name: enqueue
)");
  EXPECT_EQ(conf.ActionArgument("allocate", "predicateErrorCacheEnable", ""), "true");
  EXPECT_EQ(conf.ActionArgument("allocate", "topology.maxDomains", ""), "4");
  EXPECT_THAT(conf.configurations.at("enqueue"), IsEmpty());
}

TEST(SchedulerConfTest, FindPluginReturnsFirstInTierOrder) {
  SchedulerConf conf = MustParse(R"(
actions: allocate
tiers:
- plugins:
  - name: priority
- plugins:
  - name: gang
    enableJobReady: false
  - name: gang
)");
  const PluginOption* gang = conf.FindPlugin("gang");
  ASSERT_NE(gang, nullptr);
  EXPECT_EQ(gang, &conf.tiers[1].plugins[0]);
  EXPECT_FALSE(gang->Enabled("enableJobReady"));
  EXPECT_EQ(conf.FindPlugin("drf"), nullptr);
}

TEST(ParseSchedulerConfTest, MetricsAreAcceptedAndIgnored) {
  SchedulerConf conf = MustParse(R"(
actions: allocate
metrics:
  type: prometheus
  address: http://prometheus:9090
  interval: 30s
)");
  EXPECT_THAT(conf.actions, ElementsAre("allocate"));
}

TEST(ParseSchedulerConfTest, EmptyTiersAndPluginListsAreAllowed) {
  SchedulerConf conf = MustParse(R"(
actions: allocate
tiers:
- plugins:
- plugins: []
)");
  ASSERT_EQ(conf.tiers.size(), 2u);
  EXPECT_THAT(conf.tiers[0].plugins, IsEmpty());
  EXPECT_THAT(conf.tiers[1].plugins, IsEmpty());
}

// --- Typed argument lookups ----------------------------------------------------------------------

TEST(PluginOptionTest, Number) {
  PluginOption plugin = PluginWithArguments(
      {{"w", "2.5"}, {"neg", "-3"}, {"bad", "ten"}, {"inf", "inf"}, {"empty", ""}});
  EXPECT_EQ(plugin.Number("w", 1).value(), 2.5);
  EXPECT_EQ(plugin.Number("neg", 1).value(), -3);
  EXPECT_EQ(plugin.Number("missing", 1.25).value(), 1.25);
  absl::StatusOr<double> bad = plugin.Number("bad", 1);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "plugin \"sla\" argument \"bad\": \"ten\" is not a number");
  EXPECT_FALSE(plugin.Number("inf", 1).ok());
  EXPECT_FALSE(plugin.Number("empty", 1).ok());
}

TEST(PluginOptionTest, Bool) {
  PluginOption plugin = PluginWithArguments(
      {{"t", "true"}, {"f", "False"}, {"on", "on"}, {"off", "OFF"}, {"bad", "maybe"}});
  EXPECT_TRUE(plugin.Bool("t", false).value());
  EXPECT_FALSE(plugin.Bool("f", true).value());
  EXPECT_TRUE(plugin.Bool("on", false).value());
  EXPECT_FALSE(plugin.Bool("off", true).value());
  EXPECT_TRUE(plugin.Bool("missing", true).value());
  EXPECT_FALSE(plugin.Bool("missing", false).value());
  absl::StatusOr<bool> bad = plugin.Bool("bad", false);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(),
            "plugin \"sla\" argument \"bad\": \"maybe\" is not true or false");
}

TEST(PluginOptionTest, DurationSeconds) {
  PluginOption plugin = PluginWithArguments({{"sla-waiting-time", "1h30m"}, {"bad", "3 minutes"}});
  EXPECT_THAT(plugin.DurationSeconds("sla-waiting-time").value(), Optional(5400.0));
  EXPECT_EQ(plugin.DurationSeconds("missing").value(), std::nullopt);
  absl::StatusOr<std::optional<double>> bad = plugin.DurationSeconds("bad");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("plugin \"sla\" argument \"bad\": \"3 minutes\" is not a duration"));
}

TEST(PluginOptionTest, Text) {
  PluginOption plugin = PluginWithArguments({{"k", "v"}, {"empty", ""}});
  EXPECT_EQ(plugin.Text("k", "d"), "v");
  EXPECT_EQ(plugin.Text("empty", "d"), "");
  EXPECT_EQ(plugin.Text("missing", "d"), "d");
}

// --- Errors --------------------------------------------------------------------------------------

TEST(ParseSchedulerConfErrorTest, UnknownAction) {
  EXPECT_EQ(ParseError("actions: \"enqueue, foo, allocate\""),
            std::string("unknown action \"foo\" in actions; known actions: ") + kKnownActionList);
}

TEST(ParseSchedulerConfErrorTest, ActionsMustNotBeEmpty) {
  const std::string expected =
      std::string("actions is missing or empty; list at least one of: ") + kKnownActionList;
  EXPECT_EQ(ParseError("actions: \"\""), expected);
  EXPECT_EQ(ParseError("actions: \" , ,\""), expected);
  EXPECT_EQ(ParseError("actions:"), expected);
  EXPECT_EQ(ParseError("tiers:\n- plugins:\n  - name: gang\n"), expected);
}

TEST(ParseSchedulerConfErrorTest, ActionsMustBeAString) {
  EXPECT_EQ(ParseError("actions: [enqueue, allocate]"),
            "actions must be one comma-separated string such as \"enqueue, allocate, "
            "backfill\", got a list");
}

TEST(ParseSchedulerConfErrorTest, UnknownPlugin) {
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n- plugins:\n"
                       "  - name: nosuch\n"),
            std::string("unknown plugin \"nosuch\" in tiers[1].plugins[0]; known plugins: ") +
                kKnownPluginList);
}

TEST(ParseSchedulerConfErrorTest, PluginWithoutName) {
  const std::string expected =
      std::string(
          "tiers[0].plugins[1] has no name; each plugin entry needs name: <plugin> "
          "(one of: ") +
      kKnownPluginList + ")";
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n"
                       "  - enableJobOrder: false\n"),
            expected);
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name: \"\"\n"),
            expected);
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n  - name:\n"),
            expected);
}

TEST(ParseSchedulerConfErrorTest, PluginEntryMustBeAMap) {
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - gang\n"),
            "tiers[0].plugins[0] must be a map like {name: gang}, got \"gang\"");
}

TEST(ParseSchedulerConfErrorTest, FlagMustBeBoolean) {
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n"
                       "    enableJobOrder: maybe\n"),
            "plugin \"gang\": flag \"enableJobOrder\" must be true or false, got \"maybe\"");
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: proportion\n"
                       "    enabledOverused: 1\n"),
            "plugin \"proportion\": flag \"enabledOverused\" must be true or false, got \"1\"");
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n"
                       "    enableJobReady: \"true\"\n"),
            "plugin \"gang\": flag \"enableJobReady\" must be true or false, got \"true\"");
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n"
                       "    enableJobReady: [true]\n"),
            "plugin \"gang\": flag \"enableJobReady\" must be true or false, got a list");
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n"
                       "    enableJobReady:\n"),
            "plugin \"gang\": flag \"enableJobReady\" must be true or false, got nothing");
}

TEST(ParseSchedulerConfErrorTest, UnknownPluginKey) {
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n"
                       "    weight: 3\n"),
            "plugin \"gang\": unknown key \"weight\"; a plugin entry takes name, arguments and "
            "enable*/enabled* flags");
}

TEST(ParseSchedulerConfErrorTest, ArgumentsMustBeAMap) {
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: binpack\n"
                       "    arguments: binpack.weight=10\n"),
            "plugin \"binpack\": arguments must be a map of key: value, got "
            "\"binpack.weight=10\"");
}

TEST(ParseSchedulerConfErrorTest, ArgumentListsAreRejected) {
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: binpack\n"
                       "    arguments:\n      binpack:\n        resources: [a, b]\n"),
            "plugin \"binpack\": argument \"binpack.resources\" is a list; arguments take a "
            "single value or a map");
}

TEST(ParseSchedulerConfErrorTest, ArgumentGivenTwice) {
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: binpack\n"
                       "    arguments:\n      binpack.weight: 1\n      binpack: {weight: 2}\n"),
            "plugin \"binpack\": argument \"binpack.weight\" is given twice (once nested, once "
            "with dots)");
}

TEST(ParseSchedulerConfErrorTest, UnknownTopLevelKey) {
  EXPECT_EQ(ParseError("actions: allocate\nplugins:\n- name: gang\n"),
            "unknown key \"plugins\" in scheduler configuration; known keys: actions, tiers, "
            "configurations, metrics");
}

TEST(ParseSchedulerConfErrorTest, RepeatedKey) {
  EXPECT_EQ(ParseError("actions: allocate\nactions: preempt\n"),
            "scheduler configuration: key \"actions\" appears twice");
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: gang\n"
                       "    enableJobReady: true\n    enableJobReady: false\n"),
            "tiers[0].plugins[0]: key \"enableJobReady\" appears twice");
}

TEST(ParseSchedulerConfErrorTest, MalformedYamlNamesTheLine) {
  EXPECT_THAT(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: [gang\n"),
              HasSubstr("malformed YAML at line 5"));
  EXPECT_EQ(ParseError("actions: allocate\ntiers: a: b\n"),
            "malformed YAML at line 2, column 9: illegal map value");
  EXPECT_THAT(ParseError("actions: allocate\n  tiers: x\n"), HasSubstr("malformed YAML at line 2"));
}

TEST(ParseSchedulerConfErrorTest, DocumentMustBeAMap) {
  EXPECT_EQ(ParseError(""), "scheduler configuration is empty; it needs at least actions: \"...\"");
  EXPECT_EQ(ParseError("# only a comment\n"),
            "scheduler configuration is empty; it needs at least actions: \"...\"");
  EXPECT_EQ(ParseError("- actions: allocate\n"),
            "scheduler configuration must be a map with actions and tiers, got a list");
}

TEST(ParseSchedulerConfErrorTest, TierShape) {
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n  plugins: []\n"),
            "tiers must be a list like [{plugins: [{name: gang}]}], got a map");
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins: []\n  name: t1\n"),
            "tiers[0]: unknown key \"name\"; a tier takes only plugins");
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins: gang\n"),
            "tiers[0].plugins must be a list, got \"gang\"");
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- gang\n"),
            "tiers[0] must be a map with plugins, got \"gang\"");
}

TEST(ParseSchedulerConfErrorTest, ConfigurationShape) {
  EXPECT_EQ(ParseError("actions: preempt\nconfigurations:\n- name: shuffle\n"),
            std::string("unknown action \"shuffle\" in configurations[0]; known actions: ") +
                kKnownActionList);
  EXPECT_EQ(ParseError("actions: preempt\nconfigurations:\n- arguments: {a: 1}\n"),
            std::string("configurations[0] has no name; it needs name: <action> (one of: ") +
                kKnownActionList + ")");
  EXPECT_EQ(ParseError("actions: preempt\nconfigurations:\n- name: preempt\n- name: preempt\n"),
            "configurations[1]: action \"preempt\" is configured twice");
  EXPECT_EQ(ParseError("actions: preempt\nconfigurations:\n- name: preempt\n  args: {}\n"),
            "configurations[0]: unknown key \"args\"; a configuration takes name and arguments");
  EXPECT_EQ(ParseError("actions: preempt\nconfigurations:\n  name: preempt\n"),
            "configurations must be a list like [{name: preempt, arguments: {...}}], got a map");
  EXPECT_EQ(ParseError("actions: preempt\nconfigurations:\n- name: preempt\n  arguments: [1]\n"),
            "configuration \"preempt\": arguments must be a map of key: value, got a list");
}

TEST(ParseSchedulerConfErrorTest, HierarchicalDrfWithProportion) {
  const std::string expected =
      "proportion and drf with enableHierarchy: true conflict (both divide resources among "
      "queues); remove proportion or turn enableHierarchy off";
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: drf\n"
                       "    enableHierarchy: true\n  - name: proportion\n"),
            expected);
  // Volcano checks within one tier; across tiers the two still fight over queue shares.
  EXPECT_EQ(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: proportion\n"
                       "- plugins:\n  - name: drf\n    enableHierarchy: true\n"),
            expected);
  SchedulerConf conf = MustParse(
      "actions: allocate\ntiers:\n- plugins:\n  - name: drf\n"
      "    enableHierarchy: true\n  - name: capacity\n");
  EXPECT_TRUE(conf.FindPlugin("drf")->Enabled("enableHierarchy"));
}

TEST(ParseSchedulerConfErrorTest, ProportionWithCapacityAcrossTiers) {
  EXPECT_THAT(ParseError("actions: allocate\ntiers:\n- plugins:\n  - name: capacity\n"
                         "- plugins:\n  - name: proportion\n"),
              HasSubstr("plugins proportion and capacity are both configured"));
}

}  // namespace
}  // namespace muster::core
