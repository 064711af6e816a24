#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "fmt/format.h"

namespace muster::sim {
namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                    "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr int kWidth = 720, kHeight = 400;
constexpr int kLeft = 64, kRight = 170, kTop = 36, kBottom = 52;

// A "nice" tick step for a range: 1, 2 or 5 times a power of ten, about six ticks.
double TickStep(double span) {
  if (!(span > 0)) return 1;
  double raw = span / 6;
  double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

std::string Num(double v) {
  std::string s = fmt::format("{:.6g}", v);
  return s == "-0" ? "0" : s;
}

}  // namespace

std::string HtmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string SvgLineChart(const std::vector<Series>& series, const ChartOptions& o) {
  double x_lo = o.x_lo, x_hi = o.x_hi, y_lo = o.y_lo, y_hi = o.y_hi;
  if (x_lo == x_hi || y_lo == y_hi) {
    double xl = std::numeric_limits<double>::infinity(), xh = -xl, yl = xl, yh = -xl;
    for (const auto& s : series) {
      for (auto [x, y] : s.points) {
        if (std::isnan(y) || (o.x_lo != o.x_hi && (x < o.x_lo || x > o.x_hi))) continue;
        xl = std::min(xl, x), xh = std::max(xh, x), yl = std::min(yl, y), yh = std::max(yh, y);
      }
    }
    if (!std::isfinite(xl)) xl = 0, xh = 1, yl = 0, yh = 1;
    if (x_lo == x_hi) x_lo = xl, x_hi = xh > xl ? xh : xl + 1;
    if (y_lo == y_hi) {
      double pad = (yh - yl) * 0.05 + 1e-9;
      y_lo = yl - pad, y_hi = yh + pad;
    }
  }
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x_lo) / (x_hi - x_lo) * pw; };
  auto py = [&](double y) { return kTop + ph - (y - y_lo) / (y_hi - y_lo) * ph; };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\" role=\"img\" aria-label=\"{}\">\n",
      kWidth, kHeight, kWidth, kHeight, HtmlEscape(o.title));
  svg += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
                     kLeft, HtmlEscape(o.title));
  double xs = TickStep(x_hi - x_lo), ys = TickStep(y_hi - y_lo);
  for (double t = std::ceil(x_lo / xs) * xs; t <= x_hi + 1e-9; t += xs) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#e5e5e5\"/>"
        "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
        px(t), kTop, kTop + ph, kTop + ph + 16, Num(t));
  }
  for (double t = std::ceil(y_lo / ys) * ys; t <= y_hi + 1e-9; t += ys) {
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e5e5e5\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        kLeft, py(t), kLeft + pw, kLeft - 6, py(t) + 4, Num(t));
  }
  svg += fmt::format(
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n", kLeft,
      kTop, pw, ph);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     kLeft + pw / 2, kHeight - 10, HtmlEscape(o.x_label));
  svg += fmt::format(
      "<text transform=\"translate(16 {:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
      kTop + ph / 2, HtmlEscape(o.y_label));
  for (size_t i = 0; i < series.size(); ++i) {
    const char* color = kPalette[i % std::size(kPalette)];
    std::string path;
    bool pen = false;
    double last_y = 0;
    for (auto [x, y] : series[i].points) {
      if (std::isnan(y) || x < x_lo || x > x_hi) {
        pen = false;
        continue;
      }
      double cy = std::clamp(y, y_lo, y_hi);
      if (pen && o.step) path += fmt::format(" L{:.1f},{:.1f}", px(x), py(last_y));
      path += fmt::format("{}{:.1f},{:.1f}", pen ? " L" : " M", px(x), py(cy));
      pen = true;
      last_y = cy;
    }
    svg += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\"/>\n", path,
                       color);
    double ly = kTop + 8 + 18.0 * static_cast<double>(i);
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"{3}\" "
        "stroke-width=\"3\"/><text x=\"{4}\" y=\"{5:.1f}\">{6}</text>\n",
        kLeft + pw + 12, ly, kLeft + pw + 34, color, kLeft + pw + 40, ly + 4,
        HtmlEscape(series[i].name));
  }
  svg += "</svg>\n";
  return svg;
}

std::string SvgBarChart(const std::vector<std::pair<std::string, double>>& bars,
                        const ChartOptions& o, int digits) {
  double y_lo = o.y_lo, y_hi = o.y_hi;
  if (y_lo == y_hi) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& b : bars) {
      if (std::isfinite(b.second)) lo = std::min(lo, b.second), hi = std::max(hi, b.second);
    }
    if (!std::isfinite(lo)) lo = 0, hi = 1;
    double pad = std::max((hi - lo) * 0.25, 0.5);
    y_lo = std::max(0.0, std::floor(lo - pad)), y_hi = std::ceil(hi + pad * 0.4);
  }
  const double pw = kWidth - kLeft - 40, ph = kHeight - kTop - kBottom;
  auto py = [&](double y) { return kTop + ph - (std::clamp(y, y_lo, y_hi) - y_lo) / (y_hi - y_lo) * ph; };
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {} {}\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"12\" role=\"img\" aria-label=\"{}\">\n",
      kWidth, kHeight, kWidth, kHeight, HtmlEscape(o.title));
  svg += fmt::format("<text x=\"{}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
                     kLeft, HtmlEscape(o.title));
  double ys = TickStep(y_hi - y_lo);
  for (double t = std::ceil(y_lo / ys) * ys; t <= y_hi + 1e-9; t += ys) {
    svg += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#e5e5e5\"/>"
        "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        kLeft, py(t), kLeft + pw, kLeft - 6, py(t) + 4, Num(t));
  }
  svg += fmt::format(
      "<text transform=\"translate(16 {:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
      kTop + ph / 2, HtmlEscape(o.y_label));
  double slot = bars.empty() ? pw : pw / static_cast<double>(bars.size());
  for (size_t i = 0; i < bars.size(); ++i) {
    double x = kLeft + slot * static_cast<double>(i) + slot * 0.15, w = slot * 0.7;
    double v = bars[i].second, top = py(std::isfinite(v) ? v : y_lo);
    svg += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>"
        "<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
        x, top, w, kTop + ph - top, kPalette[i % std::size(kPalette)], x + w / 2, top - 5,
        std::isfinite(v) ? fmt::format("{:.{}f}", v, digits) : "n/a", x + w / 2, kTop + ph + 16,
        HtmlEscape(bars[i].first));
  }
  svg += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#444\"/>\n",
                     kLeft, kTop + ph, kLeft + pw);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     kLeft + pw / 2, kHeight - 10, HtmlEscape(o.x_label));
  svg += "</svg>\n";
  return svg;
}

std::string HtmlPage(const std::string& title, const std::string& intro,
                     const std::vector<std::string>& parts) {
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{0}</title>\n"
      "<style>body{{font-family:sans-serif;max-width:980px;margin:24px auto;color:#222}}"
      "table{{border-collapse:collapse;margin:12px 0}}td,th{{border:1px solid #ccc;padding:3px 8px;"
      "text-align:right}}th{{background:#f3f3f3}}td:first-child,th:first-child{{text-align:left}}"
      "figure{{margin:18px 0}}</style></head>\n<body><h1>{0}</h1>\n<p>{1}</p>\n",
      HtmlEscape(title), HtmlEscape(intro));
  for (const auto& p : parts) out += p;
  out += "</body></html>\n";
  return out;
}

std::string PackingHtml(const PackingSweep& sweep) {
  std::vector<Series> alloc, frag;
  std::vector<std::pair<std::string, double>> bars100, bars130;
  for (const auto& p : sweep.results) {
    Series a{p.policy, {}}, f{p.policy, {}};
    for (size_t x = 0; x < p.mean.alloc_curve.size(); ++x) {
      a.points.emplace_back(static_cast<double>(x), p.mean.alloc_curve[x]);
      f.points.emplace_back(static_cast<double>(x), p.mean.frag_curve[x]);
    }
    alloc.push_back(std::move(a));
    frag.push_back(std::move(f));
    bars100.emplace_back(p.policy, p.mean.alloc_100);
    bars130.emplace_back(p.policy, p.mean.alloc_130);
  }
  std::string seeds = sweep.seeds.empty()
                          ? ""
                          : fmt::format("{}..{}", sweep.seeds.front(), sweep.seeds.back());
  std::vector<std::string> parts;
  parts.push_back("<figure>" +
                  SvgLineChart(alloc, {"GPU allocation ratio vs arrived GPU demand",
                                       "arrived GPU demand (% of capacity)",
                                       "GPU allocation ratio (%)", 0, 130, 0, 100}) +
                  "</figure>\n");
  parts.push_back("<figure>" +
                  SvgLineChart(alloc, {"The same, zoomed on saturation",
                                       "arrived GPU demand (% of capacity)",
                                       "GPU allocation ratio (%)", 80, 130, 0, 0}) +
                  "</figure>\n");
  parts.push_back("<figure>" +
                  SvgBarChart(bars100, {"GPU allocation ratio at 100 % arrived demand", "policy",
                                        "GPU allocation ratio (%)"}) +
                  "</figure>\n");
  parts.push_back("<figure>" +
                  SvgLineChart(frag, {"Fragmentation vs arrived GPU demand",
                                      "arrived GPU demand (% of capacity)",
                                      "fragmented GPU (% of capacity)", 0, 130, 0, 0}) +
                  "</figure>\n");
  std::string table =
      "<table><tr><th>policy</th><th>alloc@100</th><th>alloc@130</th><th>frag@100</th>"
      "<th>frag@130</th><th>failed pods</th><th>s/run</th></tr>\n";
  for (const auto& p : sweep.results) {
    const PackingRun& m = p.mean;
    table += fmt::format(
        "<tr><td>{}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.2f}</td><td>{:.2f}</td><td>{}</td>"
        "<td>{:.2f}</td></tr>\n",
        HtmlEscape(p.policy), m.alloc_100, m.alloc_130, m.frag_100, m.frag_130, m.failed_pods,
        m.seconds);
  }
  table += "</table>\n";
  parts.push_back("<h2>Means over the seeds</h2>\n" + table);
  return HtmlPage(
      "muster sim pack",
      fmt::format("Trace {} ({} pods) on {} ({} nodes, {} GPUs); seeds {} ({} per policy); pods "
                  "inflated to 130 % of GPU capacity and placed one by one (FGD's protocol).",
                  sweep.trace, sweep.trace_pods, sweep.nodes, sweep.node_count, sweep.gpus, seeds,
                  sweep.seeds.size()),
      parts);
}

}  // namespace muster::sim
