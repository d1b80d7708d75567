// TrainingRun, the library's training loop, on the tiny GPT at ZeRO-3:
//  * every step reads each global sample of its batch exactly once, across ranks and micro-steps,
//    and step s reads samples [s·G, (s+1)·G); its losses are those of a Trainer driven by hand over
//    the same micro-batches with the same learning rates;
//  * a run stopped after 4 steps (checkpoints every 2) and started again with resume "auto" runs
//    steps 5..8 only, reads samples from 4·G on, and logs the losses of the run that never stopped;
//  * a resume keeps the checkpoint's global batch: plan_run_batch re-derives the accumulation for
//    another micro-batch (the samples and, to rounding, the losses continue), and a run given another
//    global batch is refused unless batch_change allows it;
//  * a stop signal saves the step it arrived in and ends the run (RunEnd::kStopped);
//  * options it cannot run with are refused naming the setting.
// tessera-test-ranks: 2
#include "tessera/run/training_run.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>

#include "tessera/checkpointing/format/checkpoint_paths.hpp"
#include "tessera/run/run_batch_plan.hpp"
#include "tests/checkpointing/checkpoint_test_support.hpp"

namespace tessera::testing {
namespace {

constexpr std::int64_t kMicro = 2, kAccumulation = 2;

// Global sample i: a function of i only.
MicroBatch sample_rows(Device& device, std::int64_t first, std::int64_t count) {
  return global_rows(device, tiny_gpt(), /*step=*/0, first, count);
}

struct LoopFixture {
  std::unique_ptr<Device> device = make_cpu_device();
  Gpt model{tiny_gpt()};
  MpiCommunicator world{MPI_COMM_WORLD};
  std::unique_ptr<ShardedEngine> engine;
  std::vector<std::pair<std::int64_t, std::int64_t>> reads;  // (first, count) asked of the batch source
  std::vector<float> losses;                                 // per step completed, in order

  LoopFixture() {
    ShardingConfig sharding;
    sharding.stage = ZeroStage::kStage3;
    sharding.grad_clip = kClip;
    engine = std::make_unique<ShardedEngine>(model, *device, world, sharding, kSeed);
  }

  TrainingRunOptions options(std::int64_t steps) const {
    TrainingRunOptions o;
    o.steps = steps;
    BatchRequest request;
    request.micro = kMicro;
    request.accumulation = kAccumulation;
    request.data_parallel_ranks = world.size();
    request.seq_len = tiny_gpt().max_seq_len;
    o.batch = plan_batch(request);
    o.schedule = LrSchedule{kLr, 2, steps, 0.1f};
    o.seed = 5;
    o.progress = ProgressStyle::kQuiet;
    o.run_config = tiny_run_config();
    return o;
  }

  std::unique_ptr<TrainingRun> start(TrainingRunOptions o) {
    o.on_step = [this](std::int64_t step, const StepResult& r) {
      EXPECT_EQ(step, static_cast<std::int64_t>(losses.size()) + first_step) << "on_step out of order";
      losses.push_back(r.loss);
    };
    auto run =
        std::make_unique<TrainingRun>(*engine, world, std::move(o), [this](std::int64_t first, std::int64_t count) {
          reads.emplace_back(first, count);
          return sample_rows(*device, first, count);
        });
    first_step = run->progress().step + 1;
    return run;
  }

  std::int64_t first_step = 1;
};

// Every rank's reads of every step, gathered: per step, the sorted (first, count) pairs.
std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> reads_per_step(const LoopFixture& run,
                                                                               std::int64_t steps) {
  const int ranks = run.world.size();
  const std::size_t per_step = static_cast<std::size_t>(kAccumulation);
  std::vector<std::int64_t> mine;
  for (const auto& [first, count] : run.reads) {
    mine.push_back(first);
    mine.push_back(count);
  }
  EXPECT_EQ(mine.size(), static_cast<std::size_t>(steps) * per_step * 2);
  std::vector<std::int64_t> all(mine.size() * static_cast<std::size_t>(ranks));
  MPI_Allgather(mine.data(), static_cast<int>(mine.size()), MPI_INT64_T, all.data(), static_cast<int>(mine.size()),
                MPI_INT64_T, MPI_COMM_WORLD);
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> out(static_cast<std::size_t>(steps));
  for (int r = 0; r < ranks; ++r) {
    for (std::int64_t s = 0; s < steps; ++s) {
      for (std::size_t a = 0; a < per_step; ++a) {
        const std::size_t at =
            static_cast<std::size_t>(r) * mine.size() + (static_cast<std::size_t>(s) * per_step + a) * 2;
        out[static_cast<std::size_t>(s)].emplace_back(all[at], all[at + 1]);
      }
    }
  }
  for (auto& step : out) std::sort(step.begin(), step.end());
  return out;
}

// The reads of step s (counting from `first_step`) tile [s·G, (s+1)·G) exactly, in micro-batches.
void expect_tiles(const std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>>& steps, std::int64_t first_step,
                  std::int64_t global) {
  for (std::size_t i = 0; i < steps.size(); ++i) {
    std::int64_t next = (first_step + static_cast<std::int64_t>(i)) * global;
    for (const auto& [first, count] : steps[i]) {
      EXPECT_EQ(first, next) << "step " << first_step + static_cast<std::int64_t>(i) << ": a gap or an overlap";
      EXPECT_EQ(count, kMicro);
      next = first + count;
    }
    EXPECT_EQ(next, (first_step + static_cast<std::int64_t>(i) + 1) * global) << "step " << i << " misses samples";
  }
}

TEST(TrainingRun, ReadsEachSampleOnceAndTrainsAsATrainerDrivenByHand) {
  constexpr std::int64_t kSteps = 5;
  LoopFixture run;
  const TrainingRunOptions options = run.options(kSteps);
  const std::int64_t global = options.batch.global;
  ASSERT_EQ(global, kMicro * kAccumulation * run.world.size());
  EXPECT_EQ(run.start(options)->run(), RunEnd::kCompleted);
  ASSERT_EQ(run.losses.size(), static_cast<std::size_t>(kSteps));
  expect_tiles(reads_per_step(run, kSteps), 0, global);

  // By hand: the same engine setup, the micro-batches the reads named, the schedule's rates.
  LoopFixture by_hand;
  Trainer trainer(*by_hand.engine);
  for (std::int64_t s = 0; s < kSteps; ++s) {
    std::vector<MicroBatch> batches;
    for (std::int64_t a = 0; a < kAccumulation; ++a) {
      const auto [first, count] = run.reads[static_cast<std::size_t>(s * kAccumulation + a)];
      batches.push_back(sample_rows(*by_hand.device, first, count));
    }
    const StepResult r = trainer.train_step(batches, options.schedule.lr_at(s));
    EXPECT_EQ(r.loss, run.losses[static_cast<std::size_t>(s)]) << "step " << s + 1;
  }
}

TEST(TrainingRun, ResumesWhereTheStoppedRunLeftOff) {
  constexpr std::int64_t kSteps = 8, kStopAt = 4;
  SharedTempDir dir;
  LoopFixture uninterrupted;
  ASSERT_EQ(uninterrupted.start(uninterrupted.options(kSteps))->run(), RunEnd::kCompleted);

  LoopFixture first;
  TrainingRunOptions options = first.options(kSteps);
  options.checkpoint.dir = (dir.path() / "run").string();
  options.checkpoint.save_every = 2;
  options.checkpoint.resume = "auto";
  TrainingRunOptions shorter = options;
  shorter.steps = kStopAt;
  shorter.schedule = options.schedule;  // the schedule of the whole run
  ASSERT_EQ(first.start(shorter)->run(), RunEnd::kCompleted);
  ASSERT_EQ(first.losses.size(), static_cast<std::size_t>(kStopAt));

  LoopFixture second;  // a new process would build the model and engine afresh
  auto resumed = second.start(options);
  ASSERT_TRUE(resumed->resumed_from().has_value());
  EXPECT_EQ(resumed->progress().step, kStopAt);
  EXPECT_EQ(resumed->progress().samples_seen, kStopAt * options.batch.global);
  EXPECT_EQ(resumed->run(), RunEnd::kCompleted);
  ASSERT_EQ(second.losses.size(), static_cast<std::size_t>(kSteps - kStopAt));
  expect_tiles(reads_per_step(second, kSteps - kStopAt), kStopAt, options.batch.global);
  for (std::int64_t s = kStopAt; s < kSteps; ++s) {
    EXPECT_EQ(second.losses[static_cast<std::size_t>(s - kStopAt)], uninterrupted.losses[static_cast<std::size_t>(s)])
        << "step " << s + 1 << " after the resume";
  }
}

TEST(TrainingRun, AResumeKeepsTheCheckpointsGlobalBatch) {
  constexpr std::int64_t kSteps = 6, kStopAt = 3;
  SharedTempDir dir;
  LoopFixture uninterrupted;
  ASSERT_EQ(uninterrupted.start(uninterrupted.options(kSteps))->run(), RunEnd::kCompleted);
  LoopFixture first;
  TrainingRunOptions options = first.options(kSteps);
  options.checkpoint.dir = (dir.path() / "run").string();
  options.checkpoint.resume = "auto";
  TrainingRunOptions shorter = options;
  shorter.steps = kStopAt;
  ASSERT_EQ(first.start(shorter)->run(), RunEnd::kCompleted);
  const std::int64_t global = options.batch.global;  // micro 2 x ranks x accumulation 2

  // Asked for micro 1 and nothing else: the global batch is kept with accumulation 4.
  LoopFixture second;
  BatchRequest request;
  request.micro = 1;
  request.data_parallel_ranks = second.world.size();
  request.seq_len = tiny_gpt().max_seq_len;
  const ResumedBatch kept = plan_run_batch(request, options.checkpoint, BatchChange::kKeep, second.world);
  EXPECT_EQ(kept.plan.global, global);
  EXPECT_EQ(kept.plan.accumulation, 2 * kAccumulation);
  EXPECT_FALSE(kept.global_changed);
  EXPECT_EQ(kept.line, "resume: global batch " + std::to_string(global) + " kept at " +
                           std::to_string(second.world.size()) + " ranks: micro 2 -> 1, accumulation 2 -> 4 (micro 1 x ranks " +
                           std::to_string(second.world.size()) + " x accumulation 4)");

  // The flags as given (micro 1, accumulation 1) make another global batch: refused.
  TrainingRunOptions other = options;
  other.batch = plan_batch(request);
  try {
    TrainingRun refused(*second.engine, second.world, other,
                        [&](std::int64_t f, std::int64_t c) { return sample_rows(*second.device, f, c); });
    ADD_FAILURE() << "a resume with global batch " << other.batch.global << " instead of " << global << " ran";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.setting(), "batch.global");
    EXPECT_NE(e.problem().find("was trained with global batch " + std::to_string(global)), std::string::npos)
        << e.what();
  }

  TrainingRunOptions resumed_options = options;
  resumed_options.batch = kept.plan;
  auto resumed = second.start(resumed_options);
  ASSERT_EQ(resumed->progress().samples_seen, kStopAt * global);
  ASSERT_EQ(resumed->run(), RunEnd::kCompleted);
  // Every sample of steps 4..6 read exactly once, across ranks and micro-steps.
  std::vector<int> hits(static_cast<std::size_t>(kSteps * global));
  for (const auto& [f, c] : second.reads) {
    for (std::int64_t i = f; i < f + c; ++i) ++hits.at(static_cast<std::size_t>(i));
  }
  MPI_Allreduce(MPI_IN_PLACE, hits.data(), static_cast<int>(hits.size()), MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  for (std::int64_t i = 0; i < kSteps * global; ++i) {
    EXPECT_EQ(hits[static_cast<std::size_t>(i)], i < kStopAt * global ? 0 : 1) << "sample " << i;
  }
  ASSERT_EQ(second.losses.size(), static_cast<std::size_t>(kSteps - kStopAt));
  for (std::int64_t s = kStopAt; s < kSteps; ++s) {  // micro-batches of 1 sum the gradients in another order
    EXPECT_NEAR(second.losses[static_cast<std::size_t>(s - kStopAt)], uninterrupted.losses[static_cast<std::size_t>(s)],
                1e-4f)
        << "step " << s + 1 << " after the resume";
  }

  resumed.reset();  // gives the run directory back

  // batch_change kAllow lets the run change it (the data goes on from the checkpoint's sample).
  LoopFixture third;
  TrainingRunOptions allowed = other;
  allowed.batch_change = BatchChange::kAllow;
  allowed.checkpoint.resume = (dir.path() / "run" / step_dir_name(kStopAt)).string();
  auto changed = third.start(allowed);
  EXPECT_EQ(changed->progress().samples_seen, kStopAt * global);
}

TEST(TrainingRun, AStopSignalSavesTheStepAndEndsTheRun) {
  SharedTempDir dir;
  LoopFixture run;
  TrainingRunOptions options = run.options(6);
  options.checkpoint.dir = (dir.path() / "run").string();
  const std::int64_t global = options.batch.global;
  bool signalled = false;
  // Rank 1 gets SIGUSR1 while step 3 reads its batches: every rank saves step 3 at its boundary and stops.
  TrainingRun training(*run.engine, run.world, options, [&](std::int64_t first, std::int64_t count) {
    if (first / global == 2 && run.world.rank() == 1 && !signalled) {
      signalled = true;
      std::raise(SIGUSR1);
    }
    return sample_rows(*run.device, first, count);
  });
  EXPECT_EQ(training.run(), RunEnd::kStopped);
  EXPECT_EQ(training.progress().step, 3);
  MPI_Barrier(MPI_COMM_WORLD);
  const auto latest = resolve_checkpoint(options.checkpoint.dir);
  ASSERT_TRUE(latest.has_value()) << "nothing saved in " << options.checkpoint.dir;
  EXPECT_EQ(latest->filename().string(), step_dir_name(3));
}

TEST(TrainingRun, RefusesOptionsItCannotRunWith) {
  LoopFixture run;
  TrainingRunOptions other_ranks = run.options(3);
  other_ranks.batch.ranks = run.world.size() + 1;
  other_ranks.batch.global = other_ranks.batch.micro * other_ranks.batch.ranks * other_ranks.batch.accumulation;
  try {
    TrainingRun training(*run.engine, run.world, other_ranks,
                         [&](std::int64_t f, std::int64_t c) { return sample_rows(*run.device, f, c); });
    ADD_FAILURE() << "a plan for another rank count was accepted";
  } catch (const SettingError& e) {
    EXPECT_EQ(e.setting(), "batch.ranks");
    EXPECT_NE(std::string(e.what()).find("this job has " + std::to_string(run.world.size()) + " data-parallel ranks"),
              std::string::npos)
        << e.what();
  }
  TrainingRunOptions no_log = run.options(3);
  no_log.log_every = 0;
  EXPECT_THROW(TrainingRun(*run.engine, run.world, no_log,
                           [&](std::int64_t f, std::int64_t c) { return sample_rows(*run.device, f, c); }),
               SettingError);
}

}  // namespace
}  // namespace tessera::testing
