// CpuKernels causal attention (tiled, online softmax): forward (out and the per-row log-sum-exp)
// against a double reference and against the T x T kernel it replaced (the whole probability matrix,
// kept here as dense_attention.hpp) within the f32 tolerance, at several (B, heads, T, head size),
// T = 1, T not a multiple of the tiles, a head too large to be transposed on the stack; rows whose
// every score is -inf (fully masked); dqkv by finite differences and against the T x T kernel; a
// backward that ignores what dqkv and delta held before; and the same bits on 1, 2 and 3 threads
// (3 threads over 2 (batch, head) pairs runs the backward's two-pass form).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "tessera/precision/tolerance.hpp"
#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tests/runtime/cpu/dense_attention.hpp"
#include "tests/runtime/cpu/kernel_check.hpp"

namespace tessera {
namespace {

using test::kGradTol;
using test::AttnShape;
using test::expect_bit_equal;
using test::expect_close;
using test::finite_difference;
using test::random_floats;
using test::to_double;

constexpr float kInf = std::numeric_limits<float>::infinity();

struct AttnReference {
  std::vector<double> out, lse;
};

AttnReference attention_reference(const std::vector<double>& qkv, const AttnShape& s) {
  const std::int64_t hs = s.hs(), ld = 3 * s.c;
  AttnReference r{std::vector<double>(s.b * s.t * s.c, 0.0), std::vector<double>(s.b * s.nh * s.t, 0.0)};
  const double scale = 1.0 / std::sqrt(static_cast<double>(hs));
  std::vector<double> p(s.t);
  for (std::int64_t bi = 0; bi < s.b; ++bi) {
    for (std::int64_t h = 0; h < s.nh; ++h) {
      const double* base = qkv.data() + bi * s.t * ld + h * hs;
      for (std::int64_t i = 0; i < s.t; ++i) {
        double max_val = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j <= i; ++j) {
          double dot = 0.0;
          for (std::int64_t d = 0; d < hs; ++d) dot += base[i * ld + d] * base[j * ld + s.c + d];
          p[j] = dot * scale;
          max_val = std::fmax(max_val, p[j]);
        }
        double sum = 0.0;
        for (std::int64_t j = 0; j <= i; ++j) sum += (p[j] = std::exp(p[j] - max_val));
        r.lse[(bi * s.nh + h) * s.t + i] = max_val + std::log(sum);
        for (std::int64_t d = 0; d < hs; ++d) {
          double acc = 0.0;
          for (std::int64_t j = 0; j <= i; ++j) acc += p[j] / sum * base[j * ld + 2 * s.c + d];
          r.out[(bi * s.t + i) * s.c + h * hs + d] = acc;
        }
      }
    }
  }
  return r;
}

struct Forward {
  std::vector<float> out, lse;
};

Forward tiled_forward(const std::vector<float>& qkv, const AttnShape& s) {
  CpuKernels k;
  Forward f{std::vector<float>(s.b * s.t * s.c, 123.0f), std::vector<float>(s.b * s.nh * s.t, 123.0f)};
  k.attention_forward(f.out.data(), f.lse.data(), qkv.data(), s.b, s.t, s.c, s.nh, nullptr);
  return f;
}

std::vector<float> tiled_backward(const std::vector<float>& qkv, const std::vector<float>& dout, const Forward& f,
                                  const AttnShape& s) {
  CpuKernels k;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> dqkv(qkv.size(), nan), delta(f.lse.size(), nan);  // both must be overwritten
  k.attention_backward(dqkv.data(), delta.data(), dout.data(), qkv.data(), f.out.data(), f.lse.data(), s.b, s.t, s.c,
                       s.nh, nullptr);
  return dqkv;
}

std::string label(const AttnShape& s) {
  std::string text = "B";
  for (const auto& [name, value] : {std::pair{"", s.b}, {" T", s.t}, {" NH", s.nh}, {" hs", s.hs()}}) {
    text += name;
    text += std::to_string(value);
  }
  return text;
}

// Forward against the double reference and the T x T kernel; backward against the T x T kernel.
void check_against_references(const AttnShape& s, std::uint32_t seed) {
  const auto qkv = random_floats(s.b * s.t * 3 * s.c, seed, -2.0f, 2.0f);
  const auto dout = random_floats(s.b * s.t * s.c, seed + 1);
  const Forward f = tiled_forward(qkv, s);
  const auto ref = attention_reference(to_double(qkv), s);
  expect_close(f.out, ref.out, kF32Tolerance, label(s) + " out vs double");
  expect_close(f.lse, ref.lse, kF32Tolerance, label(s) + " lse vs double");
  const auto dense = test::dense_attention(qkv, dout, s);
  expect_close(f.out, to_double(dense.out), kF32Tolerance, label(s) + " out vs the T x T kernel");
  expect_close(tiled_backward(qkv, dout, f, s), to_double(dense.dqkv), kF32Tolerance,
               label(s) + " dqkv vs the T x T kernel");
}

TEST(CpuAttention, ShortSequence) { check_against_references({2, 7, 12, 3}, 1); }
TEST(CpuAttention, OnePosition) { check_against_references({3, 1, 8, 2}, 2); }
TEST(CpuAttention, ExactlyOneQueryBlock) { check_against_references({2, 64, 48, 3}, 3); }
TEST(CpuAttention, SequenceNotAMultipleOfTheTiles) { check_against_references({1, 150, 16, 2}, 4); }
TEST(CpuAttention, ManyTilesAtTheSmallGptHeadSize) { check_against_references({2, 333, 128, 2}, 5); }
TEST(CpuAttention, HeadTooLargeToTransposeOnTheStack) { check_against_references({1, 140, 600, 2}, 6); }

void check_gradient(const AttnShape& s, std::uint32_t seed) {
  const auto qkv = random_floats(s.b * s.t * 3 * s.c, seed, -1.5f, 1.5f);
  const auto r = random_floats(s.b * s.t * s.c, seed + 1);  // L = sum(out * R)
  const auto dqkv = tiled_backward(qkv, r, tiled_forward(qkv, s), s);
  const auto fd = finite_difference(
      [&](const std::vector<double>& x) {
        const auto o = attention_reference(x, s).out;
        double total = 0.0;
        for (std::size_t i = 0; i < o.size(); ++i) total += o[i] * r[i];
        return total;
      },
      to_double(qkv));
  expect_close(dqkv, fd, kGradTol, label(s) + " dqkv vs finite differences");
}

TEST(CpuAttention, GradientShortSequence) { check_gradient({2, 7, 12, 3}, 7); }
TEST(CpuAttention, GradientAcrossTiles) { check_gradient({1, 140, 8, 2}, 8); }

// Query rows whose every score is -inf (q = -inf in a coordinate where every key is positive):
// out 0, lse -inf, dq 0, and the other rows, dv and the other queries' dq as if the row were absent
// from the loss (its dout is 0 in the reference). dk takes 0 * -inf from that q, as any
// implementation does, and is not checked.
TEST(CpuAttention, FullyMaskedRows) {
  const AttnShape s{1, 150, 16, 2};
  const std::int64_t ld = 3 * s.c, hs = s.hs();
  auto qkv = random_floats(s.b * s.t * 3 * s.c, 9, -1.0f, 1.0f);
  for (std::int64_t j = 0; j < s.t; ++j) qkv[j * ld + s.c] = 0.5f + std::fabs(qkv[j * ld + s.c]);  // k[j][0] > 0
  const std::int64_t masked[] = {0, 63, 64, 149};  // head 0's query rows
  auto dout = random_floats(s.b * s.t * s.c, 10);
  auto clean = qkv;
  auto clean_dout = dout;
  for (std::int64_t i : masked) {
    qkv[i * ld] = -kInf;
    clean[i * ld] = 0.0f;
    for (std::int64_t d = 0; d < hs; ++d) clean_dout[i * s.c + d] = 0.0f;
  }
  Forward f = tiled_forward(qkv, s);
  const auto dqkv = tiled_backward(qkv, dout, f, s);
  const auto dense = test::dense_attention(clean, clean_dout, s);
  for (std::int64_t i : masked) {
    EXPECT_EQ(f.lse[i], -kInf) << "lse of masked row " << i;
    for (std::int64_t d = 0; d < hs; ++d) {
      ASSERT_EQ(f.out[i * s.c + d], 0.0f) << "out of masked row " << i;
      ASSERT_EQ(dqkv[i * ld + d], 0.0f) << "dq of masked row " << i;
      f.out[i * s.c + d] = dense.out[i * s.c + d];  // compared below with the rest
    }
  }
  expect_close(f.out, to_double(dense.out), kF32Tolerance, "out beside masked rows");
  for (std::int64_t i = 0; i < s.t; ++i) {
    for (std::int64_t d = 0; d < s.c; ++d) {
      const std::int64_t at = i * ld + d;
      ASSERT_TRUE(std::isfinite(dqkv[at])) << "dq[" << i << "][" << d << "] is " << dqkv[at];
      ASSERT_TRUE(std::isfinite(dqkv[at + 2 * s.c])) << "dv[" << i << "][" << d << "] is " << dqkv[at + 2 * s.c];
      EXPECT_NEAR(dqkv[at + 2 * s.c], dense.dqkv[at + 2 * s.c], 1e-5) << "dv[" << i << "][" << d << "]";
      EXPECT_NEAR(dqkv[at], dense.dqkv[at], 1e-5) << "dq[" << i << "][" << d << "]";
    }
  }
}

TEST(CpuAttention, RefusesChannelsNotDivisibleByHeads) {
  CpuKernels k;
  std::vector<float> qkv(3 * 10), out(10), lse(3), dqkv(3 * 10), delta(3);
  EXPECT_THROW(k.attention_forward(out.data(), lse.data(), qkv.data(), 1, 1, 10, 3, nullptr), std::invalid_argument);
  EXPECT_THROW(k.attention_backward(dqkv.data(), delta.data(), out.data(), qkv.data(), out.data(), lse.data(), 1, 1, 10,
                                    3, nullptr),
               std::invalid_argument);
}

TEST(CpuAttention, BitIdenticalOnOneTwoAndThreeThreads) {
  const AttnShape s{1, 200, 32, 2};  // 2 pairs: one task per pair on 1 and 2 threads, two passes on 3
  const auto qkv = random_floats(s.b * s.t * 3 * s.c, 11);
  const auto dout = random_floats(s.b * s.t * s.c, 12);
  auto run = [&](int threads) {
    std::vector<float> all;
    test::with_threads(threads, [&] {
      const Forward f = tiled_forward(qkv, s);
      const auto dqkv = tiled_backward(qkv, dout, f, s);
      all = f.out;
      all.insert(all.end(), f.lse.begin(), f.lse.end());
      all.insert(all.end(), dqkv.begin(), dqkv.end());
    });
    return all;
  };
  const auto one = run(1);
  expect_bit_equal(one, run(2), "attention out|lse|dqkv, 1 vs 2 threads");
  expect_bit_equal(one, run(3), "attention out|lse|dqkv, 1 vs 3 threads");
}

}  // namespace
}  // namespace tessera
