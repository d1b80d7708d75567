// line_chart_svg: value ranges, round ticks, one polyline and its point markers per series, vertical
// markers and the legend.
#include "tessera/core/svg/line_chart_svg.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "tessera/core/svg/svg_frame.hpp"

namespace tessera {
namespace {

// A range [low, high] widened to round ticks every `step`.
struct Axis {
  double low = 0, high = 1, step = 1;
};

// integer: ticks on whole numbers only (steps).
Axis round_axis(double low, double high, int ticks, bool integer) {
  if (!(low <= high)) low = high = 0;                         // no finite values
  if (high - low < 1e-12 * std::max(1.0, std::fabs(high))) {  // one value: a band around it
    const double pad = std::max(1.0, std::fabs(high)) * 0.05;
    low -= pad;
    high += pad;
  }
  Axis a;
  a.step = svg_value_tick_step(high - low, ticks);
  if (integer) a.step = std::max(1.0, std::round(a.step));
  a.low = std::floor(low / a.step) * a.step;
  a.high = std::ceil(high / a.step) * a.step;
  return a;
}

std::string tick_label(double v, double step) {
  if (std::fabs(v) < step * 1e-9) v = 0;  // no "-0" or "1e-17"
  return svg_printf("%g", v);
}

}  // namespace

std::string line_chart_svg(const LineChart& chart) {
  double x_low = std::numeric_limits<double>::infinity(), x_high = -x_low, y_low = x_low, y_high = -x_low;
  for (const LineSeries& s : chart.series) {
    if (s.x.size() != s.y.size()) {
      throw std::invalid_argument("line_chart_svg: series '" + s.name + "' has " + std::to_string(s.x.size()) +
                                  " x values but " + std::to_string(s.y.size()) + " y values");
    }
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      x_low = std::min(x_low, s.x[i]);
      x_high = std::max(x_high, s.x[i]);
      y_low = std::min(y_low, s.y[i]);
      y_high = std::max(y_high, s.y[i]);
    }
  }
  for (const ChartMarker& m : chart.markers) {
    if (!std::isfinite(m.x)) continue;
    x_low = std::min(x_low, m.x);
    x_high = std::max(x_high, m.x);
  }
  if (chart.y_from_zero && y_low <= y_high) {
    y_low = std::min(y_low, 0.0);
    y_high = std::max(y_high, 0.0);
  }
  double legend_w = 200;
  for (const LineSeries& s : chart.series) legend_w = std::max(legend_w, 24 + 22 + svg_text_width(s.name, 12) + 12);
  const double left = 80, top = 50, plot_w = 720, plot_h = 360;
  const double width = left + plot_w + legend_w, height = top + plot_h + 60;
  const Axis ax = round_axis(x_low, x_high, 8, chart.whole_x), ay = round_axis(y_low, y_high, 6, false);
  auto px = [&](double v) { return left + plot_w * (v - ax.low) / (ax.high - ax.low); };
  auto py = [&](double v) { return top + plot_h - plot_h * (v - ay.low) / (ay.high - ay.low); };

  std::vector<SvgGridLine> grid;
  for (double v = ay.low; v <= ay.high + ay.step * 1e-6; v += ay.step) grid.push_back({py(v), tick_label(v, ay.step)});
  std::string svg = svg_frame_open(width, height, left, plot_w, chart.title, grid);
  svg += svg_printf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", left, top + plot_h,
                    left + plot_w, top + plot_h);
  for (double v = ax.low; v <= ax.high + ax.step * 1e-6; v += ax.step) {
    svg += svg_printf("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", px(v), top + plot_h + 18) +
           tick_label(v, ax.step) + "</text>\n";
  }
  svg += svg_printf("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", left + plot_w / 2, top + plot_h + 40) +
         svg_escape(chart.x_label) + "</text>\n";
  svg += svg_printf("<text transform=\"translate(%.1f,%.1f) rotate(-90)\" text-anchor=\"middle\">", 18.0,
                    top + plot_h / 2) +
         svg_escape(chart.y_label) + "</text>\n";

  // Markers: a dashed vertical line and its label, right of the line (left of it near the right
  // edge), labels stepped down so that close markers do not overwrite each other.
  for (std::size_t i = 0; i < chart.markers.size(); ++i) {
    const ChartMarker& m = chart.markers[i];
    if (!std::isfinite(m.x)) continue;
    const double x = px(m.x), label_y = top + 14 + 14 * static_cast<double>(i % 8);
    const bool flip = x + 4 + svg_text_width(m.label, 11) > left + plot_w;
    svg += svg_printf(
        "<g class=\"marker\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#555555\" "
        "stroke-dasharray=\"5 3\"/>",
        x, top, x, top + plot_h);
    svg += svg_printf("<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" fill=\"#333333\" text-anchor=\"%s\" stroke=\"white\" "
                      "stroke-width=\"3\" paint-order=\"stroke\">",
                      flip ? x - 4 : x + 4, label_y, flip ? "end" : "start") +
           svg_escape(m.label) + "</text></g>\n";
  }

  double ly = top + 10;
  const double lx = left + plot_w + 24;
  for (const LineSeries& s : chart.series) {
    if (!s.x.empty()) {
      std::string points;
      for (std::size_t i = 0; i < s.x.size(); ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
        points += svg_printf("%s%.2f,%.2f", points.empty() ? "" : " ", px(s.x[i]), py(s.y[i]));
      }
      svg += "<polyline fill=\"none\" stroke=\"" + svg_escape(s.color) + "\" stroke-width=\"1.5\" points=\"" + points +
             "\"><title>" + svg_escape(s.name) + "</title></polyline>\n";
      svg += "<g class=\"points\" fill=\"" + svg_escape(s.color) + "\"><title>" + svg_escape(s.name) + "</title>\n";
      for (std::size_t i = 0; i < s.x.size(); ++i) {
        if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
        svg += svg_printf("<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\"/>\n", px(s.x[i]), py(s.y[i]));
      }
      svg += "</g>\n";
    }
    svg += svg_printf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke-width=\"3\" stroke=\"", lx, ly + 7,
                      lx + 16, ly + 7) +
           svg_escape(s.color) + "\"/>\n";
    svg += svg_printf("<text x=\"%.1f\" y=\"%.1f\">", lx + 22, ly + 11) + svg_escape(s.name) + "</text>\n";
    ly += 22;
  }
  return svg + "</svg>\n";
}

void write_line_chart_svg(const std::string& path, const LineChart& chart) {
  write_text_file(path, line_chart_svg(chart));
}

}  // namespace tessera
