// The tiny GPT (and the tiny Llama: RMSNorm, rotary grouped-query attention, SwiGLU, untied head) on
// the CUDA device against the CPU device, same seed and batch: the loss and every
// parameter gradient within the f32 tolerance (precision/tolerance.hpp) with f32 GEMM math, and the
// losses of a few LocalTrainer steps (AdamW, clipping) within a looser bound, since small gradient
// differences move Adam's normalised updates. With bf16 GEMM math (tensor cores, and cuDNN's fused
// attention where the build has it), 20 steps on one batch follow the CPU's losses within 1%.
// Skips without a usable GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tessera/core/random.hpp"
#include "tessera/model/modules/cross_entropy_loss.hpp"
#include "tessera/model/modules/gpt.hpp"
#include "tessera/precision/tolerance.hpp"
#include "tessera/runtime/cuda/cuda_device.hpp"
#include "tessera/training/local_trainer.hpp"
#include "tests/runtime/cuda/gpu_test_support.hpp"

namespace tessera {
namespace {

using testing::compare_relative;

GptConfig small_gpt() {
  GptConfig c;
  c.vocab_size = 96;
  c.max_seq_len = 16;
  c.layers = 2;
  c.heads = 4;
  c.channels = 64;
  return c;
}

constexpr std::uint64_t kSeed = 29;
constexpr std::int64_t kBatch = 4;

MicroBatch batch_of(Device& device, const GptConfig& c, std::uint64_t seed) {
  Rng rng(seed);
  std::vector<std::int32_t> in(static_cast<std::size_t>(kBatch * c.max_seq_len)), tg(in.size());
  for (auto& x : in) x = static_cast<std::int32_t>(rng.below(c.vocab_size));
  for (auto& x : tg) x = static_cast<std::int32_t>(rng.below(c.vocab_size));
  return {Tensor::from_host_i32(device, in, {kBatch, c.max_seq_len}, MemoryCategory::kWorkspace),
          Tensor::from_host_i32(device, tg, {kBatch, c.max_seq_len}, MemoryCategory::kWorkspace)};
}

struct ForwardBackward {
  double loss = 0.0;
  std::vector<std::string> names;
  std::vector<std::vector<float>> grads;
};

// The small GPT's sizes in Llama's layout: 4 query heads sharing 2 key/value heads.
GptConfig small_llama() {
  const GptConfig g = small_gpt();
  return GptConfig::llama(g.vocab_size, g.max_seq_len, g.layers, g.heads, g.channels, 2, 96);
}

ForwardBackward forward_backward(Device& device, const GptConfig& config) {
  Gpt model(config);
  materialize_parameters(model, device, kSeed);
  allocate_gradients(model, device);
  const MicroBatch batch = batch_of(device, config, 5);
  Context ctx(device);
  CrossEntropyLoss loss;
  ForwardBackward out;
  Tensor logits = model.forward(ctx, batch.inputs);
  out.loss = loss.forward(ctx, logits, batch.targets);
  logits = Tensor();
  model.backward(ctx, loss.backward(ctx, 1.0f));
  for (auto& np : model.named_parameters()) {
    out.names.push_back(np.name);
    out.grads.push_back(np.parameter->grad.to_host_f32());
  }
  return out;
}

TEST(CudaGpt, LossAndEveryGradientMatchTheCpuDevice) {
  TESSERA_REQUIRE_GPU();
  auto cpu = make_cpu_device();
  CudaDevice gpu(0, GemmMath::kF32);
  for (const GptConfig& config : {small_gpt(), small_llama()}) {
    const ForwardBackward expected = forward_backward(*cpu, config);
    const ForwardBackward actual = forward_backward(gpu, config);
    EXPECT_NEAR(actual.loss, expected.loss, kF32Tolerance * std::fabs(expected.loss))
        << config.to_string() << ": loss on " << gpu.name() << " vs the CPU";
    ASSERT_EQ(actual.grads.size(), expected.grads.size());
    for (std::size_t i = 0; i < expected.grads.size(); ++i) {
      const std::string error = compare_relative(actual.grads[i], expected.grads[i], kF32Tolerance,
                                                 config.to_string() + ": gradient of " + expected.names[i]);
      EXPECT_TRUE(error.empty()) << error;
    }
  }
}

TEST(CudaGpt, TrainingStepsFollowTheCpuDevice) {
  TESSERA_REQUIRE_GPU();
  constexpr int kSteps = 4;
  constexpr float kLr = 1e-3f;
  auto run = [&](Device& device) {
    Gpt model(small_gpt());
    materialize_parameters(model, device, kSeed);
    AdamWConfig adamw;
    adamw.weight_decay = 0.1f;
    LocalTrainer trainer(model, device, adamw, /*grad_clip=*/1.0f);
    std::vector<float> losses;
    for (int s = 0; s < kSteps; ++s) {
      losses.push_back(trainer.step({batch_of(device, small_gpt(), 100 + s)}, kLr).loss);
    }
    return losses;
  };
  auto cpu = make_cpu_device();
  CudaDevice gpu(0, GemmMath::kF32);
  const std::vector<float> expected = run(*cpu);
  const std::vector<float> actual = run(gpu);
  EXPECT_NEAR(actual[0], expected[0], kF32Tolerance * std::fabs(expected[0])) << "step 0 (before any update)";
  const std::string error = compare_relative(actual, expected, 1e-4, "losses of " + std::to_string(kSteps) + " steps");
  EXPECT_TRUE(error.empty()) << error;
}

TEST(CudaGpt, Bf16MathTwentyStepsWithinOnePercentOfTheCpu) {
  TESSERA_REQUIRE_GPU();
  constexpr int kSteps = 20;
  constexpr float kLr = 3e-3f;
  auto run = [&](Device& device) {
    Gpt model(small_gpt());
    materialize_parameters(model, device, kSeed);
    LocalTrainer trainer(model, device, AdamWConfig{}, /*grad_clip=*/1.0f);
    std::vector<float> losses;
    for (int s = 0; s < kSteps; ++s) losses.push_back(trainer.step({batch_of(device, small_gpt(), 7)}, kLr).loss);
    return losses;
  };
  auto cpu = make_cpu_device();
  CudaDevice gpu(0, GemmMath::kBf16);
  const GptConfig c = small_gpt();
  std::string why;
  const bool fused = gpu.cuda_kernels().fused_attention_at({kBatch, c.max_seq_len, c.channels, c.heads}, DType::kF32, &why);
#if TESSERA_HAVE_CUDNN
  EXPECT_TRUE(fused) << "cuDNN attention expected with bf16 math: " << why;
#endif
  const std::vector<float> expected = run(*cpu);
  const std::vector<float> actual = run(gpu);
  ASSERT_LT(expected.back(), 0.8f * expected.front()) << "the CPU run should learn the batch";
  for (int s = 0; s < kSteps; ++s) {
    EXPECT_NEAR(actual[s], expected[s], 0.01 * std::fabs(expected[s]))
        << "step " << s << " on " << gpu.name() << (fused ? " (cuDNN attention)" : " (tiled attention)");
  }
}

}  // namespace
}  // namespace tessera
