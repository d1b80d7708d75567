// CudaKernels cross-entropy against CpuKernels: forward (losses, lse) for small and large logits
// and a vocabulary wider than a block, backward (dlogits) out of place and in place over the
// logits; bf16 logits through the typed launchers; a target outside the vocabulary gives a NaN
// loss and a NaN gradient row instead of reading out of range.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tests/runtime/cuda/cuda_test_support.hpp"

namespace tessera {
namespace {

using test::DeviceBuffer;
using test::expect_close;
using test::random_floats;
using test::random_tokens;

class CudaCrossEntropy : public test::CudaKernelTest {};

std::string describe_logits(std::int64_t n, std::int64_t v) {
  return "(n=" + std::to_string(n) + ",v=" + std::to_string(v) + ")";
}

TEST_F(CudaCrossEntropy, ForwardAndBackwardMatchCpu) {
  for (auto [n, v, spread] :
       {std::tuple<std::int64_t, std::int64_t, float>{1, 3, 1.0f}, {9, 1000, 30.0f}, {5, 50257, 8.0f}}) {
    const auto logits = random_floats(n * v, 1, -spread, spread);
    const auto targets = random_tokens(n, static_cast<std::int32_t>(v), 2);
    const float dloss = 0.37f;
    std::vector<float> losses(n), lse(n), dlogits(n * v);
    cpu_.cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), n, v);
    cpu_.cross_entropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), dloss, n, v);
    DeviceBuffer<float> g_logits(logits), g_losses(n), g_lse(n), g_dlogits(n * v);
    DeviceBuffer<std::int32_t> g_targets(targets);
    gpu_->cross_entropy_forward(g_losses.get(), g_lse.get(), g_logits.get(), g_targets.get(), n, v);
    const std::string label = "cross_entropy f32 " + describe_logits(n, v);
    expect_close(g_losses.download(), losses, kF32Tolerance, label + " forward losses");
    expect_close(g_lse.download(), lse, kF32Tolerance, label + " forward lse");
    gpu_->cross_entropy_backward(g_dlogits.get(), g_logits.get(), g_lse.get(), g_targets.get(), dloss, n, v);
    expect_close(g_dlogits.download(), dlogits, kF32Tolerance, label + " backward dlogits");
    gpu_->cross_entropy_backward(g_logits.get(), g_logits.get(), g_lse.get(), g_targets.get(), dloss, n, v);
    expect_close(g_logits.download(), dlogits, kF32Tolerance, label + " backward dlogits in place over logits");
  }
}

TEST_F(CudaCrossEntropy, Bf16MatchesCpuOnRoundedInputs) {
  const std::int64_t n = 6, v = 3001;
  const auto logits = test::round_to_bf16(random_floats(n * v, 11, -10.0f, 10.0f));
  const auto targets = random_tokens(n, static_cast<std::int32_t>(v), 12);
  std::vector<float> losses(n), lse(n), dlogits(n * v);
  cpu_.cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), n, v);
  cpu_.cross_entropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), 1.0f, n, v);
  DeviceBuffer<__nv_bfloat16> g_logits(test::to_bf16(logits)), g_dlogits(n * v);
  DeviceBuffer<float> g_losses(n), g_lse(n);
  DeviceBuffer<std::int32_t> g_targets(targets);
  detail::launch_cross_entropy_forward(g_losses.get(), g_lse.get(), g_logits.get(), g_targets.get(), n, v, stream_);
  detail::launch_cross_entropy_backward(g_dlogits.get(), g_logits.get(), g_lse.get(), g_targets.get(), 1.0f, n, v,
                                        stream_);
  const std::string label = "cross_entropy bf16 " + describe_logits(n, v);
  expect_close(g_losses.download(), losses, kBf16Tolerance, label + " forward losses");
  expect_close(g_lse.download(), lse, kBf16Tolerance, label + " forward lse");
  expect_close(test::from_bf16(g_dlogits.download()), dlogits, kBf16Tolerance, label + " backward dlogits");
}

TEST_F(CudaCrossEntropy, TargetOutsideTheVocabularyGivesNaNNotAStrayRead) {
  const std::int64_t n = 3, v = 4;
  const std::vector<std::int32_t> targets = {1, 4, -2};  // rows 1 and 2 are bad (-1 is kIgnoredTarget)
  DeviceBuffer<float> g_logits(random_floats(n * v, 21)), g_losses(n), g_lse(n), g_dlogits(n * v);
  DeviceBuffer<std::int32_t> g_targets(targets);
  gpu_->cross_entropy_forward(g_losses.get(), g_lse.get(), g_logits.get(), g_targets.get(), n, v);
  gpu_->cross_entropy_backward(g_dlogits.get(), g_logits.get(), g_lse.get(), g_targets.get(), 1.0f, n, v);
  const auto losses = g_losses.download();
  const auto dlogits = g_dlogits.download();
  EXPECT_TRUE(std::isfinite(losses[0])) << "cross_entropy f32 (n=3,v=4) row 0 (target 1) loss " << losses[0];
  for (std::int64_t row : {1, 2}) {
    EXPECT_TRUE(std::isnan(losses[row])) << "cross_entropy f32 (n=3,v=4) row " << row << " (target " << targets[row]
                                         << ") loss " << losses[row] << ", expected NaN";
    for (std::int64_t j = 0; j < v; ++j) {
      EXPECT_TRUE(std::isnan(dlogits[row * v + j])) << "cross_entropy f32 (n=3,v=4) dlogits[" << row << "][" << j
                                                    << "] = " << dlogits[row * v + j] << ", expected NaN";
    }
  }
}

TEST_F(CudaCrossEntropy, AnIgnoredTargetsRowIsZeroAsOnTheCpu) {
  const std::int64_t n = 2, v = 4;
  const std::vector<std::int32_t> targets = {kIgnoredTarget, 2};
  DeviceBuffer<float> g_logits(random_floats(n * v, 22)), g_losses(n), g_lse(n), g_dlogits(n * v);
  DeviceBuffer<std::int32_t> g_targets(targets);
  gpu_->cross_entropy_forward(g_losses.get(), g_lse.get(), g_logits.get(), g_targets.get(), n, v);
  gpu_->cross_entropy_backward(g_dlogits.get(), g_logits.get(), g_lse.get(), g_targets.get(), 1.0f, n, v);
  const auto losses = g_losses.download(), lse = g_lse.download(), dlogits = g_dlogits.download();
  EXPECT_EQ(losses[0], 0.0f);
  EXPECT_EQ(lse[0], 0.0f);
  EXPECT_TRUE(std::isfinite(losses[1]) && losses[1] > 0.0f) << losses[1];
  for (std::int64_t j = 0; j < v; ++j) EXPECT_EQ(dlogits[j], 0.0f) << "ignored row, column " << j;
}

}  // namespace
}  // namespace tessera
