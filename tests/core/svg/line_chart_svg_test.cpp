// The line chart: one polyline per series with one point per finite value, inside the plot area,
// larger values higher up; titles escaped; mismatched series refused; round ticks on the frame.
#include "tessera/core/svg/line_chart_svg.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <sstream>

#include "tessera/core/svg/svg_frame.hpp"

namespace tessera {
namespace {

// The points of the n-th polyline.
std::vector<std::pair<double, double>> points(const std::string& svg, int n) {
  const std::regex polyline(R"re(<polyline[^>]* points="([^"]*)")re");
  auto it = std::sregex_iterator(svg.begin(), svg.end(), polyline);
  for (int i = 0; i < n && it != std::sregex_iterator(); ++i) ++it;
  std::vector<std::pair<double, double>> out;
  if (it == std::sregex_iterator()) return out;
  std::istringstream in((*it)[1].str());
  for (std::string pair; in >> pair;) {
    const auto comma = pair.find(',');
    out.emplace_back(std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1)));
  }
  return out;
}

TEST(LineChartSvg, OnePolylinePerSeriesAndOnePointPerValue) {
  LineChart chart{"loss <run & co>", "step", "loss", {}, true};
  chart.series.push_back({"train", "#4e79a7", {1, 2, 3, 4}, {4.0, 3.0, 2.5, 2.0}});
  chart.series.push_back({"val", "#e15759", {2, 4}, {3.5, std::nan("")}});
  chart.series.push_back({"none", "#000000", {}, {}});
  const std::string svg = line_chart_svg(chart);
  EXPECT_NE(svg.find("loss &lt;run &amp; co&gt;"), std::string::npos) << "the title is escaped";
  const auto train = points(svg, 0), val = points(svg, 1);
  ASSERT_EQ(train.size(), 4u) << svg;
  ASSERT_EQ(val.size(), 1u) << "the NaN is left out";
  EXPECT_TRUE(points(svg, 2).empty()) << "an empty series draws no polyline";
  for (std::size_t i = 1; i < train.size(); ++i) {
    EXPECT_GT(train[i].first, train[i - 1].first) << "x grows with the step";
    EXPECT_GT(train[i].second, train[i - 1].second) << "a smaller loss is lower (larger y in SVG)";
  }
  EXPECT_NE(svg.find(">none</text>"), std::string::npos) << "every series is in the legend";
}

TEST(LineChartSvg, RefusesSeriesOfDifferentLengths) {
  LineChart chart{"t", "x", "y", {{"bad", "#000", {1, 2}, {1}}}};
  EXPECT_THROW(line_chart_svg(chart), std::invalid_argument);
}

TEST(SvgFrame, RoundTickSteps) {
  EXPECT_DOUBLE_EQ(svg_value_tick_step(1.0, 5), 0.2);
  EXPECT_DOUBLE_EQ(svg_value_tick_step(0.014, 6), 0.005);
  EXPECT_DOUBLE_EQ(svg_value_tick_step(7000.0, 8), 1000.0);
  EXPECT_EQ(svg_tick_step(std::int64_t{950}, 5), 200);
}

}  // namespace
}  // namespace tessera
