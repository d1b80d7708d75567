// CudaKernels: the CUDA implementation of the Kernels table. GEMMs go through cuBLAS / cuBLASLt
// (cublas_context.hpp) in the arithmetic GemmMath names; every other op is a kernel of its own in
// runtime/cuda/cuda_<op>.cu, beside the CPU's runtime/cpu/cpu_<op>.cpp, with element-wise formulas
// from runtime/math/*_math.hpp. The table's f32 entries call the f32 instantiations of the typed
// launchers (cuda_ops.hpp). linear + GELU runs the bias and GELU as their own pass after the cuBLAS
// GEMM (the same arithmetic as linear_forward then gelu_forward); its backward writes the GELU
// derivative over dout in place. add_sum_squares is add then sum_squares, two kernels.
//
// Attention on bf16 tensors runs cuDNN's fused flash attention (cudnn/cudnn_attention.hpp) on the
// tensors in place (the caller's scratch is the library's workspace), with f32 softmax statistics.
// On f32 tensors, with bf16 GEMM math (the tensor-core setting), it runs on bf16 copies of q, k, v,
// out and dout made in the caller's scratch (attention_scratch_bytes); with f32 or tf32 math the
// tiled kernel (cuda_attention.cu) in f32. Without cuDNN, or for a shape cuDNN refuses, the tiled
// kernel in the tensors' type. One shape and type always takes one path, forward and backward.
//
// Ownership: the CudaDevice owns one CudaKernels per device and the stream it is bound to (which
// must outlive it). CudaKernels owns its cuBLAS and cuBLASLt handles, a fixed workspace (cuBLASLt's,
// and the kernels' scratch), the cuDNN handle with its graphs, and the token check's two words; it
// allocates no device memory after construction. All work is queued on `stream` and calls return
// without waiting, except the embedding forward and backward: the table promises that a token outside [0, v) throws
// before anything is read or written, which costs one small device-to-host copy and a wait on the stream
// (token_range_check.hpp). Calls may come from any thread, one at a time; each makes `device`
// current for its duration.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "tessera/runtime/cuda/cublas_context.hpp"
#include "tessera/runtime/cuda/fused_attention.hpp"
#include "tessera/runtime/cuda/token_range_check.hpp"
#include "tessera/runtime/gemm_math.hpp"
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
  // The Stream object over stream() (the CudaDevice's compute stream). With it, embedding_backward
  // checks its tokens without waiting (TokenRangeCheck::check_on_stream): a bad token fails the
  // stream and is rethrown by its next synchronize, and nothing is written. Without it (kernels on
  // a bare cudaStream_t) the check waits and throws at the call.
  void set_host_calls(Stream* stream) { host_calls_ = stream; }

#define TESSERA_KERNEL_OP(name, group, params, args) void name params const override;
#include "tessera/runtime/kernel_ops.hpp"

  std::size_t attention_scratch_bytes(std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh,
                                      DType dtype) const override;
  std::string attention_kernel() const override;
  // Whether attention at this shape on `dtype` tensors runs cuDNN's fused kernel; when not, why.
  bool fused_attention_at(const AttentionShape& shape, DType dtype, std::string* why = nullptr) const;

 private:
  // The fused attention for `shape` on `dtype` tensors, or null when the tiled kernel runs it (and
  // why, into `why`).
  FusedAttention* fused_attention(const AttentionShape& shape, DType dtype, std::string* why = nullptr) const;

  // Runs `launch(refuse)` for a kernel that writes by the token ids `tokens` (n) once they are checked
  // against [0, vocab): with host_calls_, on the stream (`refuse` the flag the kernel reads: a bad
  // token fails the stream and nothing is written); without, waiting (throws here; `refuse` null).
  template <typename Launch>
  void checked_tokens(const std::int32_t* tokens, std::int64_t n, std::int64_t vocab, const char* where,
                      const Launch& launch) const;

  // The workspace as scratch of `count` elements of `what`; throws when it is too small.
  template <typename E>
  E* scratch(std::size_t count, const char* what) const;

  int device_;
  cudaStream_t stream_;
  GemmMath math_;
  CublasContext blas_;
  TokenRangeCheck token_check_;
  Stream* host_calls_ = nullptr;
  std::unique_ptr<FusedAttention> fused_;  // null: no cuDNN in this build, or it failed to start
  std::string fused_absent_;               // why fused_ is null
};

}  // namespace tessera
