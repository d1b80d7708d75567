// TransformerBlock and MLP run fused kernels when their children are plain modules — the residual
// add + LayerNorm (forward, and the residual gradient in both LayerNorms' backward) and linear +
// GELU (forward and backward) — and the separate kernels when a child is wrapped. Both paths give
// the same loss and the same gradients bit for bit, for the plain block, with selective
// recomputation, and under full-block checkpointing.
#include <gtest/gtest.h>

#include "tessera/runtime/cpu/cpu_device.hpp"
#include "tests/model/recompute/recompute_test_support.hpp"

namespace tessera {
namespace {

using testing::checkpoint_test_config;
using testing::expect_bit_identical;
using testing::forward_backward;
using testing::gradients_of;
using testing::make_model;
using testing::random_tokens;

struct StepRun {
  float loss = 0.0f;
  std::vector<testing::NamedValues> grads;
};

// One forward/backward of the checkpoint test GPT with `policies` applied in order.
StepRun run(const std::vector<RecomputePolicy>& policies) {
  auto device = make_cpu_device();
  auto model = make_model(*device, RecomputePolicy::none());
  for (const RecomputePolicy& p : policies) apply_recompute(*model, p);
  const GptConfig c = checkpoint_test_config();
  const auto batch = random_tokens(*device, c, 2, c.max_seq_len, 9);
  StepRun r;
  r.loss = forward_backward(*model, *device, batch);
  r.grads = gradients_of(*model);
  return r;
}

void expect_same(const StepRun& expected, const StepRun& actual, const std::string& what) {
  EXPECT_EQ(actual.loss, expected.loss) << what << ": loss (fused " << expected.loss << ", unfused " << actual.loss
                                        << ")";
  expect_bit_identical(expected.grads, actual.grads, what);
}

TEST(TransformerBlockFusion, WrappedLayerNormsGiveTheFusedResidualPathsBits) {
  // Every LayerNorm wrapped: the block adds the residual and normalises in separate kernels.
  expect_same(run({}), run({RecomputePolicy::by_type("LayerNorm")}), "LayerNorms wrapped");
}

TEST(TransformerBlockFusion, WrappedLinearLayersGiveTheFusedGeluPathsBits) {
  // Every Linear wrapped: the MLP runs fc, then the GELU kernel; backward GELU, then fc.
  expect_same(run({}), run({RecomputePolicy::by_type("Linear")}), "Linear layers wrapped");
}

TEST(TransformerBlockFusion, SelectiveRecomputationAndBlockCheckpointingKeepTheBits) {
  const StepRun plain = run({});
  expect_same(plain, run({RecomputePolicy::selective()}), "selective recomputation (fused)");
  expect_same(plain, run({RecomputePolicy::by_type("TransformerBlock")}), "block checkpointing (fused)");
  expect_same(plain, run({RecomputePolicy::by_type("Linear"), RecomputePolicy::by_type("TransformerBlock")}),
              "block checkpointing around wrapped Linear layers (unfused)");
}

}  // namespace
}  // namespace tessera
