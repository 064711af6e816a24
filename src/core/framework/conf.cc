#include "core/framework/conf.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <span>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "common/go_duration.h"
#include "core/framework/registry.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "yaml-cpp/yaml.h"

namespace muster::core {
namespace {

using ArgumentMap = std::map<std::string, std::string>;

constexpr std::string_view kHierarchyFlag = "enableHierarchy";

template <typename... Args>
absl::Status Invalid(fmt::format_string<Args...> format, Args&&... args) {
  return absl::InvalidArgumentError(fmt::format(format, std::forward<Args>(args)...));
}

// The known names are the registries' (framework/registry.h): the tables that build the plugins
// and actions are the only lists of them. They are defined with the plugins and the actions, and
// this file sees only the declarations, so the framework includes nothing above it.
bool IsOneOf(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Debian's Abseil keeps its own absl::string_view, so absl::StrJoin and StrSplit do not take
// std::string_view; fmt::join does.
std::string KnownActions() { return fmt::format("{}", fmt::join(ActionNames(), ", ")); }
std::string KnownPlugins() { return fmt::format("{}", fmt::join(PluginNames(), ", ")); }

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string_view TrimAsciiWhitespace(std::string_view text) {
  while (!text.empty() && IsAsciiSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsAsciiSpace(text.back())) text.remove_suffix(1);
  return text;
}

// How a value reads in an error message.
std::string Describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return fmt::format("\"{}\"", node.Scalar());
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    default:
      return "nothing";
  }
}

// yaml-cpp keeps every copy of a repeated key and lookups find the first, so a second
// `actions:` would be dropped without a word; reject it instead. Keys must be plain text.
absl::Status CheckKeys(const YAML::Node& map, std::string_view where) {
  std::set<std::string> seen;
  for (const auto& entry : map) {
    if (!entry.first.IsScalar()) {
      return Invalid("{}: a key is {}, expected text", where, Describe(entry.first));
    }
    if (!seen.insert(entry.first.Scalar()).second) {
      return Invalid("{}: key \"{}\" appears twice", where, entry.first.Scalar());
    }
  }
  return absl::OkStatus();
}

// Flattens an arguments map to text: nested maps join their keys with ".", scalars keep the text
// as written ("10", "0.5", "true", "3m"). A null value is left out, as Volcano's typed getters
// skip it.
absl::StatusOr<ArgumentMap> FlattenArguments(const YAML::Node& node, std::string_view owner,
                                             const std::string& prefix) {
  ArgumentMap flat;
  if (!node || node.IsNull()) return flat;
  if (!node.IsMap()) {
    if (prefix.empty()) {
      return Invalid("{}: arguments must be a map of key: value, got {}", owner, Describe(node));
    }
    return Invalid("{}: argument \"{}\" must be a map of key: value, got {}", owner, prefix,
                   Describe(node));
  }
  if (absl::Status status = CheckKeys(node, fmt::format("{} arguments", owner)); !status.ok()) {
    return status;
  }
  auto add = [&](const std::string& key, std::string value) -> absl::Status {
    if (!flat.emplace(key, std::move(value)).second) {
      return Invalid("{}: argument \"{}\" is given twice (once nested, once with dots)", owner,
                     key);
    }
    return absl::OkStatus();
  };
  for (const auto& entry : node) {
    const std::string key =
        prefix.empty() ? entry.first.Scalar() : fmt::format("{}.{}", prefix, entry.first.Scalar());
    const YAML::Node& value = entry.second;
    if (value.IsMap()) {
      absl::StatusOr<ArgumentMap> nested = FlattenArguments(value, owner, key);
      if (!nested.ok()) return nested.status();
      for (auto& [nested_key, nested_value] : *nested) {
        if (absl::Status status = add(nested_key, std::move(nested_value)); !status.ok()) {
          return status;
        }
      }
    } else if (value.IsScalar()) {
      if (absl::Status status = add(key, value.Scalar()); !status.ok()) return status;
    } else if (value.IsSequence()) {
      return Invalid("{}: argument \"{}\" is a list; arguments take a single value or a map", owner,
                     key);
    }
  }
  return flat;
}

absl::StatusOr<bool> ParseFlag(const YAML::Node& value, std::string_view plugin,
                               std::string_view flag) {
  bool on = false;
  // A quoted "true" is a string in YAML and Go refuses it for a *bool; so do we. yaml-cpp tags
  // quoted scalars "!" and plain ones "?".
  if (!value.IsScalar() || value.Tag() == "!" || !YAML::convert<bool>::decode(value, on)) {
    return Invalid("plugin \"{}\": flag \"{}\" must be true or false, got {}", plugin, flag,
                   Describe(value));
  }
  return on;
}

absl::StatusOr<PluginOption> ParsePlugin(const YAML::Node& node, const std::string& where) {
  if (!node.IsMap()) {
    return Invalid("{} must be a map like {{name: gang}}, got {}", where, Describe(node));
  }
  if (absl::Status status = CheckKeys(node, where); !status.ok()) return status;
  const YAML::Node name = node["name"];
  if (!name || !name.IsScalar() || name.Scalar().empty()) {
    return Invalid("{} has no name; each plugin entry needs name: <plugin> (one of: {})", where,
                   KnownPlugins());
  }
  PluginOption plugin;
  plugin.name = name.Scalar();
  if (!IsOneOf(PluginNames(), plugin.name)) {
    return Invalid("unknown plugin \"{}\" in {}; known plugins: {}", plugin.name, where,
                   KnownPlugins());
  }
  for (const auto& entry : node) {
    const std::string& key = entry.first.Scalar();
    if (key == "name") continue;
    if (key == "arguments") {
      absl::StatusOr<ArgumentMap> arguments =
          FlattenArguments(entry.second, fmt::format("plugin \"{}\"", plugin.name), "");
      if (!arguments.ok()) return arguments.status();
      plugin.arguments = *std::move(arguments);
    } else if (absl::StartsWith(key, "enable")) {
      absl::StatusOr<bool> on = ParseFlag(entry.second, plugin.name, key);
      if (!on.ok()) return on.status();
      plugin.flags[key] = *on;
    } else {
      return Invalid(
          "plugin \"{}\": unknown key \"{}\"; a plugin entry takes name, arguments and "
          "enable*/enabled* flags",
          plugin.name, key);
    }
  }
  return plugin;
}

absl::StatusOr<std::vector<Tier>> ParseTiers(const YAML::Node& node) {
  std::vector<Tier> tiers;
  if (node.IsNull()) return tiers;
  if (!node.IsSequence()) {
    return Invalid("tiers must be a list like [{{plugins: [{{name: gang}}]}}], got {}",
                   Describe(node));
  }
  for (size_t t = 0; t < node.size(); ++t) {
    const std::string tier_where = fmt::format("tiers[{}]", t);
    const YAML::Node tier_node = node[t];
    if (!tier_node.IsMap()) {
      return Invalid("{} must be a map with plugins, got {}", tier_where, Describe(tier_node));
    }
    if (absl::Status status = CheckKeys(tier_node, tier_where); !status.ok()) return status;
    Tier tier;
    for (const auto& entry : tier_node) {
      if (entry.first.Scalar() != "plugins") {
        return Invalid("{}: unknown key \"{}\"; a tier takes only plugins", tier_where,
                       entry.first.Scalar());
      }
      const YAML::Node& plugins = entry.second;
      if (plugins.IsNull()) continue;
      if (!plugins.IsSequence()) {
        return Invalid("{}.plugins must be a list, got {}", tier_where, Describe(plugins));
      }
      for (size_t p = 0; p < plugins.size(); ++p) {
        absl::StatusOr<PluginOption> plugin =
            ParsePlugin(plugins[p], fmt::format("{}.plugins[{}]", tier_where, p));
        if (!plugin.ok()) return plugin.status();
        tier.plugins.push_back(*std::move(plugin));
      }
    }
    tiers.push_back(std::move(tier));
  }
  return tiers;
}

absl::StatusOr<std::vector<std::string>> ParseActions(const YAML::Node& node) {
  std::vector<std::string> actions;
  if (node.IsNull()) return actions;
  if (!node.IsScalar()) {
    return Invalid(
        "actions must be one comma-separated string such as \"enqueue, allocate, backfill\", "
        "got {}",
        Describe(node));
  }
  std::string_view rest = node.Scalar();
  while (!rest.empty()) {
    const size_t comma = std::min(rest.find(','), rest.size());
    const std::string_view action = TrimAsciiWhitespace(rest.substr(0, comma));
    rest.remove_prefix(std::min(comma + 1, rest.size()));
    if (action.empty()) continue;
    if (!IsOneOf(ActionNames(), action)) {
      return Invalid("unknown action \"{}\" in actions; known actions: {}", action, KnownActions());
    }
    actions.emplace_back(action);
  }
  return actions;
}

absl::StatusOr<std::map<std::string, ArgumentMap>> ParseConfigurations(const YAML::Node& node) {
  std::map<std::string, ArgumentMap> configurations;
  if (node.IsNull()) return configurations;
  if (!node.IsSequence()) {
    return Invalid(
        "configurations must be a list like [{{name: preempt, arguments: {{...}}}}], "
        "got {}",
        Describe(node));
  }
  for (size_t i = 0; i < node.size(); ++i) {
    const std::string where = fmt::format("configurations[{}]", i);
    const YAML::Node entry = node[i];
    if (!entry.IsMap()) {
      return Invalid("{} must be a map with name and arguments, got {}", where, Describe(entry));
    }
    if (absl::Status status = CheckKeys(entry, where); !status.ok()) return status;
    const YAML::Node name = entry["name"];
    if (!name || !name.IsScalar() || name.Scalar().empty()) {
      return Invalid("{} has no name; it needs name: <action> (one of: {})", where, KnownActions());
    }
    const std::string action = name.Scalar();
    if (!IsOneOf(ActionNames(), action)) {
      return Invalid("unknown action \"{}\" in {}; known actions: {}", action, where,
                     KnownActions());
    }
    ArgumentMap arguments;
    for (const auto& field : entry) {
      const std::string& key = field.first.Scalar();
      if (key == "name") continue;
      if (key != "arguments") {
        return Invalid("{}: unknown key \"{}\"; a configuration takes name and arguments", where,
                       key);
      }
      absl::StatusOr<ArgumentMap> flat =
          FlattenArguments(field.second, fmt::format("configuration \"{}\"", action), "");
      if (!flat.ok()) return flat.status();
      arguments = *std::move(flat);
    }
    if (!configurations.emplace(action, std::move(arguments)).second) {
      return Invalid("{}: action \"{}\" is configured twice", where, action);
    }
  }
  return configurations;
}

absl::Status CheckPluginCombinations(const SchedulerConf& conf, const ConfParseOptions& options) {
  bool hierarchical_drf = false;
  for (const Tier& tier : conf.tiers) {
    for (const PluginOption& plugin : tier.plugins) {
      if (plugin.name == "drf" && plugin.Enabled(kHierarchyFlag)) hierarchical_drf = true;
    }
  }
  const bool proportion = conf.FindPlugin("proportion") != nullptr;
  if (proportion && hierarchical_drf) {
    return Invalid(
        "proportion and drf with enableHierarchy: true conflict (both divide resources among "
        "queues); remove proportion or turn enableHierarchy off");
  }
  if (proportion && conf.FindPlugin("capacity") != nullptr &&
      !options.allow_proportion_with_capacity) {
    return Invalid(
        "plugins proportion and capacity are both configured; they divide queue resources in "
        "conflicting ways, keep one");
  }
  // capacity's arguments that Volcano reads and muster does not implement: refused rather than
  // ignored, unless they ask for Volcano's default.
  if (const PluginOption* capacity = conf.FindPlugin("capacity")) {
    struct Unsupported {
      std::string_view key, off, what;
    };
    for (const Unsupported& u : {
             Unsupported{"ancestorReclaimLevel", "0", "reclaim decided at ancestor queues"},
             Unsupported{"capacity.DynamicResourceAllocationEnable", "false", "DRA quotas"},
             Unsupported{"capacity.DRAConsumableCapacityEnable", "false", "DRA quotas"},
         }) {
      std::string value = capacity->Text(u.key, u.off);
      if (value != u.off) {
        return Invalid(
            "plugin \"capacity\": argument \"{}\": {} is not implemented by muster ({}); "
            "remove the argument or set it to {}",
            u.key, value, u.what, u.off);
      }
    }
  }
  // nvlink's weight multiplies a node score: a number, not below 0.
  if (const PluginOption* nvlink = conf.FindPlugin("nvlink")) {
    absl::StatusOr<double> weight = nvlink->Number("nvlink.weight", 1);
    if (!weight.ok()) return weight.status();
    if (*weight < 0) {
      return Invalid("plugin \"nvlink\" argument \"nvlink.weight\": {} is negative; give 0 or more",
                     nvlink->Text("nvlink.weight", ""));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SchedulerConf> ParseRoot(const YAML::Node& root, const ConfParseOptions& options) {
  if (!root || root.IsNull()) {
    return Invalid("scheduler configuration is empty; it needs at least actions: \"...\"");
  }
  if (!root.IsMap()) {
    return Invalid("scheduler configuration must be a map with actions and tiers, got {}",
                   Describe(root));
  }
  if (absl::Status status = CheckKeys(root, "scheduler configuration"); !status.ok()) {
    return status;
  }
  SchedulerConf conf;
  for (const auto& entry : root) {
    const std::string& key = entry.first.Scalar();
    if (key == "actions") {
      absl::StatusOr<std::vector<std::string>> actions = ParseActions(entry.second);
      if (!actions.ok()) return actions.status();
      conf.actions = *std::move(actions);
    } else if (key == "tiers") {
      absl::StatusOr<std::vector<Tier>> tiers = ParseTiers(entry.second);
      if (!tiers.ok()) return tiers.status();
      conf.tiers = *std::move(tiers);
    } else if (key == "configurations") {
      absl::StatusOr<std::map<std::string, ArgumentMap>> configurations =
          ParseConfigurations(entry.second);
      if (!configurations.ok()) return configurations.status();
      conf.configurations = *std::move(configurations);
    } else if (key == "metrics") {
      // Volcano's metrics settings configure its Prometheus exporter; they have no bearing here.
    } else {
      return Invalid(
          "unknown key \"{}\" in scheduler configuration; known keys: actions, tiers, "
          "configurations, metrics",
          key);
    }
  }
  if (conf.actions.empty()) {
    return Invalid("actions is missing or empty; list at least one of: {}", KnownActions());
  }
  if (absl::Status status = CheckPluginCombinations(conf, options); !status.ok()) return status;
  if (absl::StatusOr<AllocateOptions> allocate = AllocateOptionsFromConf(conf); !allocate.ok()) {
    return allocate.status();
  }
  return conf;
}

SchedulerConf BuildDefaultSchedulerConf() {
  auto tier = [](std::initializer_list<std::string_view> names) {
    Tier built;
    for (std::string_view name : names) {
      PluginOption plugin;
      plugin.name = std::string(name);
      built.plugins.push_back(std::move(plugin));
    }
    return built;
  };
  SchedulerConf conf;
  conf.actions = {"enqueue", "allocate", "backfill"};
  conf.tiers = {tier({"priority", "gang", "conformance"}),
                tier({"overcommit", "drf", "predicates", "proportion", "nodeorder"})};
  return conf;
}

}  // namespace

bool PluginOption::Enabled(std::string_view flag) const {
  auto it = flags.find(std::string(flag));
  if (it != flags.end()) return it->second;
  return flag != kHierarchyFlag;
}

absl::StatusOr<double> PluginOption::Number(std::string_view key, double default_value) const {
  auto it = arguments.find(std::string(key));
  if (it == arguments.end()) return default_value;
  double value = 0;
  if (!absl::SimpleAtod(it->second, &value) || !std::isfinite(value)) {
    return Invalid("plugin \"{}\" argument \"{}\": \"{}\" is not a number", name, key, it->second);
  }
  return value;
}

absl::StatusOr<bool> PluginOption::Bool(std::string_view key, bool default_value) const {
  auto it = arguments.find(std::string(key));
  if (it == arguments.end()) return default_value;
  bool value = false;
  if (absl::SimpleAtob(it->second, &value)) return value;
  // YAML 1.1 spellings, which yaml-cpp and Go's yaml both read as booleans.
  if (absl::EqualsIgnoreCase(it->second, "on")) return true;
  if (absl::EqualsIgnoreCase(it->second, "off")) return false;
  return Invalid("plugin \"{}\" argument \"{}\": \"{}\" is not true or false", name, key,
                 it->second);
}

absl::StatusOr<std::optional<double>> PluginOption::DurationSeconds(std::string_view key) const {
  auto it = arguments.find(std::string(key));
  if (it == arguments.end()) return std::nullopt;
  absl::StatusOr<double> seconds = common::ParseGoDurationSeconds(it->second);
  if (!seconds.ok()) {
    return Invalid("plugin \"{}\" argument \"{}\": {}", name, key,
                   std::string(seconds.status().message()));
  }
  return *seconds;
}

std::string PluginOption::Text(std::string_view key, std::string_view default_value) const {
  auto it = arguments.find(std::string(key));
  return it == arguments.end() ? std::string(default_value) : it->second;
}

bool SchedulerConf::HasAction(std::string_view action) const {
  return std::find(actions.begin(), actions.end(), action) != actions.end();
}

const PluginOption* SchedulerConf::FindPlugin(std::string_view name) const {
  for (const Tier& tier : tiers) {
    for (const PluginOption& plugin : tier.plugins) {
      if (plugin.name == name) return &plugin;
    }
  }
  return nullptr;
}

std::string SchedulerConf::ActionArgument(std::string_view action, std::string_view key,
                                          std::string_view default_value) const {
  auto conf = configurations.find(std::string(action));
  if (conf == configurations.end()) return std::string(default_value);
  auto it = conf->second.find(std::string(key));
  return it == conf->second.end() ? std::string(default_value) : it->second;
}

absl::StatusOr<SchedulerConf> ParseSchedulerConf(std::string_view text) {
  return ParseSchedulerConf(text, ConfParseOptions{});
}

absl::StatusOr<SchedulerConf> ParseSchedulerConf(std::string_view text,
                                                 const ConfParseOptions& options) {
  try {
    return ParseRoot(YAML::Load(std::string(text)), options);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return Invalid("malformed YAML: {}", e.msg);
    return Invalid("malformed YAML at line {}, column {}: {}", e.mark.line + 1, e.mark.column + 1,
                   e.msg);
  }
}

const SchedulerConf& DefaultSchedulerConf() {
  // Built once and never destroyed, so no static destructor runs at exit.
  static const SchedulerConf& conf = *new SchedulerConf(BuildDefaultSchedulerConf());
  return conf;
}

const SchedulerConf& KubeSchedulerConf() {
  static const SchedulerConf& conf = *new SchedulerConf([] {
    SchedulerConf c;
    c.actions = {"allocate", "backfill"};
    Tier priority, filters;
    priority.plugins.emplace_back().name = "priority";
    filters.plugins.emplace_back().name = "predicates";
    filters.plugins.emplace_back().name = "nodeorder";
    c.tiers = {std::move(priority), std::move(filters)};
    return c;
  }());
  return conf;
}

absl::StatusOr<AllocateOptions> AllocateOptionsFromConf(const SchedulerConf& conf) {
  auto bad = [](std::string_view key, std::string_view value, std::string_view want) {
    return Invalid("configuration \"allocate\": {}: \"{}\" is not {}", key, value, want);
  };
  AllocateOptions o;
  std::string strict = conf.ActionArgument("allocate", "strictOrder", "false");
  if (strict != "true" && strict != "false") return bad("strictOrder", strict, "true or false");
  o.strict_order = strict == "true";
  std::string gpus = conf.ActionArgument("allocate", "reserveGpus", "0");
  if (!absl::SimpleAtod(gpus, &o.reserve_gpus) || !(o.reserve_gpus >= 0) ||
      std::isinf(o.reserve_gpus)) {
    return bad("reserveGpus", gpus, "a number of GPUs >= 0");
  }
  std::string after = conf.ActionArgument("allocate", "reserveAfter", "0s");
  absl::StatusOr<double> seconds = common::ParseGoDurationSeconds(after);
  if (!seconds.ok() || *seconds < 0) return bad("reserveAfter", after, "a duration >= 0");
  o.reserve_after_seconds = *seconds;
  return o;
}

}  // namespace muster::core
