// ShardedEngine with bf16 compute (MixedPrecision::compute_dtype): stages 0-3 bit-identical to each
// other as in f32 (every stage at accumulation 1, with block checkpointing too; stages with the same
// reduction schedule with accumulation), N ranks bit-identical to one process running the same rows
// as N micro-batches (the f32 wire sums the same bf16 gradients in the same order), within bf16's
// reach of the f32 run, and the gradients of a bf16 wire sent as they are (a bf16 reduce-scatter of
// the micro-batch's bf16 gradients, no f32 copy narrowed on the way).
// tessera-test-ranks: 2 4
// tessera-test-timeout: 300
#include <gtest/gtest.h>

#include <cmath>

#include "sharding_test_support.hpp"
#include "tessera/model/recompute/recompute_policy.hpp"
#include "tessera/sharding/full_parameters.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera::testing {
namespace {

constexpr int kSteps = 4;
constexpr std::int64_t kGlobal = 8;

MixedPrecision bf16_compute(DType wire = DType::kF32) {
  MixedPrecision p;
  p.compute_dtype = DType::kBF16;
  p.param_dtype = DType::kBF16;
  p.reduce_dtype = wire;
  return p;
}

struct Bf16Run {
  RunResult result;
  std::vector<DType> reduce_dtypes;        // every gradient collective's wire
  std::vector<DType> plain_reduce_dtypes;  // those of collectives on buffers already in the wire dtype
};

struct RunSpec {
  ZeroStage stage = ZeroStage::kStage0;
  std::int64_t accumulation = 1;
  MixedPrecision precision = bf16_compute();
  bool checkpoint_blocks = false;
  bool one_process = false;  // every rank runs the whole global batch alone, as `ranks` micro-batches
  float clip = kClip;
};

Bf16Run run(const RunSpec& spec) {
  auto device = make_cpu_device();
  RecordingCommunicator world(
      std::make_unique<MpiCommunicator>(spec.one_process ? MPI_COMM_SELF : MPI_COMM_WORLD));
  Gpt model(tiny_gpt());
  if (spec.checkpoint_blocks) apply_recompute(model, RecomputePolicy::by_type("TransformerBlock"));
  ShardingConfig config;
  config.stage = spec.stage;
  config.precision = spec.precision;
  config.optimizer.adamw = test_adamw();
  config.grad_clip = spec.clip;
  Bf16Run out;
  {
    ShardedEngine engine(model, *device, world, config, kSeed);
    Trainer trainer(engine);
    const std::int64_t ranks = world_size();
    const std::int64_t accumulation = spec.one_process ? ranks * spec.accumulation : spec.accumulation;
    const std::int64_t micro = kGlobal / ranks / spec.accumulation;
    const std::int64_t rank = spec.one_process ? 0 : world.rank();
    for (int s = 0; s < kSteps; ++s) {
      std::vector<MicroBatch> batches;
      for (std::int64_t a = 0; a < accumulation; ++a) {
        // One process: micro-batch a holds the rows rank a % ranks of accumulation step a / ranks reads.
        const std::int64_t step_a = spec.one_process ? a / ranks : a, r = spec.one_process ? a % ranks : rank;
        batches.push_back(global_rows(*device, tiny_gpt(), s, step_a * micro * ranks + r * micro, micro));
      }
      const StepResult r = trainer.train_step(batches, kLr);
      out.result.losses.push_back(r.loss);
      out.result.norms.push_back(r.grad_norm);
    }
    const auto full = gather_full_parameters(engine);
    for (const NamedParameter& np : model.named_parameters()) out.result.params.push_back(full.at(np.name));
  }
  out.reduce_dtypes = world.reduce_dtypes;
  out.plain_reduce_dtypes = world.plain_reduce_dtypes;
  return out;
}

TEST(ShardedEngineBf16, EveryStageIsBitIdenticalToStage0) {
  for (DType wire : {DType::kF32, DType::kBF16}) {
    RunSpec spec;
    spec.precision = bf16_compute(wire);
    const Bf16Run stage0 = run(spec);
    for (ZeroStage stage : {ZeroStage::kStage1, ZeroStage::kStage2, ZeroStage::kStage3}) {
      spec.stage = stage;
      expect_identical(run(spec).result, stage0.result,
                       std::string(dtype_name(wire)) + " wire, stage " + std::to_string(zero_stage_number(stage)));
    }
  }
}

TEST(ShardedEngineBf16, BlockCheckpointingChangesNoBit) {
  RunSpec spec;
  const Bf16Run plain = run(spec);
  spec.checkpoint_blocks = true;
  for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage3}) {
    spec.stage = stage;
    expect_identical(run(spec).result, plain.result,
                     "checkpointed blocks at stage " + std::to_string(zero_stage_number(stage)));
  }
}

// Stages 0-1 add each micro-batch's bf16 gradients into an f32 accumulator and reduce once; stages
// 2-3 reduce every micro-batch and add the reduced shard: within each pair the same sums.
TEST(ShardedEngineBf16, WithAccumulationStagesOfOneScheduleAgree) {
  RunSpec spec;
  spec.accumulation = 2;
  const Bf16Run stage0 = run(spec);
  spec.stage = ZeroStage::kStage1;
  expect_identical(run(spec).result, stage0.result, "accumulation 2, stage 1 vs 0");
  spec.stage = ZeroStage::kStage2;
  const Bf16Run stage2 = run(spec);
  spec.stage = ZeroStage::kStage3;
  expect_identical(run(spec).result, stage2.result, "accumulation 2, stage 3 vs 2");
  for (std::size_t s = 0; s < stage0.result.losses.size(); ++s) {
    EXPECT_NEAR(stage2.result.losses[s], stage0.result.losses[s], 1e-5 * stage0.result.losses[s]) << "step " << s;
  }
}

// With powers-of-two rank counts, a rank's micro-batch gradients are one process's scaled by a power
// of two, exactly, and the f32 wire sums them in the same order: the parameters come out the same
// bits (the gradient norm, summed shard by shard, may differ in its last bits: no clipping here).
TEST(ShardedEngineBf16, RanksMatchOneProcessRunningTheirRowsAsMicroBatches) {
  RunSpec spec;
  spec.clip = 0.0f;
  spec.one_process = true;
  const Bf16Run one = run(spec);
  spec.one_process = false;
  for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage3}) {
    spec.stage = stage;
    const Bf16Run ranks = run(spec);
    expect_identical(ranks.result, one.result, "stage " + std::to_string(zero_stage_number(stage)) + " vs one process",
                     false);
    for (std::size_t s = 0; s < one.result.losses.size(); ++s) {
      EXPECT_NEAR(ranks.result.losses[s], one.result.losses[s], 1e-6 * one.result.losses[s]) << "step " << s;
    }
  }
}

TEST(ShardedEngineBf16, StaysWithinBf16OfTheF32Run) {
  RunSpec f32;
  f32.precision = MixedPrecision{};
  const Bf16Run reference = run(f32);
  const Bf16Run bf16 = run(RunSpec{});
  for (std::size_t s = 0; s < reference.result.losses.size(); ++s) {
    EXPECT_NEAR(bf16.result.losses[s], reference.result.losses[s], 1e-2 * reference.result.losses[s]) << "step " << s;
  }
  double diff2 = 0.0, norm2 = 0.0;
  for (std::size_t p = 0; p < reference.result.params.size(); ++p) {
    for (std::size_t i = 0; i < reference.result.params[p].size(); ++i) {
      const double d = static_cast<double>(bf16.result.params[p][i]) - reference.result.params[p][i];
      diff2 += d * d;
      norm2 += static_cast<double>(reference.result.params[p][i]) * reference.result.params[p][i];
    }
  }
  EXPECT_LE(std::sqrt(diff2 / norm2), 2e-2) << "relative L2 distance of the final parameters, rank " << world_rank();
  EXPECT_GT(diff2, 0.0) << "bf16 compute changed nothing: is it running in f32?";
}

// The norms' gains and biases are kept in f32 beside bf16 compute: a unit of their own per unit
// ("h.0 (f32)"), stored and bound in f32, while every other parameter is bf16. An AdamW step of
// about the learning rate (1e-4 here) moves a gain of 1 in its f32 compute copy, where a bf16 copy
// (spacing 2^-8 below 1, 2^-7 above) would still read 1.
TEST(ShardedEngineBf16, NormParametersAreKeptInF32) {
  for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage3}) {
    const std::string where = "ZeRO-" + std::to_string(zero_stage_number(stage));
    auto device = make_cpu_device();
    MpiCommunicator world(MPI_COMM_WORLD);
    Gpt model(tiny_gpt());
    ShardingConfig config;
    config.stage = stage;
    config.precision = bf16_compute();
    config.optimizer.adamw = test_adamw();
    ShardedEngine engine(model, *device, world, config, kSeed);
    int f32_units = 0;
    for (const auto& unit : engine.units()) {
      bool any_kept = false, all_kept = true;
      for (const FlatEntry& e : unit->layout().entries()) {
        any_kept = any_kept || e.parameter->keep_f32;
        all_kept = all_kept && e.parameter->keep_f32;
      }
      EXPECT_EQ(any_kept, all_kept) << where << ": unit " << unit->name() << " mixes norm and other parameters";
      EXPECT_EQ(unit->name().ends_with(" (f32)"), all_kept) << where << ": unit " << unit->name();
      EXPECT_EQ(unit->stored_params().dtype(), all_kept ? DType::kF32 : DType::kBF16) << where << ": " << unit->name();
      f32_units += all_kept ? 1 : 0;
    }
    EXPECT_EQ(f32_units, static_cast<int>(tiny_gpt().layers) + 1) << where << ": one per block, and ln_f's";
    Trainer trainer(engine);
    const std::int64_t micro = kGlobal / world_size();
    trainer.train_step({global_rows(*device, tiny_gpt(), 0, world.rank() * micro, micro)}, 1e-4f);
    if (stage != ZeroStage::kStage0) continue;  // stage 0 keeps the compute copies bound between steps
    int gains = 0;
    for (const NamedParameter& np : model.named_parameters()) {
      const Tensor& value = np.parameter->value;
      ASSERT_TRUE(value.defined()) << np.name;
      EXPECT_EQ(value.dtype(), np.parameter->keep_f32 ? DType::kF32 : DType::kBF16) << np.name;
      if (!np.name.ends_with("ln_1.weight")) continue;
      ++gains;
      const float* g = value.data_as<float>();
      int moved = 0;
      for (std::int64_t i = 0; i < value.numel(); ++i) moved += g[i] != 1.0f && std::fabs(g[i] - 1.0f) < 1e-3f;
      EXPECT_GT(moved, value.numel() / 2) << np.name << ": the gains' compute copy did not take a step below bf16's spacing";
    }
    EXPECT_EQ(gains, static_cast<int>(tiny_gpt().layers));
  }
}

// A bf16 wire at stages 2-3 reduces the micro-batch's bf16 gradients themselves; at stages 0-1 the
// f32 accumulator travels as bf16 (the communicator narrows it as it sends).
TEST(ShardedEngineBf16, Bf16WireSendsTheBf16GradientsAsTheyAre) {
  RunSpec spec;
  spec.precision = bf16_compute(DType::kBF16);
  spec.stage = ZeroStage::kStage2;
  const Bf16Run stage2 = run(spec);
  ASSERT_FALSE(stage2.plain_reduce_dtypes.empty()) << "no reduce-scatter of bf16 buffers at stage 2";
  for (DType d : stage2.plain_reduce_dtypes) EXPECT_EQ(d, DType::kBF16);
  for (DType d : stage2.reduce_dtypes) EXPECT_EQ(d, DType::kBF16) << "every gradient collective on the bf16 wire";
  spec.precision = bf16_compute(DType::kF32);
  const Bf16Run f32_wire = run(spec);
  EXPECT_TRUE(f32_wire.plain_reduce_dtypes.empty()) << "an f32 wire reduces the widened gradients (_f32 collectives)";
}

}  // namespace
}  // namespace tessera::testing
