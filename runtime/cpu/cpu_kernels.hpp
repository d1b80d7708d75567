// CpuKernels: the CPU implementation of the Kernels table (OpenBLAS for GEMMs, OpenMP loops for the
// rest). Each op lives in its own runtime/cpu/cpu_<op>.cpp; element-wise formulas come from
// runtime/math/*_math.hpp so a CUDA build computes the same thing.
#pragma once

#include "tessera/runtime/kernels.hpp"

namespace tessera {

class CpuKernels final : public Kernels {
 public:
  void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
            const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
            std::int64_t ldc) const override;
  void linear_forward(float* out, const float* inp, const float* weight, const float* bias, std::int64_t n,
                      std::int64_t c, std::int64_t oc) const override;
  void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, std::int64_t n, std::int64_t c, std::int64_t oc) const override;
  void linear_gelu_forward(float* out, float* pre, const float* inp, const float* weight, const float* bias,
                           std::int64_t n, std::int64_t c, std::int64_t oc) const override;
  void linear_gelu_backward(float* dinp, float* dweight, float* dbias, float* dout, const float* pre,
                            const float* inp, const float* weight, std::int64_t n, std::int64_t c,
                            std::int64_t oc) const override;
  void embedding_forward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe,
                         std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t v) const override;
  void embedding_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens,
                          std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t v) const override;
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                         const float* bias, std::int64_t n, std::int64_t c, float eps) const override;
  void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                          const float* weight, const float* mean, const float* rstd, std::int64_t n,
                          std::int64_t c) const override;
  void residual_layernorm_forward(float* sum, float* out, float* mean, float* rstd, const float* a,
                                  const float* b, const float* weight, const float* bias, std::int64_t n,
                                  std::int64_t c, float eps) const override;
  void residual_layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                   const float* dresidual, const float* inp, const float* weight,
                                   const float* mean, const float* rstd, std::int64_t n,
                                   std::int64_t c) const override;
  void attention_forward(float* out, float* probs, const float* qkv, std::int64_t b, std::int64_t t,
                         std::int64_t c, std::int64_t nh) const override;
  void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv, const float* probs,
                          std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh) const override;
  void gelu_forward(float* out, const float* inp, std::int64_t n) const override;
  void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n) const override;
  void add(float* out, const float* a, const float* b, std::int64_t n) const override;
  void scale(float* x, float s, std::int64_t n) const override;
  void cross_entropy_forward(float* losses, float* lse, const float* logits, const std::int32_t* targets,
                             std::int64_t n, std::int64_t v) const override;
  void cross_entropy_backward(float* dlogits, const float* logits, const float* lse, const std::int32_t* targets,
                              float dloss, std::int64_t n, std::int64_t v) const override;
  void sum(const float* x, std::int64_t n, double* out) const override;
  void sum_squares(const float* x, std::int64_t n, double* out) const override;
  void add_sum_squares(float* out, const float* a, const float* b, std::int64_t n,
                       double* sum_squares_out) const override;
  void has_non_finite(const float* x, std::int64_t n, std::int32_t* out) const override;
  void adamw_update(float* param, const float* grad, float* m, float* v, std::int64_t n,
                    const AdamWScalars& s) const override;
  void adamw8bit_update(float* param, const float* grad, std::int8_t* m_codes, float* m_absmax, std::uint8_t* v_codes,
                        float* v_absmax, std::int64_t n, std::int64_t block, std::span<const ParamSegment> segments,
                        const AdamWScalars& no_decay, const AdamWScalars& decay) const override;
  void convert(const void* src, DType from, void* dst, DType to, std::int64_t n) const override;
};

}  // namespace tessera
