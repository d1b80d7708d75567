// CudaKernels: the CUDA implementation of the Kernels table. GEMMs go through cuBLAS / cuBLASLt
// (cublas_context.hpp) in the arithmetic GemmMath names; every other op is a kernel of its own in
// runtime/cuda/cuda_<op>.cu, beside the CPU's runtime/cpu/cpu_<op>.cpp, with element-wise formulas
// from runtime/math/*_math.hpp. The table's f32 entries call the f32 instantiations of the typed
// launchers (cuda_ops.hpp).
//
// Ownership: the CudaDevice owns one CudaKernels per device and the stream it is bound to (which
// must outlive it). CudaKernels owns its cuBLAS and cuBLASLt handles, a fixed workspace (cuBLASLt's,
// and the kernels' scratch), and the token check's two words; it allocates nothing after
// construction. All work is queued on `stream` and calls return without waiting, except the
// embedding forward and backward: the table promises that a token outside [0, v) throws before
// anything is read or written, which costs one small device-to-host copy and a wait on the stream
// (token_range_check.hpp). Calls may come from any thread, one at a time; each makes `device`
// current for its duration.
#pragma once

#include <cuda_runtime.h>

#include "tessera/runtime/cuda/cublas_context.hpp"
#include "tessera/runtime/gemm_math.hpp"
#include "tessera/runtime/cuda/token_range_check.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {

class CudaKernels final : public Kernels {
 public:
  CudaKernels(int device, cudaStream_t stream, GemmMath math);
  ~CudaKernels() override;  // never throws
  CudaKernels(const CudaKernels&) = delete;
  CudaKernels& operator=(const CudaKernels&) = delete;

  void set_gemm_math(GemmMath math) { math_ = math; }
  GemmMath gemm_math() const { return math_; }
  cudaStream_t stream() const { return stream_; }
  int device() const { return device_; }

  void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
            const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
            std::int64_t ldc) const override;
  void linear_forward(float* out, const float* inp, const float* weight, const float* bias, std::int64_t n,
                      std::int64_t c, std::int64_t oc) const override;
  void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                       const float* weight, std::int64_t n, std::int64_t c, std::int64_t oc) const override;
  // The bias and GELU run as their own pass after the cuBLAS GEMM (the same arithmetic as
  // linear_forward then gelu_forward); the backward's GELU derivative is written over dout in place.
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
  void residual_layernorm_forward(float* sum, float* out, float* mean, float* rstd, const float* a, const float* b,
                                  const float* weight, const float* bias, std::int64_t n, std::int64_t c,
                                  float eps) const override;
  void residual_layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                   const float* dresidual, const float* inp, const float* weight, const float* mean,
                                   const float* rstd, std::int64_t n, std::int64_t c) const override;
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
  void has_non_finite(const float* x, std::int64_t n, std::int32_t* out) const override;
  void adamw_update(float* param, const float* grad, float* m, float* v, std::int64_t n,
                    const AdamWScalars& s) const override;
  void adamw8bit_update(float* param, const float* grad, std::int8_t* m_codes, float* m_absmax, std::uint8_t* v_codes,
                        float* v_absmax, std::int64_t n, std::int64_t block, std::span<const ParamSegment> segments,
                        const AdamWScalars& no_decay, const AdamWScalars& decay) const override;
  void convert(const void* src, DType from, void* dst, DType to, std::int64_t n) const override;

 private:
  // The workspace as scratch of `count` elements of `what`; throws when it is too small.
  template <typename E>
  E* scratch(std::size_t count, const char* what) const;

  int device_;
  cudaStream_t stream_;
  GemmMath math_;
  CublasContext blas_;
  TokenRangeCheck token_check_;
};

}  // namespace tessera
