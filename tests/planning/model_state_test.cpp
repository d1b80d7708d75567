// Model-state figures: the closed form equals the ZeRO paper's formulas (mixed-precision Adam
// 2Ψ + 2Ψ + 12Ψ per replica; stage 1: 4Ψ + 12Ψ/N; stage 2: 2Ψ + 14Ψ/N; stage 3: 16Ψ/N) and its
// worked examples, the planner (plan_memory) reports the same bytes, a GPT's per-unit parameter
// counts are the real modules' counts, and its padded per-unit state is the formula applied unit by
// unit.
#include "tessera/planning/model_state.hpp"

#include <gtest/gtest.h>

#include <map>

#include "tessera/planning/memory_plan.hpp"

namespace tessera {
namespace {

constexpr std::int64_t kGB = 1000000000;

MixedPrecision precision(DType param, DType reduce = DType::kF32) {
  MixedPrecision p;
  p.param_dtype = param;
  p.reduce_dtype = reduce;
  return p;
}

std::string stage_name(int st, int n) { return "stage " + std::to_string(st) + ", N = " + std::to_string(n); }

TEST(ModelState, MixedPrecisionAdamMatchesTheZeroPaper) {
  // Ψ divisible by every N used, so Ψ/N is exact.
  const std::int64_t psi = 7'500'000'000;
  const MixedPrecision mp = precision(DType::kF16);
  for (int n : {1, 4, 64}) {
    const std::int64_t expected[4] = {2 * psi + 2 * psi + 12 * psi, 4 * psi + 12 * psi / n, 2 * psi + 14 * psi / n,
                                      16 * psi / n};
    for (int st = 0; st <= 3; ++st) {
      const ModelStateBytes b = model_state_bytes(psi, mp, DType::kF16, parse_zero_stage(st), n);
      EXPECT_EQ(b.total(), expected[st]) << stage_name(st, n) << ": expected " << expected[st] << " bytes";
    }
  }
  // The paper's Figure 1: Ψ = 7.5B, N = 64: 120 GB, 31.4 GB, 16.6 GB, 1.88 GB per device.
  auto per_device = [&](int st) { return model_state_bytes(psi, mp, DType::kF16, parse_zero_stage(st), 64).total(); };
  EXPECT_EQ(per_device(0), 120 * kGB);
  EXPECT_EQ(per_device(1), 31'406'250'000);
  EXPECT_EQ(per_device(2), 16'640'625'000);
  EXPECT_EQ(per_device(3), 1'875'000'000);
  EXPECT_EQ(model_state_formula(mp, DType::kF16, ZeroStage::kStage2), "2Ψ + 2Ψ/N + 12Ψ/N");
}

TEST(ModelState, TesseraPlanReproducesFigure1AndRunsTheEngineForF32Gradients) {
  // What tessera_plan --params 7.5B --ranks 64 --param-dtype f16 [--grad-dtype f16] computes.
  PlanConfig c;
  c.model = model_from_parameter_count(7'500'000'000);
  c.ranks = 64;
  c.precision = precision(DType::kF16);
  c.grad_dtype = DType::kF16;
  const std::int64_t figure1[4] = {120 * kGB, 31'406'250'000, 16'640'625'000, 1'875'000'000};
  for (int st = 0; st <= 3; ++st) {
    c.stage = parse_zero_stage(st);
    c.grad_dtype = DType::kF16;
    const MemoryPlan paper = plan_memory(c);
    EXPECT_TRUE(paper.model_state_by_arithmetic) << "stage " << st;
    EXPECT_EQ(paper.before_step.current_total, figure1[st]) << "stage " << st;
    // f32 gradients are what the engine keeps: planned by running it on the meta device, and
    // equal to the closed form with g = 4.
    c.grad_dtype = DType::kF32;
    const MemoryPlan engine = plan_memory(c);
    EXPECT_FALSE(engine.model_state_by_arithmetic) << "stage " << st;
    EXPECT_EQ(engine.before_step.current_total,
              model_state_bytes(7'500'000'000, c.precision, DType::kF32, c.stage, 64).total())
        << "stage " << st;
  }
}

TEST(ModelState, Fp32AdamWorkedExamples) {
  const MixedPrecision fp32 = precision(DType::kF32);
  // 7B parameters in fp32 with Adam: 28 GB parameters, 28 GB gradients, 56 GB optimizer state.
  const ModelStateBytes replica = model_state_bytes(7 * kGB, fp32, DType::kF32, ZeroStage::kStage0, 8);
  EXPECT_EQ(replica.parameters, 28 * kGB);
  EXPECT_EQ(replica.gradients, 28 * kGB);
  EXPECT_EQ(replica.optimizer_state, 56 * kGB);
  EXPECT_EQ(replica.total(), 112 * kGB);
  // ... and 14 GB per rank fully sharded over 8 ranks.
  EXPECT_EQ(model_state_bytes(7 * kGB, fp32, DType::kF32, ZeroStage::kStage3, 8).total(), 14 * kGB);
  // A 3B model's fp32 parameters are 12 GB.
  EXPECT_EQ(model_state_bytes(3 * kGB, fp32, DType::kF32, ZeroStage::kStage0, 1).parameters, 12 * kGB);
  EXPECT_EQ(model_state_formula(fp32, DType::kF32, ZeroStage::kStage0), "4Ψ + 4Ψ + 8Ψ");
}

TEST(ModelState, TesseraAccumulatesGradientsInF32) {
  // bf16 parameters, f32 gradients (what the engine does): 2Ψ + 4Ψ + 12Ψ at stage 0, 18Ψ/N at stage 3.
  const std::int64_t psi = 1'000'000'000;
  const MixedPrecision bf16 = precision(DType::kBF16, DType::kBF16);
  EXPECT_EQ(model_state_bytes(psi, bf16, DType::kF32, ZeroStage::kStage0, 8).total(), 18 * psi);
  EXPECT_EQ(model_state_bytes(psi, bf16, DType::kF32, ZeroStage::kStage1, 8).total(), 6 * psi + 12 * psi / 8);
  EXPECT_EQ(model_state_bytes(psi, bf16, DType::kF32, ZeroStage::kStage2, 8).total(), 2 * psi + 16 * psi / 8);
  EXPECT_EQ(model_state_bytes(psi, bf16, DType::kF32, ZeroStage::kStage3, 8).total(), 18 * psi / 8);
  // A shard is whole elements: Ψ = 10 on 4 ranks shards 3 elements each.
  EXPECT_EQ(model_state_bytes(10, precision(DType::kF32), DType::kF32, ZeroStage::kStage3, 4).parameters, 12);
}

TEST(ModelState, PlannerReportsTheFormulaForARawParameterCount) {
  PlanConfig c;
  c.model = model_from_parameter_count(parse_count("7B", "--params"));
  c.ranks = 8;
  for (int st = 0; st <= 3; ++st) {
    c.stage = parse_zero_stage(st);
    const MemoryPlan plan = plan_memory(c);
    const ModelStateBytes b = model_state_bytes(7 * kGB, c.precision, DType::kF32, c.stage, 8);
    EXPECT_FALSE(plan.has_step);
    EXPECT_EQ(plan.before_step.current_of(MemoryCategory::kParameters), b.parameters) << "stage " << st;
    EXPECT_EQ(plan.before_step.current_of(MemoryCategory::kGradients), b.gradients) << "stage " << st;
    EXPECT_EQ(plan.before_step.current_of(MemoryCategory::kOptimizerState), b.optimizer_state) << "stage " << st;
    EXPECT_EQ(plan.before_step.current_total, b.total()) << "stage " << st;
  }
  c.stage = ZeroStage::kStage3;
  EXPECT_EQ(plan_memory(c).peak_total(), 14 * kGB);
  // Offloaded optimizer state leaves the device and is counted where it went. In host memory the
  // f32 parameters stay on the device, so the optimizer side keeps its own f32 master beside m and
  // v: 12 bytes per parameter of the shard, 7B / 8 x 12 = 10.5 GB off the device, the 3.5 GB
  // parameter shard on it.
  c.offload = parse_offload("optimizer:cpu");
  const MemoryPlan off = plan_memory(c);
  EXPECT_EQ(off.before_step.current_of(MemoryCategory::kOptimizerState), 0);
  EXPECT_EQ(off.host.current_of(MemoryCategory::kOptimizerState), 21 * kGB / 2);
  EXPECT_EQ(off.peak_total(), 7 * kGB);
  // A GPU (the plan's default device) updates it on the host through a pinned copy of the gradient
  // shard (4 bytes per parameter of the shard; the updated parameters return through its bytes).
  EXPECT_EQ(off.host.current_of(MemoryCategory::kGradients), 7 * kGB / 2);
  EXPECT_EQ(off.host.current_of(MemoryCategory::kParameters), 0);
  c.host_is_device = true;  // the CPU device updates host memory in place: no copies
  EXPECT_EQ(plan_memory(c).host.current_total, 21 * kGB / 2);
  // On NVMe (the CPU device), m and v stream past the f32 parameters, which stay the master: 8 bytes per parameter
  // in the files (each tensor's end padded to a 4 KiB page).
  c.offload = parse_offload("optimizer:nvme");
  const MemoryPlan nvme = plan_memory(c);
  EXPECT_EQ(nvme.before_step.current_of(MemoryCategory::kOptimizerState), 0);
  EXPECT_GE(nvme.nvme.current_of(MemoryCategory::kOptimizerState), 7 * kGB);
  EXPECT_LT(nvme.nvme.current_of(MemoryCategory::kOptimizerState), 7 * kGB + 2 * 4096);
  EXPECT_EQ(nvme.peak_total(), 7 * kGB);
  // On a GPU the host updates the files' state, so the f32 master goes there too: 12 bytes.
  c.host_is_device = false;
  const MemoryPlan gpu = plan_memory(c);
  EXPECT_GE(gpu.nvme.current_of(MemoryCategory::kOptimizerState), 21 * kGB / 2);
  EXPECT_LT(gpu.nvme.current_of(MemoryCategory::kOptimizerState), 21 * kGB / 2 + 3 * 4096);
}

TEST(ModelState, GptUnitSizesAreTheModulesParameterCounts) {
  for (const std::string name : {"tiny", "small", "gpt2-124m"}) {
    const GptConfig config = *model_preset(name).gpt;
    Gpt model(config);
    std::map<std::string, std::int64_t> by_unit;  // first name segment(s): embed, h.<i>, ln_f
    for (const NamedParameter& np : model.named_parameters()) {
      std::string unit = np.name.substr(0, np.name.find('.'));
      if (unit == "h") unit = np.name.substr(0, np.name.find('.', 2));
      by_unit[unit] += np.parameter->numel();
    }
    const auto units = gpt_unit_sizes(config);
    ASSERT_EQ(units.size(), by_unit.size()) << name;
    for (const UnitSize& u : units) EXPECT_EQ(u.numel, by_unit[u.name]) << name << " unit " << u.name;
    EXPECT_EQ(model_preset(name).parameter_count(), model.parameter_count()) << name;
  }
  // GPT-2 small (tied head, 1024 positions): 124,439,808 parameters.
  EXPECT_EQ(model_preset("gpt2-124m").parameter_count(), 124'439'808);
}

TEST(ModelState, PaddedGptStateIsTheFormulaPerUnit) {
  for (int n : {1, 3, 8}) {
    for (int st = 0; st <= 3; ++st) {
      PlanConfig c;
      c.model = model_preset("tiny");
      c.precision = precision(DType::kBF16, DType::kBF16);
      c.ranks = n;
      c.stage = parse_zero_stage(st);
      const MemoryPlan plan = plan_memory(c);
      ModelStateBytes sum;
      // bf16 parameters: the norms' are units of their own, kept in f32.
      for (const UnitSize& u : gpt_unit_sizes(*c.model.gpt, true)) {
        const MixedPrecision unit_precision = u.f32 ? precision(DType::kF32, DType::kBF16) : c.precision;
        const ModelStateBytes b = model_state_bytes(u.numel, unit_precision, DType::kF32, c.stage, n);
        // The engine pads each unit to a multiple of N, so a stage-0 buffer is padded too.
        const std::int64_t padded = (u.numel + n - 1) / n * n;
        const ModelStateBytes full = model_state_bytes(padded, unit_precision, DType::kF32, c.stage, n);
        sum.parameters += st >= 3 ? b.parameters : full.parameters;
        sum.gradients += st >= 2 ? b.gradients : full.gradients;
        sum.optimizer_state += st >= 1 ? b.optimizer_state : full.optimizer_state;
      }
      const std::string where = stage_name(st, n);
      EXPECT_EQ(plan.before_step.current_of(MemoryCategory::kParameters), sum.parameters) << where;
      EXPECT_EQ(plan.before_step.current_of(MemoryCategory::kGradients), sum.gradients) << where;
      EXPECT_EQ(plan.before_step.current_of(MemoryCategory::kOptimizerState), sum.optimizer_state) << where;
    }
  }
}

TEST(ModelState, ParsesCountsAndSizes) {
  EXPECT_EQ(parse_count("7B", "--params"), 7 * kGB);
  EXPECT_EQ(parse_count("124M", "--params"), 124'000'000);
  EXPECT_EQ(parse_count("1.5e9", "--params"), 1'500'000'000);
  EXPECT_EQ(parse_bytes("80GB", "--device-memory"), 80 * kGB);
  EXPECT_EQ(parse_bytes("24GiB", "--device-memory"), 24LL << 30);
  EXPECT_EQ(parse_bytes("512 MiB", "--device-memory"), 512LL << 20);
  EXPECT_THROW(parse_bytes("80 parsecs", "--device-memory"), std::invalid_argument);
  EXPECT_THROW(parse_count("seven", "--params"), std::invalid_argument);
  EXPECT_THROW(model_preset("gpt5"), std::invalid_argument);
}

}  // namespace
}  // namespace tessera
