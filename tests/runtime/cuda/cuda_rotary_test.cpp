// CudaKernels rotary embedding with grouped-query heads against CpuKernels: forward (qkv written)
// and backward (dproj written, each key/value head's gradient summed over its query group) for
// one head of size 2, grouped (nh / nkv = 2, 3), multi-query (nkv = 1) and ungrouped (nkv = nh)
// heads, head sizes up to 128 and two theta values; outputs start as NaN, so an element left
// unwritten fails. The backward is the same bits on every run; bf16 tensors through the typed
// launchers within the bf16 tolerance.
//
// f32 tolerance: the pair's angle p * w is one f32 product of the same inputs on both sides, but w
// = theta^(-2j/hs) comes from the device's powf (within a few ulp) and the host's (within one), so
// the angle may differ by up to about p * w * 5e-7 rad; with positions below 40 and w <= 1 that is
// 2e-5 rad, a few 1e-5 of the largest output. The comparisons allow kRotaryTolerance = 5e-5 of the
// largest expected value (cosf and sinf add a few 1e-7).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tests/runtime/cuda/cuda_test_support.hpp"

namespace tessera {
namespace {

using test::DeviceBuffer;
using test::expect_close;
using test::random_floats;

class CudaRotary : public test::CudaKernelTest {};

constexpr double kRotaryTolerance = 5e-5;

struct RotaryShape {
  std::int64_t b, t, nh, nkv, hs;
  float theta;
  std::int64_t proj_size() const { return b * t * (nh + 2 * nkv) * hs; }
  std::int64_t qkv_size() const { return b * t * 3 * nh * hs; }
};

std::string describe(const RotaryShape& s) {
  return "(b=" + std::to_string(s.b) + ",t=" + std::to_string(s.t) + ",nh=" + std::to_string(s.nh) +
         ",nkv=" + std::to_string(s.nkv) + ",hs=" + std::to_string(s.hs) + ",theta=" + std::to_string(s.theta) + ")";
}

TEST_F(CudaRotary, ForwardAndBackwardMatchCpu) {
  std::uint32_t seed = 1;
  for (const RotaryShape& s : {RotaryShape{1, 1, 1, 1, 2, 10000.0f}, RotaryShape{2, 5, 4, 2, 8, 10000.0f},
                               RotaryShape{3, 17, 6, 1, 16, 10000.0f}, RotaryShape{2, 39, 8, 8, 64, 10000.0f},
                               RotaryShape{1, 33, 12, 4, 128, 500000.0f}, RotaryShape{2, 9, 9, 3, 32, 500000.0f}}) {
    const auto proj = random_floats(s.proj_size(), seed++), dqkv = random_floats(s.qkv_size(), seed++);
    std::vector<float> qkv(s.qkv_size()), dproj(s.proj_size());
    cpu_.rotary_qkv_forward(qkv.data(), proj.data(), s.b, s.t, s.nh, s.nkv, s.hs, s.theta);
    cpu_.rotary_qkv_backward(dproj.data(), dqkv.data(), s.b, s.t, s.nh, s.nkv, s.hs, s.theta);
    DeviceBuffer<float> g_proj(proj), g_dqkv(dqkv);
    DeviceBuffer<float> g_qkv(std::vector<float>(s.qkv_size(), NAN)), g_dproj(std::vector<float>(s.proj_size(), NAN));
    gpu_->rotary_qkv_forward(g_qkv.get(), g_proj.get(), s.b, s.t, s.nh, s.nkv, s.hs, s.theta);
    gpu_->rotary_qkv_backward(g_dproj.get(), g_dqkv.get(), s.b, s.t, s.nh, s.nkv, s.hs, s.theta);
    const std::string label = "rotary_qkv f32 " + describe(s);
    expect_close(g_qkv.download(), qkv, kRotaryTolerance, label + " forward qkv");
    expect_close(g_dproj.download(), dproj, kRotaryTolerance, label + " backward dproj");
  }
}

TEST_F(CudaRotary, BackwardIsTheSameBitsEveryRun) {
  const RotaryShape s{4, 64, 16, 4, 64, 10000.0f};
  const auto dqkv = random_floats(s.qkv_size(), 11);
  std::vector<std::vector<float>> runs;
  for (int run = 0; run < 2; ++run) {
    DeviceBuffer<float> g_dqkv(dqkv), g_dproj(s.proj_size());
    gpu_->rotary_qkv_backward(g_dproj.get(), g_dqkv.get(), s.b, s.t, s.nh, s.nkv, s.hs, s.theta);
    runs.push_back(g_dproj.download());
  }
  test::expect_same_bits(runs[1], runs[0], "rotary_qkv_backward f32 " + describe(s) + " dproj, run 2 vs 1");
}

TEST_F(CudaRotary, Bf16MatchesCpuOnRoundedInputs) {
  const RotaryShape s{2, 21, 8, 2, 32, 10000.0f};
  const auto proj = test::round_to_bf16(random_floats(s.proj_size(), 21));
  const auto dqkv = test::round_to_bf16(random_floats(s.qkv_size(), 22));
  std::vector<float> qkv(s.qkv_size()), dproj(s.proj_size());
  cpu_.rotary_qkv_forward(qkv.data(), proj.data(), s.b, s.t, s.nh, s.nkv, s.hs, s.theta);
  cpu_.rotary_qkv_backward(dproj.data(), dqkv.data(), s.b, s.t, s.nh, s.nkv, s.hs, s.theta);
  DeviceBuffer<__nv_bfloat16> g_proj(test::to_bf16(proj)), g_dqkv(test::to_bf16(dqkv));
  DeviceBuffer<__nv_bfloat16> g_qkv(s.qkv_size()), g_dproj(s.proj_size());
  detail::launch_rotary_qkv_forward(g_qkv.get(), g_proj.get(), s.b, s.t, s.nh, s.nkv, s.hs, s.theta, stream_);
  detail::launch_rotary_qkv_backward(g_dproj.get(), g_dqkv.get(), s.b, s.t, s.nh, s.nkv, s.hs, s.theta, stream_);
  const std::string label = "rotary_qkv bf16 " + describe(s);
  expect_close(test::from_bf16(g_qkv.download()), qkv, kBf16Tolerance, label + " forward qkv");
  expect_close(test::from_bf16(g_dproj.download()), dproj, kBf16Tolerance, label + " backward dproj");
}

}  // namespace
}  // namespace tessera
