// Dropout across a resume: a model with Dropout trained through TrainingRun for 6 steps of 2
// micro-batches, and the same run stopped after 3 steps and resumed from its checkpoint (TrainingRun
// sets the Dropout counters to steps x accumulation), log the same losses at steps 3-5 bit for bit;
// resumed with the counters reset to 0 instead, they do not (the masks are the ones of steps 0-2).
// tessera-test-ranks: 1
// tessera-test-timeout: 300
#include <gtest/gtest.h>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/core/random.hpp"
#include "tessera/model/modules/activation.hpp"
#include "tessera/model/modules/dropout.hpp"
#include "tessera/model/modules/embedding.hpp"
#include "tessera/model/modules/linear.hpp"
#include "tessera/model/modules/sequential.hpp"
#include "tessera/run/training_run.hpp"
#include "tests/support/scratch_dir.hpp"

namespace tessera {
namespace {

constexpr std::int64_t kResumeVocab = 10, kResumeSeq = 4, kResumeWidth = 16, kResumeAccumulation = 2;
constexpr std::uint64_t kResumeSeed = 31;

// Global sample i: tokens and targets from a generator seeded with i.
MicroBatch resume_samples(Device& device, std::int64_t first, std::int64_t count) {
  std::vector<std::int32_t> in, tg;
  for (std::int64_t r = first; r < first + count; ++r) {
    Rng rng(static_cast<std::uint64_t>(r) + 1000);
    for (std::int64_t t = 0; t < kResumeSeq; ++t) {
      in.push_back(static_cast<std::int32_t>(rng.below(kResumeVocab)));
      tg.push_back(static_cast<std::int32_t>((in.back() * 3 + t) % kResumeVocab));
    }
  }
  return {Tensor::from_host_i32(device, in, {count, kResumeSeq}, MemoryCategory::kActivations),
          Tensor::from_host_i32(device, tg, {count, kResumeSeq}, MemoryCategory::kActivations)};
}

enum class Counters { kFromProgress, kZero };

// Trains `dir` up to `steps` (resuming from its latest checkpoint) and returns {step: loss} of the
// steps this call ran.
std::map<std::int64_t, float> train_until(const std::string& dir, std::int64_t steps, Counters counters) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  Sequential model(std::make_unique<Embedding>(kResumeVocab, kResumeSeq, kResumeWidth, 0.5f),
                   std::make_unique<Dropout>(0.3f), std::make_unique<Linear>(kResumeWidth, kResumeWidth, true, 0.3f),
                   std::make_unique<Gelu>(), std::make_unique<Dropout>(0.2f),
                   std::make_unique<Linear>(kResumeWidth, kResumeVocab, true, 0.3f));
  ShardingConfig sharding;
  ShardedEngine engine(model, *device, world, sharding, kResumeSeed);
  TrainingRunOptions options;
  options.steps = steps;
  BatchRequest request;
  request.micro = 2;
  request.accumulation = kResumeAccumulation;
  request.seq_len = kResumeSeq;
  options.batch = plan_batch(request);
  options.schedule = LrSchedule{1e-2f, 0, 6, 1.0f};
  options.checkpoint.dir = dir;
  options.checkpoint.save_every = 3;
  options.checkpoint.resume = "auto";
  options.run_config.set_model("model", "dropout resume test");
  options.progress = ProgressStyle::kQuiet;
  options.seed = kResumeSeed;
  std::map<std::int64_t, float> losses;
  options.on_step = [&](std::int64_t step, const StepResult& r) { losses[step - 1] = r.loss; };
  TrainingRun run(engine, world, options,
                  [&](std::int64_t first, std::int64_t count) { return resume_samples(*device, first, count); });
  // TrainingRun seeded every Dropout with run.seed and steps x accumulation; the wrong resume resets them.
  if (counters == Counters::kZero) {
    EXPECT_EQ(seed_dropout(model, kResumeSeed, 0), 2);
  }
  EXPECT_EQ(run.run(), RunEnd::kCompleted);
  return losses;
}

TEST(DropoutResume, ResumedRunDrawsTheUninterruptedRunsMasks) {
  testing::ScratchDir scratch("dropout_resume");
  const auto reference = train_until((scratch.path() / "reference").string(), 6, Counters::kFromProgress);
  ASSERT_EQ(reference.size(), 6u);
  const std::string dir = (scratch.path() / "resumed").string();
  const auto first = train_until(dir, 3, Counters::kFromProgress);
  const auto second = train_until(dir, 6, Counters::kFromProgress);
  ASSERT_EQ(first.size(), 3u);
  ASSERT_EQ(second.size(), 3u) << "the second run did not resume at step 3";
  for (std::int64_t s = 0; s < 3; ++s) EXPECT_EQ(first.at(s), reference.at(s)) << "step " << s;
  for (std::int64_t s = 3; s < 6; ++s) EXPECT_EQ(second.at(s), reference.at(s)) << "step " << s << " after the resume";

  // The counters left at 0 on the resume: the masks of steps 0-2 again, other losses.
  const std::string wrong = (scratch.path() / "counters_at_zero").string();
  train_until(wrong, 3, Counters::kFromProgress);
  const auto replayed = train_until(wrong, 6, Counters::kZero);
  int differing = 0;
  for (std::int64_t s = 3; s < 6; ++s) differing += replayed.at(s) != reference.at(s);
  EXPECT_GT(differing, 0) << "the masks did not matter: the test cannot tell a right resume from a wrong one";
}

}  // namespace
}  // namespace tessera
