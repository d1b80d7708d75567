// MemoryProfiler on a bare MemoryTracker with hand-made allocations: samples hold the bytes at each
// phase end and the peak inside each phase (not the peak since the start), step peaks are the
// maxima over a step's phases, the leak check finds growth at the same phase of two steps and only
// there, the CSV has one row per sample with the header's columns, and the SVG chart is a complete
// document with one area per category and every phase named.
#include "tessera/runtime/memory_profiler.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "tessera/runtime/memory_timeline_svg.hpp"

namespace tessera {
namespace {

constexpr auto kAct = MemoryCategory::kActivations;
constexpr auto kParams = MemoryCategory::kParameters;

// One "step": a 100-byte transient inside forward, 40 bytes kept until backward; `leak` bytes of
// workspace are allocated in backward and never freed.
void fake_step(MemoryTracker& t, MemoryProfiler& p, std::int64_t step, std::size_t leak) {
  p.begin_step(step);
  t.on_allocate(kAct, 100);
  t.on_allocate(kAct, 40);
  t.on_free(kAct, 100);
  p.on_phase("forward");
  t.on_allocate(MemoryCategory::kWorkspace, leak);
  t.on_free(kAct, 40);
  p.on_phase("backward");
  p.on_phase("step");
}

TEST(MemoryProfiler, SamplesCurrentBytesAndThePeakInsideEachPhase) {
  MemoryTracker t;
  t.on_allocate(kParams, 1000);
  MemoryProfiler p(t);
  fake_step(t, p, 0, 0);
  const auto s = p.samples_of(0);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].phase, "begin");
  EXPECT_EQ(s[1].phase, "forward");
  EXPECT_EQ(s[1].index, 1);
  EXPECT_EQ(s[1].memory.current_of(kAct), 40) << "kept until backward";
  EXPECT_EQ(s[1].memory.peak_of(kAct), 140) << "the transient inside forward";
  EXPECT_EQ(s[1].memory.peak_total, 1140);
  EXPECT_EQ(s[2].memory.current_of(kAct), 0);
  EXPECT_EQ(s[2].memory.peak_of(kAct), 40) << "backward's peak starts from forward's end, not from 140";
  EXPECT_EQ(s[3].memory.current_total, 1000);
  const MemorySnapshot peaks = p.step_peaks(0);
  EXPECT_EQ(peaks.peak_of(kAct), 140);
  EXPECT_EQ(peaks.peak_of(kParams), 1000);
  EXPECT_EQ(peaks.peak_total, 1140);
  EXPECT_EQ(p.overall_peaks().peak_total, 1140);
  EXPECT_THROW(p.step_peaks(7), std::invalid_argument);
}

TEST(MemoryProfiler, LeakCheckFindsGrowthAtTheSamePhase) {
  MemoryTracker t;
  MemoryProfiler p(t);
  fake_step(t, p, 0, 0);
  fake_step(t, p, 1, 0);
  fake_step(t, p, 2, 64);
  EXPECT_TRUE(p.check_leaks(0, 1).empty()) << "two identical steps";
  const auto leaks = p.check_leaks(1, 2);
  // Backward and step of step 2 end with 64 more bytes; its begin and forward do not.
  ASSERT_EQ(leaks.size(), 2u);
  EXPECT_EQ(leaks[0].phase, "backward");
  EXPECT_EQ(leaks[0].growth(), 64);
  EXPECT_EQ(leaks[1].phase, "step");
  EXPECT_NE(leaks[0].message().find("workspace +64 B"), std::string::npos) << leaks[0].message();
  EXPECT_NE(leaks[0].message().find("at step 2 than at step 1"), std::string::npos) << leaks[0].message();
  EXPECT_TRUE(p.check_leaks(1, 2, 64).empty()) << "within the tolerance";
  // The next step starts from the leaked bytes: its begin already shows them against step 1.
  fake_step(t, p, 3, 0);
  EXPECT_EQ(p.check_leaks(1, 3).size(), 4u);
  EXPECT_EQ((std::vector<std::int64_t>{0, 1, 2, 3}), p.steps());
}

TEST(MemoryProfiler, CsvHasOneRowPerSampleWithEveryColumn) {
  MemoryTracker t;
  MemoryProfiler p(t);
  fake_step(t, p, 5, 8);
  std::ostringstream out;
  p.write_csv(out);
  std::istringstream in(out.str());
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header, memory_timeline_csv_header());
  const auto columns = [](const std::string& row) { return std::count(row.begin(), row.end(), ',') + 1; };
  EXPECT_EQ(columns(header), 3 + 2 * 7);
  int rows = 0;
  while (std::getline(in, line)) {
    EXPECT_EQ(columns(line), columns(header)) << line;
    ++rows;
  }
  EXPECT_EQ(rows, 4);
  EXPECT_NE(out.str().find("5,1,forward,0,0,0,40,0,0,40,0,0,0,140,0,0,140"), std::string::npos) << out.str();
}

TEST(MemoryProfiler, TimelineSvgIsACompleteChartOfOneStep) {
  MemoryTracker t;
  t.on_allocate(kParams, 1 << 20);
  MemoryProfiler p(t);
  fake_step(t, p, 0, 0);
  const std::string svg = memory_timeline_svg(p.samples_of(0), "step <0> & more");
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  std::size_t polygons = 0;
  for (std::size_t at = svg.find("<polygon"); at != std::string::npos; at = svg.find("<polygon", at + 1)) ++polygons;
  EXPECT_EQ(polygons, kMemoryCategoryCount) << "one stacked area per category";
  for (const char* phase : {">begin<", ">forward<", ">backward<", ">step<"}) {
    EXPECT_NE(svg.find(phase), std::string::npos) << "phase label " << phase;
  }
  EXPECT_NE(svg.find("step &lt;0&gt; &amp; more"), std::string::npos) << "the title is escaped";
  EXPECT_THROW(memory_timeline_svg({}, "empty"), std::invalid_argument);
  EXPECT_EQ(svg_tick_step(950, 5), 200);
  EXPECT_EQ(svg_tick_step(80'000'000'000, 6), 20'000'000'000);
  EXPECT_EQ(svg_bytes_label(1'500'000'000), "1.5 GB");
}

}  // namespace
}  // namespace tessera
