// Every CPU kernel whose work is split among threads gives the same bits at 1, 2 and 3 threads, with
// the thread count set as programs set it (set_cpu_threads). Shapes are not
// multiples of the kernels' blocks (GEMM tiles, column blocks, chunks, attention tiles), are large
// enough to take each kernel's parallel path, and the GEMMs' inner dimensions span several of
// OpenBLAS's blocks (where its own threads would round differently).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/device.hpp"
#include "tests/runtime/cpu/kernel_check.hpp"

namespace tessera {
namespace {

using test::random_floats;

// The bits of a kernel's outputs, in the order the run appends them.
class Bits {
 public:
  void add(const std::vector<float>& x) {
    const std::size_t at = bits_.size();
    bits_.resize(at + x.size());
    std::memcpy(bits_.data() + at, x.data(), x.size() * sizeof(float));
  }
  void add(double x) {
    std::uint32_t words[2];
    std::memcpy(words, &x, sizeof x);
    bits_.insert(bits_.end(), words, words + 2);
  }
  const std::vector<std::uint32_t>& words() const { return bits_; }

 private:
  std::vector<std::uint32_t> bits_;
};

constexpr int kThreadCounts[] = {1, 2, 3};

// Runs `kernel` (fresh inputs each time, its outputs appended to the Bits) at 1, 2 and 3 threads and
// expects the bits of 2 and 3 to equal those of 1; a failure names the first differing word and
// how many differ.
void expect_same_bits_at_every_thread_count(const std::string& what, const std::function<void(Bits&)>& kernel) {
  const int saved = cpu_threads();
  std::vector<Bits> runs;
  for (int threads : kThreadCounts) {
    set_cpu_threads(threads);
    runs.emplace_back();
    kernel(runs.back());
  }
  set_cpu_threads(saved);
  const auto& one = runs[0].words();
  for (std::size_t r = 1; r < runs.size(); ++r) {
    const auto& other = runs[r].words();
    ASSERT_EQ(one.size(), other.size()) << what;
    std::size_t differing = 0, first = 0;
    for (std::size_t i = 0; i < one.size(); ++i) {
      if (one[i] != other[i] && differing++ == 0) first = i;
    }
    EXPECT_EQ(differing, 0u) << what << ": " << differing << " of " << one.size() << " output words differ at "
                             << kThreadCounts[r] << " threads from 1 thread; the first is word " << first;
  }
}

std::vector<std::int32_t> tokens(std::size_t n, std::int32_t v, std::uint32_t seed) {
  std::vector<std::int32_t> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::int32_t>((i * 7919u + seed * 31u + i / 3) % v);
  return out;
}

TEST(ThreadCountDeterminism, Gemm) {
  struct Shape {
    bool ta, tb;
    std::int64_t m, n, k;
  };
  // Inner dimensions of one to four OpenBLAS blocks, odd sizes, every transpose form.
  for (const Shape s : {Shape{false, false, 559, 93, 326}, Shape{false, true, 47, 387, 615},
                        Shape{true, false, 300, 261, 827}, Shape{true, true, 67, 689, 390}}) {
    const std::int64_t lda = (s.ta ? s.m : s.k) + 3, ldb = (s.tb ? s.k : s.n) + 5, ldc = s.n + 1;
    const auto a = random_floats((s.ta ? s.k : s.m) * lda, 1);
    const auto b = random_floats((s.tb ? s.n : s.k) * ldb, 2);
    const auto c0 = random_floats(s.m * ldc, 3);
    expect_same_bits_at_every_thread_count("gemm " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                                               std::to_string(s.k) + (s.ta ? " A^T" : "") + (s.tb ? " B^T" : ""),
                                           [&](Bits& bits) {
                                             auto c = c0;
                                             CpuKernels().gemm(s.ta, s.tb, s.m, s.n, s.k, 0.75f, a.data(), lda,
                                                               b.data(), ldb, 0.5f, c.data(), ldc);
                                             bits.add(c);
                                           });
  }
}

TEST(ThreadCountDeterminism, LinearAndLinearGelu) {
  const std::int64_t n = 387, c = 72, oc = 203;
  const auto inp = random_floats(n * c, 4), w = random_floats(oc * c, 5), bias = random_floats(oc, 6);
  const auto dout = random_floats(n * oc, 7), grads = random_floats(oc * c + oc, 8);
  expect_same_bits_at_every_thread_count("linear", [&](Bits& bits) {
    const CpuKernels k;
    std::vector<float> out(n * oc), dinp(n * c), dw(grads.begin(), grads.begin() + oc * c),
        db(grads.begin() + oc * c, grads.end());
    k.linear_forward(out.data(), inp.data(), w.data(), bias.data(), n, c, oc);
    k.linear_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), w.data(), n, c, oc);
    for (const auto* x : {&out, &dinp, &dw, &db}) bits.add(*x);
  });
  expect_same_bits_at_every_thread_count("linear_gelu", [&](Bits& bits) {
    const CpuKernels k;
    std::vector<float> out(n * oc), pre(n * oc), d(dout), dinp(n * c), dw(grads.begin(), grads.begin() + oc * c),
        db(grads.begin() + oc * c, grads.end());
    k.linear_gelu_forward(out.data(), pre.data(), inp.data(), w.data(), bias.data(), n, c, oc);
    k.linear_gelu_backward(dinp.data(), dw.data(), db.data(), d.data(), pre.data(), inp.data(), w.data(), n, c, oc);
    for (const auto* x : {&out, &pre, &d, &dinp, &dw, &db}) bits.add(*x);
  });
}

TEST(ThreadCountDeterminism, LayerNormAndResidualLayerNorm) {
  const std::int64_t n = 333, c = 200;
  const auto a = random_floats(n * c, 9), b = random_floats(n * c, 10), dout = random_floats(n * c, 11);
  const auto dres = random_floats(n * c, 12), w = random_floats(c, 13), bias = random_floats(c, 14);
  const auto grads = random_floats(2 * c, 15);
  expect_same_bits_at_every_thread_count("layernorm", [&](Bits& bits) {
    const CpuKernels k;
    std::vector<float> out(n * c), mean(n), rstd(n), dinp(n * c), dw(grads.begin(), grads.begin() + c),
        db(grads.begin() + c, grads.end());
    k.layernorm_forward(out.data(), mean.data(), rstd.data(), a.data(), w.data(), bias.data(), n, c, 1e-5f);
    k.layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), a.data(), w.data(), mean.data(), rstd.data(),
                         n, c);
    for (const auto* x : {&out, &mean, &rstd, &dinp, &dw, &db}) bits.add(*x);
  });
  expect_same_bits_at_every_thread_count("residual_layernorm", [&](Bits& bits) {
    const CpuKernels k;
    std::vector<float> sum(n * c), out(n * c), mean(n), rstd(n), dinp(n * c), dw(grads.begin(), grads.begin() + c),
        db(grads.begin() + c, grads.end());
    k.residual_layernorm_forward(sum.data(), out.data(), mean.data(), rstd.data(), a.data(), b.data(), w.data(),
                                 bias.data(), n, c, 1e-5f);
    k.residual_layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), dres.data(), sum.data(), w.data(),
                                  mean.data(), rstd.data(), n, c);
    for (const auto* x : {&sum, &out, &mean, &rstd, &dinp, &dw, &db}) bits.add(*x);
  });
}

TEST(ThreadCountDeterminism, EmbeddingBackward) {
  const std::int64_t b = 3, t = 111, c = 200, v = 50;  // every token repeats
  const auto tok = tokens(b * t, static_cast<std::int32_t>(v), 1);
  const auto dout = random_floats(b * t * c, 16), dwte0 = random_floats(v * c, 17), dwpe0 = random_floats(t * c, 18);
  expect_same_bits_at_every_thread_count("embedding_backward", [&](Bits& bits) {
    auto dwte = dwte0, dwpe = dwpe0;
    CpuKernels().embedding_backward(dwte.data(), dwpe.data(), dout.data(), tok.data(), b, t, c, v);
    bits.add(dwte);
    bits.add(dwpe);
  });
}

TEST(ThreadCountDeterminism, Attention) {
  // Two (batch, head) pairs: one task per pair at 1 and 2 threads, the two-pass backward at 3.
  // b = 3 with 4 heads: twelve pairs, one task per pair at every count.
  struct Shape {
    std::int64_t b, t, c, nh;
  };
  for (const Shape s : {Shape{1, 200, 64, 2}, Shape{3, 77, 96, 4}}) {
    const auto qkv = random_floats(s.b * s.t * 3 * s.c, 19), dout = random_floats(s.b * s.t * s.c, 20);
    expect_same_bits_at_every_thread_count(
        "attention b=" + std::to_string(s.b) + " t=" + std::to_string(s.t) + " nh=" + std::to_string(s.nh),
        [&](Bits& bits) {
          const CpuKernels k;
          std::vector<float> out(s.b * s.t * s.c), lse(s.b * s.nh * s.t), dqkv(qkv.size()), delta(lse.size());
          k.attention_forward(out.data(), lse.data(), qkv.data(), s.b, s.t, s.c, s.nh, nullptr);
          k.attention_backward(dqkv.data(), delta.data(), dout.data(), qkv.data(), out.data(), lse.data(), s.b, s.t,
                               s.c, s.nh, nullptr);
          for (const auto* x : {&out, &lse, &dqkv, &delta}) bits.add(*x);
        });
  }
}

TEST(ThreadCountDeterminism, CrossEntropy) {
  const std::int64_t n = 70, v = 2500;  // rows of more than one online-softmax block
  const auto logits = random_floats(n * v, 21, -8.0f, 8.0f);
  const auto targets = tokens(n, static_cast<std::int32_t>(v), 2);
  expect_same_bits_at_every_thread_count("cross_entropy", [&](Bits& bits) {
    const CpuKernels k;
    std::vector<float> losses(n), lse(n), dlogits(n * v);
    k.cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), n, v);
    k.cross_entropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), 1.0f / n, n, v);
    double total = 0.0;
    k.sum(losses.data(), n, &total);
    for (const auto* x : {&losses, &lse, &dlogits}) bits.add(*x);
    bits.add(total);
  });
}

TEST(ThreadCountDeterminism, SumOfSquares) {
  const std::int64_t n = 3 * (1 << 16) + 17;  // several chunks, a partial last one
  const auto a = random_floats(n + 1, 22), b = random_floats(n, 23);
  expect_same_bits_at_every_thread_count("sum_squares and add_sum_squares", [&](Bits& bits) {
    const CpuKernels k;
    double plain = 0.0, unaligned = 0.0, fused = 0.0;
    k.sum_squares(a.data(), n, &plain);
    k.sum_squares(a.data() + 1, n, &unaligned);
    std::vector<float> out(n);
    k.add_sum_squares(out.data(), a.data(), b.data(), n, &fused);
    bits.add(plain);
    bits.add(unaligned);
    bits.add(fused);
    bits.add(out);
  });
}

TEST(ThreadCountDeterminism, AdamWAndAdamW8bit) {
  AdamWScalars s;
  s.lr = 1e-3f;
  s.weight_decay = 0.1f;
  s.bias_correction1 = 0.1f;
  s.bias_correction2 = 0.05f;
  AdamWScalars no_decay = s;
  no_decay.weight_decay = 0.0f;
  const std::int64_t n = 3 * (1 << 14) + 5;  // chunks and a tail shorter than a vector
  const auto p0 = random_floats(n, 24), g = random_floats(n, 25), m0 = random_floats(n, 26, -0.1f, 0.1f);
  const auto v0 = random_floats(n, 27, 0.0f, 0.01f);
  expect_same_bits_at_every_thread_count("adamw_update", [&](Bits& bits) {
    auto p = p0, m = m0, v = v0;
    CpuKernels().adamw_update(p.data(), g.data(), m.data(), v.data(), n, s);
    for (const auto* x : {&p, &m, &v}) bits.add(*x);
  });
  const std::int64_t block = 256, blocks = 301, n8 = block * blocks;
  const std::vector<ParamSegment> segments = {{0, 1000, true}, {1000, 333, false}, {1333, n8 - 1333, true}};
  const auto p8 = random_floats(n8, 28), g8 = random_floats(n8, 29);
  expect_same_bits_at_every_thread_count("adamw8bit_update", [&](Bits& bits) {
    auto p = p8;
    std::vector<std::int8_t> m_codes(n8, 0);
    std::vector<std::uint8_t> v_codes(n8, 0);
    std::vector<float> m_absmax(blocks, 0.0f), v_absmax(blocks, 0.0f);
    const CpuKernels k;
    for (int step = 0; step < 2; ++step) {
      k.adamw8bit_update(p.data(), g8.data(), m_codes.data(), m_absmax.data(), v_codes.data(), v_absmax.data(), n8,
                         block, segments, no_decay, s);
    }
    std::vector<float> codes(m_codes.begin(), m_codes.end());
    codes.insert(codes.end(), v_codes.begin(), v_codes.end());
    for (const auto* x : {&p, &m_absmax, &v_absmax, &codes}) bits.add(*x);
  });
}

}  // namespace
}  // namespace tessera
