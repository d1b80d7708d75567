// CudaKernels attention (the tiled online-softmax kernels of cuda_attention.cu) against CpuKernels:
// forward (out and the rows' log-sum-exp lse) and backward (dqkv, recomputed from qkv, out and lse)
// for short and longer sequences, t = 1, a head size that is not a multiple of 32 and the largest
// head the kernels take (128) over several key and query tiles; bf16 tensors through the typed
// launchers on bf16-rounded inputs within the bf16 tolerance (lse f32 there too); a head size above
// the limit and channels not divisible by the heads are refused.
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

// The CPU reference of one shape: out, lse and dqkv from qkv and dout.
struct Reference {
  std::vector<float> out, lse, dqkv;
};

Reference cpu_reference(const CpuKernels& cpu, const AttnShape& s, const std::vector<float>& qkv,
                        const std::vector<float>& dout) {
  Reference r{std::vector<float>(s.b * s.t * s.c), std::vector<float>(s.b * s.nh * s.t),
              std::vector<float>(qkv.size())};
  std::vector<float> delta(r.lse.size());
  cpu.attention_forward(r.out.data(), r.lse.data(), qkv.data(), s.b, s.t, s.c, s.nh, nullptr);
  cpu.attention_backward(r.dqkv.data(), delta.data(), dout.data(), qkv.data(), r.out.data(), r.lse.data(), s.b, s.t,
                         s.c, s.nh, nullptr);
  return r;
}

void check_against_cpu(const CudaKernels& gpu, const CpuKernels& cpu, const AttnShape& s, std::uint32_t seed) {
  const auto qkv = random_floats(s.b * s.t * 3 * s.c, seed, -2.0f, 2.0f);
  const auto dout = random_floats(s.b * s.t * s.c, seed + 1);
  const Reference ref = cpu_reference(cpu, s, qkv, dout);
  DeviceBuffer<float> g_qkv(qkv), g_dout(dout), g_out(ref.out.size()), g_lse(ref.lse.size());
  DeviceBuffer<float> g_dqkv(qkv.size()), g_delta(ref.lse.size());
  gpu.attention_forward(g_out.get(), g_lse.get(), g_qkv.get(), s.b, s.t, s.c, s.nh, nullptr);
  gpu.attention_backward(g_dqkv.get(), g_delta.get(), g_dout.get(), g_qkv.get(), g_out.get(), g_lse.get(), s.b, s.t,
                         s.c, s.nh, nullptr);
  const std::string label = "attention f32 " + describe(s);
  expect_close(g_out.download(), ref.out, kF32Tolerance, label + " forward out");
  expect_close(g_lse.download(), ref.lse, kF32Tolerance, label + " forward lse");
  expect_close(g_dqkv.download(), ref.dqkv, kF32Tolerance, label + " backward dqkv");
}

TEST_F(CudaAttention, ShortSequence) { check_against_cpu(*gpu_, cpu_, {2, 7, 12, 3}, 1); }
TEST_F(CudaAttention, LongerSequence) { check_against_cpu(*gpu_, cpu_, {1, 150, 16, 2}, 2); }
TEST_F(CudaAttention, HeadSizeNotAMultipleOf32) { check_against_cpu(*gpu_, cpu_, {5, 33, 40, 2}, 3); }
TEST_F(CudaAttention, SinglePosition) { check_against_cpu(*gpu_, cpu_, {3, 1, 16, 4}, 4); }
TEST_F(CudaAttention, LargestHeadOverSeveralTiles) { check_against_cpu(*gpu_, cpu_, {2, 200, 256, 2}, 5); }

TEST_F(CudaAttention, Bf16MatchesCpuOnRoundedInputs) {
  const AttnShape s{2, 40, 48, 2};
  const auto qkv = test::round_to_bf16(random_floats(s.b * s.t * 3 * s.c, 11));
  const auto dout = test::round_to_bf16(random_floats(s.b * s.t * s.c, 12));
  const Reference ref = cpu_reference(cpu_, s, qkv, dout);
  DeviceBuffer<__nv_bfloat16> g_qkv(test::to_bf16(qkv)), g_dout(test::to_bf16(dout)), g_out(ref.out.size());
  DeviceBuffer<__nv_bfloat16> g_dqkv(qkv.size());
  DeviceBuffer<float> g_lse(ref.lse.size()), g_delta(ref.lse.size());
  detail::launch_attention_forward(g_out.get(), g_lse.get(), g_qkv.get(), s.b, s.t, s.c, s.nh, stream_);
  detail::launch_attention_backward(g_dqkv.get(), g_delta.get(), g_dout.get(), g_qkv.get(), g_out.get(), g_lse.get(),
                                    s.b, s.t, s.c, s.nh, stream_);
  const std::string label = "attention bf16 " + describe(s);
  expect_close(test::from_bf16(g_out.download()), ref.out, kBf16Tolerance, label + " forward out");
  expect_close(g_lse.download(), ref.lse, kBf16Tolerance, label + " forward lse");
  expect_close(test::from_bf16(g_dqkv.download()), ref.dqkv, kBf16Tolerance, label + " backward dqkv");
}

TEST_F(CudaAttention, RefusesHeadSizeAboveLimit) {
  const std::int64_t hs = detail::kMaxAttentionHead + 1, nh = 2;
  DeviceBuffer<float> buf(64);
  try {
    gpu_->attention_forward(buf.get(), buf.get(), buf.get(), 1, 2, nh * hs, nh, nullptr);
    ADD_FAILURE() << "attention_forward took head size " << hs;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("head size " + std::to_string(hs)), std::string::npos) << e.what();
  }
  EXPECT_THROW(gpu_->attention_backward(buf.get(), buf.get(), buf.get(), buf.get(), buf.get(), buf.get(), 1, 2, nh * hs,
                                        nh, nullptr),
               std::invalid_argument);
}

TEST_F(CudaAttention, RefusesChannelsNotDivisibleByHeads) {
  DeviceBuffer<float> buf(64);
  EXPECT_THROW(gpu_->attention_forward(buf.get(), buf.get(), buf.get(), 1, 2, 10, 3, nullptr), std::invalid_argument);
  EXPECT_THROW(
      gpu_->attention_backward(buf.get(), buf.get(), buf.get(), buf.get(), buf.get(), buf.get(), 1, 2, 10, 3, nullptr),
      std::invalid_argument);
}

}  // namespace
}  // namespace tessera
