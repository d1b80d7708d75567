// Device-side helpers shared by the CUDA kernels (included by runtime/cuda/*.cu only): element
// loads and stores that widen to f32, launch sizes for grid-stride loops, and warp / block
// reductions whose order is fixed by the block shape (so a kernel launched the same way gives the
// same bits every run).
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tessera::detail {

inline constexpr int kWarp = 32;
inline constexpr int kThreads = 256;               // threads per block of the element-wise kernels
inline constexpr std::int64_t kMaxGrid = 1 << 16;  // blocks of a grid-stride loop

// Blocks for a grid-stride loop over n items with `threads` per block.
inline unsigned grid_for(std::int64_t n, int threads = kThreads) {
  const std::int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < kMaxGrid ? (blocks > 0 ? blocks : 1) : kMaxGrid);
}

// Element type <-> f32 (round to nearest even on the way down).
__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_f32(float x);
template <>
__device__ __forceinline__ float from_f32<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

// The first index and the stride of a 1-D grid-stride loop.
__device__ __forceinline__ std::int64_t grid_start() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

// Butterfly reductions over the 32 lanes of a warp; every lane gets the result.
template <typename F>
__device__ __forceinline__ F warp_sum(F x) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}
__device__ __forceinline__ float warp_max(float x) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, offset));
  return x;
}

// Reductions over a 1-D block (blockDim.x a multiple of 32, at most 1024); every thread gets the
// result. `shared` holds 32 values; the function syncs before returning, so it can be called again
// with the same buffer.
template <typename F>
__device__ F block_sum(F x, F* shared) {
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  const int warps = blockDim.x / kWarp;
  x = warp_sum(x);
  if (lane == 0) shared[warp] = x;
  __syncthreads();
  F total = lane < warps ? shared[lane] : F(0);
  total = warp_sum(total);
  __syncthreads();
  return total;
}

__device__ inline float block_max(float x, float* shared) {
  const int lane = threadIdx.x % kWarp;
  const int warp = threadIdx.x / kWarp;
  const int warps = blockDim.x / kWarp;
  x = warp_max(x);
  if (lane == 0) shared[warp] = x;
  __syncthreads();
  float total = lane < warps ? shared[lane] : -INFINITY;
  total = warp_max(total);
  __syncthreads();
  return total;
}

}  // namespace tessera::detail
