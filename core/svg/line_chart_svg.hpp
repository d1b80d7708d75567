// A line chart of numeric series on the shared SVG frame (svg_frame.hpp), readable in any browser:
// one <polyline> per series with one point per value and a circle on each point (a group of class
// "points" per series, so a series of one value shows), vertical markers with a label (class
// "marker": where a run resumed), a legend, round ticks on both axes. Used for the training metrics'
// plots (training/metrics_plots.hpp): loss and tokens/s over steps.
#pragma once

#include <string>
#include <vector>

namespace tessera {

struct LineSeries {
  std::string name;          // in the legend and the polyline's <title>
  std::string color;         // "#4e79a7"
  std::vector<double> x, y;  // the same length; non-finite values are left out of the line
};

// A vertical line across the plot at x, with a label beside it.
struct ChartMarker {
  double x = 0;
  std::string label;
};

struct LineChart {
  std::string title, x_label, y_label;
  std::vector<LineSeries> series;  // series with no points are listed in the legend only
  bool whole_x = false;            // x values are whole numbers (steps): ticks on whole numbers only
  bool y_from_zero = false;        // the y axis starts at 0 (quantities whose zero means something)
  std::vector<ChartMarker> markers{};
};

// Throws std::invalid_argument when a series' x and y differ in length.
std::string line_chart_svg(const LineChart& chart);
// Writes it to `path`; throws std::runtime_error naming the path when it cannot.
void write_line_chart_svg(const std::string& path, const LineChart& chart);

}  // namespace tessera
