// The line chart: one polyline per series with one point per finite value, inside the plot area,
// larger values higher up; titles escaped; mismatched series refused; round ticks on the frame. Read
// by an XML parser: a circle on every point (a series of one value shows), vertical markers with their
// labels, a y axis from zero when asked (else fitted to the values), a long title inside the picture.
#include "tessera/core/svg/line_chart_svg.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <sstream>

#include "tessera/core/svg/svg_frame.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/svg_check.hpp"

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

// The chart written to a file and read back with an XML parser; nullopt without python3.
std::optional<testing::SvgSeries> parsed(const LineChart& chart) {
  testing::ScratchDir dir("line_chart_svg");
  const std::string path = (dir / "chart.svg").string();
  write_line_chart_svg(path, chart);
  return testing::read_svg_series(path);
}

TEST(LineChartSvg, ACirclePerPointAndMarkersWithTheirLabels) {
  LineChart chart{"loss", "step", "loss", {}, true};
  chart.series.push_back({"train", "#4e79a7", {1, 2, 3, 4}, {4.0, 3.0, std::nan(""), 2.0}});
  chart.series.push_back({"val", "#e15759", {4}, {3.5}});
  chart.markers.push_back({2, "resumed at step 2: 2 ranks, ZeRO-3, global batch 16"});
  chart.markers.push_back({4, "resumed at step 4: 1 rank, ZeRO-0, global batch 8"});
  const auto svg = parsed(chart);
  if (!svg) GTEST_SKIP() << "python3 is not installed: the SVG cannot be parsed here (scripts/setup installs it)";
  ASSERT_TRUE(svg->parsed) << svg->error;
  EXPECT_EQ(svg->circles, (std::map<std::string, int>{{"train", 3}, {"val", 1}}))
      << "one circle per finite point; the single validation value shows";
  EXPECT_EQ(svg->markers, (std::vector<std::string>{"resumed at step 2: 2 ranks, ZeRO-3, global batch 16",
                                                    "resumed at step 4: 1 rank, ZeRO-0, global batch 8"}));
}

TEST(LineChartSvg, TheYAxisStartsAtZeroWhenAskedAndFitsTheValuesOtherwise) {
  LineChart chart{"throughput", "step", "tokens/s", {{"tokens/s", "#59a14f", {1, 2, 3}, {9000, 9500, 10000}}}, true};
  const auto fitted = parsed(chart);
  if (!fitted) GTEST_SKIP() << "python3 is not installed: the SVG cannot be parsed here (scripts/setup installs it)";
  ASSERT_TRUE(fitted->parsed && !fitted->y_ticks.empty()) << fitted->error;
  EXPECT_GE(fitted->y_ticks.front(), 8000) << "fitted to 9000-10000";
  chart.y_from_zero = true;
  const auto from_zero = parsed(chart);
  ASSERT_TRUE(from_zero && from_zero->parsed && !from_zero->y_ticks.empty());
  EXPECT_EQ(from_zero->y_ticks.front(), 0.0);
  EXPECT_GE(from_zero->y_ticks.back(), 10000.0);
}

TEST(LineChartSvg, ALongTitleFitsInThePicture) {
  std::string title = "loss";
  while (title.size() < 150) title += ": a run with a long name";
  LineChart chart{title, "step", "loss", {{"s", "#000000", {1, 2}, {1, 2}}}, true};
  const auto svg = parsed(chart);
  if (!svg) GTEST_SKIP() << "python3 is not installed: the SVG cannot be parsed here (scripts/setup installs it)";
  ASSERT_TRUE(svg->parsed) << svg->error;
  EXPECT_EQ(svg->title, title);
  // Bold sans-serif text of ordinary words averages about 0.6 em a character.
  EXPECT_GE(svg->width, svg->title_x + 0.6 * svg->title_font_size * static_cast<double>(title.size()))
      << "the title is clipped at the right edge";
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
