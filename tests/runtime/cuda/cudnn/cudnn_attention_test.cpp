// cuDNN's fused attention as the CUDA kernels' table runs it with bf16 GEMM math, against the CPU
// kernels on bf16-rounded inputs within the bf16 tolerance: forward (out, lse) and backward (dqkv)
// for GPT-2's head size (64), a head of 128 and a short sequence; backward gives
// the same bits on a second run (cuDNN's deterministic algorithm); one graph pair is built per shape
// and reused; the call without its scratch is refused; what cuDNN refuses (head size 12, a single
// position) and f32 GEMM math run the tiled kernel instead, and say why. Skips without a GPU or
// without cuDNN in the build.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "tests/runtime/cuda/cuda_test_support.hpp"
#if TESSERA_HAVE_CUDNN
#include "tessera/runtime/cuda/cudnn/cudnn_attention.hpp"
#endif

namespace tessera {
namespace {

using test::DeviceBuffer;
using test::expect_close;
using test::random_floats;

class CudnnAttentionTest : public test::CudaKernelTest {
 protected:
  void SetUp() override {
#if !TESSERA_HAVE_CUDNN
    GTEST_SKIP() << "this build has no cuDNN";
#endif
    test::CudaKernelTest::SetUp();
    if (IsSkipped()) return;
    gpu_->set_gemm_math(GemmMath::kBf16);
  }
};

struct Outputs {
  std::vector<float> out, lse, dqkv;
};

// Forward then backward of `s` through the GPU's table, with the scratch the table asks for.
Outputs run(const CudaKernels& kernels, const AttentionShape& s, const std::vector<float>& qkv,
            const std::vector<float>& dout) {
  DeviceBuffer<float> g_qkv(qkv), g_dout(dout), g_out(s.b * s.t * s.c), g_lse(s.b * s.nh * s.t);
  DeviceBuffer<float> g_dqkv(qkv.size()), g_delta(s.b * s.nh * s.t);
  const std::size_t bytes = kernels.attention_scratch_bytes(s.b, s.t, s.c, s.nh, DType::kF32);
  DeviceBuffer<char> scratch(std::max<std::size_t>(bytes, 1));
  void* scratch_ptr = bytes == 0 ? nullptr : scratch.get();
  kernels.attention_forward(g_out.get(), g_lse.get(), g_qkv.get(), s.b, s.t, s.c, s.nh, scratch_ptr);
  kernels.attention_backward(g_dqkv.get(), g_delta.get(), g_dout.get(), g_qkv.get(), g_out.get(), g_lse.get(), s.b, s.t,
                             s.c, s.nh, scratch_ptr);
  return {g_out.download(), g_lse.download(), g_dqkv.download()};
}

// The same on the CPU's table, in host memory.
Outputs run(const CpuKernels& kernels, const AttentionShape& s, const std::vector<float>& qkv,
            const std::vector<float>& dout) {
  Outputs o{std::vector<float>(s.b * s.t * s.c), std::vector<float>(s.b * s.nh * s.t), std::vector<float>(qkv.size())};
  std::vector<float> delta(o.lse.size());
  kernels.attention_forward(o.out.data(), o.lse.data(), qkv.data(), s.b, s.t, s.c, s.nh, nullptr);
  kernels.attention_backward(o.dqkv.data(), delta.data(), dout.data(), qkv.data(), o.out.data(), o.lse.data(), s.b, s.t,
                             s.c, s.nh, nullptr);
  return o;
}

std::string describe(const AttentionShape& s) {
  return "(b=" + std::to_string(s.b) + ",t=" + std::to_string(s.t) + ",c=" + std::to_string(s.c) +
         ",nh=" + std::to_string(s.nh) + ")";
}

void check_against_cpu(const CudaKernels& gpu, const CpuKernels& cpu, const AttentionShape& s, std::uint32_t seed) {
  std::string why;
  ASSERT_TRUE(gpu.fused_attention_at(s, DType::kF32, &why)) << describe(s) << ": " << why;
  EXPECT_GT(gpu.attention_scratch_bytes(s.b, s.t, s.c, s.nh, DType::kF32), 0u);
  const auto qkv = test::round_to_bf16(random_floats(s.b * s.t * 3 * s.c, seed, -2.0f, 2.0f));
  const auto dout = test::round_to_bf16(random_floats(s.b * s.t * s.c, seed + 1));
  const Outputs expected = run(cpu, s, qkv, dout);
  const Outputs actual = run(gpu, s, qkv, dout);
  const std::string label = "cuDNN attention " + describe(s);
  expect_close(actual.out, expected.out, kBf16Tolerance, label + " forward out");
  expect_close(actual.lse, expected.lse, kBf16Tolerance, label + " forward lse");
  expect_close(actual.dqkv, expected.dqkv, kBf16Tolerance, label + " backward dqkv");
}

TEST_F(CudnnAttentionTest, Gpt2HeadSizeMatchesCpu) { check_against_cpu(*gpu_, cpu_, {2, 128, 256, 4}, 1); }
TEST_F(CudnnAttentionTest, HeadOf128MatchesCpu) { check_against_cpu(*gpu_, cpu_, {1, 96, 256, 2}, 2); }
TEST_F(CudnnAttentionTest, ShortSequenceMatchesCpu) { check_against_cpu(*gpu_, cpu_, {3, 7, 64, 4}, 3); }

TEST_F(CudnnAttentionTest, BackwardGivesTheSameBitsEveryRun) {
  const AttentionShape s{2, 256, 256, 4};
  const auto qkv = random_floats(s.b * s.t * 3 * s.c, 7, -2.0f, 2.0f);
  const auto dout = random_floats(s.b * s.t * s.c, 8);
  const Outputs first = run(*gpu_, s, qkv, dout);
  const Outputs second = run(*gpu_, s, qkv, dout);
  EXPECT_EQ(first.out, second.out);
  EXPECT_EQ(first.lse, second.lse);
  EXPECT_EQ(first.dqkv, second.dqkv);
}

TEST_F(CudnnAttentionTest, CallWithoutScratchIsRefused) {
  const AttentionShape s{1, 8, 64, 2};
  DeviceBuffer<float> buf(s.b * s.t * 3 * s.c);
  try {
    gpu_->attention_forward(buf.get(), buf.get(), buf.get(), s.b, s.t, s.c, s.nh, nullptr);
    FAIL() << "attention_forward without scratch was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("attention_scratch_bytes"), std::string::npos) << e.what();
  }
}

// A shape cuDNN refuses runs the tiled kernel in f32, with cuDNN's reason (`refusal`) given.
void check_tiled_fallback(const CudaKernels& gpu, const CpuKernels& cpu, const AttentionShape& s,
                          const std::string& refusal) {
  std::string why;
  EXPECT_FALSE(gpu.fused_attention_at(s, DType::kF32, &why)) << describe(s);
  EXPECT_NE(why.find(refusal), std::string::npos) << why;
  EXPECT_EQ(gpu.attention_scratch_bytes(s.b, s.t, s.c, s.nh, DType::kF32), 0u);
  const auto qkv = random_floats(s.b * s.t * 3 * s.c, 9, -2.0f, 2.0f);
  const auto dout = random_floats(s.b * s.t * s.c, 10);
  const Outputs expected = run(cpu, s, qkv, dout);
  const Outputs actual = run(gpu, s, qkv, dout);
  expect_close(actual.out, expected.out, kF32Tolerance, "tiled out " + describe(s));
  expect_close(actual.dqkv, expected.dqkv, kF32Tolerance, "tiled dqkv " + describe(s));
}

TEST_F(CudnnAttentionTest, RefusedHeadSizeRunsTheTiledKernel) {
  check_tiled_fallback(*gpu_, cpu_, {2, 33, 36, 3}, "head size 12");
}

// cuDNN's backward takes no sequence of one position ("s_q = s_kv = 1 is not supported").
TEST_F(CudnnAttentionTest, SinglePositionRunsTheTiledKernel) {
  check_tiled_fallback(*gpu_, cpu_, {2, 1, 64, 2}, "backward");
}

TEST_F(CudnnAttentionTest, F32MathRunsTheTiledKernel) {
  gpu_->set_gemm_math(GemmMath::kF32);
  std::string why;
  EXPECT_FALSE(gpu_->fused_attention_at({2, 16, 64, 2}, DType::kF32, &why));
  EXPECT_NE(why.find("GEMM math f32"), std::string::npos) << why;
  EXPECT_NE(gpu_->attention_kernel().find("tiled"), std::string::npos) << gpu_->attention_kernel();
  gpu_->set_gemm_math(GemmMath::kBf16);
  EXPECT_NE(gpu_->attention_kernel().find("cuDNN"), std::string::npos) << gpu_->attention_kernel();
}

#if TESSERA_HAVE_CUDNN
TEST_F(CudnnAttentionTest, OneGraphPairPerShape) {
  CudnnAttention attention(0, stream_);
  const AttentionShape a{1, 32, 64, 2}, b{1, 64, 64, 2};
  EXPECT_TRUE(attention.supports(a));
  EXPECT_EQ(attention.graphs_built(), 2);
  EXPECT_TRUE(attention.supports(a));
  (void)attention.forward_workspace(a);
  (void)attention.backward_workspace(a);
  EXPECT_EQ(attention.graphs_built(), 2) << "the same shape built again";
  EXPECT_TRUE(attention.supports(b));
  EXPECT_EQ(attention.graphs_built(), 4);
  EXPECT_NE(attention.name().find("cuDNN 9."), std::string::npos) << attention.name();
}
#endif

}  // namespace
}  // namespace tessera
