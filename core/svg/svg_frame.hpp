// The frame every Tessera SVG chart shares, readable in any browser without other tools: the
// <svg> header on a white background, the title, horizontal grid lines with their labels on a y
// axis, and the small helpers the charts build on (escaping, printf into a string, round tick
// steps, writing the file). The memory charts (memory_timeline_svg.hpp, planning/plan_svg.hpp)
// put bytes on it; the line chart (line_chart_svg.hpp) any numbers.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace tessera {

// Escapes &, <, >, " for SVG text and attributes.
std::string svg_escape(std::string_view text);
// snprintf into a std::string (SVG fragments are short; at most 255 characters).
std::string svg_printf(const char* format, auto... args) {
  char buf[256];
  std::snprintf(buf, sizeof buf, format, args...);
  return buf;
}
// A round step (1, 2 or 5 x 10^k, k >= 0) giving at most about `ticks` ticks up to `max_value`.
std::int64_t svg_tick_step(std::int64_t max_value, int ticks);
// A round step (1, 2 or 5 x 10^k, any k) giving at most about `ticks` ticks over `span` (> 0).
double svg_value_tick_step(double span, int ticks);

// A generous estimate of the width in pixels of `text` in the charts' sans-serif font at `font_size`
// (bold: wider), so that what is laid out by it is not clipped.
double svg_text_width(std::string_view text, double font_size, bool bold = false);

// One horizontal grid line of the frame: its y in pixels and its label.
struct SvgGridLine {
  double y = 0;
  std::string label;
};

// The chart's opening: <svg> header of width x height, white background, `title` at the top left
// (from x = left; the picture is made wider when the title would not fit in `width`), and the grid
// lines across [left, left + plot_w] labelled left of `left` (class "y-tick").
std::string svg_frame_open(double width, double height, double left, double plot_w, const std::string& title,
                           const std::vector<SvgGridLine>& grid);

// Writes `text` to `path`; throws std::runtime_error naming the path when it cannot.
void write_text_file(const std::string& path, const std::string& text);

}  // namespace tessera
