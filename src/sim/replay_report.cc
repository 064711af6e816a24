// `muster sim replay`'s results as a table, JSON, CSV and an HTML report (replay_report.h); the
// HTML charts are drawn by sim/report.cc.

#include "sim/replay_report.h"

#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "sim/json.h"
#include "sim/report.h"

namespace muster::sim {
namespace {

// Seconds in a short human unit.
std::string Duration(double s) {
  if (!std::isfinite(s)) return "-";
  if (s < 120) return fmt::format("{:.0f}s", s);
  if (s < 7200) return fmt::format("{:.1f}m", s / 60);
  if (s < 172800) return fmt::format("{:.1f}h", s / 3600);
  return fmt::format("{:.1f}d", s / 86400);
}

bool AnyRacks(const ReplayReport& rep) {
  for (const auto& r : rep.results) {
    if (r.racks) return true;
  }
  return false;
}

// Where the gangs landed, per scheduler, when the replay had racks.
std::string RacksTable(const ReplayReport& rep) {
  if (!AnyRacks(rep)) return "";
  std::string out = fmt::format(
      "\n{}: gangs (jobs of more than one pod) by the lowest tier that held all their pods\n",
      rep.racks);
  out += fmt::format("{:<9} {:<8} {:>6} {:>11} {:>6} {:>6} {:>6} {:>8} {:>8}\n", "scheduler",
                     "topology", "gangs", "in one rack", "node", "rack", "spine", "cluster",
                     "JCT avg");
  for (const auto& r : rep.results) {
    if (!r.racks) continue;
    const ReplayResult::GangPlacement& g = *r.racks;
    out += fmt::format("{:<9} {:<8} {:>6} {:>10.1f}% {:>6} {:>6} {:>6} {:>8} {:>8}\n",
                       r.discipline, g.topology, g.gangs, 100 * g.InOneRack(), g.one_node,
                       g.one_rack, g.one_spine, g.cluster, Duration(r.jct_mean));
  }
  return out;
}

}  // namespace

std::string ReplayTable(const ReplayReport& rep) {
  std::string out = fmt::format("trace {} on {}{}\n", rep.trace, rep.cluster,
                                rep.skipped > 0 ? fmt::format(" ({} rows skipped: cannot run here)",
                                                              rep.skipped)
                                                : "");
  out += "wait: queueing delay (start - submit); JCT: completion - submit; gang wait: the longest\n"
         "wait of a multi-pod job; held: GPU-hours held idle by partly placed jobs.\n\n";
  out += fmt::format("{:<9} {:<9} {:>7} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>6} {:>10} {:>10}\n",
                     "scheduler", "placement", "jobs", "unfin", "wait avg", "wait p50", "wait p99",
                     "JCT avg", "JCT p50", "JCT p99", "gang wait", "makespan", "util",
                     "held GPU-h", "held cost");
  for (const auto& r : rep.results) {
    out += fmt::format(
        "{:<9} {:<9} {:>7} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>5.1f}% {:>10.1f} {:>10}\n",
        r.discipline, r.placement, r.jobs, r.unfinished, Duration(r.wait_mean),
        Duration(r.wait_p50), Duration(r.wait_p99), Duration(r.jct_mean), Duration(r.jct_p50),
        Duration(r.jct_p99), Duration(r.gang_wait_max), Duration(r.makespan),
        100 * r.gpu_utilization, r.idle_held_gpu_hours, fmt::format("${:.2f}", r.idle_held_cost));
  }
  std::string engine, modelled;
  for (const auto& r : rep.results) {
    std::string& list = r.engine ? engine : modelled;
    list += (list.empty() ? "" : ", ") + r.discipline;
    if (!r.engine && !r.engine_note.empty()) list += " (" + r.engine_note + ")";
  }
  if (!engine.empty()) out += fmt::format("through the engine's sessions: {}\n", engine);
  if (!modelled.empty()) out += fmt::format("modelled by the simulator: {}\n", modelled);
  out += RacksTable(rep);
  for (const auto& r : rep.results) {
    if (r.deadlock) {
      out += fmt::format(
          "{}: {} jobs never ran; nothing could move after {} (GPUs held by partly placed jobs)\n",
          r.discipline, r.unfinished, Duration(r.deadlock_at));
    }
  }
  return out;
}

std::string ReplayJson(const ReplayReport& rep) {
  JsonWriter j;
  j.BeginObject();
  j.String("trace", rep.trace);
  j.String("cluster", rep.cluster);
  j.Int("skipped", rep.skipped);
  j.Number("gpu_hour_price", rep.gpu_hour_price, 4);
  if (!rep.racks.empty()) j.String("racks", rep.racks);
  j.BeginArray("results");
  for (const auto& r : rep.results) {
    j.BeginObject();
    j.String("scheduler", r.discipline);
    j.String("placement", r.placement);
    j.Int("jobs", r.jobs);
    j.Int("finished", r.finished);
    j.Int("unfinished", r.unfinished);
    j.Bool("deadlock", r.deadlock);
    if (r.deadlock) j.Number("deadlock_at", r.deadlock_at, 0);
    j.BeginObject("wait");
    j.Number("mean", r.wait_mean, 1);
    j.Number("p50", r.wait_p50, 1);
    j.Number("p99", r.wait_p99, 1);
    j.Number("max", r.wait_max, 1);
    j.End();
    j.BeginObject("jct");
    j.Number("mean", r.jct_mean, 1);
    j.Number("p50", r.jct_p50, 1);
    j.Number("p99", r.jct_p99, 1);
    j.End();
    j.Number("gang_wait_max", r.gang_wait_max, 1);
    j.Number("makespan", r.makespan, 1);
    j.Number("gpu_utilization", r.gpu_utilization, 4);
    j.Number("idle_held_gpu_hours", r.idle_held_gpu_hours, 2);
    j.Number("idle_held_cost", r.idle_held_cost, 2);
    j.Number("seconds", r.seconds, 3);
    j.Bool("engine", r.engine);
    if (r.engine) j.Int("sessions", r.sessions);
    if (!r.engine_note.empty()) j.String("engine_note", r.engine_note);
    if (r.racks) {
      j.BeginObject("racks");
      j.String("topology", r.racks->topology);
      j.Int("gangs", r.racks->gangs);
      j.Number("in_one_rack", r.racks->InOneRack(), 4);
      j.Int("one_node", r.racks->one_node);
      j.Int("one_rack", r.racks->one_rack);
      j.Int("one_spine", r.racks->one_spine);
      j.Int("cluster", r.racks->cluster);
      j.Int("slowed", r.racks->slowed);
      j.End();
    }
    j.End();
  }
  j.End();
  j.End();
  return j.str() + "\n";
}

std::string ReplayCsv(const ReplayReport& rep) {
  std::string out =
      "trace,scheduler,placement,jobs,finished,unfinished,deadlock,wait_mean,wait_p50,wait_p99,"
      "wait_max,jct_mean,jct_p50,jct_p99,gang_wait_max,makespan,gpu_utilization,"
      "idle_held_gpu_hours,idle_held_cost";
  const bool racks = AnyRacks(rep);
  out += racks ? ",topology,gangs,gangs_in_one_rack,one_node,one_rack,one_spine,cluster\n" : "\n";
  for (const auto& r : rep.results) {
    out += fmt::format("{},{},{},{},{},{},{},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},{:.1f},"
                       "{:.1f},{:.4f},{:.2f},{:.2f}\n",
                       CsvField(rep.trace), r.discipline, CsvField(r.placement), r.jobs, r.finished,
                       r.unfinished, r.deadlock ? "true" : "false", r.wait_mean, r.wait_p50,
                       r.wait_p99, r.wait_max, r.jct_mean, r.jct_p50, r.jct_p99, r.gang_wait_max,
                       r.makespan, r.gpu_utilization, r.idle_held_gpu_hours, r.idle_held_cost);
    if (racks) {
      out.pop_back();  // the line's end
      const ReplayResult::GangPlacement g = r.racks.value_or(ReplayResult::GangPlacement{});
      out += fmt::format(",{},{},{:.4f},{},{},{},{}\n", g.topology, g.gangs, g.InOneRack(),
                         g.one_node, g.one_rack, g.one_spine, g.cluster);
    }
  }
  return out;
}

std::string ReplayHtml(const ReplayReport& rep) {
  // Queueing delay as a CDF over log10(seconds + 1); utilisation over days.
  std::vector<Series> cdf, util, held;
  std::vector<std::pair<std::string, double>> wait_bars, held_bars;
  for (const auto& r : rep.results) {
    std::vector<double> w = r.waits;
    std::sort(w.begin(), w.end());
    Series s{r.discipline, {}};
    for (int i = 0; i <= 70; ++i) {
      double x = i / 10.0;
      double limit = std::pow(10.0, x) - 1;
      double frac = w.empty() ? 0
                              : static_cast<double>(std::upper_bound(w.begin(), w.end(), limit) -
                                                    w.begin()) /
                                    static_cast<double>(r.jobs);
      s.points.emplace_back(x, 100 * frac);
    }
    cdf.push_back(std::move(s));
    Series u{r.discipline, {}}, h{r.discipline, {}};
    double capacity = 0;
    (void)capacity;
    for (const auto& p : r.utilization) {
      u.points.emplace_back(p.t / 86400, p.busy);
      h.points.emplace_back(p.t / 86400, p.held);
    }
    util.push_back(std::move(u));
    held.push_back(std::move(h));
    wait_bars.emplace_back(r.discipline, r.wait_mean / 3600);
    held_bars.emplace_back(r.discipline, r.idle_held_gpu_hours);
  }
  std::vector<std::string> parts;
  parts.push_back("<figure>" +
                  SvgLineChart(cdf, {"Queueing delay: share of jobs started within the delay",
                                     "queueing delay, log10(seconds + 1)  (1 = 9 s, 3 = 17 min, "
                                     "5 = 28 h)",
                                     "jobs started (%)", 0, 7, 0, 100}) +
                  "</figure>\n");
  parts.push_back("<figure>" +
                  SvgBarChart(wait_bars, {"Mean queueing delay", "scheduler", "hours"}, 1) +
                  "</figure>\n");
  parts.push_back("<figure>" +
                  SvgLineChart(util, {"GPUs running jobs over time", "day", "GPUs", 0, 0, 0, 0,
                                      true}) +
                  "</figure>\n");
  parts.push_back("<figure>" +
                  SvgLineChart(held, {"GPUs held idle by partly placed jobs over time", "day",
                                      "GPUs", 0, 0, 0, 0, true}) +
                  "</figure>\n");
  parts.push_back("<figure>" +
                  SvgBarChart(held_bars, {"GPU-hours held idle by partly placed jobs", "scheduler",
                                          "GPU-hours"}, 0) +
                  "</figure>\n");
  std::string table =
      "<table><tr><th>scheduler</th><th>placement</th><th>jobs</th><th>never ran</th>"
      "<th>wait mean (h)</th><th>wait p50 (h)</th><th>wait p99 (h)</th><th>JCT mean (h)</th>"
      "<th>JCT p99 (h)</th><th>longest gang wait (h)</th><th>makespan (d)</th><th>GPU util</th>"
      "<th>held idle GPU-h</th><th>cost</th></tr>\n";
  for (const auto& r : rep.results) {
    table += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2f}</td><td>{:.2f}</td>"
        "<td>{:.2f}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.1f}</td><td>{:.1f}</td>"
        "<td>{:.1f} %</td><td>{:.1f}</td><td>${:.2f}</td></tr>\n",
        HtmlEscape(r.discipline), HtmlEscape(r.placement), r.jobs, r.unfinished, r.wait_mean / 3600,
        r.wait_p50 / 3600, r.wait_p99 / 3600, r.jct_mean / 3600, r.jct_p99 / 3600,
        r.gang_wait_max / 3600, r.makespan / 86400, 100 * r.gpu_utilization,
        r.idle_held_gpu_hours, r.idle_held_cost);
  }
  table += "</table>\n";
  for (const auto& r : rep.results) {
    if (!r.longest_wait) continue;
    const ReplayResult::LongestWait& lw = *r.longest_wait;
    auto after = [&lw](double t) {
      return t >= 0 ? fmt::format("{:.1f} h after submission", (t - lw.submit) / 3600) : "";
    };
    std::string estimate = lw.estimated_start >= 0 ? after(lw.estimated_start) : "none";
    std::string started = lw.started >= 0 ? after(lw.started) : "never";
    parts.push_back(fmt::format(
        "<h2>{}: why the longest-waiting gang waited</h2>\n<p>Job {}, explained {:.1f} h after "
        "its submission (muster explain's answer in the replay's virtual time). Estimated start: "
        "{}; it started {}.</p>\n<pre>{}</pre>\n",
        HtmlEscape(r.discipline), HtmlEscape(lw.job), (lw.explained_at - lw.submit) / 3600,
        estimate, started, HtmlEscape(lw.explanation)));
  }
  parts.insert(parts.begin(), "<h2>Summary</h2>\n" + table);
  return HtmlPage(
      "muster sim replay",
      fmt::format("Trace {} replayed on {} in virtual time; idle GPUs priced at ${:.2f} per "
                  "GPU-hour.{}",
                  rep.trace, rep.cluster, rep.gpu_hour_price,
                  rep.skipped > 0 ? fmt::format(" {} rows of the trace cannot run on this cluster "
                                                "and were skipped.",
                                                rep.skipped)
                                  : ""),
      parts);
}

}  // namespace muster::sim
