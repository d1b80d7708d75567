// The memory tracker's activations category shows the saving: peak tracked activation bytes of one
// training step (forward, loss, backward) of the tiny GPT with full-block checkpointing stay under a
// bound worked out from the shapes, which the unwrapped model exceeds; selective and every:2 lie
// strictly between the two.
#include <gtest/gtest.h>

#include "recompute_test_support.hpp"

namespace tessera {
namespace {

using testing::checkpoint_test_config;

std::int64_t peak_activation_bytes(const RecomputePolicy& policy) {
  auto device = make_cpu_device();
  auto model = testing::make_model(*device, policy);
  const GptConfig c = checkpoint_test_config();
  const auto batch = testing::random_tokens(*device, c, 2, c.max_seq_len, 9);
  device->memory().reset_peaks();
  testing::forward_backward(*model, *device, batch);
  EXPECT_EQ(device->memory().current(MemoryCategory::kActivations), 0) << policy.to_string();
  return device->memory().peak(MemoryCategory::kActivations);
}

// Upper bound for full-block checkpointing, in bytes. The peak falls in the backward of the last
// block, when these f32 tensors are alive together:
//   dlogits (B,T,V)            the loss gradient, held by the caller for the whole backward
//   L block inputs (B,T,C)     what the L wrappers keep (the embedding output is block 0's input)
//   dy (B,T,C)                 the gradient entering the block
//   one block's internals      recomputed: ln_1 out, qkv (3), attention out, x1, ln_2 out,
//                              fc out (4), GELU out (4) = 15 (B,T,C); attention's
//                              log-sum-exp (B,NH,T) (no (B,NH,T,T) tensor: the kernels are tiled);
//                              mean and rstd of both LayerNorms 4 (B,T)
//   its largest transient      the gradient of the GELU output (B,T,4C) during the MLP backward
// = B*T*V + (L + 1 + 15 + 4) * B*T*C + B*NH*T + 4*B*T floats. Every other moment of the step
// (forward of the last block: L + 17 (B,T,C) + lse; the head: logits + (L + 3) (B,T,C)) is smaller.
std::int64_t full_block_bound_bytes(const GptConfig& c, std::int64_t b) {
  const std::int64_t t = c.max_seq_len, btc = b * t * c.channels;
  const std::int64_t floats = b * t * c.vocab_size + (c.layers + 1 + 15 + 4) * btc + b * c.heads * t + 4 * b * t;
  return floats * static_cast<std::int64_t>(sizeof(float));
}

TEST(ActivationMemory, FullBlockCheckpointingStaysUnderTheShapeBound) {
  const GptConfig c = checkpoint_test_config();
  const std::int64_t bound = full_block_bound_bytes(c, 2);
  const std::int64_t none = peak_activation_bytes(RecomputePolicy::none());
  const std::int64_t blocks = peak_activation_bytes(RecomputePolicy::by_type("TransformerBlock"));
  EXPECT_LE(blocks, bound) << "peak activation bytes with every block checkpointed (" << c.to_string()
                           << ", B=2): actual " << blocks << ", bound " << bound;
  // The bound is tight enough to mean something: the unwrapped model is well above it.
  EXPECT_GT(none, bound) << "unwrapped peak " << none << " should exceed the full-block bound " << bound;
}

TEST(ActivationMemory, SelectiveAndEveryOtherBlockLieBetweenNoneAndBlocks) {
  const std::int64_t none = peak_activation_bytes(RecomputePolicy::none());
  const std::int64_t blocks = peak_activation_bytes(RecomputePolicy::by_type("TransformerBlock"));
  const std::int64_t selective = peak_activation_bytes(RecomputePolicy::selective());
  const std::int64_t every2 = peak_activation_bytes(RecomputePolicy::every_kth(2));
  EXPECT_LT(blocks, selective) << "blocks " << blocks << " vs selective " << selective;
  EXPECT_LT(selective, none) << "selective " << selective << " vs none " << none;
  EXPECT_LT(blocks, every2) << "blocks " << blocks << " vs every:2 " << every2;
  EXPECT_LT(every2, none) << "every:2 " << every2 << " vs none " << none;
}

}  // namespace
}  // namespace tessera
