#pragma once

// Self-contained HTML reports with inline SVG charts (no scripts, no external files), and the
// chart primitives they are drawn with.

#include <string>
#include <utility>
#include <vector>

#include "sim/sweep.h"

namespace muster::sim {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y); NaN y values are gaps
};

struct ChartOptions {
  std::string title;
  std::string x_label;
  std::string y_label;
  // Axis ranges; when lo == hi the range is taken from the data.
  double x_lo = 0, x_hi = 0, y_lo = 0, y_hi = 0;
  bool step = false;  // draw as a step function (utilisation over time)
};

// A line chart with axes, ticks, gridlines and a legend.
std::string SvgLineChart(const std::vector<Series>& series, const ChartOptions& options);
// A bar chart with the values written on the bars.
std::string SvgBarChart(const std::vector<std::pair<std::string, double>>& bars,
                        const ChartOptions& options, int digits = 2);

// An HTML page: a title, an intro paragraph (plain text, escaped) and body parts (trusted HTML).
std::string HtmlPage(const std::string& title, const std::string& intro,
                     const std::vector<std::string>& parts);
std::string HtmlEscape(std::string_view s);

// The packing report: allocation ratio against arrived demand per policy (the FGD paper's
// Fig. 9a), the ratio at 100 % as bars, fragmentation against arrived demand, and the table.
std::string PackingHtml(const PackingSweep& sweep);

}  // namespace muster::sim
