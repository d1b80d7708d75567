// The CUDA Kernels table's bf16 overloads (Bf16* tensors, what the modules call with bf16 compute)
// against the CPU table's bf16 overloads on the same inputs, within kBf16Tolerance: GEMM, linear and
// linear + GELU, embedding, layernorm (plain and residual), RMSNorm, rotary, attention (cuDNN's
// fused kernel on the tensors in place when it takes the shape, with no scratch but its workspace;
// the tiled kernel otherwise), GELU, SwiGLU, add, cross-entropy, add_bf16 into f32, and the
// vocabulary-sharded embedding and cross-entropy; and the norms with f32 parameters beside bf16
// activations. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tessera/precision/bf16.hpp"
#include "tests/runtime/cuda/cuda_test_support.hpp"

namespace tessera {
namespace {

using test::DeviceBuffer;
using test::expect_close;
using test::random_floats;

std::vector<Bf16> bf16_values(std::size_t n, std::uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::vector<Bf16> out;
  for (float v : random_floats(n, seed, lo, hi)) out.push_back(from_f32<Bf16>(v));
  return out;
}

std::vector<float> widened(const std::vector<Bf16>& x) {
  std::vector<float> out;
  for (Bf16 v : x) out.push_back(to_f32(v));
  return out;
}

// The GPU's bf16 result within the bf16 tolerance of the CPU's bf16 result.
void expect_bf16(const DeviceBuffer<Bf16>& gpu, const std::vector<Bf16>& cpu, const std::string& what) {
  expect_close(widened(gpu.download()), widened(cpu), kBf16Tolerance, what + " (bf16)");
}

class CudaBf16Table : public test::CudaKernelTest {};

TEST_F(CudaBf16Table, GemmLinearAndLinearGelu) {
  const std::int64_t n = 70, c = 96, oc = 130;
  auto inp = bf16_values(n * c, 1), w = bf16_values(oc * c, 2), bias = bf16_values(oc, 3);
  std::vector<Bf16> out(n * oc), pre(n * oc);
  DeviceBuffer<Bf16> g_inp(inp), g_w(w), g_bias(bias), g_out(n * oc), g_pre(n * oc);
  gpu_->linear_forward(g_out.get(), g_inp.get(), g_w.get(), g_bias.get(), n, c, oc);
  cpu_.linear_forward(out.data(), inp.data(), w.data(), bias.data(), n, c, oc);
  expect_bf16(g_out, out, "linear forward");
  gpu_->linear_gelu_forward(g_out.get(), g_pre.get(), g_inp.get(), g_w.get(), g_bias.get(), n, c, oc);
  cpu_.linear_gelu_forward(out.data(), pre.data(), inp.data(), w.data(), bias.data(), n, c, oc);
  expect_bf16(g_out, out, "linear+gelu forward");
  auto dout = bf16_values(n * oc, 4), dw = bf16_values(oc * c, 5), db = bf16_values(oc, 6);
  std::vector<Bf16> dinp(n * c);
  DeviceBuffer<Bf16> g_dout(dout), g_dw(dw), g_db(db), g_dinp(n * c);
  gpu_->linear_gelu_backward(g_dinp.get(), g_dw.get(), g_db.get(), g_dout.get(), g_pre.get(), g_inp.get(), g_w.get(),
                             n, c, oc);
  cpu_.linear_gelu_backward(dinp.data(), dw.data(), db.data(), dout.data(), pre.data(), inp.data(), w.data(), n, c, oc);
  expect_bf16(g_dinp, dinp, "linear+gelu backward dinp");
  expect_bf16(g_dw, dw, "linear+gelu backward dweight (accumulated)");
  expect_bf16(g_db, db, "linear+gelu backward dbias (accumulated)");
  std::vector<Bf16> cm(n * oc);
  DeviceBuffer<Bf16> g_c(n * oc);
  gpu_->gemm(false, true, n, oc, c, 0.5f, g_inp.get(), c, g_w.get(), c, 0.0f, g_c.get(), oc);
  cpu_.gemm(false, true, n, oc, c, 0.5f, inp.data(), c, w.data(), c, 0.0f, cm.data(), oc);
  expect_bf16(g_c, cm, "gemm");
}

TEST_F(CudaBf16Table, EmbeddingNormsAndRotary) {
  const std::int64_t b = 2, t = 33, c = 96, v = 50, nh = 4, nkv = 2, hs = 24;
  const auto tokens = test::random_tokens(b * t, static_cast<std::int32_t>(v), 7);
  auto wte = bf16_values(v * c, 8), wpe = bf16_values(t * c, 9);
  std::vector<Bf16> x(b * t * c);
  DeviceBuffer<std::int32_t> g_tokens(tokens);
  DeviceBuffer<Bf16> g_wte(wte), g_wpe(wpe), g_x(b * t * c);
  gpu_->embedding_forward(g_x.get(), g_tokens.get(), g_wte.get(), g_wpe.get(), b, t, c, v);
  cpu_.embedding_forward(x.data(), tokens.data(), wte.data(), wpe.data(), b, t, c, v);
  expect_bf16(g_x, x, "embedding forward");

  const std::int64_t rows = b * t;
  auto w = bf16_values(c, 10, 0.5f, 1.5f), bias = bf16_values(c, 11), r = bf16_values(rows * c, 12);
  std::vector<Bf16> sum(rows * c), out(rows * c);
  std::vector<float> mean(rows), rstd(rows);
  DeviceBuffer<Bf16> g_w(w), g_bias(bias), g_r(r), g_sum(rows * c), g_out(rows * c);
  DeviceBuffer<float> g_mean(rows), g_rstd(rows);
  gpu_->residual_layernorm_forward(g_sum.get(), g_out.get(), g_mean.get(), g_rstd.get(), g_x.get(), g_r.get(),
                                   g_w.get(), g_bias.get(), rows, c, 1e-5f);
  cpu_.residual_layernorm_forward(sum.data(), out.data(), mean.data(), rstd.data(), x.data(), r.data(), w.data(),
                                  bias.data(), rows, c, 1e-5f);
  expect_bf16(g_sum, sum, "residual sum");
  expect_bf16(g_out, out, "residual layernorm out");
  expect_close(g_rstd.download(), rstd, kF32Tolerance, "layernorm rstd (f32 statistics)");
  auto dy = bf16_values(rows * c, 13);
  std::vector<Bf16> dx(rows * c), dw(c, from_f32<Bf16>(0.0f)), db(c, from_f32<Bf16>(0.0f));
  DeviceBuffer<Bf16> g_dy(dy), g_dx(rows * c), g_dw(dw), g_db(db);
  gpu_->layernorm_backward(g_dx.get(), g_dw.get(), g_db.get(), g_dy.get(), g_sum.get(), g_w.get(), g_mean.get(),
                           g_rstd.get(), rows, c);
  cpu_.layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), sum.data(), w.data(), mean.data(), rstd.data(),
                          rows, c);
  expect_bf16(g_dx, dx, "layernorm dinp");
  expect_bf16(g_dw, dw, "layernorm dweight");

  gpu_->rmsnorm_forward(g_out.get(), g_rstd.get(), g_x.get(), g_w.get(), rows, c, 1e-5f);
  cpu_.rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), rows, c, 1e-5f);
  expect_bf16(g_out, out, "rmsnorm out");

  auto proj = bf16_values(rows * (nh + 2 * nkv) * hs, 14);
  std::vector<Bf16> qkv(rows * 3 * nh * hs);
  DeviceBuffer<Bf16> g_proj(proj), g_qkv(rows * 3 * nh * hs);
  gpu_->rotary_qkv_forward(g_qkv.get(), g_proj.get(), b, t, nh, nkv, hs, 10000.0f);
  cpu_.rotary_qkv_forward(qkv.data(), proj.data(), b, t, nh, nkv, hs, 10000.0f);
  expect_bf16(g_qkv, qkv, "rotary forward");
}

// The norms with bf16 activations and f32 gains and biases (a bf16 run's norms), gains bf16 cannot
// hold among them: the GPU's outputs within bf16's tolerance of the CPU's, the f32 parameter
// gradients within f32's.
TEST_F(CudaBf16Table, NormsWithF32Parameters) {
  const std::int64_t rows = 66, c = 96;
  auto x = bf16_values(rows * c, 31, -2.0f, 3.0f), r = bf16_values(rows * c, 32), dy = bf16_values(rows * c, 33);
  std::vector<float> w = random_floats(c, 34, 0.999f, 1.001f), bias = random_floats(c, 35);
  std::vector<Bf16> sum(rows * c), out(rows * c), dx(rows * c);
  std::vector<float> mean(rows), rstd(rows), dw(c, 0.0f), db(c, 0.0f);
  DeviceBuffer<Bf16> g_x(x), g_r(r), g_dy(dy), g_sum(rows * c), g_out(rows * c), g_dx(rows * c);
  DeviceBuffer<float> g_w(w), g_bias(bias), g_mean(rows), g_rstd(rows), g_dw(dw), g_db(db);
  gpu_->residual_layernorm_forward(g_sum.get(), g_out.get(), g_mean.get(), g_rstd.get(), g_x.get(), g_r.get(),
                                   g_w.get(), g_bias.get(), rows, c, 1e-5f);
  cpu_.residual_layernorm_forward(sum.data(), out.data(), mean.data(), rstd.data(), x.data(), r.data(), w.data(),
                                  bias.data(), rows, c, 1e-5f);
  expect_bf16(g_out, out, "residual layernorm out, f32 parameters");
  gpu_->residual_layernorm_backward(g_dx.get(), g_dw.get(), g_db.get(), g_dy.get(), g_r.get(), g_sum.get(), g_w.get(),
                                    g_mean.get(), g_rstd.get(), rows, c);
  cpu_.residual_layernorm_backward(dx.data(), dw.data(), db.data(), dy.data(), r.data(), sum.data(), w.data(),
                                   mean.data(), rstd.data(), rows, c);
  expect_bf16(g_dx, dx, "residual layernorm dinp, f32 parameters");
  expect_close(g_dw.download(), dw, kF32Tolerance, "layernorm dweight (f32)");
  expect_close(g_db.download(), db, kF32Tolerance, "layernorm dbias (f32)");
  std::fill(dw.begin(), dw.end(), 0.0f);
  DeviceBuffer<float> g_dw2(dw);
  gpu_->rmsnorm_forward(g_out.get(), g_rstd.get(), g_x.get(), g_w.get(), rows, c, 1e-5f);
  cpu_.rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), rows, c, 1e-5f);
  expect_bf16(g_out, out, "rmsnorm out, f32 gains");
  gpu_->rmsnorm_backward(g_dx.get(), g_dw2.get(), g_dy.get(), g_x.get(), g_w.get(), g_rstd.get(), rows, c);
  cpu_.rmsnorm_backward(dx.data(), dw.data(), dy.data(), x.data(), w.data(), rstd.data(), rows, c);
  expect_bf16(g_dx, dx, "rmsnorm dinp, f32 gains");
  expect_close(g_dw2.download(), dw, kF32Tolerance, "rmsnorm dweight (f32)");
}

TEST_F(CudaBf16Table, AttentionOnTheTensorsThemselves) {
  for (GemmMath math : {GemmMath::kF32, GemmMath::kBf16}) {  // bf16 tensors take cuDNN either way
    gpu_->set_gemm_math(math);
    const std::int64_t b = 2, t = 128, c = 128, nh = 2;
    auto qkv = bf16_values(b * t * 3 * c, 15, -2.0f, 2.0f);
    std::vector<Bf16> out(b * t * c), dqkv(b * t * 3 * c);
    std::vector<float> lse(b * nh * t), delta(b * nh * t);
    const std::size_t scratch_bytes = gpu_->attention_scratch_bytes(b, t, c, nh, DType::kBF16);
    EXPECT_LE(scratch_bytes, gpu_->attention_scratch_bytes(b, t, c, nh, DType::kF32))
        << "bf16 tensors need no bf16 copies";
    DeviceBuffer<std::uint8_t> scratch(scratch_bytes);
    DeviceBuffer<Bf16> g_qkv(qkv), g_out(b * t * c), g_dqkv(b * t * 3 * c);
    DeviceBuffer<float> g_lse(b * nh * t), g_delta(b * nh * t);
    void* s = scratch_bytes > 0 ? scratch.get() : nullptr;
    gpu_->attention_forward(g_out.get(), g_lse.get(), g_qkv.get(), b, t, c, nh, s);
    cpu_.attention_forward(out.data(), lse.data(), qkv.data(), b, t, c, nh, nullptr);
    expect_bf16(g_out, out, "attention out");
    auto dout = bf16_values(b * t * c, 16);
    DeviceBuffer<Bf16> g_dout(dout);
    gpu_->attention_backward(g_dqkv.get(), g_delta.get(), g_dout.get(), g_qkv.get(), g_out.get(), g_lse.get(), b, t, c,
                             nh, s);
    cpu_.attention_backward(dqkv.data(), delta.data(), dout.data(), qkv.data(), out.data(), lse.data(), b, t, c, nh,
                            nullptr);
    expect_bf16(g_dqkv, dqkv, "attention dqkv");
  }
}

TEST_F(CudaBf16Table, ElementwiseLossAndAccumulation) {
  const std::int64_t n = 4099, rows = 20, f = 70, v = 3000;
  auto a = bf16_values(n, 17, -3.0f, 3.0f), b = bf16_values(n, 18);
  std::vector<Bf16> out(n);
  DeviceBuffer<Bf16> g_a(a), g_b(b), g_out(n);
  gpu_->gelu_forward(g_out.get(), g_a.get(), n);
  cpu_.gelu_forward(out.data(), a.data(), n);
  expect_bf16(g_out, out, "gelu forward");
  gpu_->add(g_out.get(), g_a.get(), g_b.get(), n);
  cpu_.add(out.data(), a.data(), b.data(), n);
  expect_bf16(g_out, out, "add");
  auto gate_up = bf16_values(rows * 2 * f, 19, -3.0f, 3.0f);
  std::vector<Bf16> h(rows * f);
  DeviceBuffer<Bf16> g_gate_up(gate_up), g_h(rows * f);
  gpu_->swiglu_forward(g_h.get(), g_gate_up.get(), rows, f);
  cpu_.swiglu_forward(h.data(), gate_up.data(), rows, f);
  expect_bf16(g_h, h, "swiglu forward");

  auto logits = bf16_values(rows * v, 20, -5.0f, 5.0f);
  const auto targets = test::random_tokens(rows, static_cast<std::int32_t>(v), 21);
  std::vector<float> losses(rows), lse(rows);
  DeviceBuffer<Bf16> g_logits(logits);
  DeviceBuffer<std::int32_t> g_targets(targets);
  DeviceBuffer<float> g_losses(rows), g_lse(rows);
  gpu_->cross_entropy_forward(g_losses.get(), g_lse.get(), g_logits.get(), g_targets.get(), rows, v);
  cpu_.cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), rows, v);
  expect_close(g_losses.download(), losses, kF32Tolerance, "cross-entropy losses (f32 from bf16 logits)");
  gpu_->cross_entropy_backward(g_logits.get(), g_logits.get(), g_lse.get(), g_targets.get(), 0.5f, rows, v);
  cpu_.cross_entropy_backward(logits.data(), logits.data(), lse.data(), targets.data(), 0.5f, rows, v);
  expect_bf16(g_logits, logits, "cross-entropy dlogits (in place)");

  const auto acc = random_floats(n, 22);
  std::vector<float> sum(n);
  double squares = 0.0;
  cpu_.add_bf16(sum.data(), acc.data(), b.data(), n, &squares);
  DeviceBuffer<float> g_acc(acc);
  DeviceBuffer<double> g_squares(1);
  gpu_->add_bf16(g_acc.get(), g_acc.get(), g_b.get(), n, g_squares.get());
  expect_close(g_acc.download(), sum, 0.0, "add_bf16 (exact: one f32 add per element)");
  EXPECT_NEAR(g_squares.download()[0], squares, kF64SumTolerance * squares) << "add_bf16's sum of squares";
}

TEST_F(CudaBf16Table, VocabularyShardedEmbeddingAndCrossEntropy) {
  const std::int64_t b = 2, t = 33, c = 96, vocab = 50, first = 17, rows = 16, n = 20, v = 1500;
  const auto tokens = test::random_tokens(b * t, static_cast<std::int32_t>(vocab), 23);
  auto wte = bf16_values(rows * c, 24), wpe = bf16_values(t * c, 25);
  std::vector<Bf16> x(b * t * c);
  DeviceBuffer<std::int32_t> g_tokens(tokens);
  DeviceBuffer<Bf16> g_wte(wte), g_wpe(wpe), g_x(b * t * c);
  gpu_->embedding_shard_forward(g_x.get(), g_tokens.get(), g_wte.get(), g_wpe.get(), b, t, c, first, rows, vocab);
  cpu_.embedding_shard_forward(x.data(), tokens.data(), wte.data(), wpe.data(), b, t, c, first, rows, vocab);
  expect_bf16(g_x, x, "embedding shard forward");
  auto dout = bf16_values(b * t * c, 26), dwte = bf16_values(rows * c, 27), dwpe = bf16_values(t * c, 28);
  DeviceBuffer<Bf16> g_dout(dout), g_dwte(dwte), g_dwpe(dwpe);
  gpu_->embedding_shard_backward(g_dwte.get(), g_dwpe.get(), g_dout.get(), g_tokens.get(), b, t, c, first, rows, vocab);
  cpu_.embedding_shard_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), b, t, c, first, rows, vocab);
  expect_bf16(g_dwte, dwte, "embedding shard dwte (accumulated)");
  expect_bf16(g_dwpe, dwpe, "embedding shard dwpe (accumulated)");

  // Columns [1500, 3000) of a vocabulary of 4000.
  const std::int64_t ce_first = 1500, ce_vocab = 4000;
  auto logits = bf16_values(n * v, 29, -5.0f, 5.0f);
  const auto targets = test::random_tokens(n, static_cast<std::int32_t>(ce_vocab), 30);
  std::vector<float> lse(n), target_logit(n);
  DeviceBuffer<Bf16> g_logits(logits);
  DeviceBuffer<std::int32_t> g_targets(targets);
  DeviceBuffer<float> g_lse(n), g_target_logit(n);
  gpu_->cross_entropy_shard_forward(g_lse.get(), g_target_logit.get(), g_logits.get(), g_targets.get(), n, v, ce_first,
                                    ce_vocab);
  cpu_.cross_entropy_shard_forward(lse.data(), target_logit.data(), logits.data(), targets.data(), n, v, ce_first,
                                   ce_vocab);
  expect_close(g_lse.download(), lse, kF32Tolerance, "cross-entropy shard lse (f32 from bf16 logits)");
  expect_close(g_target_logit.download(), target_logit, 0.0, "cross-entropy shard target logits (widened)");
  for (float& row_lse : lse) row_lse += 1.0f;  // as if other shards held more of the row
  g_lse.upload(lse);
  gpu_->cross_entropy_shard_backward(g_logits.get(), g_logits.get(), g_lse.get(), g_targets.get(), 0.5f, n, v,
                                     ce_first);
  cpu_.cross_entropy_shard_backward(logits.data(), logits.data(), lse.data(), targets.data(), 0.5f, n, v, ce_first);
  expect_bf16(g_logits, logits, "cross-entropy shard dlogits (in place)");
}

}  // namespace
}  // namespace tessera
