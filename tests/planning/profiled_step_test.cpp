// The memory profiler on the real engine: ShardedEngine's phase observer names every unit module's
// forward and backward, the loss and the step in order; the measured timeline equals the planner's
// predicted timeline sample by sample (bytes per category at each phase end and the peak inside
// each phase); the profiled step peaks equal an unprofiled run's tracker peaks; and the leak check
// is quiet over steady steps but finds memory held past its phase.
// tessera-test-ranks: 1 2 4
#include <gtest/gtest.h>
#include <mpi.h>

#include "plan_test_support.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/core/random.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/model/recompute/recompute_policy.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/sharding/sharded_engine.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera::testing {
namespace {

TEST(ProfiledStep, PhasesAreNamedAfterTheModulesInOrder) {
  MpiCommunicator world(MPI_COMM_WORLD);
  const PlanConfig config = plan_for("tiny", ZeroStage::kStage3, world.size(), 2, "blocks");
  const MeasuredStep measured = measure_engine_step(config, world, {1, true});
  std::vector<std::string> phases;
  for (const MemorySample& s : measured.timeline) phases.push_back(s.phase);
  const std::vector<std::string> expected{
      "begin",         "forward embed", "forward h.0",  "forward h.1",  "forward ln_f",   "forward head", "loss",
      "backward head", "backward ln_f", "backward h.1", "backward h.0", "backward embed", "step"};
  EXPECT_EQ(phases, expected) << where(config, world.rank());
}

TEST(ProfiledStep, MeasuredTimelineIsThePredictedOne) {
  MpiCommunicator world(MPI_COMM_WORLD);
  for (int st = 0; st <= 3; ++st) {
    for (const char* policy : {"none", "every:2", "selective"}) {
      PlanConfig config = plan_for("tiny", parse_zero_stage(st), world.size(), 2, policy);
      config.precision.param_dtype = st % 2 == 0 ? DType::kF32 : DType::kBF16;
      config.precision.reduce_dtype = DType::kBF16;
      config.accumulation = st == 2 ? 2 : 1;
      const MemoryPlan plan = plan_memory(config);
      const MeasuredStep profiled = measure_engine_step(config, world, {1, true});
      expect_same_timeline(plan.timeline, profiled.timeline, where(config, world.rank()));
      // Profiling changes nothing: its step peaks are an unprofiled run's tracker peaks.
      const MeasuredStep plain = measure_engine_step(config, world);
      for (MemoryCategory c : kAllMemoryCategories) {
        EXPECT_EQ(profiled.step.peak_of(c), plain.step.peak_of(c))
            << where(config, world.rank()) << ": " << memory_category_name(c) << " (profiled vs tracker peak)";
      }
      EXPECT_EQ(profiled.step.peak_total, plain.step.peak_total) << where(config, world.rank());
    }
  }
}

TEST(ProfiledStep, LeakCheckIsQuietOverSteadyStepsAndFindsHeldMemory) {
  MpiCommunicator world(MPI_COMM_WORLD);
  auto device = make_cpu_device();
  Gpt model(*model_preset("tiny").gpt);
  apply_recompute(model, RecomputePolicy::selective());
  ShardingConfig sharding;
  sharding.stage = ZeroStage::kStage3;
  ShardedEngine engine(model, *device, world, sharding, 5);
  const GptConfig c = *model_preset("tiny").gpt;
  Rng rng(11 + static_cast<std::uint64_t>(world.rank()));
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(2 * c.max_seq_len));
  for (auto& x : tokens) x = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(c.vocab_size)));
  const MicroBatch batch{Tensor::from_host_i32(*device, tokens, {2, c.max_seq_len}, MemoryCategory::kWorkspace),
                         Tensor::from_host_i32(*device, tokens, {2, c.max_seq_len}, MemoryCategory::kWorkspace)};

  MemoryProfiler profiler(device->memory());
  std::vector<Tensor> held;  // step 4 keeps a buffer allocated in one backward phase: a leak
  std::int64_t step = 0;
  engine.set_phase_observer([&](const std::string& phase) {
    if (step == 4 && phase == "backward h.0") {
      held.push_back(Tensor::empty(*device, {256}, DType::kF32, MemoryCategory::kActivations));
    }
    profiler.on_phase(phase);
  });
  for (step = 0; step < 5; ++step) {
    profiler.begin_step(step);
    Trainer(engine).train_step({batch}, 1e-3f);
  }
  const std::string rank = "rank " + std::to_string(world.rank());
  for (const MemoryLeak& leak : profiler.check_leaks(1, 3)) ADD_FAILURE() << rank << ": " << leak.message();
  const auto leaks = profiler.check_leaks(1, 4);
  ASSERT_FALSE(leaks.empty()) << rank << ": the held buffer was not reported";
  EXPECT_EQ(leaks.front().phase, "backward h.0") << rank;
  EXPECT_EQ(leaks.front().growth(), 256 * 4) << rank;
  EXPECT_EQ(leaks.back().phase, "step") << rank;
  EXPECT_NE(leaks.front().message().find("activations +1.00 KiB"), std::string::npos) << leaks.front().message();
}

}  // namespace
}  // namespace tessera::testing
