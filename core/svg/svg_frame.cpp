// The shared SVG frame and helpers.
#include "tessera/core/svg/svg_frame.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

namespace tessera {

std::string svg_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
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

std::int64_t svg_tick_step(std::int64_t max_value, int ticks) {
  const std::int64_t target = std::max<std::int64_t>(1, max_value / std::max(1, ticks));
  std::int64_t power = 1;
  while (power * 10 <= target) power *= 10;
  for (std::int64_t m : {1, 2, 5, 10}) {
    if (power * m >= target) return power * m;
  }
  return power * 10;
}

double svg_value_tick_step(double span, int ticks) {
  const double target = span / std::max(1, ticks);
  if (!(target > 0) || !std::isfinite(target)) return 1.0;
  const double power = std::pow(10.0, std::floor(std::log10(target)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (power * m >= target * (1 - 1e-9)) return power * m;
  }
  return power * 10;
}

double svg_text_width(std::string_view text, double font_size, bool bold) {
  // Average advance of DejaVu Sans / Arial is 0.55-0.6 em (bold: 0.6-0.65); round up.
  std::size_t characters = 0;
  for (char c : text) characters += (static_cast<unsigned char>(c) & 0xc0) != 0x80;  // UTF-8 lead bytes
  return static_cast<double>(characters) * font_size * (bold ? 0.68 : 0.62);
}

std::string svg_frame_open(double width, double height, double left, double plot_w, const std::string& title,
                           const std::vector<SvgGridLine>& grid) {
  width = std::max(width, left + svg_text_width(title, 15, true) + 16);
  std::string svg = svg_printf(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      width, height);
  svg += svg_printf("<rect width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", width, height);
  svg += svg_printf("<text class=\"title\" x=\"%.0f\" y=\"24\" font-size=\"15\" font-weight=\"bold\">", left) + svg_escape(title) +
         "</text>\n";
  for (const SvgGridLine& g : grid) {
    svg += svg_printf("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n", left, g.y,
                      left + plot_w, g.y);
    svg += svg_printf("<text class=\"y-tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", left - 6, g.y + 4) + svg_escape(g.label) +
           "</text>\n";
  }
  return svg;
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path + ": check that its directory exists and is writable");
  out << text;
  if (!out) throw std::runtime_error("writing " + path + " failed");
}

}  // namespace tessera
