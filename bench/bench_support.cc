#include "bench/bench_support.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "fmt/format.h"

namespace muster::bench {

// --- cycles ---------------------------------------------------------------------------------

CycleStats RunUntilBound(core::Cluster& cluster, const core::SchedulerConf& conf,
                         const RunOptions& options) {
  CycleStats stats;
  const double cpu_start = ThreadCpuSeconds();
  while (stats.binds < options.want_binds && stats.cycles < options.max_cycles) {
    core::SessionOptions so;
    so.session_id = fmt::format("cycle-{}", stats.cycles + 1);
    auto start = std::chrono::steady_clock::now();
    core::CycleResult result;
    {
      core::Session ssn(cluster, conf, so);
      if (options.observer.on_allocate || options.observer.on_deallocate) {
        ssn.AddEventHandler(options.observer);
      }
      result = ssn.Run();
    }
    stats.session_seconds += SecondsSince(start);
    ++stats.cycles;
    start = std::chrono::steady_clock::now();
    core::ApplyCycleResult(cluster, result);
    stats.apply_seconds += SecondsSince(start);
    stats.binds += static_cast<int64_t>(result.binds.size());
    if (result.binds.empty()) break;
  }
  stats.cpu_seconds = ThreadCpuSeconds() - cpu_start;
  return stats;
}

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// --- statistics -----------------------------------------------------------------------------

double Percentile(std::vector<double> samples, double p) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  double rank = std::ceil(p / 100.0 * static_cast<double>(samples.size()));
  size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return samples[std::min(index, samples.size() - 1)];
}

namespace {

int64_t StatusKiB(std::string_view field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0 && line.size() > field.size() && line[field.size()] == ':') {
      return std::atoll(line.c_str() + field.size() + 1);
    }
  }
  return 0;
}

}  // namespace

int64_t PeakRssBytes() { return StatusKiB("VmHWM") * 1024; }
int64_t CurrentRssBytes() { return StatusKiB("VmRSS") * 1024; }

}  // namespace muster::bench
