// CudaKernels attention against CpuKernels: forward (out, probs, with exact zeros above the
// diagonal) and backward (dqkv) for short and longer sequences, t = 1, head sizes that are not a
// multiple of 32, and both ways of batching the (sequence, head) pairs (more heads than sequences
// and fewer); bf16 tensors through the typed launchers within the bf16 tolerance; channels not
// divisible by the heads are refused.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tests/runtime/cuda/cuda_test_support.hpp"

namespace tessera {
namespace {

using test::DeviceBuffer;
using test::expect_close;
using test::random_floats;

class CudaAttention : public test::CudaKernelTest {};

struct AttnShape {
  std::int64_t b, t, c, nh;
};

std::string describe(const AttnShape& s) {
  return "(b=" + std::to_string(s.b) + ",t=" + std::to_string(s.t) + ",c=" + std::to_string(s.c) +
         ",nh=" + std::to_string(s.nh) + ")";
}

void expect_causal_zeros(const std::vector<float>& probs, const AttnShape& s, const std::string& label) {
  for (std::int64_t pair = 0; pair < s.b * s.nh; ++pair) {
    for (std::int64_t i = 0; i < s.t; ++i) {
      for (std::int64_t j = i + 1; j < s.t; ++j) {
        const float p = probs[(pair * s.t + i) * s.t + j];
        if (p != 0.0f) {
          ADD_FAILURE() << label << ": probs[pair " << pair << "][" << i << "][" << j << "] above the diagonal is " << p
                        << ", expected 0";
          return;
        }
      }
    }
  }
}

void check_against_cpu(const CudaKernels& gpu, const CpuKernels& cpu, const AttnShape& s, std::uint32_t seed) {
  const std::int64_t tt = s.b * s.nh * s.t * s.t;
  const auto qkv = random_floats(s.b * s.t * 3 * s.c, seed, -2.0f, 2.0f);
  const auto dout = random_floats(s.b * s.t * s.c, seed + 1);
  std::vector<float> out(s.b * s.t * s.c), probs(tt), dqkv(qkv.size()), scratch(tt);
  DeviceBuffer<float> g_qkv(qkv), g_dout(dout), g_out(out.size()), g_probs(tt), g_dqkv(qkv.size()), g_scratch(tt);
  gpu.attention_forward(g_out.get(), g_probs.get(), g_qkv.get(), s.b, s.t, s.c, s.nh);
  cpu.attention_forward(out.data(), probs.data(), qkv.data(), s.b, s.t, s.c, s.nh);
  const std::string label = "attention f32 " + describe(s);
  const auto gpu_probs = g_probs.download();
  expect_close(g_out.download(), out, kF32Tolerance, label + " forward out");
  expect_close(gpu_probs, probs, kF32Tolerance, label + " forward probs");
  expect_causal_zeros(gpu_probs, s, label + " forward probs");
  gpu.attention_backward(g_dqkv.get(), g_scratch.get(), g_dout.get(), g_qkv.get(), g_probs.get(), s.b, s.t, s.c, s.nh);
  cpu.attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), probs.data(), s.b, s.t, s.c, s.nh);
  expect_close(g_dqkv.download(), dqkv, kF32Tolerance, label + " backward dqkv");
}

TEST_F(CudaAttention, ShortSequenceMoreHeadsThanSequences) { check_against_cpu(*gpu_, cpu_, {2, 7, 12, 3}, 1); }
TEST_F(CudaAttention, LongerSequence) { check_against_cpu(*gpu_, cpu_, {1, 150, 16, 2}, 2); }
TEST_F(CudaAttention, FewerHeadsThanSequencesOddHeadSize) { check_against_cpu(*gpu_, cpu_, {5, 33, 40, 2}, 3); }
TEST_F(CudaAttention, SinglePosition) { check_against_cpu(*gpu_, cpu_, {3, 1, 16, 4}, 4); }

TEST_F(CudaAttention, Bf16MatchesCpuOnRoundedInputs) {
  const AttnShape s{2, 20, 24, 2};
  const std::int64_t tt = s.b * s.nh * s.t * s.t;
  const auto qkv = test::round_to_bf16(random_floats(s.b * s.t * 3 * s.c, 11));
  const auto dout = test::round_to_bf16(random_floats(s.b * s.t * s.c, 12));
  std::vector<float> out(s.b * s.t * s.c), probs(tt), dqkv(qkv.size()), scratch(tt);
  cpu_.attention_forward(out.data(), probs.data(), qkv.data(), s.b, s.t, s.c, s.nh);
  cpu_.attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), probs.data(), s.b, s.t, s.c, s.nh);
  DeviceBuffer<__nv_bfloat16> g_qkv(test::to_bf16(qkv)), g_dout(test::to_bf16(dout)), g_out(out.size());
  DeviceBuffer<__nv_bfloat16> g_probs(tt), g_dqkv(qkv.size()), g_scratch(tt);
  CublasContext blas(0, stream_);
  detail::launch_attention_forward(blas, GemmMath::kF32, g_out.get(), g_probs.get(), g_qkv.get(), s.b, s.t, s.c, s.nh);
  detail::launch_attention_backward(blas, GemmMath::kF32, g_dqkv.get(), g_scratch.get(), g_dout.get(), g_qkv.get(),
                                    g_probs.get(), s.b, s.t, s.c, s.nh);
  const std::string label = "attention bf16 " + describe(s);
  const auto gpu_probs = test::from_bf16(g_probs.download());
  expect_close(test::from_bf16(g_out.download()), out, kBf16Tolerance, label + " forward out");
  expect_close(gpu_probs, probs, kBf16Tolerance, label + " forward probs");
  expect_causal_zeros(gpu_probs, s, label + " forward probs");
  expect_close(test::from_bf16(g_dqkv.download()), dqkv, kBf16Tolerance, label + " backward dqkv");
}

TEST_F(CudaAttention, RefusesChannelsNotDivisibleByHeads) {
  DeviceBuffer<float> buf(64);
  EXPECT_THROW(gpu_->attention_forward(buf.get(), buf.get(), buf.get(), 1, 2, 10, 3), std::invalid_argument);
  EXPECT_THROW(gpu_->attention_backward(buf.get(), buf.get(), buf.get(), buf.get(), buf.get(), 1, 2, 10, 3),
               std::invalid_argument);
}

}  // namespace
}  // namespace tessera
