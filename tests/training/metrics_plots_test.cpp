// The plots of a metrics file: well-formed SVG (read by an XML parser), one polyline per series
// with one point per record — training and validation loss in FILE.loss.svg, tokens/s in
// FILE.throughput.svg — beside the metrics file; a circle on every point; a labelled marker at each
// step the file records resumes from (restarts from one step counted, with the steps they redid);
// tokens/s on an axis from zero, the loss on one fitted to its values.
#include "tessera/training/metrics_plots.hpp"

#include <gtest/gtest.h>

#include "tessera/training/metrics_log.hpp"
#include "tests/support/scratch_dir.hpp"
#include "tests/support/svg_check.hpp"

namespace tessera {
namespace {

TEST(MetricsPlots, NamesBesideTheFile) {
  EXPECT_EQ(metrics_plot_files("run/metrics.jsonl").loss, "run/metrics.loss.svg");
  EXPECT_EQ(metrics_plot_files("run/metrics.jsonl").throughput, "run/metrics.throughput.svg");
  EXPECT_EQ(metrics_plot_files("metrics").loss, "metrics.loss.svg");
}

TEST(MetricsPlots, OneSeriesPerQuantityWithOnePointPerRecord) {
  testing::ScratchDir dir("metrics_plots");
  const std::string path = (dir / "run.jsonl").string();
  {
    MetricsLog log(path, std::nullopt);
    for (int s = 1; s <= 7; ++s) {
      TrainRecord r;
      r.step = s;
      r.loss = 2.0f + 4.0f / static_cast<float>(s);
      r.tokens_per_s = 1000.0 + s;
      log.append(r);
      if (s % 3 == 0) log.append(ValidationRecord{s, 2.0f + 3.0f / static_cast<float>(s), 0.0});
    }
  }
  {
    MetricsLog log(path, 7);
    log.append(ResumeRecord{7, 2, 3, 16, 0.0});
    TrainRecord r;
    r.step = 8;
    r.loss = 2.5f;
    r.tokens_per_s = 1010.0;
    log.append(r);
  }
  {
    MetricsLog log(path, 7);  // restarted from step 7 again, after step 8: one step trained again
    log.append(ResumeRecord{7, 4, 3, 16, 0.0, log.last_step_dropped() - 7});
    TrainRecord r;
    r.step = 8;
    r.loss = 2.5f;
    r.tokens_per_s = 1010.0;
    log.append(r);
  }
  const MetricsPlotFiles files = write_metrics_plots(path);
  EXPECT_EQ(files.loss, (dir / "run.loss.svg").string());
  const auto loss = testing::read_svg_series(files.loss);
  if (!loss) GTEST_SKIP() << "python3 is not installed: the SVG cannot be parsed here (scripts/setup installs it)";
  ASSERT_TRUE(loss->parsed) << files.loss << ": " << loss->error;
  EXPECT_EQ(loss->polylines, 2);
  EXPECT_EQ(loss->points, (std::map<std::string, int>{{"training_loss", 8}, {"validation_loss", 2}}));
  EXPECT_EQ(loss->circles, loss->points) << "a circle on every point";
  const std::vector<std::string> marker{"resumed at step 7 (2 times): 4 ranks, ZeRO-3, global batch 16; 1 step redone"};
  EXPECT_EQ(loss->markers, marker);
  ASSERT_FALSE(loss->y_ticks.empty());
  EXPECT_GT(loss->y_ticks.front(), 0.0) << "the loss axis fits its values (2.5 to 6)";
  const auto throughput = testing::read_svg_series(files.throughput);
  ASSERT_TRUE(throughput && throughput->parsed) << files.throughput;
  EXPECT_EQ(throughput->points, (std::map<std::string, int>{{"tokens/s", 8}}));
  EXPECT_EQ(throughput->circles, throughput->points);
  EXPECT_EQ(throughput->markers, marker);
  ASSERT_FALSE(throughput->y_ticks.empty());
  EXPECT_EQ(throughput->y_ticks.front(), 0.0) << "tokens/s from zero";
}

TEST(MetricsPlots, AMissingFileIsNamed) {
  try {
    write_metrics_plots("/nonexistent_dir/run.jsonl");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent_dir/run.jsonl"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera
