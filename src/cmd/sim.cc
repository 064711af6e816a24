// `muster sim`: trace-driven simulation. `muster sim pack` runs the FGD paper's packing
// experiment, `muster sim replay` replays a trace in virtual time, `muster sim variant` draws an
// openb trace with another share of GPU-sharing, multi-GPU or CPU-only pods as that paper's
// variants were drawn (docs/sim.md).

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cmd/commands.h"
#include "core/plugins/gpuplacement/placement.h"
#include "fmt/format.h"
#include "sim/packing.h"
#include "sim/replay.h"
#include "sim/replay_report.h"
#include "sim/report.h"
#include "sim/sweep.h"
#include "sim/trace.h"
#include "sim/variants.h"

namespace muster::cmd {
namespace {

namespace fs = std::filesystem;

constexpr char kDefaultNodeList[] = "openb_node_list_gpu_node.csv";

// A trace named by path, or by file name alone when it is in data/openb/ (the copy in the
// repository) or in the directory named by $MUSTER_TRACE_DIR.
std::string ResolveTrace(const std::string& given) {
  if (fs::exists(given)) return given;
  if (given.find('/') == std::string::npos) {
    std::vector<std::string> dirs;
    if (const char* env = std::getenv("MUSTER_TRACE_DIR"); env && *env) dirs.push_back(env);
    dirs.push_back("data/openb");
    for (const auto& d : dirs) {
      fs::path p = fs::path(d) / given;
      if (fs::exists(p)) return p.string();
    }
  }
  return given;  // the loader reports it missing
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) {
    fmt::print(stderr, "muster sim: cannot write {}\n", path);
    return false;
  }
  return true;
}

struct PackFlags {
  std::string trace;
  std::string nodes;
  std::string policies = "fgd";
  std::string seeds = "42-51";
  double tune = 1.3;
  int jobs = 0;
  int draws_before_permutation = 10;
  core::MusterPolicyOptions muster;
  bool json = false;
  bool quiet = false;
  std::string csv_out;
  std::string json_out;
  std::string html_out;
};

int RunPack(const PackFlags& f) {
  std::string trace = ResolveTrace(f.trace);
  std::string nodes = f.nodes.empty()
                          ? (fs::path(trace).parent_path() / kDefaultNodeList).string()
                          : ResolveTrace(f.nodes);
  if (f.nodes.empty() && !fs::exists(nodes)) {
    fmt::print(stderr,
               "muster sim pack: no node list next to the trace ({} not found); name one with "
               "--nodes FILE\n",
               nodes);
    return 2;
  }
  auto seeds = sim::ParseSeeds(f.seeds);
  if (!seeds.ok()) {
    fmt::print(stderr, "muster sim pack: --{}\n", std::string(seeds.status().message()));
    return 2;
  }
  std::vector<std::string> policies;
  for (absl::string_view p : absl::StrSplit(f.policies, ',', absl::SkipWhitespace())) {
    std::string name = absl::AsciiStrToLower(std::string(absl::StripAsciiWhitespace(p)));
    if (name == "all") {
      for (const auto& n : core::GpuPolicyNames()) policies.push_back(n);
    } else {
      policies.push_back(name);
    }
  }
  if (policies.empty()) {
    fmt::print(stderr, "muster sim pack: --policy: none given (known: {}, all)\n",
               absl::StrJoin(core::GpuPolicyNames(), ", "));
    return 2;
  }
  if (!(f.tune > 0 && f.tune <= 10)) {
    fmt::print(stderr, "muster sim pack: --tune {} is outside (0, 10]\n", f.tune);
    return 2;
  }
  const core::MusterPolicyOptions& m = f.muster;
  if (m.depth < 0 || m.depth > 3 || m.branching < 0 || !(m.temperature > 0) ||
      !(m.popularity_threshold > 0 && m.popularity_threshold <= 100) ||
      !(m.strand_weight >= 0) || m.gpu_ties < 0 || m.gpu_ties > 2 || m.strand_free_nodes < 0 ||
      m.strand_free_nodes > 3) {
    fmt::print(stderr,
               "muster sim pack: --muster-depth must be 0..3, --muster-branching >= 0, "
               "--muster-temperature > 0, --muster-threshold in (0, 100], --muster-strand >= 0, "
               "--muster-gpu-ties 0..2 and --muster-strand-free-nodes 0..3\n");
    return 2;
  }
  auto pod_list = sim::LoadOpenbPods(trace);
  if (!pod_list.ok()) {
    fmt::print(stderr, "muster sim pack: {}\n", std::string(pod_list.status().message()));
    return 1;
  }
  auto node_list = sim::LoadOpenbNodes(nodes);
  if (!node_list.ok()) {
    fmt::print(stderr, "muster sim pack: {}\n", std::string(node_list.status().message()));
    return 1;
  }
  int node_count = static_cast<int>(node_list->size());
  auto experiment = sim::PackingExperiment::Create(*std::move(node_list), *std::move(pod_list));
  if (!experiment.ok()) {
    fmt::print(stderr, "muster sim pack: {}: {}\n", nodes, std::string(experiment.status().message()));
    return 1;
  }
  sim::SweepOptions options;
  options.packing.tune_ratio = f.tune;
  options.packing.draws_before_permutation = f.draws_before_permutation;
  options.packing.muster = f.muster;
  options.jobs = f.jobs > 0 ? f.jobs : std::max(1u, std::thread::hardware_concurrency());
  bool show_progress = !f.quiet && (policies.size() * seeds->size() > 1);
  if (show_progress) {
    options.progress = [](int done, int total, const sim::PackingRun& r) {
      fmt::print(stderr, "[{}/{}] {} seed {}: {:.2f} / {:.2f} ({:.2f} s)\n", done, total, r.policy,
                 r.seed, r.alloc_100, r.alloc_130, r.seconds);
    };
  }
  auto sweep = sim::RunPackingSweep(**experiment, policies, *seeds, options);
  if (!sweep.ok()) {
    fmt::print(stderr, "muster sim pack: {}\n", std::string(sweep.status().message()));
    return 2;
  }
  sweep->trace = f.trace;
  sweep->nodes = f.nodes.empty() ? nodes : f.nodes;
  sweep->node_count = node_count;
  fmt::print("{}", f.json ? sim::PackingJson(*sweep) : sim::PackingTable(*sweep));
  bool ok = true;
  if (!f.csv_out.empty()) ok &= WriteFile(f.csv_out, sim::PackingCsv(*sweep));
  if (!f.json_out.empty()) ok &= WriteFile(f.json_out, sim::PackingJson(*sweep));
  if (!f.html_out.empty()) ok &= WriteFile(f.html_out, sim::PackingHtml(*sweep));
  return ok ? 0 : 1;
}

void AddPackCommand(CLI::App& sim, std::shared_ptr<PackFlags> f) {
  auto* app = sim.add_subcommand(
      "pack",
      "The FGD paper's packing experiment: the trace's pods shuffled with each seed and inflated "
      "to 130 % of the cluster's GPU capacity, placed one by one; prints the GPU allocation ratio "
      "at 100 % and 130 % arrived demand per seed and the mean.");
  app->add_option("--trace", f->trace,
                  "openb pod list (CSV); a bare file name is also looked up in data/openb/ and "
                  "$MUSTER_TRACE_DIR")
      ->required();
  app->add_option("--nodes", f->nodes,
                  "openb node list (CSV); default: openb_node_list_gpu_node.csv next to the trace");
  app->add_option("--policy", f->policies,
                  "placement policies, comma-separated: random, dotproduct, clustering, packing, "
                  "bestfit, fgd, muster, or all")
      ->capture_default_str();
  app->add_option("--seeds", f->seeds, "seeds: a range 42-51, a list 42,43 or both")
      ->capture_default_str();
  app->add_option("--tune", f->tune, "arrived GPU demand to reach, times the GPU capacity")
      ->capture_default_str();
  app->add_option("--jobs", f->jobs, "runs in parallel (default: one per CPU)");
  app->add_flag("--json", f->json, "print one JSON object instead of the table");
  app->add_option("--csv-out", f->csv_out, "also write the per-seed results as CSV to this file");
  app->add_option("--json-out", f->json_out, "also write the JSON result to this file");
  app->add_option("--html-out", f->html_out,
                  "also write a self-contained HTML report (SVG charts) to this file");
  app->add_flag("--quiet", f->quiet, "no progress lines on stderr");
  app->add_option("--go-rand-skip", f->draws_before_permutation,
                  "Go math/rand draws to discard before the node permutation (reproduction aid)")
      ->group("");
  // The muster policy's knobs (docs/policies.md), to rerun the measurements there.
  app->add_option("--muster-depth", f->muster.depth, "muster: look-ahead steps")->group("");
  app->add_option("--muster-branching", f->muster.branching,
                  "muster: typical shapes followed at each step")
      ->group("");
  app->add_option("--muster-temperature", f->muster.temperature,
                  "muster: milli-GPU per unit of the score's sigmoid")
      ->group("");
  app->add_option("--muster-threshold", f->muster.popularity_threshold,
                  "muster: percent of the pods the typical shapes cover")
      ->group("");
  app->add_option("--muster-strand", f->muster.strand_weight,
                  "muster: weight of the GPU milli stranded by CPU")
      ->group("");
  app->add_flag("--muster-strand-cpu-pods-only", f->muster.strand_cpu_pods_only,
                "muster: the stranding term for pods without GPUs only")
      ->group("");
  app->add_option("--muster-strand-free-nodes", f->muster.strand_free_nodes,
                  "muster: the stranding term on nodes whose GPUs are all free: 0 as elsewhere, "
                  "1 off, 2 penalties only, 3 off for GPU pods")
      ->group("");
  app->add_option("--muster-gpu-ties", f->muster.gpu_ties,
                  "muster: a share's GPU among equal scores: 0 first, 1 least fragmentation, 2 "
                  "tightest")
      ->group("");
}

struct ReplayFlags {
  std::string trace;
  std::string nodes;
  std::string schedulers = "all";
  std::string placement = "spread";
  int cluster_nodes = 80;
  bool cluster_nodes_set = false;
  int64_t seed = 42;
  int reserve_gpus = 16;
  double reserve_after = 0;
  double price = 2.50;
  double speedup = 1;
  bool modelled = false;
  int rack_nodes = 0;
  int spine_racks = 0;
  double cross_rack_slowdown = 1;
  std::string topology = "soft";
  bool json = false;
  bool quiet = false;
  std::string csv_out;
  std::string json_out;
  std::string html_out;
};

// The header line of a CSV file, or "" when it cannot be read.
std::string HeaderOf(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

int RunReplay(const ReplayFlags& f) {
  std::string trace = ResolveTrace(f.trace);
  if (!fs::exists(trace)) {
    fmt::print(stderr, "muster sim replay: {}: cannot open the file\n", trace);
    return 1;
  }
  std::vector<sim::Discipline> disciplines;
  for (absl::string_view d : absl::StrSplit(f.schedulers, ',', absl::SkipWhitespace())) {
    std::string name = absl::AsciiStrToLower(std::string(absl::StripAsciiWhitespace(d)));
    if (name == "all") {
      disciplines = {sim::Discipline::kKube, sim::Discipline::kFifo, sim::Discipline::kVolcano,
                     sim::Discipline::kMuster};
      continue;
    }
    auto parsed = sim::ParseDiscipline(name);
    if (!parsed.ok()) {
      fmt::print(stderr, "muster sim replay: --scheduler: {}\n", std::string(parsed.status().message()));
      return 2;
    }
    disciplines.push_back(*parsed);
  }
  if (disciplines.empty()) {
    fmt::print(stderr, "muster sim replay: --scheduler: none given (kube, fifo, volcano, muster, all)\n");
    return 2;
  }
  if (f.reserve_gpus < 1 || !(f.reserve_after >= 0)) {
    fmt::print(stderr, "muster sim replay: --reserve-gpus must be >= 1 and --reserve-after >= 0\n");
    return 2;
  }
  if (!(f.price >= 0) || f.cluster_nodes <= 0 || f.cluster_nodes > 100000 || !(f.speedup > 0)) {
    fmt::print(stderr,
               "muster sim replay: --gpu-hour-price must be >= 0, --speedup > 0 and "
               "--cluster-nodes in 1..100000\n");
    return 2;
  }
  sim::ReplayOptions rack_options;
  rack_options.rack_nodes = f.rack_nodes;
  rack_options.spine_racks = f.spine_racks;
  rack_options.cross_rack_slowdown = f.cross_rack_slowdown;
  rack_options.topology = f.topology;
  if (absl::Status s = sim::CheckRackOptions(rack_options); !s.ok()) {
    fmt::print(stderr, "muster sim replay: --rack-nodes, --spine-racks, --cross-rack-slowdown, "
                       "--topology: {}\n",
               std::string(s.message()));
    return 2;
  }
  if (f.rack_nodes > 0 && f.modelled) {
    fmt::print(stderr, "muster sim replay: --rack-nodes: racks are replayed through the engine "
                       "only, not --modelled\n");
    return 2;
  }
  absl::StatusOr<sim::ReplayWorkload> workload = absl::UnknownError("");
  sim::ReplayReport report;
  report.trace = f.trace;
  report.gpu_hour_price = f.price;
  if (HeaderOf(trace).rfind("timestamp,", 0) == 0) {  // the Philly job list
    auto jobs = sim::LoadPhillyJobs(trace);
    if (!jobs.ok()) {
      fmt::print(stderr, "muster sim replay: {}\n", std::string(jobs.status().message()));
      return 1;
    }
    workload = sim::PhillyWorkload(*jobs, f.cluster_nodes);
    report.cluster = fmt::format("{} nodes x 8 GPUs ({} GPUs)", f.cluster_nodes, 8 * f.cluster_nodes);
  } else {
    auto pods = sim::LoadOpenbPods(trace);
    if (!pods.ok()) {
      fmt::print(stderr, "muster sim replay: {}\n", std::string(pods.status().message()));
      return 1;
    }
    std::string nodes = f.nodes.empty()
                            ? (fs::path(trace).parent_path() / kDefaultNodeList).string()
                            : ResolveTrace(f.nodes);
    auto node_list = sim::LoadOpenbNodes(nodes);
    if (!node_list.ok()) {
      fmt::print(stderr, "muster sim replay: {}\n", std::string(node_list.status().message()));
      return 1;
    }
    if (f.cluster_nodes_set && f.cluster_nodes < static_cast<int>(node_list->size())) {
      // The first N nodes in name order: a smaller cluster for the same pods.
      std::sort(node_list->begin(), node_list->end(),
                [](const sim::TraceNode& a, const sim::TraceNode& b) { return a.name < b.name; });
      node_list->resize(f.cluster_nodes);
    }
    int gpus = 0;
    for (const auto& n : *node_list) gpus += n.gpus;
    report.cluster = fmt::format("{} ({} nodes, {} GPUs)", nodes, node_list->size(), gpus);
    workload = sim::OpenbWorkload(*std::move(node_list), *pods);
  }
  if (!workload.ok()) {
    fmt::print(stderr, "muster sim replay: {}: {}\n", f.trace, std::string(workload.status().message()));
    return 1;
  }
  report.skipped = workload->skipped;
  if (f.rack_nodes > 0) {
    const size_t n = workload->nodes.size();
    const size_t racks = (n + f.rack_nodes - 1) / f.rack_nodes;
    report.racks = fmt::format(
        "racks of {} nodes ({} racks), {}; a gang across racks runs {} x its duration",
        f.rack_nodes, racks,
        f.spine_racks > 0 ? fmt::format("spines of {} racks", f.spine_racks) : "no spines",
        f.cross_rack_slowdown);
  }
  sim::CompressArrivals(*workload, f.speedup);
  if (f.speedup != 1) report.cluster += fmt::format(", arrivals {}x faster", f.speedup);
  for (sim::Discipline d : disciplines) {
    sim::ReplayOptions o;
    o.discipline = d;
    o.placement = f.placement;
    o.seed = f.seed;
    o.reserve_gpus = f.reserve_gpus;
    o.reserve_after = f.reserve_after;
    o.gpu_hour_price = f.price;
    o.engine = !f.modelled;
    o.rack_nodes = f.rack_nodes;
    o.spine_racks = f.spine_racks;
    o.cross_rack_slowdown = f.cross_rack_slowdown;
    o.topology = f.topology;
    if (!f.quiet) {
      o.progress = [d](size_t arrived, size_t waiting, int64_t sessions) {
        fmt::print(stderr, "  {}: {} jobs arrived, {} waiting, {} engine sessions\n",
                   sim::DisciplineName(d), arrived, waiting, sessions);
      };
    }
    if (!f.quiet) fmt::print(stderr, "replaying {} jobs with {} ...\n", workload->jobs.size(), sim::DisciplineName(d));
    auto r = sim::RunReplay(*workload, o);
    if (!r.ok()) {
      fmt::print(stderr, "muster sim replay: {}\n", std::string(r.status().message()));
      return 2;
    }
    if (!f.quiet) {
      fmt::print(stderr, "  {}: {} of {} jobs finished in {:.1f} s{}\n", r->discipline, r->finished,
                 r->jobs, r->seconds,
                 r->engine ? fmt::format(" ({} engine sessions)", r->sessions) : std::string());
    }
    report.results.push_back(*std::move(r));
  }
  fmt::print("{}", f.json ? sim::ReplayJson(report) : sim::ReplayTable(report));
  bool ok = true;
  if (!f.csv_out.empty()) ok &= WriteFile(f.csv_out, sim::ReplayCsv(report));
  if (!f.json_out.empty()) ok &= WriteFile(f.json_out, sim::ReplayJson(report));
  if (!f.html_out.empty()) ok &= WriteFile(f.html_out, sim::ReplayHtml(report));
  return ok ? 0 : 1;
}

void AddReplayCommand(CLI::App& sim, std::shared_ptr<ReplayFlags> f) {
  auto* app = sim.add_subcommand(
      "replay",
      "Replay a trace in virtual time: jobs arrive at their times, queue, run for their durations "
      "and leave, under Kubernetes' default scheduler (kube), strict FIFO (fifo), Volcano's "
      "allocate+backfill (volcano) and muster's gang-aware backfill with reservations (muster). "
      "Reports queueing delay, job completion time, makespan, utilisation, the longest gang wait "
      "and GPU-hours held idle by partly placed jobs.");
  app->add_option("--trace", f->trace,
                  "the Philly job list (philly.csv) or an openb pod list with creation and "
                  "deletion times")
      ->required();
  app->add_option("--nodes", f->nodes, "openb: the node list (default: next to the trace)");
  app->add_option("--cluster-nodes", f->cluster_nodes,
                  "Philly: nodes of 8 GPUs to replay on; openb: use only the first N nodes of the "
                  "node list (by name)")
      ->capture_default_str()
      ->each([f](const std::string&) { f->cluster_nodes_set = true; });
  app->add_option("--scheduler", f->schedulers, "kube, fifo, volcano, muster (comma-separated) or all")
      ->capture_default_str();
  app->add_option("--placement", f->placement,
                  "node choice inside every scheduler: spread (most free GPU, Kubernetes' and "
                  "Volcano's default) or a GPU placement policy (bestfit, fgd, muster, ...)")
      ->capture_default_str();
  app->add_option("--speedup", f->speedup,
                  "divide submission times by this: the same jobs arrive faster (durations stay)")
      ->capture_default_str();
  app->add_option("--seed", f->seed, "seed of the node order that breaks ties")->capture_default_str();
  app->add_option("--reserve-gpus", f->reserve_gpus,
                  "muster: jobs of at least this many GPUs get a reservation when blocked")
      ->capture_default_str();
  app->add_option("--reserve-after", f->reserve_after,
                  "muster: ... once they have waited this many seconds")
      ->capture_default_str();
  app->add_option("--gpu-hour-price", f->price, "price of a GPU-hour, for the cost of idle holds")
      ->capture_default_str();
  app->add_flag("--modelled", f->modelled,
                "run the schedulers as the simulator's modelled disciplines instead of through "
                "the scheduling engine's sessions");
  app->add_option("--rack-nodes", f->rack_nodes,
                  "lay the nodes out in racks of this many (HyperNodes of tier 1); the report "
                  "says where each scheduler's gangs landed (0: no racks)")
      ->capture_default_str();
  app->add_option("--spine-racks", f->spine_racks,
                  "with --rack-nodes: spines of this many racks (HyperNodes of tier 2; 0: none)")
      ->capture_default_str();
  app->add_option("--cross-rack-slowdown", f->cross_rack_slowdown,
                  "with --rack-nodes: a gang whose pods span racks runs its duration times this")
      ->capture_default_str();
  app->add_option("--topology", f->topology,
                  "with --rack-nodes: the networkTopology of muster's gangs, with "
                  "network-topology-aware in its conf: soft (the lowest tier that holds the "
                  "gang), hard (highestTierAllowed: the lowest tier one HyperNode of which has "
                  "the gang's GPUs) or none")
      ->capture_default_str();
  app->add_flag("--json", f->json, "print one JSON object instead of the table");
  app->add_option("--csv-out", f->csv_out, "also write the results as CSV to this file");
  app->add_option("--json-out", f->json_out, "also write the JSON result to this file");
  app->add_option("--html-out", f->html_out,
                  "also write a self-contained HTML report (SVG charts) to this file");
  app->add_flag("--quiet", f->quiet, "no progress lines on stderr");
}

struct VariantFlags {
  std::string trace;
  double gpushare = -1;
  double multigpu = -1;
  double cpu = -1;
  int64_t seed = 1;
  std::string out;
};

int RunVariant(const VariantFlags& f) {
  // -1: not given (the CLI lets at most one of the three through).
  const bool multi = f.multigpu != -1;
  const bool cpu = f.cpu != -1;
  if (!multi && !cpu && f.gpushare == -1) {
    fmt::print(stderr, "muster sim variant: give one of --gpushare, --multigpu and --cpu\n");
    return 2;
  }
  if (cpu && !(f.cpu >= 0 && f.cpu < 1000)) {
    fmt::print(stderr,
               "muster sim variant: --cpu {} is outside 0..1000, 1000 excluded (per mille of the "
               "pods that are CPU-only)\n",
               f.cpu);
    return 2;
  }
  if (!multi && !cpu && !(f.gpushare >= 0 && f.gpushare <= 100)) {
    fmt::print(stderr,
               "muster sim variant: --gpushare {} is outside 0..100 (percent of the GPU demand "
               "carried by GPU-sharing pods)\n",
               f.gpushare);
    return 2;
  }
  if (multi && !(f.multigpu >= 0 && f.multigpu < 100)) {
    fmt::print(stderr,
               "muster sim variant: --multigpu {} is outside 0..100, 100 excluded (percent of "
               "the GPU demand carried by multi-GPU pods)\n",
               f.multigpu);
    return 2;
  }
  std::string trace = ResolveTrace(f.trace);
  auto pods = sim::LoadOpenbPods(trace);
  if (!pods.ok()) {
    fmt::print(stderr, "muster sim variant: {}\n", std::string(pods.status().message()));
    return 1;
  }
  auto variant = cpu     ? sim::CpuOnlyVariant(*pods, f.cpu / 10, f.seed)
                 : multi ? sim::MultiGpuVariant(*pods, f.multigpu, f.seed)
                         : sim::GpuShareVariant(*pods, f.gpushare, f.seed);
  if (!variant.ok()) {
    fmt::print(stderr, "muster sim variant: {}: {}\n", trace,
               std::string(variant.status().message()));
    return 2;
  }
  int shares = 0, gpu_pods = 0, multis = 0;
  for (const auto& p : *variant) {
    gpu_pods += sim::UsesGpu(p) ? 1 : 0;
    shares += sim::SharesGpu(p) ? 1 : 0;
    multis += sim::MultiGpu(p) ? 1 : 0;
  }
  std::string csv = sim::OpenbPodsCsv(*variant);
  if (f.out.empty()) {
    fmt::print("{}", csv);
  } else if (!WriteFile(f.out, csv)) {
    return 1;
  }
  if (cpu) {
    fmt::print(stderr,
               "{}: {} pods, {} of them GPU pods; {} CPU-only pods are {:.2f} % of the pods (the "
               "trace: {:.2f} %), seed {}\n",
               f.out.empty() ? "stdout" : f.out, variant->size(), gpu_pods,
               variant->size() - gpu_pods, sim::CpuOnlyShareOfPods(*variant),
               sim::CpuOnlyShareOfPods(*pods), f.seed);
  } else if (multi) {
    fmt::print(stderr,
               "{}: {} pods, {} of them GPU pods; {} multi-GPU pods carry {:.2f} % of the GPU "
               "demand (the trace: {:.2f} %), seed {}\n",
               f.out.empty() ? "stdout" : f.out, variant->size(), gpu_pods, multis,
               sim::MultiGpuShareOfGpuDemand(*variant), sim::MultiGpuShareOfGpuDemand(*pods),
               f.seed);
  } else {
    fmt::print(stderr,
               "{}: {} pods, {} of them GPU pods; {} GPU-sharing pods carry {:.2f} % of the GPU "
               "demand (the trace: {:.2f} %), seed {}\n",
               f.out.empty() ? "stdout" : f.out, variant->size(), gpu_pods, shares,
               sim::ShareOfGpuDemand(*variant), sim::ShareOfGpuDemand(*pods), f.seed);
  }
  return 0;
}

void AddVariantCommand(CLI::App& sim, std::shared_ptr<VariantFlags> f) {
  auto* app = sim.add_subcommand(
      "variant",
      "Draw an openb pod list with another mix of GPU pods, as the FGD paper's variants were "
      "drawn from the default one. --gpushare: GPU-sharing pods carry another share of the GPU "
      "demand (CPU-only pods kept, as many GPU pods as the trace has, drawn from its sharing and "
      "its other GPU pods). --multigpu: the trace kept whole, then copies of its multi-GPU pods "
      "until they carry the given share of the GPU demand. --cpu: every GPU pod kept, CPU-only "
      "pods drawn until they are the given per mille of the pods.");
  app->add_option("--trace", f->trace,
                  "openb pod list to draw from (a bare file name is also looked up in "
                  "data/openb/ and $MUSTER_TRACE_DIR)")
      ->required();
  auto* share = app->add_option(
      "--gpushare", f->gpushare,
      "percent of the GPU demand GPU-sharing pods carry in the variant (0..100)");
  auto* multi = app->add_option(
      "--multigpu", f->multigpu,
      "percent of the GPU demand pods with two GPUs or more carry in the variant (at least the "
      "trace's, below 100)");
  auto* cpu = app->add_option(
      "--cpu", f->cpu,
      "per mille of the pods that are CPU-only in the variant (0..1000, 1000 excluded), as in the "
      "published cpu<X> names (cpu250: 25.0 %)");
  share->excludes(multi, cpu);
  multi->excludes(share, cpu);
  cpu->excludes(share, multi);
  app->add_option("--seed", f->seed, "seed of the draw (Go math/rand)")->capture_default_str();
  app->add_option("--out", f->out, "write the pod list to this file instead of stdout");
}

}  // namespace

Subcommand AddSimCommand(CLI::App& parent) {
  auto* app = parent.add_subcommand(
      "sim", "Trace-driven simulation of GPU placement and scheduling in virtual time.");
  app->require_subcommand(1);
  auto pack = std::make_shared<PackFlags>();
  AddPackCommand(*app, pack);
  auto replay = std::make_shared<ReplayFlags>();
  AddReplayCommand(*app, replay);
  auto variant = std::make_shared<VariantFlags>();
  AddVariantCommand(*app, variant);
  return {app, [app, pack, replay, variant]() -> int {
            if (app->got_subcommand("pack")) return RunPack(*pack);
            if (app->got_subcommand("replay")) return RunReplay(*replay);
            if (app->got_subcommand("variant")) return RunVariant(*variant);
            return 2;
          }};
}

}  // namespace muster::cmd
