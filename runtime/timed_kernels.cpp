// TimedKernels: every op forwarded to the inner table inside a steady-clock measurement, added to its
// group's atomic totals.
#include "tessera/runtime/timed_kernels.hpp"

#include <chrono>

namespace tessera {

const char* kernel_group_name(KernelGroup group) {
  switch (group) {
    case KernelGroup::kGemm: return "gemm";
    case KernelGroup::kAttention: return "attention";
    case KernelGroup::kElementwise: return "elementwise";
    case KernelGroup::kLoss: return "loss";
    case KernelGroup::kOptimizer: return "optimizer";
    case KernelGroup::kConversion: return "conversion";
  }
  return "unknown";
}

double KernelTimes::total_seconds() const {
  double total = 0.0;
  for (double s : seconds) total += s;
  return total;
}

KernelTimes TimedKernels::times() const {
  KernelTimes t;
  for (int g = 0; g < kKernelGroupCount; ++g) {
    t.seconds[g] = static_cast<double>(nanoseconds_[g].load(std::memory_order_relaxed)) * 1e-9;
    t.calls[g] = calls_[g].load(std::memory_order_relaxed);
  }
  return t;
}

void TimedKernels::reset() {
  for (int g = 0; g < kKernelGroupCount; ++g) {
    nanoseconds_[g].store(0, std::memory_order_relaxed);
    calls_[g].store(0, std::memory_order_relaxed);
  }
}

template <typename Op>
void TimedKernels::timed(KernelGroup group, Op&& op) const {
  const auto t0 = std::chrono::steady_clock::now();
  op();
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0);
  const auto g = static_cast<std::size_t>(group);
  nanoseconds_[g].fetch_add(ns.count(), std::memory_order_relaxed);
  calls_[g].fetch_add(1, std::memory_order_relaxed);
}

void TimedKernels::gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                        const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                        std::int64_t ldc) const {
  timed(KernelGroup::kGemm, [&] { inner_.gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc); });
}

void TimedKernels::linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                                  std::int64_t n, std::int64_t c, std::int64_t oc) const {
  timed(KernelGroup::kGemm, [&] { inner_.linear_forward(out, inp, weight, bias, n, c, oc); });
}

void TimedKernels::linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                                   const float* weight, std::int64_t n, std::int64_t c, std::int64_t oc) const {
  timed(KernelGroup::kGemm, [&] { inner_.linear_backward(dinp, dweight, dbias, dout, inp, weight, n, c, oc); });
}

void TimedKernels::linear_gelu_forward(float* out, float* pre, const float* inp, const float* weight,
                                       const float* bias, std::int64_t n, std::int64_t c, std::int64_t oc) const {
  timed(KernelGroup::kGemm, [&] { inner_.linear_gelu_forward(out, pre, inp, weight, bias, n, c, oc); });
}

void TimedKernels::linear_gelu_backward(float* dinp, float* dweight, float* dbias, float* dout, const float* pre,
                                        const float* inp, const float* weight, std::int64_t n, std::int64_t c,
                                        std::int64_t oc) const {
  timed(KernelGroup::kGemm,
        [&] { inner_.linear_gelu_backward(dinp, dweight, dbias, dout, pre, inp, weight, n, c, oc); });
}

void TimedKernels::embedding_forward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe,
                                     std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t v) const {
  timed(KernelGroup::kElementwise, [&] { inner_.embedding_forward(out, tokens, wte, wpe, b, t, c, v); });
}

void TimedKernels::embedding_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens,
                                      std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t v) const {
  timed(KernelGroup::kElementwise, [&] { inner_.embedding_backward(dwte, dwpe, dout, tokens, b, t, c, v); });
}

void TimedKernels::layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                                     const float* bias, std::int64_t n, std::int64_t c, float eps) const {
  timed(KernelGroup::kElementwise, [&] { inner_.layernorm_forward(out, mean, rstd, inp, weight, bias, n, c, eps); });
}

void TimedKernels::layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                      const float* inp, const float* weight, const float* mean, const float* rstd,
                                      std::int64_t n, std::int64_t c) const {
  timed(KernelGroup::kElementwise,
        [&] { inner_.layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, n, c); });
}

void TimedKernels::residual_layernorm_forward(float* sum, float* out, float* mean, float* rstd, const float* a,
                                              const float* b, const float* weight, const float* bias,
                                              std::int64_t n, std::int64_t c, float eps) const {
  timed(KernelGroup::kElementwise,
        [&] { inner_.residual_layernorm_forward(sum, out, mean, rstd, a, b, weight, bias, n, c, eps); });
}

void TimedKernels::residual_layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                               const float* dresidual, const float* inp, const float* weight,
                                               const float* mean, const float* rstd, std::int64_t n,
                                               std::int64_t c) const {
  timed(KernelGroup::kElementwise, [&] {
    inner_.residual_layernorm_backward(dinp, dweight, dbias, dout, dresidual, inp, weight, mean, rstd, n, c);
  });
}

void TimedKernels::attention_forward(float* out, float* probs, const float* qkv, std::int64_t b, std::int64_t t,
                                     std::int64_t c, std::int64_t nh) const {
  timed(KernelGroup::kAttention, [&] { inner_.attention_forward(out, probs, qkv, b, t, c, nh); });
}

void TimedKernels::attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                                      const float* probs, std::int64_t b, std::int64_t t, std::int64_t c,
                                      std::int64_t nh) const {
  timed(KernelGroup::kAttention, [&] { inner_.attention_backward(dqkv, scratch, dout, qkv, probs, b, t, c, nh); });
}

void TimedKernels::gelu_forward(float* out, const float* inp, std::int64_t n) const {
  timed(KernelGroup::kElementwise, [&] { inner_.gelu_forward(out, inp, n); });
}

void TimedKernels::gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n) const {
  timed(KernelGroup::kElementwise, [&] { inner_.gelu_backward(dinp, inp, dout, n); });
}

void TimedKernels::add(float* out, const float* a, const float* b, std::int64_t n) const {
  timed(KernelGroup::kElementwise, [&] { inner_.add(out, a, b, n); });
}

void TimedKernels::scale(float* x, float s, std::int64_t n) const {
  timed(KernelGroup::kOptimizer, [&] { inner_.scale(x, s, n); });
}

void TimedKernels::cross_entropy_forward(float* losses, float* lse, const float* logits,
                                         const std::int32_t* targets, std::int64_t n, std::int64_t v) const {
  timed(KernelGroup::kLoss, [&] { inner_.cross_entropy_forward(losses, lse, logits, targets, n, v); });
}

void TimedKernels::cross_entropy_backward(float* dlogits, const float* logits, const float* lse,
                                          const std::int32_t* targets, float dloss, std::int64_t n,
                                          std::int64_t v) const {
  timed(KernelGroup::kLoss, [&] { inner_.cross_entropy_backward(dlogits, logits, lse, targets, dloss, n, v); });
}

void TimedKernels::sum(const float* x, std::int64_t n, double* out) const {
  timed(KernelGroup::kLoss, [&] { inner_.sum(x, n, out); });
}

void TimedKernels::sum_squares(const float* x, std::int64_t n, double* out) const {
  timed(KernelGroup::kOptimizer, [&] { inner_.sum_squares(x, n, out); });
}

void TimedKernels::has_non_finite(const float* x, std::int64_t n, std::int32_t* out) const {
  timed(KernelGroup::kOptimizer, [&] { inner_.has_non_finite(x, n, out); });
}

void TimedKernels::adamw_update(float* param, const float* grad, float* m, float* v, std::int64_t n,
                                const AdamWScalars& s) const {
  timed(KernelGroup::kOptimizer, [&] { inner_.adamw_update(param, grad, m, v, n, s); });
}

void TimedKernels::adamw8bit_update(float* param, const float* grad, std::int8_t* m_codes, float* m_absmax,
                                    std::uint8_t* v_codes, float* v_absmax, std::int64_t n, std::int64_t block,
                                    std::span<const ParamSegment> segments, const AdamWScalars& no_decay,
                                    const AdamWScalars& decay) const {
  timed(KernelGroup::kOptimizer, [&] {
    inner_.adamw8bit_update(param, grad, m_codes, m_absmax, v_codes, v_absmax, n, block, segments, no_decay, decay);
  });
}

void TimedKernels::convert(const void* src, DType from, void* dst, DType to, std::int64_t n) const {
  timed(KernelGroup::kConversion, [&] { inner_.convert(src, from, dst, to, n); });
}

}  // namespace tessera
