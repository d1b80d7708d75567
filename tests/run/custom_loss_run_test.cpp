// TrainingRun with a model and a loss of one's own: a regression model (f32 features (B,F) ->
// LayerNorm -> Linear -> Linear -> (B,1)) trained with MeanSquaredError on samples that are a function
// of their global index, on 2 ranks:
//  * ZeRO-0 and ZeRO-3 log bit-identical losses and validation losses (accumulation 1: with more,
//    stages 0-1 add a rank's micro-batches before the ranks' sum and stages 2-3 after it, which
//    rounds differently), and the loss falls;
//  * a run saved at step 3 at ZeRO-3 on 2 ranks resumes on 1 rank (ZeRO-0, the global batch kept by
//    twice the accumulation) and continues the uninterrupted run's curve (to the rounding of the
//    other summation order), reading the samples the uninterrupted run read;
//  * the validation measures the run's loss (Trainer::evaluate with the run's Loss);
//  * a loss the ranks disagree on is refused by name before step 1.
// tessera-test-ranks: 2
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tessera/model/modules/layer_norm.hpp"
#include "tessera/model/modules/linear.hpp"
#include "tessera/run/run_batch_plan.hpp"
#include "tessera/run/training_run.hpp"
#include "tessera/training/losses/masked_cross_entropy.hpp"
#include "tessera/training/losses/mean_squared_error.hpp"
#include "tests/checkpointing/checkpoint_test_support.hpp"

namespace tessera::testing {
namespace {

constexpr std::int64_t kFeatures = 6, kHidden = 12, kRegressionMicro = 2, kScheduleSteps = 8;

// features (B,F) f32 -> predictions (B,1) f32, every child called through its slot.
class Regressor final : public Module {
 public:
  Regressor()
      : norm_(register_child("norm", std::make_unique<LayerNorm>(kFeatures))),
        hidden_(register_child("hidden", std::make_unique<Linear>(kFeatures, kHidden, true, 0.3f))),
        out_(register_child("out", std::make_unique<Linear>(kHidden, 1, true, 0.3f))) {}
  std::string type_name() const override { return "Regressor"; }
  Tensor forward(Context& ctx, const Tensor& x) override {
    return out_->forward(ctx, hidden_->forward(ctx, norm_->forward(ctx, x)));
  }
  Tensor backward(Context& ctx, Tensor dy) override {
    return norm_->backward(ctx, hidden_->backward(ctx, out_->backward(ctx, std::move(dy))));
  }

 private:
  ModuleSlot& norm_;
  ModuleSlot& hidden_;
  ModuleSlot& out_;
};

// Global sample i: features from a generator seeded with i, target a fixed linear function of them.
MicroBatch regression_rows(Device& device, std::int64_t first, std::int64_t count) {
  std::vector<float> x(static_cast<std::size_t>(count * kFeatures)), y(static_cast<std::size_t>(count));
  for (std::int64_t r = 0; r < count; ++r) {
    Rng rng(static_cast<std::uint64_t>(1000 + first + r));
    float target = 0.0f;
    for (std::int64_t f = 0; f < kFeatures; ++f) {
      const float v = rng.normal();
      x[static_cast<std::size_t>(r * kFeatures + f)] = v;
      target += static_cast<float>(f % 3 - 1) * v;
    }
    y[static_cast<std::size_t>(r)] = target;
  }
  return {Tensor::from_host(device, x, {count, kFeatures}, DType::kF32, MemoryCategory::kWorkspace),
          Tensor::from_host(device, y, {count, 1}, DType::kF32, MemoryCategory::kWorkspace)};
}

struct RegressionRun {
  std::vector<float> losses;
  std::vector<float> validation;
  std::vector<std::int64_t> firsts;  // the first sample of every micro-batch read, in order
};

// Trains `steps` (from a checkpoint when `resume`) on `world`, micro-batches of 2, global batch `global`.
RegressionRun train_regression(Communicator& world, ZeroStage stage, std::int64_t steps, std::int64_t global,
                               const std::string& dir = "", const std::string& resume = "",
                               std::int64_t save_every = 0) {
  auto device = make_cpu_device();
  Regressor model;
  ShardingConfig sharding;
  sharding.stage = stage;
  sharding.optimizer.adamw = test_adamw();
  ShardedEngine engine(model, *device, world, sharding, kSeed);
  TrainingRunOptions o;
  o.steps = steps;
  BatchRequest request;
  request.global = global;
  request.micro = kRegressionMicro;
  request.data_parallel_ranks = world.size();
  request.seq_len = 1;
  o.batch = plan_batch(request);
  o.schedule = LrSchedule{2e-2f, 1, kScheduleSteps, 0.1f};  // the same schedule for a run cut short
  o.progress = ProgressStyle::kQuiet;
  o.loss = std::make_shared<MeanSquaredError>();
  o.checkpoint.dir = dir;
  o.checkpoint.save_every = save_every;
  o.checkpoint.resume = resume;
  o.run_config.set_model("kind", "regressor");
  o.run_config.set_model("features", kFeatures);
  RegressionRun out;
  o.on_step = [&](std::int64_t, const StepResult& r) { out.losses.push_back(r.loss); };
  o.eval_every = 2;
  o.validation = [&](Trainer& trainer) {
    const float v = trainer.evaluate(regression_rows(*device, 1'000'000, 4));
    out.validation.push_back(v);
    return v;
  };
  TrainingRun run(engine, world, o, [&](std::int64_t first, std::int64_t count) {
    out.firsts.push_back(first);
    return regression_rows(*device, first, count);
  });
  EXPECT_EQ(run.run(), RunEnd::kCompleted);
  return out;
}

TEST(CustomLossRun, ZeroStagesGiveTheSameLossesBitForBitAndTheLossFalls) {
  MpiCommunicator world(MPI_COMM_WORLD);
  const std::int64_t global = kRegressionMicro * world.size();  // accumulation 1: the promise's case
  const RegressionRun zero0 = train_regression(world, ZeroStage::kStage0, 8, global);
  const RegressionRun zero3 = train_regression(world, ZeroStage::kStage3, 8, global);
  ASSERT_EQ(zero0.losses.size(), 8u);
  EXPECT_EQ(zero0.losses, zero3.losses);
  EXPECT_EQ(zero0.validation, zero3.validation);
  ASSERT_EQ(zero0.validation.size(), 5u) << "at steps 0, 2, 4, 6 and 8";
  EXPECT_LT(zero0.validation.back(), 0.5f * zero0.validation.front()) << "MSE did not fall";
}

TEST(CustomLossRun, ResumesOnOneRankContinuingTheCurve) {
  MpiCommunicator world(MPI_COMM_WORLD);
  SharedTempDir dir;
  const RegressionRun straight = train_regression(world, ZeroStage::kStage3, 6, 8);
  const RegressionRun first = train_regression(world, ZeroStage::kStage3, 3, 8, (dir.path() / "run").string(), "",
                                               /*save_every=*/3);
  ASSERT_EQ(first.losses, std::vector<float>(straight.losses.begin(), straight.losses.begin() + 3));
  std::unique_ptr<Communicator> alone = first_ranks(1);
  if (alone) {
    const RegressionRun resumed =
        train_regression(*alone, ZeroStage::kStage0, 6, 8, (dir.path() / "run").string(), "auto");
    ASSERT_EQ(resumed.losses.size(), 3u) << "steps 4..6 only";
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_NEAR(resumed.losses[i], straight.losses[3 + i], 1e-5f * straight.losses[3 + i]) << "step " << 4 + i;
    }
    // Every sample of steps 4..6 (8 per step from sample 24 on) read once, by the one rank.
    std::vector<std::int64_t> firsts = resumed.firsts;
    std::sort(firsts.begin(), firsts.end());
    ASSERT_EQ(firsts.size(), 12u);
    for (std::size_t i = 0; i < firsts.size(); ++i) EXPECT_EQ(firsts[i], 24 + 2 * static_cast<std::int64_t>(i));
  }
}

TEST(CustomLossRun, RanksRunningAnotherLossAreRefusedByName) {
  MpiCommunicator world(MPI_COMM_WORLD);
  auto device = make_cpu_device();
  Regressor model;
  ShardedEngine engine(model, *device, world, ShardingConfig{}, kSeed);
  TrainingRunOptions o;
  o.steps = 1;
  BatchRequest request;
  request.micro = kRegressionMicro;
  request.data_parallel_ranks = world.size();
  request.seq_len = 1;
  o.batch = plan_batch(request);
  o.schedule = LrSchedule{1e-2f, 0, 1, 0.1f};
  o.progress = ProgressStyle::kQuiet;
  if (world.rank() == 0) {
    o.loss = std::make_shared<MeanSquaredError>();
  } else {
    o.loss = std::make_shared<MaskedCrossEntropy>();
  }
  try {
    TrainingRun run(engine, world, o,
                    [&](std::int64_t first, std::int64_t count) { return regression_rows(*device, first, count); });
    FAIL() << "ranks with different losses were not refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("run.loss"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mse"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::testing
