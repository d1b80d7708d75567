// CUDA reductions for the loss, gradient clipping and overflow checks, written into device memory.
// sum and sum_squares add in double in an order fixed by n alone: pass 1 gives each chunk of
// kReduceChunk elements (cut by position, so where x starts does not matter) to one block, whose
// threads take every 256th element in order before a fixed-shape tree; pass 2 reduces the chunk
// sums the same way in one block. Not the CPU's order, so not the CPU's bits, but the same bits every
// run. has_non_finite clears its flag and lets any thread that sees inf or NaN set it.
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"

namespace tessera::detail {
namespace {

template <bool kSquare, typename T>
__global__ void chunk_sums_kernel(const T* x, std::int64_t n, double* partial) {
  __shared__ double shared[kWarp];
  const std::int64_t begin = static_cast<std::int64_t>(blockIdx.x) * kReduceChunk;
  const std::int64_t end = begin + kReduceChunk < n ? begin + kReduceChunk : n;
  double acc = 0.0;
  for (std::int64_t i = begin + threadIdx.x; i < end; i += kThreads) {
    const double v = to_f32(x[i]);
    acc += kSquare ? v * v : v;
  }
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void finish_sum_kernel(const double* partial, std::int64_t chunks, double* out) {
  __shared__ double shared[kWarp];
  double acc = 0.0;
  for (std::int64_t i = threadIdx.x; i < chunks; i += kThreads) acc += partial[i];
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) *out = acc;
}

template <typename T>
__global__ void has_non_finite_kernel(const T* x, std::int64_t n, std::int32_t* out) {
  for (std::int64_t i = grid_start(); i < n; i += grid_stride()) {
    if ((__float_as_uint(to_f32(x[i])) & 0x7f800000u) == 0x7f800000u) *out = 1;
  }
}

template <bool kSquare, typename T>
void launch_double_sum(const T* x, std::int64_t n, double* out, double* scratch, cudaStream_t stream) {
  const std::int64_t chunks = (n + kReduceChunk - 1) / kReduceChunk;
  if (chunks > 0) {
    chunk_sums_kernel<kSquare, T><<<static_cast<unsigned>(chunks), kThreads, 0, stream>>>(x, n, scratch);
    TESSERA_CUDA_CHECK_LAUNCH("chunk_sums_kernel");
  }
  finish_sum_kernel<<<1, kThreads, 0, stream>>>(scratch, chunks, out);  // n == 0 writes 0
  TESSERA_CUDA_CHECK_LAUNCH("finish_sum_kernel");
}

}  // namespace

std::size_t reduce_scratch_doubles(std::int64_t n) {
  return static_cast<std::size_t>((n + kReduceChunk - 1) / kReduceChunk);
}

template <typename T>
void launch_sum(const T* x, std::int64_t n, double* out, double* scratch, cudaStream_t stream) {
  launch_double_sum<false>(x, n, out, scratch, stream);
}

template <typename T>
void launch_sum_squares(const T* x, std::int64_t n, double* out, double* scratch, cudaStream_t stream) {
  launch_double_sum<true>(x, n, out, scratch, stream);
}

template <typename T>
void launch_has_non_finite(const T* x, std::int64_t n, std::int32_t* out, cudaStream_t stream) {
  TESSERA_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof *out, stream));
  if (n == 0) return;
  has_non_finite_kernel<T><<<grid_for(n), kThreads, 0, stream>>>(x, n, out);
  TESSERA_CUDA_CHECK_LAUNCH("has_non_finite_kernel");
}

#define TESSERA_INSTANTIATE_REDUCE(T)                                                          \
  template void launch_sum<T>(const T*, std::int64_t, double*, double*, cudaStream_t);         \
  template void launch_sum_squares<T>(const T*, std::int64_t, double*, double*, cudaStream_t); \
  template void launch_has_non_finite<T>(const T*, std::int64_t, std::int32_t*, cudaStream_t);
TESSERA_INSTANTIATE_REDUCE(float)
TESSERA_INSTANTIATE_REDUCE(__nv_bfloat16)
#undef TESSERA_INSTANTIATE_REDUCE

}  // namespace tessera::detail
