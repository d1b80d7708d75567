// Batch settings given once: a PlanConfig made from a run's BatchPlan and ShardingConfig takes the
// micro-batch, accumulation and ranks (and a GPT's seq_len) from them and plans what the same
// settings given by hand plan, to the byte; a BatchPlan for other ranks is refused naming both. And a
// custom model's description: refused with a message naming the model and what to change when it
// cannot be planned; its parameter count is its module's.
#include <gtest/gtest.h>

#include "plan_test_support.hpp"
#include "tessera/comm/loopback/loopback_communicator.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/planning/plan_report.hpp"
#include "tessera/planning/recommend.hpp"
#include "tests/planning/token_mlp_model.hpp"

namespace tessera::testing {
namespace {

BatchPlan batch_of(std::int64_t micro, int ranks, std::int64_t accumulation, std::int64_t seq_len) {
  BatchRequest request;
  request.micro = micro;
  request.accumulation = accumulation;
  request.data_parallel_ranks = ranks;
  request.seq_len = seq_len;
  return plan_batch(request);
}

// The message of what `f` throws, or "" when it does not throw.
template <typename F>
std::string thrown_message(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(PlanConfigFromBatch, TakesMicroAccumulationRanksAndSeqLen) {
  ShardingConfig sharding;
  sharding.stage = ZeroStage::kStage2;
  sharding.hybrid_group = 2;
  sharding.prefetch_units = 2;
  sharding.precision.param_dtype = DType::kBF16;
  const PlanConfig c = PlanConfig::for_run(model_preset("tiny"), sharding, batch_of(3, 4, 5, 4),
                                           RecomputePolicy::by_type("TransformerBlock"));
  EXPECT_EQ(c.micro_batch, 3);
  EXPECT_EQ(c.ranks, 4);
  EXPECT_EQ(c.accumulation, 5);
  EXPECT_EQ(c.seq_len, 4);
  EXPECT_EQ(c.stage, ZeroStage::kStage2);
  EXPECT_EQ(c.hybrid_group, 2);
  EXPECT_EQ(c.prefetch_units, 2);
  EXPECT_EQ(c.precision.param_dtype, DType::kBF16);
  EXPECT_EQ(c.recompute.kind, RecomputePolicyKind::kByType);
}

TEST(PlanConfigFromBatch, PlansWhatTheSameSettingsByHandPlan) {
  for (int st = 0; st <= 3; ++st) {
    PlanConfig by_hand = plan_for("tiny", parse_zero_stage(st), 2, 2, "blocks");
    by_hand.accumulation = 3;
    by_hand.seq_len = 5;
    ShardingConfig sharding;
    sharding.stage = parse_zero_stage(st);
    const PlanConfig from_batch =
        PlanConfig::for_run(model_preset("tiny"), sharding, batch_of(2, 2, 3, 5), by_hand.recompute);
    const MemoryPlan a = plan_memory(by_hand), b = plan_memory(from_batch);
    EXPECT_EQ(by_hand.describe(), from_batch.describe());
    for (MemoryCategory c : kAllMemoryCategories) {
      EXPECT_EQ(a.before_step.current_of(c), b.before_step.current_of(c)) << by_hand.describe();
      EXPECT_EQ(a.peak(c), b.peak(c)) << by_hand.describe() << ": " << memory_category_name(c);
    }
    EXPECT_EQ(a.peak_total(), b.peak_total()) << by_hand.describe();
  }
}

TEST(PlanConfigFromBatch, RefusesABatchPlanForOtherRanksNamingBoth) {
  PlanConfig c;
  c.model = model_preset("tiny");
  c.ranks = 2;
  const BatchPlan batch = batch_of(4, 8, 1, 6);
  try {
    c.set_batch(batch);
    FAIL() << "a batch plan for 8 ranks was taken by a plan for 2";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.setting(), "plan.ranks");
    const std::string message = e.what();
    EXPECT_NE(message.find("is for 8 ranks"), std::string::npos) << message;
    EXPECT_NE(message.find("memory plan is for 2 ranks"), std::string::npos) << message;
  }
  EXPECT_EQ(c.micro_batch, 1) << "a refused batch plan changes nothing";
  c.ranks = 8;
  c.set_batch(batch);
  EXPECT_EQ(c.micro_batch, 4);
  EXPECT_EQ(c.seq_len, 6);
}

TEST(PlanConfigFromBatch, CustomModelKeepsItsOwnShapes) {
  ShardingConfig sharding;
  const PlanConfig c =
      PlanConfig::for_run(model_from_module("token mlp", token_mlp_model()), sharding, batch_of(4, 1, 2, 1000));
  EXPECT_EQ(c.micro_batch, 4);
  EXPECT_EQ(c.accumulation, 2);
  EXPECT_EQ(c.seq_len, 0) << "a custom model's sample shapes are its own; the batch plan's seq_len is not used";
  const std::vector<BatchTensorSpec> tensors = c.batch_tensors();
  ASSERT_EQ(tensors.size(), 2u);
  EXPECT_EQ(tensors[1].micro_batch_shape(c.micro_batch), (Shape{4, kMlpSeqLen, kMlpOutputs}));
}

TEST(CustomModelSpec, ParameterCountIsTheModules) {
  const ModelSpec spec = model_from_module("token mlp", token_mlp_model());
  TokenMlp model(kMlpVocab, kMlpSeqLen, kMlpChannels, kMlpHidden, kMlpOutputs);
  EXPECT_EQ(spec.parameter_count(), model.parameter_count());
  EXPECT_TRUE(spec.plans_step());
  EXPECT_NE(spec.describe().find("token mlp"), std::string::npos) << spec.describe();
}

TEST(CustomModelSpec, RefusesWhatCannotBePlannedNamingTheModel) {
  PlanConfig c;
  CustomModel m = token_mlp_model();
  m.build = nullptr;
  c.model = model_from_module("my mlp", m);
  std::string message = thrown_message([&] { plan_memory(c); });
  EXPECT_NE(message.find("model 'my mlp'"), std::string::npos) << message;
  EXPECT_NE(message.find("CustomModel::build"), std::string::npos) << message;

  m = token_mlp_model();
  m.batch.clear();
  c.model = model_from_module("my mlp", m);
  message = thrown_message([&] { plan_memory(c); });
  EXPECT_NE(message.find("CustomModel::batch"), std::string::npos) << message;

  m = token_mlp_model();
  m.batch[1].sample_shape = {kMlpSeqLen, 0};
  c.model = model_from_module("my mlp", m);
  message = thrown_message([&] { plan_memory(c); });
  EXPECT_NE(message.find("'targets'"), std::string::npos) << message;

  c.model = model_from_module("my mlp", token_mlp_model());
  c.grad_dtype = DType::kBF16;
  message = thrown_message([&] { plan_memory(c); });
  EXPECT_NE(message.find("plan.grad_dtype"), std::string::npos) << message;

  c.grad_dtype = DType::kF32;
  c.device_memory = 1000;
  RecommendRequest request;
  request.base = c;
  message = thrown_message([&] { recommend(request); });
  EXPECT_NE(message.find("model 'my mlp'"), std::string::npos) << message;
}

TEST(CustomModelSpec, IdsNeedABoundOnlyToBeMeasured) {
  CustomModel m = token_mlp_model();
  m.batch[0].id_bound = 0;  // the planner reads no values
  PlanConfig c;
  c.model = model_from_module("my mlp", m);
  EXPECT_TRUE(plan_memory(c).has_step);
  LoopbackCommunicator alone(0, 1);
  const std::string message = thrown_message([&] { measure_engine_step(c, alone, {.device = DeviceChoice::kCpu}); });
  EXPECT_NE(message.find("'inputs'"), std::string::npos) << message;
  EXPECT_NE(message.find("id_bound"), std::string::npos) << message;
}

TEST(CustomModelSpec, TheTokenStepIsTheDefault) {
  // A custom model fed token ids and targets, without a step of its own: the Trainer's cross-entropy
  // on its (B,T,K) outputs (trainer_step), planned as the GPT is.
  CustomModel m = token_mlp_model();
  m.batch = token_batch(kMlpSeqLen, kMlpOutputs);
  m.step = nullptr;
  m.loss = nullptr;
  PlanConfig c;
  c.model = model_from_module("token mlp, cross-entropy", m);
  c.micro_batch = 2;
  c.accumulation = 3;
  const MemoryPlan plan = plan_memory(c);
  EXPECT_TRUE(plan.has_step);
  EXPECT_GT(plan.peak(MemoryCategory::kActivations), 0);
  m.step = trainer_step(nullptr);
  c.model = model_from_module("token mlp, cross-entropy", m);
  const MemoryPlan explicit_step = plan_memory(c);
  for (MemoryCategory cat : kAllMemoryCategories) {
    EXPECT_EQ(plan.before_step.current_of(cat), explicit_step.before_step.current_of(cat)) << memory_category_name(cat);
    EXPECT_EQ(plan.peak(cat), explicit_step.peak(cat)) << memory_category_name(cat);
  }
}

}  // namespace
}  // namespace tessera::testing
