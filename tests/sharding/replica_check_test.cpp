// The replica check (sharding/replica_check.hpp) on the tiny GPT at 2 ranks:
//  * after a step, every rank's replicas agree at stages 0-2 (stored parameters; at stage 0 with bf16
//    parameters the f32 master too), and a check of them passes;
//  * one element of one parameter changed on rank 1 only is found, at every stage 0-2, naming the
//    parameter (its full name) and rank 1, on every rank alike (no rank left in a collective);
//  * a TrainingRun with check_replicas 2 whose rank 1 is made to diverge after step 3 stops at
//    step 4 with that error; the same run undisturbed completes with the check on;
//  * stage 3 (nothing replicated) and a negative period are refused, naming run.check_replicas.
// tessera-test-ranks: 2
#include "tessera/sharding/replica_check.hpp"

#include <gtest/gtest.h>

#include "sharding_test_support.hpp"
#include "tessera/core/setting_error.hpp"
#include "tessera/run/training_run.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera::testing {
namespace {

constexpr const char* kPerturbed = "h.1.mlp.fc.weight";

ShardingConfig replica_config(ZeroStage stage, DType param_dtype = DType::kF32) {
  ShardingConfig config;
  config.stage = stage;
  config.grad_clip = kClip;
  if (param_dtype != DType::kF32) {
    config.precision.compute_dtype = param_dtype;
    config.precision.param_dtype = param_dtype;
  }
  return config;
}

// Adds 1 to element 3 of parameter `name` on this rank (its stored copy: bound between steps).
void perturb(Module& model, const std::string& name) {
  for (const NamedParameter& np : model.named_parameters()) {
    if (np.name != name) continue;
    std::vector<float> values = np.parameter->value.to_host_f32();
    values[3] += 1.0f;
    np.parameter->value.copy_from_host_f32(values);
    return;
  }
  FAIL() << "no parameter " << name;
}

// One training step of the tiny GPT on this rank's rows.
void one_step(Device& device, ShardedEngine& engine, int rank) {
  Trainer trainer(engine);
  trainer.train_step({global_rows(device, tiny_gpt(), 0, rank * 2, 2)}, kLr);
}

TEST(ReplicaCheck, AgreeingReplicasPassAndOneChangedElementIsNamedAtStages0To2) {
  for (ZeroStage stage : {ZeroStage::kStage0, ZeroStage::kStage1, ZeroStage::kStage2}) {
    const std::string what = "ZeRO-" + std::to_string(zero_stage_number(stage));
    auto device = make_cpu_device();
    MpiCommunicator world(MPI_COMM_WORLD);
    Gpt model(tiny_gpt());
    ShardedEngine engine(model, *device, world, replica_config(stage), kSeed);
    one_step(*device, engine, world.rank());
    EXPECT_EQ(replica_checksums(engine).size(), model.named_parameters().size()) << what;
    EXPECT_NO_THROW(check_replicas(engine, world, 1)) << what;
    if (world.rank() == 1) perturb(model, kPerturbed);
    try {
      check_replicas(engine, world, 1);
      ADD_FAILURE() << what << ": rank 1's changed " << kPerturbed << " was not found";
    } catch (const ReplicaDivergence& e) {
      EXPECT_EQ(e.tensor(), kPerturbed) << what << ": " << e.what();
      EXPECT_EQ(e.ranks(), std::vector<int>{1}) << what << ": " << e.what();
      const std::string message = e.what();
      for (const std::string& part : {std::string("replica check after step 1: '") + kPerturbed + "' differs",
                                      std::string("rank 1 holds other values than rank 0"), what}) {
        EXPECT_NE(message.find(part), std::string::npos) << what << ": no \"" << part << "\" in\n" << message;
      }
    }
  }
}

TEST(ReplicaCheck, Bf16ParametersAtStage0AlsoCompareTheF32Master) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  Gpt model(tiny_gpt());
  ShardedEngine engine(model, *device, world, replica_config(ZeroStage::kStage0, DType::kBF16), kSeed);
  one_step(*device, engine, world.rank());
  const std::vector<ReplicaChecksum> sums = replica_checksums(engine);
  // The norms' parameters are kept in f32 and are their own master: compared once.
  std::size_t f32_kept = 0;
  for (const NamedParameter& np : model.named_parameters()) f32_kept += np.parameter->keep_f32 ? 1 : 0;
  EXPECT_GT(f32_kept, 0u);
  ASSERT_EQ(sums.size(), 2 * model.named_parameters().size() - f32_kept);
  EXPECT_TRUE(sums.back().tensor.ends_with(" (f32 master)")) << sums.back().tensor;
  for (const ReplicaChecksum& sum : sums) {
    EXPECT_EQ(sum.tensor.find("ln_f.weight (f32 master)"), std::string::npos) << sum.tensor;
  }
  EXPECT_NO_THROW(check_replicas(engine, world, 1));
}

TEST(ReplicaCheck, Stage3AndANegativePeriodAreRefused) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  Gpt model(tiny_gpt());
  ShardedEngine engine(model, *device, world, replica_config(ZeroStage::kStage3), kSeed);
  EXPECT_TRUE(replica_checksums(engine).empty());
  EXPECT_NO_THROW(check_replicas_every(engine, world, 0, 4));  // off
  for (std::int64_t every : {std::int64_t{-1}, std::int64_t{2}}) {
    try {
      check_replicas_every(engine, world, every, 4);
      ADD_FAILURE() << "check_replicas " << every << " accepted at stage 3";
    } catch (const SettingError& e) {
      EXPECT_EQ(e.setting(), "run.check_replicas") << e.what();
    }
  }
}

// A TrainingRun of `steps` steps at stage 0 checking replicas every 2 steps; with `diverge`, rank 1
// changes kPerturbed after step 3. Returns the ReplicaDivergence's message ("" when the run completes)
// and the steps completed.
std::pair<std::string, std::int64_t> replica_run(bool diverge) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  Gpt model(tiny_gpt());
  ShardedEngine engine(model, *device, world, replica_config(ZeroStage::kStage0), kSeed);
  TrainingRunOptions o;
  o.steps = 6;
  BatchRequest request;
  request.micro = 2;
  request.data_parallel_ranks = world.size();
  request.seq_len = tiny_gpt().max_seq_len;
  o.batch = plan_batch(request);
  o.schedule = LrSchedule{kLr, 1, o.steps, 0.1f};
  o.progress = ProgressStyle::kQuiet;
  o.check_replicas = 2;
  std::int64_t completed = 0;
  o.on_step = [&](std::int64_t step, const StepResult&) {
    completed = step;
    if (diverge && step == 3 && world.rank() == 1) perturb(model, kPerturbed);
  };
  TrainingRun run(engine, world, std::move(o), [&](std::int64_t first, std::int64_t count) {
    return global_rows(*device, tiny_gpt(), 0, first, count);
  });
  try {
    EXPECT_EQ(run.run(), RunEnd::kCompleted);
  } catch (const ReplicaDivergence& e) {
    return {e.what(), completed};
  }
  return {"", completed};
}

TEST(ReplicaCheck, ARunWhoseRanksDivergeStopsAtTheNextCheckAndAnUndisturbedOneCompletes) {
  const auto [undisturbed, all_steps] = replica_run(false);
  EXPECT_EQ(undisturbed, "");
  EXPECT_EQ(all_steps, 6);
  const auto [message, completed] = replica_run(true);
  EXPECT_EQ(completed, 3) << "the check after step 4 should have stopped the run";
  EXPECT_NE(message.find(std::string("replica check after step 4: '") + kPerturbed + "' differs across ranks: rank 1"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace tessera::testing
