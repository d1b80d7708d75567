// CpuKernels embedding: forward against a double reference, token/position gradients by finite
// differences (with repeated tokens), accumulation, and a backward that is the same bits on 1 and 2
// threads when many rows hit the same token.
#include <gtest/gtest.h>

#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tests/runtime/cpu/kernel_check.hpp"

namespace tessera {
namespace {

using test::kForwardTol;
using test::kGradTol;
using test::expect_bit_equal;
using test::expect_close;
using test::finite_difference;
using test::random_floats;
using test::to_double;


struct EmbShape {
  std::int64_t b = 2, t = 5, c = 6, v = 7, max_t = 8;
};

std::vector<double> embedding_reference(const std::vector<double>& wte, const std::vector<double>& wpe,
                                        const std::vector<std::int32_t>& tokens, const EmbShape& s) {
  std::vector<double> out(s.b * s.t * s.c);
  for (std::int64_t r = 0; r < s.b * s.t; ++r) {
    for (std::int64_t j = 0; j < s.c; ++j) out[r * s.c + j] = wte[tokens[r] * s.c + j] + wpe[(r % s.t) * s.c + j];
  }
  return out;
}

TEST(CpuEmbedding, ForwardAndBackwardMatchReference) {
  CpuKernels k;
  const EmbShape s;
  const std::vector<std::int32_t> tokens = {3, 1, 3, 0, 6, 3, 3, 2, 1, 5};  // token 3 four times
  const auto wte = random_floats(s.v * s.c, 1);
  const auto wpe = random_floats(s.max_t * s.c, 2);
  std::vector<float> out(s.b * s.t * s.c);
  k.embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), s.b, s.t, s.c, s.v);
  expect_close(out, embedding_reference(to_double(wte), to_double(wpe), tokens, s), kForwardTol, "embedding out");

  const auto r = random_floats(out.size(), 3);
  auto loss = [&](const std::vector<double>& te, const std::vector<double>& pe) {
    const auto o = embedding_reference(te, pe, tokens, s);
    double total = 0.0;
    for (std::size_t i = 0; i < o.size(); ++i) total += o[i] * r[i];
    return total;
  };
  std::vector<float> dwte(wte.size(), 0.0f), dwpe(wpe.size(), 0.0f);
  k.embedding_backward(dwte.data(), dwpe.data(), r.data(), tokens.data(), s.b, s.t, s.c, s.v);
  const auto fd_te =
      finite_difference([&](const std::vector<double>& x) { return loss(x, to_double(wpe)); }, to_double(wte));
  const auto fd_pe =
      finite_difference([&](const std::vector<double>& x) { return loss(to_double(wte), x); }, to_double(wpe));
  expect_close(dwte, fd_te, kGradTol, "dwte");
  expect_close(dwpe, fd_pe, kGradTol, "dwpe");

  // A second call adds the same again.
  const auto dwte1 = dwte, dwpe1 = dwpe;
  k.embedding_backward(dwte.data(), dwpe.data(), r.data(), tokens.data(), s.b, s.t, s.c, s.v);
  for (std::size_t i = 0; i < dwte.size(); ++i) {
    EXPECT_FLOAT_EQ(dwte[i], 2.0f * dwte1[i]) << "dwte[" << i << "] after two calls";
  }
  for (std::size_t i = 0; i < dwpe.size(); ++i) {
    EXPECT_FLOAT_EQ(dwpe[i], 2.0f * dwpe1[i]) << "dwpe[" << i << "] after two calls";
  }
}

TEST(CpuEmbedding, RepeatedTokensAddInRowOrder) {
  // Three rows of the same token: (1 + 1e-8) - 1 is 0 in f32, (1 - 1) + 1e-8 is not; order matters.
  CpuKernels k;
  const std::int64_t b = 1, t = 3, c = 1, v = 1;
  const std::vector<std::int32_t> tokens = {0, 0, 0};
  const std::vector<float> dout = {1.0f, 1e-8f, -1.0f};
  std::vector<float> dwte(1, 0.0f), dwpe(3, 0.0f);
  k.embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), b, t, c, v);
  const float expected = ((0.0f + 1.0f) + 1e-8f) + -1.0f;  // (b,t) order
  EXPECT_EQ(dwte[0], expected) << "dwte must add rows in (b,t) order";
}

TEST(CpuEmbedding, BackwardIsBitIdenticalOnOneAndTwoThreads) {
  CpuKernels k;
  const std::int64_t b = 4, t = 256, c = 384, v = 50;
  std::vector<std::int32_t> tokens(b * t);
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>((i * 7919) % v);
  const auto dout = random_floats(b * t * c, 5);
  auto run = [&](int threads) {
    std::vector<float> dwte(v * c, 0.25f), dwpe(t * c, 0.25f);
    test::with_threads(threads,
                       [&] { k.embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), b, t, c, v); });
    dwte.insert(dwte.end(), dwpe.begin(), dwpe.end());
    return dwte;
  };
  expect_bit_equal(run(1), run(2), "embedding dwte|dwpe, 1 vs 2 threads");
}

TEST(CpuEmbedding, TokenOutsideTheTableThrowsBeforeWriting) {
  CpuKernels k;
  const std::int64_t b = 1, t = 3, c = 2, v = 4;
  const std::vector<float> wte(v * c, 1.0f), wpe(t * c, 0.0f), dout(b * t * c, 1.0f);
  for (const std::int32_t bad : {4, -1, 70000}) {
    const std::vector<std::int32_t> tokens = {0, bad, 1};
    std::vector<float> out(b * t * c, -5.0f), dwte(v * c, 0.0f), dwpe(t * c, 0.0f);
    try {
      k.embedding_forward(out.data(), tokens.data(), wte.data(), wpe.data(), b, t, c, v);
      ADD_FAILURE() << "embedding_forward accepted token " << bad << " with v = " << v;
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("token[1] = " + std::to_string(bad)), std::string::npos) << e.what();
    }
    EXPECT_THROW(k.embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), b, t, c, v),
                 std::out_of_range)
        << "token " << bad;
    for (float x : out) EXPECT_EQ(x, -5.0f) << "forward wrote before refusing token " << bad;
    for (float x : dwte) EXPECT_EQ(x, 0.0f) << "backward wrote before refusing token " << bad;
  }
}

}  // namespace
}  // namespace tessera
