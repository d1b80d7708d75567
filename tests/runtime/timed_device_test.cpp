// TimedDevice: its own trackers count Storage bytes as the inner device's would; allocation,
// freeing, zero-filling and copies are counted with their bytes; a training step on it gives the
// same bits as on the bare CPU device, with every kernel group of the step timed.
#include "tessera/runtime/timed_device.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/runtime/cpu/cpu_device.hpp"
#include "tessera/runtime/tensor.hpp"
#include "tessera/training/local_trainer.hpp"

namespace tessera {
namespace {

MicroBatch random_batch(Device& device, const GptConfig& c, std::int64_t b, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<std::int32_t> in(static_cast<std::size_t>(b * c.max_seq_len)), tg(in.size());
  for (auto& x : in) x = static_cast<std::int32_t>(rng.below(c.vocab_size));
  for (auto& x : tg) x = static_cast<std::int32_t>(rng.below(c.vocab_size));
  return {Tensor::from_host_i32(device, in, {b, c.max_seq_len}, MemoryCategory::kWorkspace),
          Tensor::from_host_i32(device, tg, {b, c.max_seq_len}, MemoryCategory::kWorkspace)};
}

TEST(TimedDevice, RefusesNoDevice) { EXPECT_THROW(TimedDevice(nullptr), std::invalid_argument); }

TEST(TimedDevice, TracksStorageAndCountsMemoryOperationsWithTheirBytes) {
  TimedDevice device(make_cpu_device());
  EXPECT_EQ(device.kind(), DeviceKind::kCpu);
  EXPECT_EQ(device.memory_space(), MemorySpace::kHost);
  {
    Tensor z = Tensor::zeros(device, {1000}, DType::kF32, MemoryCategory::kGradients);
    EXPECT_EQ(device.memory().current(MemoryCategory::kGradients), 4000);
    EXPECT_EQ(device.inner().memory().current_total(), 0) << "Storage reports to the device it was made on";
    const std::vector<float> host(1000, 2.0f);
    z.copy_from_host_f32(host);
    EXPECT_EQ(z.to_host_f32(), host);
  }
  EXPECT_EQ(device.memory().current_total(), 0);
  const MemoryOpTimes t = device.memory_op_times();
  EXPECT_EQ(t.calls_of(MemoryOp::kAllocate), 1);
  EXPECT_EQ(t.bytes_of(MemoryOp::kAllocate), 4000);
  EXPECT_EQ(t.calls_of(MemoryOp::kFree), 1);
  EXPECT_EQ(t.bytes_of(MemoryOp::kFree), 4000);
  EXPECT_EQ(t.calls_of(MemoryOp::kFill), 1);
  EXPECT_EQ(t.bytes_of(MemoryOp::kFill), 4000);
  EXPECT_EQ(t.calls_of(MemoryOp::kCopy), 2) << "one copy in, one copy out";
  EXPECT_EQ(t.bytes_of(MemoryOp::kCopy), 8000);
  device.reset_times();
  EXPECT_EQ(device.memory_op_times().total_seconds(), 0.0);
  EXPECT_EQ(device.memory_op_times().calls_of(MemoryOp::kAllocate), 0);
}

TEST(TimedDevice, ATrainingStepGivesTheSameBitsAndTimesEveryKernelGroup) {
  const GptConfig config{64, 16, 2, 2, 32};
  auto run = [&](Device& device) {
    Gpt model(config);
    materialize_parameters(model, device, 5);
    LocalTrainer trainer(model, device, AdamWConfig{}, 1.0f);
    const std::vector<MicroBatch> batch{random_batch(device, config, 2, 3)};
    std::vector<StepResult> results;
    for (int s = 0; s < 2; ++s) results.push_back(trainer.step(batch, 1e-3f));
    return results;
  };
  auto cpu = make_cpu_device();
  TimedDevice timed(make_cpu_device());
  const std::vector<StepResult> expected = run(*cpu);
  timed.reset_times();
  const std::vector<StepResult> actual = run(timed);
  for (std::size_t s = 0; s < expected.size(); ++s) {
    EXPECT_EQ(actual[s].loss, expected[s].loss) << "step " << s << " loss on the timed device";
    EXPECT_EQ(actual[s].grad_norm, expected[s].grad_norm) << "step " << s << " gradient norm on the timed device";
  }
  EXPECT_EQ(timed.memory().peak_total(), cpu->memory().peak_total()) << "the same bytes tracked";
  const KernelTimes k = timed.kernel_times();
  for (KernelGroup g : {KernelGroup::kGemm, KernelGroup::kAttention, KernelGroup::kElementwise, KernelGroup::kLoss,
                        KernelGroup::kOptimizer}) {
    EXPECT_GT(k.calls_of(g), 0) << kernel_group_name(g) << " kernels in an f32 training step";
    EXPECT_GT(k.seconds_of(g), 0.0) << kernel_group_name(g);
  }
  EXPECT_EQ(k.calls_of(KernelGroup::kConversion), 0) << "no dtype conversion in an f32 step";
}

}  // namespace
}  // namespace tessera
