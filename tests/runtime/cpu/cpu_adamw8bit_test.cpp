// CpuKernels::adamw8bit_update against a double-precision reference of the same quantized algorithm
// (dequantize, AdamW, requantize against the new block absmax), over several steps: parameters agree
// to f32 rounding and the codes to within one level where a value sits on a threshold. Also: blocks
// are independent of the thread count, padding is never updated, weight decay only where a
// segment decays, an all-zero block stays zero, and the gradient scale gives the bits of a scale()
// pass over the gradients first.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/math/quantization_math.hpp"
#include "tests/runtime/cpu/kernel_check.hpp"

namespace tessera {
namespace {

using test::random_floats;

AdamWScalars scalars(int step, float lr, float wd) {
  AdamWScalars s;
  s.lr = lr;
  s.beta1 = 0.9f;
  s.beta2 = 0.95f;
  s.eps = 1e-8f;
  s.weight_decay = wd;
  s.bias_correction1 = static_cast<float>(1.0 - std::pow(0.9, step));
  s.bias_correction2 = static_cast<float>(1.0 - std::pow(0.95, step));
  return s;
}

struct State {
  std::vector<float> param, m_absmax, v_absmax;
  std::vector<std::int8_t> m_codes;
  std::vector<std::uint8_t> v_codes;
  State(std::int64_t n, std::int64_t block, std::uint32_t seed)
      : param(random_floats(static_cast<std::size_t>(n), seed)),
        m_absmax(static_cast<std::size_t>(n / block)),
        v_absmax(static_cast<std::size_t>(n / block)),
        m_codes(static_cast<std::size_t>(n)),
        v_codes(static_cast<std::size_t>(n)) {}
};

// The same algorithm in double: per block dequantize, update, requantize (codes by nearest value).
void reference_step(State& s, const std::vector<float>& grad, std::int64_t block, const std::vector<int>& role,
                    const AdamWScalars& nd, const AdamWScalars& d) {
  const auto n = static_cast<std::int64_t>(grad.size());
  std::vector<double> m(static_cast<std::size_t>(block)), v(m.size());
  for (std::int64_t b = 0; b < n / block; ++b) {
    double m_max = 0.0, v_max = 0.0;
    for (std::int64_t i = 0; i < block; ++i) {
      const auto at = static_cast<std::size_t>(b * block + i);
      double mi = static_cast<double>(kSignedDynamicMap.values[i8_to_signed_code(s.m_codes[at])]) * s.m_absmax[b];
      double vi = static_cast<double>(kUnsignedDynamicMap.values[s.v_codes[at]]) * s.v_absmax[b];
      if (role[at] != 0) {
        const AdamWScalars& k = role[at] == 2 ? d : nd;
        const double g = grad[at];
        mi = k.beta1 * mi + (1.0 - k.beta1) * g;
        vi = k.beta2 * vi + (1.0 - k.beta2) * g * g;
        const double p = s.param[at];
        s.param[at] = static_cast<float>(
            p - k.lr * ((mi / k.bias_correction1) / (std::sqrt(vi / k.bias_correction2) + k.eps) + k.weight_decay * p));
      }
      m[static_cast<std::size_t>(i)] = mi;
      v[static_cast<std::size_t>(i)] = vi;
      m_max = std::max(m_max, std::fabs(mi));
      v_max = std::max(v_max, vi);
    }
    s.m_absmax[b] = static_cast<float>(m_max);
    s.v_absmax[b] = static_cast<float>(v_max);
    for (std::int64_t i = 0; i < block; ++i) {
      const auto at = static_cast<std::size_t>(b * block + i);
      const double mn = m_max > 0 ? m[static_cast<std::size_t>(i)] * (1.0 / m_max) : 0.0;
      const double vn = v_max > 0 ? v[static_cast<std::size_t>(i)] * (1.0 / v_max) : 0.0;
      s.m_codes[at] = signed_code_to_i8(quantize_code(static_cast<float>(mn), kSignedDynamicMap));
      s.v_codes[at] = quantize_code(static_cast<float>(vn), kUnsignedDynamicMap);
    }
  }
}

void kernel_step(const CpuKernels& k, State& s, const std::vector<float>& grad, std::int64_t block,
                 std::span<const ParamSegment> segments, const AdamWScalars& nd, const AdamWScalars& d) {
  k.adamw8bit_update(s.param.data(), grad.data(), s.m_codes.data(), s.m_absmax.data(), s.v_codes.data(),
                     s.v_absmax.data(), static_cast<std::int64_t>(grad.size()), block, segments, nd, d);
}

TEST(CpuAdamW8bit, MatchesADoubleReferenceOfTheSameAlgorithm) {
  CpuKernels k;
  const std::int64_t block = 256, n = 4 * block;
  // Segments: a decaying matrix, an undecayed bias, then padding at the end of the last block.
  const std::vector<ParamSegment> segments = {{0, 600, true}, {600, 300, false}};
  std::vector<int> role(static_cast<std::size_t>(n), 0);
  for (const ParamSegment& s : segments) {
    for (std::int64_t i = s.begin; i < s.begin + s.count; ++i) role[static_cast<std::size_t>(i)] = s.decay ? 2 : 1;
  }
  State fast(n, block, 3), slow(n, block, 3);
  for (std::size_t i = 900; i < static_cast<std::size_t>(n); ++i) fast.param[i] = slow.param[i] = 0.0f;  // padding
  std::size_t differing_codes = 0, total_codes = 0;
  for (int step = 1; step <= 5; ++step) {
    std::vector<float> grad = random_floats(static_cast<std::size_t>(n), 100 + static_cast<std::uint32_t>(step));
    for (std::size_t i = 900; i < grad.size(); ++i) grad[i] = 0.0f;
    const AdamWScalars nd = scalars(step, 1e-2f, 0.0f), d = scalars(step, 1e-2f, 0.1f);
    kernel_step(k, fast, grad, block, segments, nd, d);
    reference_step(slow, grad, block, role, nd, d);
    for (std::size_t i = 0; i < grad.size(); ++i) {
      ASSERT_NEAR(fast.param[i], slow.param[i], 2e-6f * (1.0f + std::fabs(slow.param[i])))
          << "param " << i << " at step " << step;
      const int dm = std::abs(i8_to_signed_code(fast.m_codes[i]) - i8_to_signed_code(slow.m_codes[i]));
      const int dv = std::abs(fast.v_codes[i] - slow.v_codes[i]);
      ASSERT_LE(std::max(dm, dv), 1) << "codes of element " << i << " at step " << step;
      differing_codes += (dm != 0) + (dv != 0);
      total_codes += 2;
    }
    for (std::size_t b = 0; b < fast.m_absmax.size(); ++b) {
      ASSERT_NEAR(fast.m_absmax[b], slow.m_absmax[b], 1e-6f * slow.m_absmax[b]) << "m absmax of block " << b;
      ASSERT_NEAR(fast.v_absmax[b], slow.v_absmax[b], 1e-6f * slow.v_absmax[b]) << "v absmax of block " << b;
    }
  }
  EXPECT_LE(differing_codes * 200, total_codes) << differing_codes << " of " << total_codes << " codes differ";
  for (std::size_t i = 900; i < static_cast<std::size_t>(n); ++i) EXPECT_EQ(fast.param[i], 0.0f) << "padding " << i;
}

TEST(CpuAdamW8bit, ThreadCountDoesNotChangeTheBits) {
  CpuKernels k;
  const std::int64_t block = 2048, n = 8 * block;
  const std::vector<ParamSegment> segments = {{0, n - 100, true}};
  State a(n, block, 9), b(n, block, 9);
  const int threads = omp_get_max_threads();
  for (int step = 1; step <= 3; ++step) {
    const std::vector<float> grad = random_floats(static_cast<std::size_t>(n), 50 + static_cast<std::uint32_t>(step));
    omp_set_num_threads(1);
    kernel_step(k, a, grad, block, segments, scalars(step, 1e-3f, 0.0f), scalars(step, 1e-3f, 0.1f));
    omp_set_num_threads(2);
    kernel_step(k, b, grad, block, segments, scalars(step, 1e-3f, 0.0f), scalars(step, 1e-3f, 0.1f));
  }
  omp_set_num_threads(threads);
  EXPECT_EQ(a.param, b.param);
  EXPECT_EQ(a.m_codes, b.m_codes);
  EXPECT_EQ(a.v_codes, b.v_codes);
  EXPECT_EQ(a.m_absmax, b.m_absmax);
}

TEST(CpuAdamW8bit, ZeroGradientsOnAZeroStateLeaveItZero) {
  CpuKernels k;
  const std::int64_t block = 256;
  State s(block, block, 1);
  const std::vector<float> zero(static_cast<std::size_t>(block), 0.0f);
  const std::vector<float> before = s.param;
  kernel_step(k, s, zero, block, std::vector<ParamSegment>{{0, block, false}}, scalars(1, 1e-2f, 0.0f),
              scalars(1, 1e-2f, 0.0f));
  EXPECT_EQ(s.m_absmax[0], 0.0f);
  EXPECT_EQ(s.v_absmax[0], 0.0f);
  EXPECT_EQ(s.param, before) << "a zero gradient with zero moments and no decay moves nothing";
}

TEST(CpuAdamW8bit, GradScaleGivesTheBitsOfAScalePassFirst) {
  const CpuKernels k;
  const std::int64_t block = 2048, n = 4 * block;
  const std::vector<ParamSegment> segments = {{0, 5000, true}, {5000, n - 5100, false}};
  State fused(n, block, 13), separate(n, block, 13);
  for (int step = 1; step <= 3; ++step) {
    const auto grad = random_floats(static_cast<std::size_t>(n), 70 + static_cast<std::uint32_t>(step), -5.0f, 5.0f);
    const float factor = 0.125f + 0.3f * static_cast<float>(step);
    AdamWScalars nd = scalars(step, 1e-3f, 0.0f), d = scalars(step, 1e-3f, 0.1f);
    auto scaled = grad;
    k.scale(scaled.data(), factor, n);
    kernel_step(k, separate, scaled, block, segments, nd, d);
    nd.grad_scale = d.grad_scale = factor;
    kernel_step(k, fused, grad, block, segments, nd, d);
  }
  test::expect_bit_equal(fused.param, separate.param, "8-bit AdamW params, grad_scale vs a scale pass");
  EXPECT_EQ(fused.m_codes, separate.m_codes);
  EXPECT_EQ(fused.v_codes, separate.v_codes);
  EXPECT_EQ(fused.m_absmax, separate.m_absmax);
  EXPECT_EQ(fused.v_absmax, separate.v_absmax);
}

TEST(CpuAdamW8bit, RefusesARangeThatIsNotWholeBlocks) {
  CpuKernels k;
  State s(300, 100, 1);
  const std::vector<float> grad(300, 0.0f);
  EXPECT_THROW(kernel_step(k, s, grad, 256, {}, scalars(1, 1e-2f, 0.0f), scalars(1, 1e-2f, 0.0f)),
               std::invalid_argument);
}

}  // namespace
}  // namespace tessera
