// CUDA token + position embedding. The position table may be absent (wpe and dwpe null): the forward
// then copies the token's row and the backward has no positions to sum.
//
// Forward: one thread per output element. Backward: dwpe[t] += the batch's rows summed in batch
// order, one thread per (position, channel). dwte is a scatter-add made deterministic without
// sorting or atomics: a block per (row r, slice of 1024 channels) first checks whether an earlier
// row holds the same token (then it has nothing to do); the first row of each token walks the rows
// from r on, collects those with its token in (b,t) order (warp ballots) and adds them to the
// vocabulary row in that order, starting from the row's current value — the CPU's order, hence
// the CPU's bits for f32. The scans cost O((b t)^2 / 256) token reads per call (tokens stay in L2).
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"

namespace tessera::detail {
namespace {

constexpr int kTokenGradThreads = 256;
constexpr int kTokenGradColumns = 4;  // channels per thread: a block covers 1024
constexpr int kTokenGradSlice = kTokenGradThreads * kTokenGradColumns;

template <typename T>
__global__ void embedding_forward_kernel(T* out, const std::int32_t* tokens, const T* wte, const T* wpe,
                                         std::int64_t rows, std::int64_t t, std::int64_t c) {
  for (std::int64_t idx = grid_start(); idx < rows * c; idx += grid_stride()) {
    const std::int64_t r = idx / c;
    const std::int64_t j = idx % c;
    const std::int64_t tok = tokens[r];
    out[idx] = wpe == nullptr ? wte[tok * c + j] : from_f32<T>(to_f32(wte[tok * c + j]) + to_f32(wpe[(r % t) * c + j]));
  }
}

// dwpe (t,c) += sum over the batch of dout (b,t,c), batch rows in order.
// True when the token check before this kernel found a bad token: then nothing is written.
__device__ bool refused(const unsigned long long* refuse_if_bad) {
  return refuse_if_bad != nullptr && *refuse_if_bad != ~0ull;
}

template <typename T>
__global__ void position_grad_kernel(T* dwpe, const T* dout, std::int64_t b, std::int64_t t, std::int64_t c,
                                     const unsigned long long* refuse_if_bad) {
  if (refused(refuse_if_bad)) return;
  for (std::int64_t idx = grid_start(); idx < t * c; idx += grid_stride()) {
    float acc = 0.0f;
    for (std::int64_t bi = 0; bi < b; ++bi) acc += to_f32(dout[bi * t * c + idx]);
    dwpe[idx] = from_f32<T>(to_f32(dwpe[idx]) + acc);
  }
}

// Block (r, slice): when row r is the first row of its token, dwte[token][slice] += the dout rows of
// that token in row order.
template <typename T>
__global__ void __launch_bounds__(kTokenGradThreads)
    token_grad_kernel(T* dwte, const T* dout, const std::int32_t* tokens, std::int64_t rows, std::int64_t c,
                      const unsigned long long* refuse_if_bad) {
  if (refused(refuse_if_bad)) return;  // the same word for every thread: the whole block returns
  __shared__ unsigned masks[kTokenGradThreads / kWarp];
  const std::int64_t r = blockIdx.x;
  const std::int32_t tok = tokens[r];
  for (std::int64_t i0 = 0; i0 < r; i0 += kTokenGradThreads) {
    const std::int64_t i = i0 + threadIdx.x;
    if (__syncthreads_or(i < r && tokens[i] == tok)) return;  // an earlier row owns this token
  }
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  T* dst = dwte + static_cast<std::int64_t>(tok) * c;
  const std::int64_t j0 = static_cast<std::int64_t>(blockIdx.y) * kTokenGradSlice + threadIdx.x;
  float acc[kTokenGradColumns];
#pragma unroll
  for (int u = 0; u < kTokenGradColumns; ++u) {
    const std::int64_t j = j0 + u * kTokenGradThreads;
    acc[u] = j < c ? to_f32(dst[j]) : 0.0f;
  }
  for (std::int64_t i0 = r; i0 < rows; i0 += kTokenGradThreads) {
    const std::int64_t i = i0 + threadIdx.x;
    const unsigned ballot = __ballot_sync(0xffffffffu, i < rows && tokens[i] == tok);
    if (lane == 0) masks[warp] = ballot;
    __syncthreads();
    for (int w = 0; w < kTokenGradThreads / kWarp; ++w) {
      for (unsigned mask = masks[w]; mask != 0; mask &= mask - 1) {
        const T* d = dout + (i0 + w * kWarp + (__ffs(mask) - 1)) * c;
#pragma unroll
        for (int u = 0; u < kTokenGradColumns; ++u) {
          const std::int64_t j = j0 + u * kTokenGradThreads;
          if (j < c) acc[u] += to_f32(d[j]);
        }
      }
    }
    __syncthreads();  // masks are rewritten by the next chunk
  }
#pragma unroll
  for (int u = 0; u < kTokenGradColumns; ++u) {
    const std::int64_t j = j0 + u * kTokenGradThreads;
    if (j < c) dst[j] = from_f32<T>(acc[u]);
  }
}

__global__ void find_bad_token_kernel(const std::int32_t* tokens, std::int64_t n, std::int64_t v,
                                      unsigned long long* first_bad) {
  for (std::int64_t idx = grid_start(); idx < n; idx += grid_stride()) {
    const std::int32_t tok = tokens[idx];
    if (tok < 0 || tok >= v) {
      atomicMin(first_bad, (static_cast<unsigned long long>(idx) << 32) | static_cast<std::uint32_t>(tok));
    }
  }
}

}  // namespace

template <typename T>
void launch_embedding_forward(T* out,                      // (b,t,c)
                              const std::int32_t* tokens,  // (b,t) in [0, v)
                              const T* wte,                // (v,c)
                              const T* wpe,                // (maxT,c), maxT >= t; or null
                              std::int64_t b, std::int64_t t, std::int64_t c, cudaStream_t stream) {
  if (b * t * c == 0) return;
  embedding_forward_kernel<T><<<grid_for(b * t * c), kThreads, 0, stream>>>(out, tokens, wte, wpe, b * t, t, c);
  TESSERA_CUDA_CHECK_LAUNCH("embedding_forward_kernel");
}

template <typename T>
void launch_embedding_backward(T* dwte,                     // (v,c) accumulated
                               T* dwpe,                     // (maxT,c) accumulated; or null
                               const T* dout,               // (b,t,c)
                               const std::int32_t* tokens,  // (b,t) in [0, v)
                               std::int64_t b, std::int64_t t, std::int64_t c, cudaStream_t stream,
                               const unsigned long long* refuse_if_bad) {
  if (b * t * c == 0) return;
  if (dwpe != nullptr) {
    position_grad_kernel<T><<<grid_for(t * c), kThreads, 0, stream>>>(dwpe, dout, b, t, c, refuse_if_bad);
    TESSERA_CUDA_CHECK_LAUNCH("position_grad_kernel");
  }
  const dim3 grid(static_cast<unsigned>(b * t), static_cast<unsigned>((c + kTokenGradSlice - 1) / kTokenGradSlice));
  token_grad_kernel<T><<<grid, kTokenGradThreads, 0, stream>>>(dwte, dout, tokens, b * t, c, refuse_if_bad);
  TESSERA_CUDA_CHECK_LAUNCH("token_grad_kernel");
}

void launch_find_bad_token(const std::int32_t* tokens, std::int64_t n, std::int64_t v, unsigned long long* first_bad,
                           cudaStream_t stream) {
  if (n == 0) return;
  find_bad_token_kernel<<<grid_for(n), kThreads, 0, stream>>>(tokens, n, v, first_bad);
  TESSERA_CUDA_CHECK_LAUNCH("find_bad_token_kernel");
}

template void launch_embedding_forward<float>(float*, const std::int32_t*, const float*, const float*, std::int64_t,
                                              std::int64_t, std::int64_t, cudaStream_t);
template void launch_embedding_forward<__nv_bfloat16>(__nv_bfloat16*, const std::int32_t*, const __nv_bfloat16*,
                                                      const __nv_bfloat16*, std::int64_t, std::int64_t, std::int64_t,
                                                      cudaStream_t);
template void launch_embedding_backward<float>(float*, float*, const float*, const std::int32_t*, std::int64_t,
                                               std::int64_t, std::int64_t, cudaStream_t, const unsigned long long*);
template void launch_embedding_backward<__nv_bfloat16>(__nv_bfloat16*, __nv_bfloat16*, const __nv_bfloat16*,
                                                       const std::int32_t*, std::int64_t, std::int64_t, std::int64_t,
                                                       cudaStream_t, const unsigned long long*);

}  // namespace tessera::detail
