// SVG charts of memory by category, readable in any browser without other tools: the stacked-area
// timeline of one profiled step (MemoryProfiler samples, like PyTorch's memory viewer) and the
// pieces the planner's bar chart shares with it (category colours, the bytes axis on the common
// frame of svg_frame.hpp).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/core/svg/svg_frame.hpp"
#include "tessera/runtime/memory_profiler.hpp"

namespace tessera {

// Stacked areas of the bytes allocated per category at each phase boundary of `samples` (one step),
// with the simultaneous peak inside each phase drawn as a dashed step line above them.
std::string memory_timeline_svg(const std::vector<MemorySample>& samples, const std::string& title);
// Writes it to `path`; throws std::runtime_error naming the path when it cannot.
void write_memory_timeline_svg(const std::string& path, const std::vector<MemorySample>& samples,
                               const std::string& title);

// Fill colour of a category (the same in every Tessera chart).
const char* memory_category_color(MemoryCategory category);
// A short axis label in powers of 10: "1.5 GB", "200 MB".
std::string svg_bytes_label(std::int64_t bytes);

// The y axis both memory charts share: bytes 0 .. y_max (rounded up to a tick) over plot_h pixels
// below `top`, ticks every `step` bytes.
struct SvgByteAxis {
  double left = 0, top = 0, plot_w = 0, plot_h = 0;
  std::int64_t y_max = 1, step = 1;

  double y(std::int64_t bytes) const {
    return top + plot_h - plot_h * static_cast<double>(bytes) / static_cast<double>(y_max);
  }
};
SvgByteAxis svg_byte_axis(double left, double top, double plot_w, double plot_h, std::int64_t max_bytes);
// The chart's opening (svg_frame_open) with the axis's grid lines labelled in bytes.
std::string svg_chart_open(double width, double height, const SvgByteAxis& axis, const std::string& title);

}  // namespace tessera
