// The typed launchers behind CudaKernels: each op of the Kernels table as a function templated on
// its element type T, instantiated for float and __nv_bfloat16 (f32 accumulation in both), that
// queues its kernels on a stream and returns. CudaKernels' f32 overloads call the float versions,
// its bf16 (Bf16*) overloads the __nv_bfloat16 ones. Plain C++ declarations: includable from .cpp.
//
// Shapes and semantics are those of runtime/kernels.hpp unless a comment says otherwise. Pointers
// are device pointers; statistics kept for backward (mean, rstd, lse, losses) are f32 for every T.
// Launchers whose comment names `scratch` use that device memory as workspace; CudaKernels passes
// its CublasContext's workspace. None of them synchronizes the host unless its comment says so.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "tessera/precision/dtype.hpp"
#include "tessera/runtime/gemm_math.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/param_segment.hpp"

namespace tessera {

class CublasContext;

namespace detail {

// ---- GEMM and linear (cuda_gemm.cu), on blas.stream() ----------------------------------------------
// Row-major c (m,n) = alpha op(a) op(b) + beta c, as Kernels::gemm. f32 tensors use `math`; bf16
// tensors always use the bf16 tensor cores with f32 accumulation (math is ignored).
template <typename T>
void launch_gemm(const CublasContext& blas, GemmMath math, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n,
                 std::int64_t k, float alpha, const T* a, std::int64_t lda, const T* b, std::int64_t ldb, float beta,
                 T* c, std::int64_t ldc);
// The same for `batch` independent products, matrix i at a + i*stride_a, b + i*stride_b, c + i*stride_c.
template <typename T>
void launch_gemm_batched(const CublasContext& blas, GemmMath math, bool trans_a, bool trans_b, std::int64_t m,
                         std::int64_t n, std::int64_t k, float alpha, const T* a, std::int64_t lda,
                         std::int64_t stride_a, const T* b, std::int64_t ldb, std::int64_t stride_b, float beta, T* c,
                         std::int64_t ldc, std::int64_t stride_c, std::int64_t batch);
// out (n,oc) = inp (n,c) @ weight (oc,c)^T + bias (oc); bias through the cuBLASLt epilogue.
template <typename T>
void launch_linear_forward(const CublasContext& blas, GemmMath math, T* out, const T* inp, const T* weight,
                           const T* bias, std::int64_t n, std::int64_t c, std::int64_t oc);
// dinp (n,c) = dout @ weight; dweight (oc,c) += dout^T @ inp; dbias (oc) += column sums of dout, by a
// column-sum kernel whose partials live in blas.workspace(). dinp, dbias may be null.
template <typename T>
void launch_linear_backward(const CublasContext& blas, GemmMath math, T* dinp, T* dweight, T* dbias, const T* dout,
                            const T* inp, const T* weight, std::int64_t n, std::int64_t c, std::int64_t oc);

// ---- embedding (cuda_embedding.cu) -----------------------------------------------------------------
// Tokens are not checked here (see TokenRangeCheck); every token must lie in [0, v). wpe (forward)
// and dwpe (backward) may be null: no position table.
template <typename T>
void launch_embedding_forward(T* out, const std::int32_t* tokens, const T* wte, const T* wpe, std::int64_t b,
                              std::int64_t t, std::int64_t c, cudaStream_t stream);
// dwte and dwpe accumulated; each vocabulary row gets its dout rows added in (b,t) order, in one
// thread block, without atomics: the same bits every run (and the CPU's bits for f32). When
// `refuse_if_bad` is given (a device word of TokenRangeCheck), the kernels read it first and write
// nothing unless it holds "no bad token" (all ones).
template <typename T>
void launch_embedding_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* tokens, std::int64_t b,
                               std::int64_t t, std::int64_t c, cudaStream_t stream,
                               const unsigned long long* refuse_if_bad = nullptr);
// Writes to *first_bad (device) the smallest (index << 32 | token bits) over tokens (n) outside
// [0, v), or leaves it untouched; the caller presets it to all ones.
void launch_find_bad_token(const std::int32_t* tokens, std::int64_t n, std::int64_t v, unsigned long long* first_bad,
                           cudaStream_t stream);

// ---- vocabulary-sharded embedding (cuda_embedding_shard.cu) ----------------------------------------
// As the whole-table launchers over a table wte/dwte (rows,c) of the vocabulary rows [first, first +
// rows): a token outside them contributes a zero row forward and nothing backward. Tokens are
// checked against the whole vocabulary before (TokenRangeCheck); refuse_if_bad as above.
template <typename T>
void launch_embedding_shard_forward(T* out, const std::int32_t* tokens, const T* wte, const T* wpe, std::int64_t b,
                                    std::int64_t t, std::int64_t c, std::int64_t first, std::int64_t rows,
                                    cudaStream_t stream);
template <typename T>
void launch_embedding_shard_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* tokens, std::int64_t b,
                                     std::int64_t t, std::int64_t c, std::int64_t first, std::int64_t rows,
                                     cudaStream_t stream, const unsigned long long* refuse_if_bad = nullptr);

// ---- layernorm (cuda_layernorm.cu) -----------------------------------------------------------------
// T: the activations' element type; W: the weight's and bias's (T, or float with bf16 activations).
template <typename T, typename W>
void launch_layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const W* weight, const W* bias,
                              std::int64_t n, std::int64_t c, float eps, cudaStream_t stream);
// scratch: column_sum_scratch_floats(n, c, 2) floats.
template <typename T, typename W>
void launch_layernorm_backward(T* dinp, W* dweight, W* dbias, const T* dout, const T* inp, const W* weight,
                               const float* mean, const float* rstd, std::int64_t n, std::int64_t c, float* scratch,
                               std::size_t scratch_floats, cudaStream_t stream);
// Residual add + LayerNorm: sum (n,c) = a + b, then as launch_layernorm_forward over sum.
template <typename T, typename W>
void launch_residual_layernorm_forward(T* sum, T* out, float* mean, float* rstd, const T* a, const T* b,
                                       const W* weight, const W* bias, std::int64_t n, std::int64_t c, float eps,
                                       cudaStream_t stream);
// As launch_layernorm_backward, with dresidual (n,c) added to dinp (null: nothing added); dinp may
// alias dout, not dresidual.
template <typename T, typename W>
void launch_residual_layernorm_backward(T* dinp, W* dweight, W* dbias, const T* dout, const T* dresidual, const T* inp,
                                        const W* weight, const float* mean, const float* rstd, std::int64_t n,
                                        std::int64_t c, float* scratch, std::size_t scratch_floats,
                                        cudaStream_t stream);
// Floats of scratch a column sum of `outputs` vectors over (n,c) needs (at most what fits in
// scratch_floats: fewer row groups are used when less is given; the result depends only on n, c
// and the capacity, which is fixed per CudaKernels).
std::size_t column_sum_scratch_floats(std::int64_t n, std::int64_t c, int outputs);

// ---- RMSNorm (cuda_rmsnorm.cu) ---------------------------------------------------------------------
template <typename T, typename W>
void launch_rmsnorm_forward(T* out, float* rstd, const T* inp, const W* weight, std::int64_t n, std::int64_t c,
                            float eps, cudaStream_t stream);
// dinp may alias dout. scratch: column_sum_scratch_floats(n, c, 1) floats.
template <typename T, typename W>
void launch_rmsnorm_backward(T* dinp, W* dweight, const T* dout, const T* inp, const W* weight, const float* rstd,
                             std::int64_t n, std::int64_t c, float* scratch, std::size_t scratch_floats,
                             cudaStream_t stream);

// ---- rotary embedding (cuda_rotary.cu) -------------------------------------------------------------
// As Kernels::rotary_qkv_forward / rotary_qkv_backward (hs even, nkv divides nh); the backward's
// key/value gradients are summed over their query group in head order, without atomics.
template <typename T>
void launch_rotary_qkv_forward(T* qkv, const T* proj, std::int64_t b, std::int64_t t, std::int64_t nh, std::int64_t nkv,
                               std::int64_t hs, float theta, cudaStream_t stream);
template <typename T>
void launch_rotary_qkv_backward(T* dproj, const T* dqkv, std::int64_t b, std::int64_t t, std::int64_t nh,
                                std::int64_t nkv, std::int64_t hs, float theta, cudaStream_t stream);

// ---- attention (cuda_attention.cu) -----------------------------------------------------------------
// Causal self-attention, tiled with an online softmax (no (t,t) tensor), as Kernels::attention_forward
// and attention_backward: lse (b,nh,t) and delta (b,nh,t) are f32 for every T; dqkv is written, not
// accumulated. Deterministic (no atomics). The fallback where no fused library kernel is used. The head
// size c / nh must be at most kMaxAttentionHead; a larger one, or channels not divisible by the heads,
// throws std::invalid_argument before anything is queued.
inline constexpr std::int64_t kMaxAttentionHead = 128;
template <typename T>
void launch_attention_forward(T* out, float* lse, const T* qkv, std::int64_t b, std::int64_t t, std::int64_t c,
                              std::int64_t nh, cudaStream_t stream);
template <typename T>
void launch_attention_backward(T* dqkv, float* delta, const T* dout, const T* qkv, const T* out, const float* lse,
                               std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh, cudaStream_t stream);

// ---- element-wise (cuda_elementwise.cu) ------------------------------------------------------------
template <typename T>
void launch_gelu_forward(T* out, const T* inp, std::int64_t n, cudaStream_t stream);
template <typename T>
void launch_gelu_backward(T* dinp, const T* inp, const T* dout, std::int64_t n, cudaStream_t stream);
template <typename T>
void launch_add(T* out, const T* a, const T* b, std::int64_t n, cudaStream_t stream);
template <typename T>
void launch_scale(T* x, float s, std::int64_t n, cudaStream_t stream);
// out (n) f32 = a (n) f32 + b (n) bf16 (out may alias a): a bf16 gradient into an f32 accumulator.
void launch_add_bf16(float* out, const float* a, const __nv_bfloat16* b, std::int64_t n, cudaStream_t stream);

// ---- activations (cuda_activation.cu) ---------------------------------------------------------------
template <typename T>
void launch_relu_forward(T* out, const T* inp, std::int64_t n, cudaStream_t stream);
template <typename T>
void launch_relu_backward(T* dinp, const T* inp, const T* dout, std::int64_t n, cudaStream_t stream);
template <typename T>
void launch_silu_forward(T* out, const T* inp, std::int64_t n, cudaStream_t stream);
template <typename T>
void launch_silu_backward(T* dinp, const T* inp, const T* dout, std::int64_t n, cudaStream_t stream);
template <typename T>
void launch_dropout_apply(T* out, const T* inp, std::int64_t n, const DropoutMask& mask, cudaStream_t stream);

// ---- SwiGLU (cuda_swiglu.cu) -----------------------------------------------------------------------
template <typename T>
void launch_swiglu_forward(T* out, const T* inp, std::int64_t n, std::int64_t f, cudaStream_t stream);
template <typename T>
void launch_swiglu_backward(T* dinp, const T* dout, const T* inp, std::int64_t n, std::int64_t f, cudaStream_t stream);

// ---- cross-entropy (cuda_cross_entropy.cu) ---------------------------------------------------------
// A kIgnoredTarget row has loss, lse and gradient 0. Any other target outside [0, v) reads nothing out of range: its loss (forward) and its dlogits row
// (backward) become NaN, which the trainer's non-finite checks report (the CPU throws instead; a
// throw here would cost a host synchronization per call).
template <typename T>
void launch_cross_entropy_forward(float* losses, float* lse, const T* logits, const std::int32_t* targets,
                                  std::int64_t n, std::int64_t v, cudaStream_t stream);
template <typename T>
void launch_cross_entropy_backward(T* dlogits, const T* logits, const float* lse, const std::int32_t* targets,
                                   float dloss, std::int64_t n, std::int64_t v, cudaStream_t stream);

// ---- vocabulary-sharded cross-entropy (cuda_cross_entropy_shard.cu) --------------------------------
// As Kernels::cross_entropy_shard_forward / _combine / _backward. Targets are not checked: one
// outside [0, vocab) (not kIgnoredTarget) reads nothing out of range and gives a NaN target logit;
// the backward makes a negative one's row NaN. The combine needs parts >= 1.
template <typename T>
void launch_cross_entropy_shard_forward(float* lse, float* target_logit, const T* logits, const std::int32_t* targets,
                                        std::int64_t n, std::int64_t v, std::int64_t first, std::int64_t vocab,
                                        cudaStream_t stream);
void launch_cross_entropy_shard_combine(float* losses, float* lse, const float* lse_parts, const float* target_logit,
                                        const std::int32_t* targets, std::int64_t n, std::int64_t parts,
                                        cudaStream_t stream);
template <typename T>
void launch_cross_entropy_shard_backward(T* dlogits, const T* logits, const float* lse, const std::int32_t* targets,
                                         float dloss, std::int64_t n, std::int64_t v, std::int64_t first,
                                         cudaStream_t stream);

// ---- squared error (cuda_squared_error.cu) ----------------------------------------------------------
template <typename T>
void launch_squared_error_forward(float* losses, const T* pred, const float* targets, std::int64_t n,
                                  cudaStream_t stream);
template <typename T>
void launch_squared_error_backward(T* dpred, const T* pred, const float* targets, float dloss, std::int64_t n,
                                   cudaStream_t stream);

// ---- reductions (cuda_reduce.cu) -------------------------------------------------------------------
// Two passes in double: chunks of kReduceChunk elements (by position, so alignment does not matter)
// each summed by one block in a fixed order, then the chunk sums by one block in a fixed order.
// scratch: reduce_scratch_doubles(n) doubles. n == 0 writes 0.
inline constexpr std::int64_t kReduceChunk = 1 << 14;
std::size_t reduce_scratch_doubles(std::int64_t n);
template <typename T>
void launch_sum(const T* x, std::int64_t n, double* out, double* scratch, cudaStream_t stream);
template <typename T>
void launch_sum_squares(const T* x, std::int64_t n, double* out, double* scratch, cudaStream_t stream);
template <typename T>
void launch_has_non_finite(const T* x, std::int64_t n, std::int32_t* out, cudaStream_t stream);

// ---- optimizers (cuda_adamw.cu, cuda_adamw8bit.cu) -------------------------------------------------
// param, m, v (n) f32 updated in place from grad (n) T; when param_copy is not null the updated
// parameter is also written there as T (the bf16 write-back of an f32 master).
template <typename T>
void launch_adamw(float* param, const T* grad, float* m, float* v, T* param_copy, std::int64_t n, const AdamWScalars& s,
                  cudaStream_t stream);
// As Kernels::adamw8bit_update, one thread block per quantization block; `segments` (segment_count)
// is a device copy of the sorted segment table; param_copy as in launch_adamw.
template <typename T>
void launch_adamw8bit(float* param, const T* grad, std::int8_t* m_codes, float* m_absmax, std::uint8_t* v_codes,
                      float* v_absmax, T* param_copy, std::int64_t n, std::int64_t block, const ParamSegment* segments,
                      std::int64_t segment_count, const AdamWScalars& no_decay, const AdamWScalars& decay,
                      cudaStream_t stream);

// Copies the host segment table into device memory dst (segments.size() entries) by value through
// kernel parameters: nothing waits, and the host table may change once this returns.
void launch_store_segments(ParamSegment* dst, std::span<const ParamSegment> segments, cudaStream_t stream);

// ---- dtype conversion (cuda_convert.cu) ------------------------------------------------------------
// Between different floating dtypes (f32, bf16, f16), the bits of precision/float_bits.hpp.
void launch_convert(const void* src, DType from, void* dst, DType to, std::int64_t n, cudaStream_t stream);

}  // namespace detail
}  // namespace tessera
