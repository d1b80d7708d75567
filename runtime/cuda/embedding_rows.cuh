// The CUDA embedding kernels over a range of vocabulary rows [first, first + rows), shared by the
// whole-table launchers (cuda_embedding.cu: every token is in the range) and the vocabulary-sharded
// ones (cuda_embedding_shard.cu: the rows a tensor-parallel rank holds), so a shard of the whole
// vocabulary runs the same code. Tokens are checked before these kernels run (TokenRangeCheck).
//
// Forward: one thread per output element; a token outside the range contributes a zero row (the
// output is the position row exactly, or 0). Backward: dwpe[t] += the batch's rows summed in batch
// order, one thread per (position, channel). dwte is a scatter-add made deterministic without
// sorting or atomics: a block per (row r, slice of 1024 channels) first checks that its token is in
// the range and that no earlier row holds the same token (else it has nothing to do); the first row
// of each token walks the rows from r on, collects those with its token in (b,t) order (warp
// ballots) and adds them to the vocabulary row in that order, starting from the row's current value
// — the CPU's order, hence the CPU's bits for f32. The scans cost O((b t)^2 / 256) token reads per
// call (tokens stay in L2).
#pragma once

#include <cstdint>

#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"

namespace tessera::detail {

inline constexpr int kTokenGradThreads = 256;
inline constexpr int kTokenGradColumns = 4;  // channels per thread: a block covers 1024
inline constexpr int kTokenGradSlice = kTokenGradThreads * kTokenGradColumns;

// True when `tok` lies in the vocabulary rows [first, first + rows).
__device__ __forceinline__ bool token_in_rows(std::int64_t tok, std::int64_t first, std::int64_t rows) {
  return tok >= first && tok - first < rows;
}

// out (rows_bt,c): wte[tok - first] (rows,c) for a token in the range, else 0, plus wpe[r % t].
template <typename T>
__global__ void embedding_forward_kernel(T* out, const std::int32_t* tokens, const T* wte, const T* wpe,
                                         std::int64_t rows_bt, std::int64_t t, std::int64_t c, std::int64_t first,
                                         std::int64_t rows) {
  for (std::int64_t idx = grid_start(); idx < rows_bt * c; idx += grid_stride()) {
    const std::int64_t r = idx / c;
    const std::int64_t j = idx % c;
    const std::int64_t tok = tokens[r];
    if (!token_in_rows(tok, first, rows)) {
      out[idx] = wpe == nullptr ? from_f32<T>(0.0f) : wpe[(r % t) * c + j];
      continue;
    }
    const T value = wte[(tok - first) * c + j];
    out[idx] = wpe == nullptr ? value : from_f32<T>(to_f32(value) + to_f32(wpe[(r % t) * c + j]));
  }
}

// True when the token check before this kernel found a bad token: then nothing is written.
__device__ __forceinline__ bool refused(const unsigned long long* refuse_if_bad) {
  return refuse_if_bad != nullptr && *refuse_if_bad != ~0ull;
}

// dwpe (t,c) += sum over the batch of dout (b,t,c), batch rows in order.
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

// Block (r, slice): when row r's token is in the range and r is the first row of that token,
// dwte[token - first][slice] += the dout rows of that token in row order.
template <typename T>
__global__ void __launch_bounds__(kTokenGradThreads)
    token_grad_kernel(T* dwte, const T* dout, const std::int32_t* tokens, std::int64_t rows_bt, std::int64_t c,
                      std::int64_t first, std::int64_t rows, const unsigned long long* refuse_if_bad) {
  if (refused(refuse_if_bad)) return;  // the same word for every thread: the whole block returns
  __shared__ unsigned masks[kTokenGradThreads / kWarp];
  const std::int64_t r = blockIdx.x;
  const std::int32_t tok = tokens[r];
  if (!token_in_rows(tok, first, rows)) return;  // another shard's row: the whole block returns
  for (std::int64_t i0 = 0; i0 < r; i0 += kTokenGradThreads) {
    const std::int64_t i = i0 + threadIdx.x;
    if (__syncthreads_or(i < r && tokens[i] == tok)) return;  // an earlier row owns this token
  }
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  T* dst = dwte + (static_cast<std::int64_t>(tok) - first) * c;
  const std::int64_t j0 = static_cast<std::int64_t>(blockIdx.y) * kTokenGradSlice + threadIdx.x;
  float acc[kTokenGradColumns];
#pragma unroll
  for (int u = 0; u < kTokenGradColumns; ++u) {
    const std::int64_t j = j0 + u * kTokenGradThreads;
    acc[u] = j < c ? to_f32(dst[j]) : 0.0f;
  }
  for (std::int64_t i0 = r; i0 < rows_bt; i0 += kTokenGradThreads) {
    const std::int64_t i = i0 + threadIdx.x;
    const unsigned ballot = __ballot_sync(0xffffffffu, i < rows_bt && tokens[i] == tok);
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

// The forward's kernel over the tokens (b,t) and the rows [first, first + rows) of the table wte.
template <typename T>
void queue_embedding_forward(T* out, const std::int32_t* tokens, const T* wte, const T* wpe, std::int64_t b,
                             std::int64_t t, std::int64_t c, std::int64_t first, std::int64_t rows,
                             cudaStream_t stream) {
  if (b * t * c == 0) return;
  embedding_forward_kernel<T>
      <<<grid_for(b * t * c), kThreads, 0, stream>>>(out, tokens, wte, wpe, b * t, t, c, first, rows);
  TESSERA_CUDA_CHECK_LAUNCH("embedding_forward_kernel");
}

// The backward's kernels over the same.
template <typename T>
void queue_embedding_backward(T* dwte, T* dwpe, const T* dout, const std::int32_t* tokens, std::int64_t b,
                              std::int64_t t, std::int64_t c, std::int64_t first, std::int64_t rows,
                              cudaStream_t stream, const unsigned long long* refuse_if_bad) {
  if (b * t * c == 0) return;
  if (dwpe != nullptr) {
    position_grad_kernel<T><<<grid_for(t * c), kThreads, 0, stream>>>(dwpe, dout, b, t, c, refuse_if_bad);
    TESSERA_CUDA_CHECK_LAUNCH("position_grad_kernel");
  }
  const dim3 grid(static_cast<unsigned>(b * t), static_cast<unsigned>((c + kTokenGradSlice - 1) / kTokenGradSlice));
  token_grad_kernel<T>
      <<<grid, kTokenGradThreads, 0, stream>>>(dwte, dout, tokens, b * t, c, first, rows, refuse_if_bad);
  TESSERA_CUDA_CHECK_LAUNCH("token_grad_kernel");
}

}  // namespace tessera::detail
