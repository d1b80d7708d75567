// CpuKernels causal attention: forward (out and probs) against a double reference, the causal mask
// (probs exactly 0 above the diagonal, rows summing to 1), dqkv by finite differences for a short
// sequence and for one longer than a GEMM block (so the skipped blocks are covered), a backward that
// ignores what dqkv and scratch held before, and results that are the same bits on 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tests/runtime/cpu/kernel_check.hpp"

namespace tessera {
namespace {

using test::expect_bit_equal;
using test::expect_close;
using test::finite_difference;
using test::random_floats;
using test::to_double;

constexpr double kForwardTol = 1e-5;  // relative to max |reference|
constexpr double kGradTol = 1e-3;     // f32 backward vs double finite differences, relative to max |grad|

struct AttnShape {
  std::int64_t b, t, c, nh;
  std::int64_t hs() const { return c / nh; }
};

struct AttnReference {
  std::vector<double> out, probs;
};

AttnReference attention_reference(const std::vector<double>& qkv, const AttnShape& s) {
  const std::int64_t hs = s.hs(), ld = 3 * s.c;
  AttnReference r{std::vector<double>(s.b * s.t * s.c, 0.0), std::vector<double>(s.b * s.nh * s.t * s.t, 0.0)};
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  for (std::int64_t bi = 0; bi < s.b; ++bi) {
    for (std::int64_t h = 0; h < s.nh; ++h) {
      const double* base = qkv.data() + bi * s.t * ld + h * hs;
      double* p = r.probs.data() + (bi * s.nh + h) * s.t * s.t;
      for (std::int64_t i = 0; i < s.t; ++i) {
        double max_val = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j <= i; ++j) {
          double dot = 0.0;
          for (std::int64_t d = 0; d < hs; ++d) dot += base[i * ld + d] * base[j * ld + s.c + d];
          p[i * s.t + j] = dot * scale;
          max_val = std::fmax(max_val, p[i * s.t + j]);
        }
        double sum = 0.0;
        for (std::int64_t j = 0; j <= i; ++j) sum += (p[i * s.t + j] = std::exp(p[i * s.t + j] - max_val));
        for (std::int64_t j = 0; j <= i; ++j) p[i * s.t + j] /= sum;
        for (std::int64_t d = 0; d < hs; ++d) {
          double acc = 0.0;
          for (std::int64_t j = 0; j <= i; ++j) acc += p[i * s.t + j] * base[j * ld + 2 * s.c + d];
          r.out[(bi * s.t + i) * s.c + h * hs + d] = acc;
        }
      }
    }
  }
  return r;
}

void check_forward(const AttnShape& s, std::uint32_t seed) {
  CpuKernels k;
  const auto qkv = random_floats(s.b * s.t * 3 * s.c, seed, -2.0f, 2.0f);
  std::vector<float> out(s.b * s.t * s.c), probs(s.b * s.nh * s.t * s.t, 123.0f);
  k.attention_forward(out.data(), probs.data(), qkv.data(), s.b, s.t, s.c, s.nh);
  const auto ref = attention_reference(to_double(qkv), s);
  expect_close(out, ref.out, kForwardTol, "attention out, t=" + std::to_string(s.t));
  expect_close(probs, ref.probs, kForwardTol, "attention probs, t=" + std::to_string(s.t));
  for (std::int64_t row = 0; row < s.b * s.nh * s.t; ++row) {
    const std::int64_t i = row % s.t;
    double sum = 0.0;
    for (std::int64_t j = 0; j < s.t; ++j) {
      const float p = probs[row * s.t + j];
      if (j > i) {
        ASSERT_EQ(p, 0.0f) << "probs row " << row << " (query " << i << ") column " << j << " above the diagonal";
      }
      sum += p;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5) << "probs row " << row << " sums to " << sum;
  }
}

void check_backward(const AttnShape& s, std::uint32_t seed) {
  CpuKernels k;
  const auto qkv = random_floats(s.b * s.t * 3 * s.c, seed, -1.5f, 1.5f);
  const auto r = random_floats(s.b * s.t * s.c, seed + 1);  // L = sum(out * R)
  std::vector<float> out(s.b * s.t * s.c), probs(s.b * s.nh * s.t * s.t);
  k.attention_forward(out.data(), probs.data(), qkv.data(), s.b, s.t, s.c, s.nh);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> dqkv(qkv.size(), nan), scratch(probs.size(), nan);  // both must be overwritten
  k.attention_backward(dqkv.data(), scratch.data(), r.data(), qkv.data(), probs.data(), s.b, s.t, s.c, s.nh);
  const auto fd = finite_difference(
      [&](const std::vector<double>& x) {
        const auto o = attention_reference(x, s).out;
        double total = 0.0;
        for (std::size_t i = 0; i < o.size(); ++i) total += o[i] * r[i];
        return total;
      },
      to_double(qkv));
  expect_close(dqkv, fd, kGradTol, "attention dqkv, t=" + std::to_string(s.t));
}

TEST(CpuAttention, ForwardShortSequence) { check_forward({2, 7, 12, 3}, 1); }
TEST(CpuAttention, ForwardLongerThanOneBlock) { check_forward({1, 150, 16, 2}, 2); }
TEST(CpuAttention, BackwardShortSequence) { check_backward({2, 7, 12, 3}, 3); }
TEST(CpuAttention, BackwardLongerThanOneBlock) { check_backward({1, 70, 8, 2}, 4); }

TEST(CpuAttention, RefusesChannelsNotDivisibleByHeads) {
  CpuKernels k;
  std::vector<float> qkv(3 * 10), out(10), probs(1), dqkv(3 * 10), scratch(1);
  EXPECT_THROW(k.attention_forward(out.data(), probs.data(), qkv.data(), 1, 1, 10, 3), std::invalid_argument);
  EXPECT_THROW(k.attention_backward(dqkv.data(), scratch.data(), out.data(), qkv.data(), probs.data(), 1, 1, 10, 3),
               std::invalid_argument);
}

TEST(CpuAttention, BitIdenticalOnOneAndTwoThreads) {
  CpuKernels k;
  const AttnShape s{2, 96, 32, 4};
  const auto qkv = random_floats(s.b * s.t * 3 * s.c, 7);
  const auto dout = random_floats(s.b * s.t * s.c, 8);
  auto run = [&](int threads) {
    std::vector<float> out(s.b * s.t * s.c), probs(s.b * s.nh * s.t * s.t), dqkv(qkv.size()), scratch(probs.size());
    test::with_threads(threads, [&] {
      k.attention_forward(out.data(), probs.data(), qkv.data(), s.b, s.t, s.c, s.nh);
      k.attention_backward(dqkv.data(), scratch.data(), dout.data(), qkv.data(), probs.data(), s.b, s.t, s.c, s.nh);
    });
    out.insert(out.end(), dqkv.begin(), dqkv.end());
    return out;
  };
  expect_bit_equal(run(1), run(2), "attention out|dqkv, 1 vs 2 threads");
}

}  // namespace
}  // namespace tessera
