// The recommendation walk, one test per branch: fits as is (a GPU starts from bf16 compute); a higher
// ZeRO stage first; then activation checkpointing; then ZeRO-3; offload only where the engine runs
// it; parameter offload; on the CPU bf16 compute as the last move; cannot fit even so (with the reason); checkpointing to grow the micro-batch; accumulation for a
// target global batch; and a 1.3B model on 8 ranks of 24 GB that needs no offload. Device sizes are set between the
// planner's own figures for neighbouring branches, so each test lands in exactly one branch.
#include "tessera/planning/recommend.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

// The small GPT on 2 ranks at `stage`, in bf16 (where the flow starts on a GPU), micro 1.
PlanConfig base(ZeroStage stage) {
  PlanConfig c;
  c.model = model_preset("small");
  c.ranks = 2;
  c.stage = stage;
  c.precision.compute_dtype = DType::kBF16;
  c.precision.param_dtype = DType::kBF16;
  c.precision.reduce_dtype = DType::kBF16;
  return c;
}

std::int64_t peak(PlanConfig c, const std::string& checkpointing, const std::string& offload = "none",
                  ZeroStage stage = ZeroStage::kStage0) {
  c.recompute = parse_recompute_policy(checkpointing);
  c.offload = parse_offload(offload);
  c.stage = stage;
  c.host_is_device = c.offload.uses_nvme();  // NVMe offload is what the CPU device runs
  if (c.host_is_device) c.precision.compute_dtype = DType::kF32;  // the CPU's, until nothing else fits
  return plan_memory(c).needed();
}

Recommendation run(ZeroStage stage, std::int64_t device_memory, std::int64_t max_micro = 8,
                   std::optional<std::int64_t> global = std::nullopt, OffloadTarget offload_to = OffloadTarget::kNone) {
  RecommendRequest r;
  r.base = base(stage);
  r.base.device_memory = device_memory;
  r.base.host_is_device = offload_to == OffloadTarget::kNvme;  // the CPU device
  if (r.base.host_is_device) r.base.precision.compute_dtype = DType::kF32;
  r.max_micro_batch = max_micro;
  r.target_global_batch = global;
  r.offload_to = offload_to;
  return recommend(r);
}

bool has_step(const Recommendation& r, const std::string& decision_prefix) {
  for (const RecommendStep& s : r.steps) {
    if (s.decision.rfind(decision_prefix, 0) == 0) return true;
  }
  return false;
}

TEST(Recommend, FitsAsIs) {
  const Recommendation r = run(ZeroStage::kStage0, 100'000'000'000);
  ASSERT_TRUE(r.fits) << r.describe();
  EXPECT_EQ(r.config.precision.compute_dtype, DType::kBF16) << "a GPU computes in bf16";
  EXPECT_EQ(r.config.precision.param_dtype, DType::kBF16);
  EXPECT_EQ(r.config.precision.reduce_dtype, DType::kBF16);
  EXPECT_EQ(r.config.micro_batch, 8) << "the largest micro-batch tried";
  const Recommendation cpu = run(ZeroStage::kStage0, 100'000'000'000, 8, std::nullopt, OffloadTarget::kNvme);
  EXPECT_EQ(cpu.config.precision.compute_dtype, DType::kF32) << "the CPU keeps f32 when it fits:\n" << cpu.describe();
  EXPECT_EQ(r.config.recompute.kind, RecomputePolicyKind::kNone);
  EXPECT_FALSE(r.config.offload.any());
  EXPECT_FALSE(has_step(r, "activation checkpointing")) << r.describe();
  ASSERT_TRUE(r.batch.has_value());
  EXPECT_EQ(r.batch->global, 16);
}

TEST(Recommend, LargestMicroBatchThatFits) {
  // Room for micro 3 but not 4: the search must land on 3 exactly.
  PlanConfig c = base(ZeroStage::kStage0);
  c.micro_batch = 3;
  const std::int64_t three = plan_memory(c).peak_total();
  c.micro_batch = 4;
  const std::int64_t four = plan_memory(c).peak_total();
  const Recommendation r = run(ZeroStage::kStage0, (three + four) / 2);
  ASSERT_TRUE(r.fits) << r.describe();
  EXPECT_EQ(r.config.micro_batch, 3) << r.describe();
  EXPECT_LE(r.plan.peak_total(), r.plan.budget());
}

TEST(Recommend, RaisesTheStageBeforeAnythingElse) {
  // Room for stage 1 at micro 1, not stage 0: sharding the optimizer state is the first move.
  const PlanConfig c = base(ZeroStage::kStage0);
  const std::int64_t stage0 = peak(c, "none"), stage1 = peak(c, "none", "none", ZeroStage::kStage1);
  ASSERT_LT(stage1, stage0);
  const Recommendation r = run(ZeroStage::kStage0, (stage0 + stage1) / 2);
  ASSERT_TRUE(r.fits) << r.describe();
  EXPECT_EQ(r.config.stage, ZeroStage::kStage1) << r.describe();
  EXPECT_EQ(r.config.recompute.kind, RecomputePolicyKind::kNone) << r.describe();
  EXPECT_FALSE(r.config.offload.any()) << r.describe();
  EXPECT_TRUE(has_step(r, "ZeRO-1")) << r.describe();
  for (const RecommendStep& s : r.steps) EXPECT_GT(s.peak, 0) << s.decision << ": every step shows its peak";
}

TEST(Recommend, NeedsActivationCheckpointingAfterTheCheapStages) {
  const PlanConfig c = base(ZeroStage::kStage0);
  const std::int64_t none = peak(c, "none", "none", ZeroStage::kStage2);
  const std::int64_t blocks = peak(c, "blocks", "none", ZeroStage::kStage2);
  ASSERT_LT(blocks, none);
  const Recommendation r = run(ZeroStage::kStage0, (none + blocks) / 2);
  ASSERT_TRUE(r.fits) << r.describe();
  EXPECT_EQ(r.config.stage, ZeroStage::kStage2) << r.describe();
  EXPECT_EQ(r.config.recompute.kind, RecomputePolicyKind::kByType);
  EXPECT_FALSE(r.config.offload.any()) << r.describe();
  EXPECT_TRUE(has_step(r, "activation checkpointing: blocks")) << r.describe();
  EXPECT_NE(r.describe().find("micro 1 needs"), std::string::npos) << r.describe();
}

TEST(Recommend, ShardsParametersWhenCheckpointingIsNotEnough) {
  const PlanConfig c = base(ZeroStage::kStage0);
  const std::int64_t stage2 = peak(c, "blocks", "none", ZeroStage::kStage2);
  const std::int64_t stage3 = peak(c, "blocks", "none", ZeroStage::kStage3);
  ASSERT_LT(stage3, stage2);
  const Recommendation r = run(ZeroStage::kStage0, (stage2 + stage3) / 2);
  ASSERT_TRUE(r.fits) << r.describe();
  EXPECT_EQ(r.config.stage, ZeroStage::kStage3);
  EXPECT_FALSE(r.config.offload.any()) << r.describe();
  EXPECT_TRUE(has_step(r, "ZeRO-3")) << r.describe();
}

TEST(Recommend, OffloadsOnlyWhereTheEngineRunsIt) {
  const PlanConfig c = base(ZeroStage::kStage3);
  const std::int64_t sharded = peak(c, "blocks", "none", ZeroStage::kStage3);
  const std::int64_t offloaded = peak(c, "blocks", "optimizer:nvme", ZeroStage::kStage3);
  ASSERT_LT(offloaded, sharded);
  const std::int64_t memory = (sharded + offloaded) / 2;
  const Recommendation gpu = run(ZeroStage::kStage3, memory);
  EXPECT_FALSE(gpu.fits) << gpu.describe();
  EXPECT_FALSE(has_step(gpu, "offload")) << gpu.describe();
  EXPECT_NE(gpu.failure.find("does not run on this target yet"), std::string::npos) << gpu.failure;
  const Recommendation cpu = run(ZeroStage::kStage3, memory, 8, std::nullopt, OffloadTarget::kNvme);
  ASSERT_TRUE(cpu.fits) << cpu.describe();
  EXPECT_EQ(cpu.config.offload.optimizer, OffloadTarget::kNvme);
  EXPECT_EQ(cpu.config.offload.parameters, OffloadTarget::kNone);
  EXPECT_TRUE(has_step(cpu, "offload optimizer state")) << cpu.describe();
}

TEST(Recommend, NeedsParameterOffload) {
  const PlanConfig c = base(ZeroStage::kStage3);
  const std::int64_t sharded = peak(c, "blocks", "optimizer:nvme", ZeroStage::kStage3);
  const std::int64_t offloaded = peak(c, "blocks", "optimizer:nvme,params:nvme", ZeroStage::kStage3);
  ASSERT_LT(offloaded, sharded);
  const Recommendation r = run(ZeroStage::kStage3, (sharded + offloaded) / 2, 8, std::nullopt, OffloadTarget::kNvme);
  ASSERT_TRUE(r.fits) << r.describe();
  EXPECT_EQ(r.config.offload.parameters, OffloadTarget::kNvme);
  EXPECT_EQ(r.config.offload.optimizer, OffloadTarget::kNvme);
  EXPECT_TRUE(has_step(r, "offload parameters")) << r.describe();
}

TEST(Recommend, CannotFitEvenSoAndSaysWhy) {
  const PlanConfig c = base(ZeroStage::kStage3);
  const std::int64_t floor = peak(c, "blocks", "optimizer:nvme,params:nvme", ZeroStage::kStage3);
  const Recommendation r = run(ZeroStage::kStage3, floor / 2, 8, std::nullopt, OffloadTarget::kNvme);
  EXPECT_FALSE(r.fits);
  EXPECT_NE(r.failure.find("even with ZeRO-3, checkpointing, optimizer and parameter offload and bf16 compute"),
            std::string::npos)
      << r.failure;
  EXPECT_TRUE(has_step(r, "bf16 compute")) << "the CPU's last move:\n" << r.describe();
  EXPECT_NE(r.failure.find("the largest part is"), std::string::npos) << r.failure;
  EXPECT_NE(r.failure.find("more ranks"), std::string::npos) << r.failure;
  EXPECT_NE(r.describe().find("no configuration fits"), std::string::npos) << r.describe();
}

TEST(Recommend, CheckpointingGrowsTheMicroBatchToSaveAccumulation) {
  // Room for a few sequences without recomputation, many more with it, and a global batch that
  // needs more than the few: checkpointing is taken for fewer accumulation steps.
  PlanConfig c = base(ZeroStage::kStage0);
  c.micro_batch = 2;
  const std::int64_t two = plan_memory(c).peak_total();
  c.micro_batch = 3;
  const std::int64_t three = plan_memory(c).peak_total();
  const Recommendation r = run(ZeroStage::kStage0, (two + three) / 2, 64, 32);
  ASSERT_TRUE(r.fits) << r.describe();
  EXPECT_TRUE(has_step(r, "activation checkpointing: blocks, to grow the micro-batch")) << r.describe();
  EXPECT_GT(r.config.micro_batch, 2) << r.describe();
  EXPECT_LT(r.config.accumulation, 8) << r.describe();
}

TEST(Recommend, AGpt13BOn8RanksWith24GBNeedsNoOffload) {
  PlanConfig c;
  c.model = ModelSpec{"1.3b", GptConfig{/*vocab*/ 50257, /*seq*/ 2048, /*layers*/ 24, /*heads*/ 16, /*dim*/ 2048}, 0};
  c.ranks = 8;
  c.device_memory = 24'000'000'000;
  RecommendRequest request;
  request.base = c;
  request.target_global_batch = 256;
  request.max_micro_batch = 32;
  request.offload_to = OffloadTarget::kNvme;  // offered, and still not needed
  const Recommendation r = recommend(request);
  ASSERT_TRUE(r.fits) << r.describe();
  EXPECT_FALSE(r.config.offload.any()) << "a ZeRO stage fits without offload:\n" << r.describe();
  EXPECT_EQ(r.config.micro_batch * 8 * r.config.accumulation, 256) << r.describe();
}

TEST(Recommend, AccumulationHitsTheTargetGlobalBatch) {
  // 24 sequences on 2 ranks = 12 per rank; micro up to 8 fits, the largest divisor of 12 is 6.
  const Recommendation r = run(ZeroStage::kStage0, 100'000'000'000, 8, 24);
  ASSERT_TRUE(r.fits) << r.describe();
  EXPECT_EQ(r.config.micro_batch, 6);
  EXPECT_EQ(r.config.accumulation, 2);
  ASSERT_TRUE(r.batch.has_value());
  EXPECT_EQ(r.batch->global, 24);
  EXPECT_EQ(r.batch->micro * r.batch->ranks * r.batch->accumulation, 24);
  EXPECT_TRUE(has_step(r, "accumulation 2")) << r.describe();
  EXPECT_NE(r.describe().find("does not divide"), std::string::npos) << r.describe();
}

TEST(Recommend, RefusesWhatItCannotPlan) {
  EXPECT_THROW(run(ZeroStage::kStage0, 0), std::invalid_argument);  // no device memory
  try {
    run(ZeroStage::kStage0, 100'000'000'000, 8, 25);  // 25 sequences do not split over 2 ranks
    ADD_FAILURE() << "expected std::invalid_argument for global 25 on 2 ranks";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("nearest valid"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera
