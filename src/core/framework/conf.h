#pragma once

// volcano-scheduler.conf: which actions run, in which order, and which plugins vote in which tier.
// The text is Volcano's YAML format (volcano-sh/volcano pkg/scheduler/conf/scheduler_conf.go);
// plugin flags left out default as in pkg/scheduler/plugins/defaults.go
// (ApplyPluginConfDefaults), and the built-in conf is pkg/scheduler/util.go's.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace muster::core {

struct PluginOption {
  std::string name;
  // enableX / enabledX flags as written in the file. A flag the file leaves out is on, except
  // enableHierarchy which is off (Volcano's defaults).
  std::map<std::string, bool> flags;
  // Plugin arguments flattened to text: {"binpack.weight": "10", "sla-waiting-time": "3m"}.
  std::map<std::string, std::string> arguments;

  bool Enabled(std::string_view flag) const;
  // Typed argument lookups; a missing key gives the default, an unparsable value an error that
  // names the plugin and the key.
  absl::StatusOr<double> Number(std::string_view key, double default_value) const;
  absl::StatusOr<bool> Bool(std::string_view key, bool default_value) const;
  // Go duration text ("3m", "90s", "1h30m", "500ms") in seconds.
  absl::StatusOr<std::optional<double>> DurationSeconds(std::string_view key) const;
  std::string Text(std::string_view key, std::string_view default_value) const;

  friend bool operator==(const PluginOption&, const PluginOption&) = default;
};

struct Tier {
  std::vector<PluginOption> plugins;

  friend bool operator==(const Tier&, const Tier&) = default;
};

struct SchedulerConf {
  std::vector<std::string> actions;  // in order, e.g. {"enqueue", "allocate", "backfill"}
  std::vector<Tier> tiers;
  // configurations: [{name: <action>, arguments: {...}}], flattened like plugin arguments.
  std::map<std::string, std::map<std::string, std::string>> configurations;

  bool HasAction(std::string_view action) const;
  // The plugin of that name in any tier, or nullptr.
  const PluginOption* FindPlugin(std::string_view name) const;
  // An action's configuration argument, or default_value.
  std::string ActionArgument(std::string_view action, std::string_view key,
                             std::string_view default_value) const;

  friend bool operator==(const SchedulerConf&, const SchedulerConf&) = default;
};

// allocate's arguments of muster's own (configurations: [{name: allocate, arguments: {...}}]).
struct AllocateOptions {
  // strictOrder: stop allocating in a queue at the first job (in job order) that cannot be
  // placed or is not admitted yet: strict FIFO, nothing behind the head goes first.
  bool strict_order = false;
  // reserveGpus: gangs asking at least this many GPUs get reservations
  // (core/actions/reserve.h); 0: none.
  double reserve_gpus = 0;
  // reserveAfter: ... once their PodGroup is this old (a Go duration), in seconds.
  double reserve_after_seconds = 0;
};

// The options the conf's allocate configuration gives. An argument that does not parse is an
// InvalidArgument naming it; ParseSchedulerConf reports that when the file is loaded.
absl::StatusOr<AllocateOptions> AllocateOptionsFromConf(const SchedulerConf& conf);

struct ConfParseOptions {
  // Volcano itself accepts proportion and capacity in one file, and its own topology-aware
  // preempt tests (conformance/volcano/preempt-topo-*.yaml) list both; a loader restating those
  // cases sets this. Left false, the pair is an error: both plugins divide queue resources.
  bool allow_proportion_with_capacity = false;
};

// Parses and validates the file's text. Errors (InvalidArgument) name what is wrong and where:
// malformed YAML (with its line), an unknown action or plugin (listing the known ones, the
// registry's: framework/registry.h), an unknown key (top-level `metrics` is accepted and
// ignored), a flag that is not a boolean, a plugin without a name, an empty action list,
// proportion together with capacity, drf's enableHierarchy together with proportion, a capacity
// argument of Volcano's that muster does not implement (ancestorReclaimLevel above 0, the DRA
// switches on).
absl::StatusOr<SchedulerConf> ParseSchedulerConf(std::string_view text);
absl::StatusOr<SchedulerConf> ParseSchedulerConf(std::string_view text,
                                                 const ConfParseOptions& options);

// Volcano's built-in default (pkg/scheduler/util.go):
//   actions: "enqueue, allocate, backfill"
//   tiers: [priority, gang, conformance], [overcommit, drf, predicates, proportion, nodeorder]
const SchedulerConf& DefaultSchedulerConf();

// kube-scheduler's rules as a session runs them over pods of the default scheduler, each in a
// one-member group (the live scheduler in `muster up`, `muster sim replay`'s kube mode):
//   actions: "allocate, backfill" (BestEffort pods are placed in backfill)
//   tiers: [priority], [predicates, nodeorder]
const SchedulerConf& KubeSchedulerConf();

}  // namespace muster::core
