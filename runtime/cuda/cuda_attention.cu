// CUDA causal multi-head self-attention: cuBLAS strided-batched GEMMs over the (batch, head) pairs
// plus causal softmax kernels (one warp per row, exp from runtime/math/exp_math.hpp).
//
// Per pair, with q, k, v (t,hs) read in place from qkv (row stride 3c) and P = probs (t,t):
//   forward:  P = softmax_causal(scale * q k^T);  out = P v
//   backward: dP = dout v^T;  dv = P^T dout;  dS = scale * P * (dP - rowsum(P * dP));
//             dq = dS k;  dk = dS^T q
// The products are whole t x t GEMMs (the masked half is computed and then overwritten by the
// softmax kernels). The pairs of one call share a stride: a call per sequence over its heads (stride
// hs) when there are at least as many heads as sequences, else a call per head over the sequences.
#include <cmath>
#include <stdexcept>
#include <string>

#include "tessera/runtime/cuda/cublas_context.hpp"
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/math/exp_math.hpp"

namespace tessera::detail {
namespace {

constexpr int kRowsPerBlock = kThreads / kWarp;

std::int64_t head_size(std::int64_t c, std::int64_t nh, const char* where) {
  if (nh <= 0 || c % nh != 0) {
    throw std::invalid_argument(std::string(where) + ": channels " + std::to_string(c) +
                                " are not divisible by the number of heads " + std::to_string(nh) +
                                "; choose n_head so that n_embd % n_head == 0");
  }
  return c / nh;
}

// The (batch, head) pairs as `loops` GEMM calls of `batch` pairs: element offsets of call l
// (loop_*) and between the pairs of a call (stride_*) in tensors shaped like qkv (b,t,3c), out
// (b,t,c) and probs (b,nh,t,t).
struct PairGroups {
  std::int64_t loops, batch;
  std::int64_t loop_qkv, loop_out, loop_probs;
  std::int64_t stride_qkv, stride_out, stride_probs;
};

PairGroups pair_groups(std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh, std::int64_t hs) {
  if (nh >= b) return {b, nh, t * 3 * c, t * c, nh * t * t, hs, hs, t * t};
  return {nh, b, hs, hs, t * t, t * 3 * c, t * c, nh * t * t};
}

// Row i of the scores (t) becomes softmax over [0, i]; entries after i become 0.
template <typename T>
__global__ void causal_softmax_kernel(T* probs, std::int64_t rows, std::int64_t t) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  if (row >= rows) return;
  const int lane = threadIdx.x % kWarp;
  const std::int64_t i = row % t;
  T* p = probs + row * t;
  float max_val = -INFINITY;
  for (std::int64_t j = lane; j <= i; j += kWarp) max_val = fmaxf(max_val, to_f32(p[j]));
  max_val = warp_max(max_val);
  float sum = 0.0f;
  for (std::int64_t j = lane; j <= i; j += kWarp) sum += fast_expf(to_f32(p[j]) - max_val);
  const float inv = 1.0f / warp_sum(sum);
  for (std::int64_t j = lane; j < t; j += kWarp) {
    p[j] = from_f32<T>(j <= i ? fast_expf(to_f32(p[j]) - max_val) * inv : 0.0f);
  }
}

// Row i of dP (t) becomes dS = scale * P * (dP - sum(P * dP)) over [0, i]; entries after i become 0.
template <typename T>
__global__ void causal_softmax_backward_kernel(T* ds, const T* probs, std::int64_t rows, std::int64_t t, float scale) {
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
  if (row >= rows) return;
  const int lane = threadIdx.x % kWarp;
  const std::int64_t i = row % t;
  T* d = ds + row * t;
  const T* p = probs + row * t;
  float dot = 0.0f;
  for (std::int64_t j = lane; j <= i; j += kWarp) dot += to_f32(p[j]) * to_f32(d[j]);
  dot = warp_sum(dot);
  for (std::int64_t j = lane; j < t; j += kWarp) {
    d[j] = from_f32<T>(j <= i ? scale * to_f32(p[j]) * (to_f32(d[j]) - dot) : 0.0f);
  }
}

unsigned row_blocks(std::int64_t rows) { return static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock); }

}  // namespace

template <typename T>
void launch_attention_forward(const CublasContext& blas, GemmMath math,
                              T* out,        // (b,t,c)
                              T* probs,      // (b,nh,t,t)
                              const T* qkv,  // (b,t,3c)
                              std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh) {
  const std::int64_t hs = head_size(c, nh, "attention_forward");
  if (b == 0 || t == 0) return;
  const std::int64_t ld = 3 * c;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const PairGroups g = pair_groups(b, t, c, nh, hs);
  for (std::int64_t l = 0; l < g.loops; ++l) {  // scores = scale * q k^T
    const T* q = qkv + l * g.loop_qkv;
    launch_gemm_batched(blas, math, false, true, t, t, hs, scale, q, ld, g.stride_qkv, q + c, ld, g.stride_qkv, 0.0f,
                        probs + l * g.loop_probs, t, g.stride_probs, g.batch);
  }
  const std::int64_t rows = b * nh * t;
  causal_softmax_kernel<T><<<row_blocks(rows), kThreads, 0, blas.stream()>>>(probs, rows, t);
  TESSERA_CUDA_CHECK_LAUNCH("causal_softmax_kernel");
  for (std::int64_t l = 0; l < g.loops; ++l) {  // out = P v
    const T* v = qkv + l * g.loop_qkv + 2 * c;
    launch_gemm_batched(blas, math, false, false, t, hs, t, 1.0f, probs + l * g.loop_probs, t, g.stride_probs, v, ld,
                        g.stride_qkv, 0.0f, out + l * g.loop_out, c, g.stride_out, g.batch);
  }
}

template <typename T>
void launch_attention_backward(const CublasContext& blas, GemmMath math,
                               T* dqkv,         // (b,t,3c) written
                               T* scratch,      // (b,nh,t,t) workspace
                               const T* dout,   // (b,t,c)
                               const T* qkv,    // (b,t,3c)
                               const T* probs,  // (b,nh,t,t)
                               std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh) {
  const std::int64_t hs = head_size(c, nh, "attention_backward");
  if (b == 0 || t == 0) return;
  const std::int64_t ld = 3 * c;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const PairGroups g = pair_groups(b, t, c, nh, hs);
  for (std::int64_t l = 0; l < g.loops; ++l) {
    const T* v = qkv + l * g.loop_qkv + 2 * c;
    const T* d_o = dout + l * g.loop_out;
    const T* p = probs + l * g.loop_probs;
    T* ds = scratch + l * g.loop_probs;
    T* dv = dqkv + l * g.loop_qkv + 2 * c;
    // dP = dout v^T
    launch_gemm_batched(blas, math, false, true, t, t, hs, 1.0f, d_o, c, g.stride_out, v, ld, g.stride_qkv, 0.0f, ds, t,
                        g.stride_probs, g.batch);
    // dv = P^T dout
    launch_gemm_batched(blas, math, true, false, t, hs, t, 1.0f, p, t, g.stride_probs, d_o, c, g.stride_out, 0.0f, dv,
                        ld, g.stride_qkv, g.batch);
  }
  const std::int64_t rows = b * nh * t;
  causal_softmax_backward_kernel<T><<<row_blocks(rows), kThreads, 0, blas.stream()>>>(scratch, probs, rows, t, scale);
  TESSERA_CUDA_CHECK_LAUNCH("causal_softmax_backward_kernel");
  for (std::int64_t l = 0; l < g.loops; ++l) {
    const T* q = qkv + l * g.loop_qkv;
    const T* ds = scratch + l * g.loop_probs;
    T* dq = dqkv + l * g.loop_qkv;
    // dq = dS k
    launch_gemm_batched(blas, math, false, false, t, hs, t, 1.0f, ds, t, g.stride_probs, q + c, ld, g.stride_qkv, 0.0f,
                        dq, ld, g.stride_qkv, g.batch);
    // dk = dS^T q
    launch_gemm_batched(blas, math, true, false, t, hs, t, 1.0f, ds, t, g.stride_probs, q, ld, g.stride_qkv, 0.0f,
                        dq + c, ld, g.stride_qkv, g.batch);
  }
}

#define TESSERA_INSTANTIATE_ATTENTION(T)                                                                           \
  template void launch_attention_forward<T>(const CublasContext&, GemmMath, T*, T*, const T*, std::int64_t,        \
                                            std::int64_t, std::int64_t, std::int64_t);                             \
  template void launch_attention_backward<T>(const CublasContext&, GemmMath, T*, T*, const T*, const T*, const T*, \
                                             std::int64_t, std::int64_t, std::int64_t, std::int64_t);
TESSERA_INSTANTIATE_ATTENTION(float)
TESSERA_INSTANTIATE_ATTENTION(__nv_bfloat16)
#undef TESSERA_INSTANTIATE_ATTENTION

}  // namespace tessera::detail
