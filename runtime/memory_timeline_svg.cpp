// The stacked-area memory timeline chart and the bytes axis of the memory charts.
#include "tessera/runtime/memory_timeline_svg.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace tessera {
const char* memory_category_color(MemoryCategory category) {
  switch (category) {
    case MemoryCategory::kParameters: return "#4e79a7";
    case MemoryCategory::kGradients: return "#f28e2b";
    case MemoryCategory::kOptimizerState: return "#59a14f";
    case MemoryCategory::kActivations: return "#e15759";
    case MemoryCategory::kCommBuffers: return "#b07aa1";
    case MemoryCategory::kWorkspace: return "#9c755f";
  }
  return "#888888";
}

std::string svg_bytes_label(std::int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes >= 1000000000000LL) return svg_printf("%g TB", b / 1e12);
  if (bytes >= 1000000000LL) return svg_printf("%g GB", b / 1e9);
  if (bytes >= 1000000LL) return svg_printf("%g MB", b / 1e6);
  if (bytes >= 1000LL) return svg_printf("%g KB", b / 1e3);
  return svg_printf("%lld B", static_cast<long long>(bytes));
}

SvgByteAxis svg_byte_axis(double left, double top, double plot_w, double plot_h, std::int64_t max_bytes) {
  SvgByteAxis axis{left, top, plot_w, plot_h, 1, 1};
  axis.step = svg_tick_step(max_bytes, 6);
  axis.y_max = (std::max<std::int64_t>(max_bytes, 1) + axis.step - 1) / axis.step * axis.step;
  return axis;
}

std::string svg_chart_open(double width, double height, const SvgByteAxis& a, const std::string& title) {
  std::vector<SvgGridLine> grid;
  for (std::int64_t t = 0; t <= a.y_max; t += a.step) grid.push_back({a.y(t), svg_bytes_label(t)});
  return svg_frame_open(width, height, a.left, a.plot_w, title, grid);
}

std::string memory_timeline_svg(const std::vector<MemorySample>& samples, const std::string& title) {
  if (samples.empty()) throw std::invalid_argument("memory_timeline_svg: no samples to draw");
  const int n = static_cast<int>(samples.size());
  const double left = 90, top = 50, plot_h = 360, bottom = 170, legend_w = 190;
  const double dx = std::max(18.0, 760.0 / std::max(1, n - 1));
  const double plot_w = dx * std::max(1, n - 1);
  const double width = left + plot_w + legend_w + 20, height = top + plot_h + bottom;
  std::int64_t max_bytes = 1;
  for (const MemorySample& s : samples) max_bytes = std::max({max_bytes, s.memory.current_total, s.memory.peak_total});
  const SvgByteAxis axis = svg_byte_axis(left, top, plot_w, plot_h, max_bytes);
  auto y = [&](std::int64_t bytes) { return axis.y(bytes); };
  auto x = [&](int i) { return left + dx * i; };
  std::string svg = svg_chart_open(width, height, axis, title);

  // Stacked areas, bottom category first: each polygon runs along its top edge and back along the
  // top edge of the stack below it.
  std::vector<std::int64_t> below(static_cast<std::size_t>(n), 0);
  for (MemoryCategory c : kAllMemoryCategories) {
    std::vector<std::int64_t> above = below;
    for (int i = 0; i < n; ++i)
      above[static_cast<std::size_t>(i)] += samples[static_cast<std::size_t>(i)].memory.current_of(c);
    std::string points;
    for (int i = 0; i < n; ++i) points += svg_printf("%.1f,%.1f ", x(i), y(above[static_cast<std::size_t>(i)]));
    for (int i = n - 1; i >= 0; --i) points += svg_printf("%.1f,%.1f ", x(i), y(below[static_cast<std::size_t>(i)]));
    svg += std::string("<polygon fill=\"") + memory_category_color(c) + "\" fill-opacity=\"0.85\" points=\"" + points +
           "\"><title>" + memory_category_name(c) + "</title></polygon>\n";
    below = above;
  }
  // Peak inside each phase: a step over the interval that ends at the sample.
  std::string peak;
  for (int i = 1; i < n; ++i) {
    const double py = y(samples[static_cast<std::size_t>(i)].memory.peak_total);
    peak += svg_printf("M%.1f,%.1f H%.1f ", x(i - 1), py, x(i));
  }
  if (!peak.empty()) svg += "<path d=\"" + peak + "\" stroke=\"black\" stroke-dasharray=\"4 3\" fill=\"none\"/>\n";
  svg += svg_printf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n", left, top + plot_h,
                    left + plot_w, top + plot_h);
  for (int i = 0; i < n; ++i) {
    const MemorySample& s = samples[static_cast<std::size_t>(i)];
    svg += svg_printf("<text transform=\"translate(%.1f,%.1f) rotate(-60)\" text-anchor=\"end\" font-size=\"10\">",
                      x(i) + 3, top + plot_h + 10) +
           svg_escape(s.phase) + "</text>\n";
  }
  double ly = top + 10;
  const double lx = left + plot_w + 24;
  for (auto it = kAllMemoryCategories.rbegin(); it != kAllMemoryCategories.rend(); ++it) {
    svg += svg_printf("<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" fill=\"", lx, ly) +
           memory_category_color(*it) + "\"/>\n";
    svg += svg_printf("<text x=\"%.1f\" y=\"%.1f\">", lx + 20, ly + 12) + memory_category_name(*it) + "</text>\n";
    ly += 22;
  }
  svg += svg_printf("<path d=\"M%.1f,%.1f h14\" stroke=\"black\" stroke-dasharray=\"4 3\"/>\n", lx, ly + 7);
  svg += svg_printf("<text x=\"%.1f\" y=\"%.1f\">peak within phase</text>\n", lx + 20, ly + 12);
  svg += svg_printf(
      "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#555555\">areas: bytes allocated at each phase end</text>\n",
      left, height - 8);
  return svg + "</svg>\n";
}

void write_memory_timeline_svg(const std::string& path, const std::vector<MemorySample>& samples,
                               const std::string& title) {
  write_text_file(path, memory_timeline_svg(samples, title));
}

}  // namespace tessera
