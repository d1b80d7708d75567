// What the planner shows: the per-rank table (fit verdict, offload note, ZeRO formula), the stacked
// bar chart SVG (one bar per plan, a complete document), and the tessera_plan program end to end —
// exit status 0 when the plan fits, 2 when it does not, 1 with a message naming the option on bad
// input, and the --svg file. The program is found through TESSERA_BIN_DIR (set by ctest); those
// tests skip when it is unset.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tessera/planning/plan_report.hpp"
#include "tessera/planning/plan_svg.hpp"
#include "tests/support/svg_check.hpp"

namespace tessera {
namespace {

namespace fs = std::filesystem;

PlanConfig gpt2(int stage, std::int64_t device_memory) {
  PlanConfig c;
  c.model = model_preset("gpt2-124m");
  c.ranks = 8;
  c.stage = parse_zero_stage(stage);
  c.micro_batch = 4;
  c.device_memory = device_memory;
  return c;
}

// A 7B GPT at ZeRO-1 on one 80 GB GPU: its model state alone (2 + 4 + 12 bytes per parameter) does
// not fit; with the optimizer state in host memory (12 bytes per parameter there, plus the 4 of the
// gradient copy the host updates from) it fits the GPU and 128 GiB of host memory — and not 64 GiB.
TEST(PlanOutput, A7BGptFitsOneGpuWithItsOptimizerStateInHostMemory) {
  PlanConfig c;
  c.model = model_preset("llama-7b-shaped");
  c.stage = ZeroStage::kStage1;
  c.precision = {.param_dtype = DType::kBF16, .reduce_dtype = DType::kBF16};
  c.recompute = parse_recompute_policy("blocks");
  c.device_memory = 80'000'000'000;
  c.host_memory = std::int64_t{128} << 30;
  const MemoryPlan resident = plan_memory(c);
  EXPECT_FALSE(resident.fits());
  EXPECT_NE(format_plan(resident).find("fits: NO"), std::string::npos) << format_plan(resident);

  c.offload.optimizer = OffloadTarget::kCpu;
  const MemoryPlan offloaded = plan_memory(c);
  const std::string text = format_plan(offloaded);
  EXPECT_TRUE(offloaded.device_fits()) << text;
  EXPECT_TRUE(offloaded.host_fits()) << text;
  EXPECT_EQ(offloaded.host.peak_total - resident.host.peak_total, 16 * resident.parameter_count) << text;
  EXPECT_NE(text.find("fits: yes"), std::string::npos) << text;
  EXPECT_NE(text.find("host fits: yes"), std::string::npos) << text;
  EXPECT_NE(text.find("through a pinned copy of the gradients"), std::string::npos) << text;

  c.host_memory = std::int64_t{64} << 30;
  const MemoryPlan small_host = plan_memory(c);
  EXPECT_TRUE(small_host.device_fits());
  EXPECT_FALSE(small_host.fits());
  EXPECT_NE(format_plan(small_host).find("host fits: NO"), std::string::npos) << format_plan(small_host);
}

TEST(PlanOutput, TableSaysWhetherItFitsAndByHowMuch) {
  const MemoryPlan fits = plan_memory(gpt2(3, 80'000'000'000));
  const std::string yes = format_plan(fits);
  EXPECT_NE(yes.find("fits: yes"), std::string::npos) << yes;
  EXPECT_NE(yes.find("4Ψ/N + 4Ψ/N + 8Ψ/N"), std::string::npos) << yes;
  for (MemoryCategory c : kAllMemoryCategories) EXPECT_NE(yes.find(memory_category_name(c)), std::string::npos) << yes;
  // The rule of thumb beside the exact peak, with its terms from the same plan.
  EXPECT_NE(yes.find("rule of thumb: model " + format_decimal_bytes(fits.peak(MemoryCategory::kParameters))),
            std::string::npos)
      << yes;
  EXPECT_NE(yes.find("the exact simultaneous peak is " + format_decimal_bytes(fits.peak_total())), std::string::npos)
      << yes;
  EXPECT_NE(yes.find("leaves out communication buffers and workspace"), std::string::npos) << yes;
  const MemoryPlan tight = plan_memory(gpt2(3, 1'000'000'000));
  EXPECT_FALSE(tight.fits());
  EXPECT_NE(format_plan(tight).find("fits: NO"), std::string::npos) << format_plan(tight);
  PlanConfig off = gpt2(3, 0);
  off.offload = parse_offload("optimizer,params:nvme");
  const std::string offloaded = format_plan(plan_memory(off));
  EXPECT_NE(offloaded.find("optimizer state"), std::string::npos) << offloaded;
  EXPECT_NE(offloaded.find("in host memory"), std::string::npos) << offloaded;
  EXPECT_NE(offloaded.find("parameter shard 62.26 MB in NVMe files"), std::string::npos) << offloaded;
  EXPECT_NE(offloaded.find("staging buffers"), std::string::npos) << offloaded;
  // The separate f32 master of offloaded optimizer state is in the formula (12Ψ/N), not "padding".
  EXPECT_NE(offloaded.find("4Ψ/N + 4Ψ/N + 12Ψ/N"), std::string::npos) << offloaded;
  EXPECT_NE(offloaded.find("adds 43.39 KB"), std::string::npos) << offloaded;  // unit padding + page ends
}

TEST(PlanOutput, ActivationBreakdownGroupsEqualBlocks) {
  PlanConfig c = gpt2(0, 0);
  c.recompute = parse_recompute_policy("every:2");
  const std::string text = format_activation_breakdown(plan_memory(c));
  // Blocks 0, 2, ... keep only their input; 1, 3, ... keep everything: no two neighbours group.
  EXPECT_NE(text.find("h.0 "), std::string::npos) << text;
  EXPECT_NE(text.find("h.1 "), std::string::npos) << text;
  c.recompute = RecomputePolicy::none();
  EXPECT_NE(format_activation_breakdown(plan_memory(c)).find("h.0 .. h.11"), std::string::npos);
}

TEST(PlanOutput, BarChartHasOneBarPerPlan) {
  std::vector<PlanBar> bars;
  for (int st = 0; st <= 3; ++st) bars.push_back({"ZeRO-" + std::to_string(st), plan_memory(gpt2(st, 4'000'000'000))});
  const std::string svg = plan_bar_chart_svg(bars, "gpt2 & friends");
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  for (const PlanBar& b : bars) EXPECT_NE(svg.find(">" + b.label + "<"), std::string::npos) << b.label;
  EXPECT_NE(svg.find("gpt2 &amp; friends"), std::string::npos);
  EXPECT_NE(svg.find("device memory available"), std::string::npos);
  EXPECT_NE(svg.find("does not fit"), std::string::npos) << "ZeRO-0 of gpt2-124m does not fit in 4 GB";
  EXPECT_THROW(plan_bar_chart_svg({}, "none"), std::invalid_argument);
}

class TesseraPlanProgram : public ::testing::Test {
 protected:
  struct Result {
    int exit_code = -1;
    std::string out, err;
  };
  void SetUp() override {
    const char* bin_dir = std::getenv("TESSERA_BIN_DIR");
    if (bin_dir == nullptr) GTEST_SKIP() << "TESSERA_BIN_DIR is not set (run through ctest)";
    program_ = fs::path(bin_dir) / "tessera_plan";
    ASSERT_TRUE(fs::exists(program_)) << program_ << " is missing: build the tessera_plan target";
    std::string tmpl = (fs::temp_directory_path() / "tessera_plan_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  static std::string slurp(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }
  Result run(const std::string& args) const {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string command =
        "'" + program_.string() + "' " + args + " > '" + out.string() + "' 2> '" + err.string() + "'";
    const int status = std::system(command.c_str());
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  }

  fs::path program_, dir_;
};

TEST_F(TesseraPlanProgram, ExitStatusTellsWhetherItFits) {
  const Result fits = run("--model gpt2-124m --zero 3 --ranks 8 --micro-batch 4 --device-memory 24GB");
  EXPECT_EQ(fits.exit_code, 0) << fits.out << fits.err;
  EXPECT_NE(fits.out.find("fits: yes"), std::string::npos) << fits.out;
  EXPECT_NE(fits.out.find("ZeRO-3"), std::string::npos) << "the stage table";
  const Result no = run("--model gpt2-124m --zero 0 --ranks 8 --micro-batch 4 --device-memory 2GB");
  EXPECT_EQ(no.exit_code, 2) << no.out << no.err;
  EXPECT_NE(no.out.find("fits: NO"), std::string::npos) << no.out;
  // f32 parameters double as the master: 4 + 4 + 8 bytes per parameter, the ZeRO paper's 16.
  const Result paper = run("--params 7B --ranks 8 --param-dtype f32");
  EXPECT_EQ(paper.exit_code, 0) << paper.err;
  EXPECT_NE(paper.out.find("112.00 GB"), std::string::npos) << paper.out;
  EXPECT_NE(paper.out.find("14.00 GB"), std::string::npos) << "ZeRO-3 column: " << paper.out;
  // The default for a GPU: bf16 parameters beside an f32 master, f32 gradients: 2 + 4 + 12.
  const Result gpu = run("--params 7B --ranks 8");
  EXPECT_NE(gpu.out.find("126.00 GB"), std::string::npos) << gpu.out;
  EXPECT_NE(gpu.out.find("compute bf16, param bf16"), std::string::npos) << gpu.out;
}

TEST_F(TesseraPlanProgram, BadOptionsNameTheOption) {
  const Result zero = run("--model small --zero 5");
  EXPECT_EQ(zero.exit_code, 1);
  EXPECT_NE(zero.err.find("--zero 5: the ZeRO stage must be 0, 1, 2 or 3"), std::string::npos) << zero.err;
  const Result offload = run("--model small --zero 1 --offload params");
  EXPECT_EQ(offload.exit_code, 1);
  EXPECT_NE(offload.err.find("parameter offload needs ZeRO stage 3"), std::string::npos) << offload.err;
  const Result recommend = run("--model small --recommend");
  EXPECT_EQ(recommend.exit_code, 1);
  EXPECT_NE(recommend.err.find("--device-memory (none): a recommendation needs the memory per rank"), std::string::npos)
      << recommend.err;
}

TEST_F(TesseraPlanProgram, RecommendWritesTheChart) {
  const fs::path svg = dir_ / "plan.svg";
  const Result r =
      run("--model small --ranks 2 --device-memory 300MB --global-batch 16 --recommend --svg '" + svg.string() + "'");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("recommended:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("accumulation"), std::string::npos) << r.out;
  // train_gpt beside tessera_plan by its real path, the token file by its absolute path (GPU plan: no --device).
  const std::string command = "command: mpirun -np 2 " + fs::canonical(program_).parent_path().string() +
                              "/train_gpt --data " + (fs::current_path() / "data/corpus.bin").string() +
                              " --layers 6 --dim 384";
  EXPECT_NE(r.out.find(command), std::string::npos) << command << "\n" << r.out;
  ASSERT_TRUE(fs::exists(svg)) << r.out;
  const std::string chart = slurp(svg);
  EXPECT_NE(chart.find(">chosen<"), std::string::npos);
  EXPECT_NE(chart.find(">ZeRO-3<"), std::string::npos);
  // The title (the model's description and what is drawn) fits in the picture, read by an XML parser.
  const auto parsed = testing::read_svg_series(svg.string());
  if (!parsed) GTEST_SKIP() << "python3 is not installed: the SVG cannot be parsed here (scripts/setup installs it)";
  ASSERT_TRUE(parsed->parsed) << parsed->error;
  EXPECT_NE(parsed->title.find("the recommendation"), std::string::npos) << parsed->title;
  // Bold sans-serif text of ordinary words averages about 0.6 em a character.
  EXPECT_GE(parsed->width, parsed->title_x + 0.6 * parsed->title_font_size * static_cast<double>(parsed->title.size()))
      << "the title is clipped at the right edge: " << parsed->title;
}

}  // namespace
}  // namespace tessera
