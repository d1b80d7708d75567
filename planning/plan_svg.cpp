// plan_bar_chart_svg: stacked category bars, simultaneous-peak ticks and the device-memory line.
#include "tessera/planning/plan_svg.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "tessera/planning/plan_report.hpp"
#include "tessera/runtime/memory_timeline_svg.hpp"

namespace tessera {
namespace {

std::int64_t stacked(const MemoryPlan& p) {
  std::int64_t sum = 0;
  for (MemoryCategory c : kAllMemoryCategories) sum += p.peak(c);
  return sum;
}

}  // namespace

std::string plan_bar_chart_svg(const std::vector<PlanBar>& bars, const std::string& title) {
  if (bars.empty()) throw std::invalid_argument("plan_bar_chart_svg: no plans to draw");
  const double left = 90, top = 50, plot_h = 380, bar_w = 70, gap = 50, legend_w = 230;
  const double plot_w = gap + static_cast<double>(bars.size()) * (bar_w + gap);
  const double width = left + plot_w + legend_w, height = top + plot_h + 110;
  std::int64_t max_bytes = 1, budget = 0;
  for (const PlanBar& b : bars) {
    max_bytes = std::max(max_bytes, stacked(b.plan));
    if (b.plan.judged()) budget = std::max(budget, b.plan.budget());
  }
  max_bytes = std::max(max_bytes, budget);
  const SvgByteAxis axis = svg_byte_axis(left, top, plot_w, plot_h, max_bytes);
  auto y = [&](std::int64_t bytes) { return axis.y(bytes); };
  std::string svg = svg_chart_open(width, height, axis, title);

  for (std::size_t i = 0; i < bars.size(); ++i) {
    const MemoryPlan& p = bars[i].plan;
    const double x = left + gap + static_cast<double>(i) * (bar_w + gap);
    std::int64_t base = 0;
    for (MemoryCategory c : kAllMemoryCategories) {
      const std::int64_t bytes = p.peak(c);
      if (bytes <= 0) continue;
      svg += svg_printf("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.2f\" fill=\"", x, y(base + bytes), bar_w,
                        y(base) - y(base + bytes)) +
             memory_category_color(c) + "\"><title>" + memory_category_name(c) + ": " + format_decimal_bytes(bytes) +
             "</title></rect>\n";
      base += bytes;
    }
    const double ty = y(p.peak_total());
    svg += svg_printf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\" stroke-width=\"3\"/>\n",
                      x - 6, ty, x + bar_w + 6, ty);
    svg += svg_printf(
               "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\" stroke=\"white\" "
               "stroke-width=\"3\" paint-order=\"stroke\">",
               x + bar_w / 2, std::min(y(base), ty) - 6) +
           format_decimal_bytes(p.peak_total()) + "</text>\n";
    svg += svg_printf("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-weight=\"bold\">", x + bar_w / 2,
                      top + plot_h + 18) +
           svg_escape(bars[i].label) + "</text>\n";
    const char* verdict = !p.judged() ? "" : p.fits() ? "fits" : "does not fit";
    svg += svg_printf("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" font-size=\"11\" fill=\"%s\">", x + bar_w / 2,
                      top + plot_h + 34, p.fits() ? "#2b7a2b" : "#c02020") +
           verdict + "</text>\n";
  }
  if (budget > 0) {
    svg += svg_printf(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c02020\" stroke-width=\"2\" "
        "stroke-dasharray=\"8 4\"/>\n",
        left, y(budget), left + plot_w, y(budget));
  }
  svg += svg_printf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", left, top + plot_h,
                    left + plot_w, top + plot_h);
  double ly = top + 10;
  const double lx = left + plot_w + 20;
  for (auto it = kAllMemoryCategories.rbegin(); it != kAllMemoryCategories.rend(); ++it) {
    svg += svg_printf("<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"", lx, ly) +
           memory_category_color(*it) + "\"/>\n";
    svg +=
        svg_printf("<text x=\"%.1f\" y=\"%.1f\">", lx + 20, ly + 12) + memory_category_name(*it) + " (peak)</text>\n";
    ly += 22;
  }
  svg += svg_printf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\" stroke-width=\"3\"/>\n", lx,
                    ly + 7, lx + 14, ly + 7);
  svg += svg_printf("<text x=\"%.1f\" y=\"%.1f\">simultaneous peak</text>\n", lx + 20, ly + 12);
  ly += 22;
  if (budget > 0) {
    svg += svg_printf(
        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c02020\" stroke-width=\"2\" "
        "stroke-dasharray=\"8 4\"/>\n",
        lx, ly + 7, lx + 14, ly + 7);
    svg += svg_printf("<text x=\"%.1f\" y=\"%.1f\">device memory available</text>\n", lx + 20, ly + 12);
  }
  svg += svg_printf("<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#555555\">per rank; GB = 10^9 bytes</text>\n",
                    left, height - 10);
  return svg + "</svg>\n";
}

void write_plan_bar_chart_svg(const std::string& path, const std::vector<PlanBar>& bars, const std::string& title) {
  write_text_file(path, plan_bar_chart_svg(bars, title));
}

}  // namespace tessera
