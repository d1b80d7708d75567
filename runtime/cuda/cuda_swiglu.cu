// CUDA SwiGLU (Llama's MLP activation; formulas in runtime/math/silu_math.hpp, the CPU's): one
// grid-stride loop each way over the (n,f) outputs, element (i, j) reading gate and up at columns j
// and f + j of row i of [gate | up]; f32 arithmetic for every element type.
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_launch.cuh"
#include "tessera/runtime/cuda/cuda_ops.hpp"
#include "tessera/runtime/math/silu_math.hpp"

namespace tessera::detail {
namespace {

template <typename T>
__global__ void swiglu_forward_kernel(T* out, const T* inp, std::int64_t n, std::int64_t f) {
  for (std::int64_t idx = grid_start(); idx < n * f; idx += grid_stride()) {
    const std::int64_t g = idx / f * 2 * f + idx % f;  // gate's index in inp; up's is g + f
    out[idx] = from_f32<T>(silu_value(to_f32(inp[g])) * to_f32(inp[g + f]));
  }
}

template <typename T>
__global__ void swiglu_backward_kernel(T* dinp, const T* dout, const T* inp, std::int64_t n, std::int64_t f) {
  for (std::int64_t idx = grid_start(); idx < n * f; idx += grid_stride()) {
    const std::int64_t g = idx / f * 2 * f + idx % f;
    const float gate = to_f32(inp[g]), up = to_f32(inp[g + f]), d = to_f32(dout[idx]);
    const SiluParts parts = silu_parts(gate);
    dinp[g] = from_f32<T>(d * up * parts.derivative);
    dinp[g + f] = from_f32<T>(d * parts.value);
  }
}

}  // namespace

template <typename T>
void launch_swiglu_forward(T* out,        // (n,f)
                           const T* inp,  // (n,2f) [gate | up]
                           std::int64_t n, std::int64_t f, cudaStream_t stream) {
  if (n * f == 0) return;
  swiglu_forward_kernel<T><<<grid_for(n * f), kThreads, 0, stream>>>(out, inp, n, f);
  TESSERA_CUDA_CHECK_LAUNCH("swiglu_forward_kernel");
}

template <typename T>
void launch_swiglu_backward(T* dinp,        // (n,2f) written
                            const T* dout,  // (n,f)
                            const T* inp,   // (n,2f) [gate | up]
                            std::int64_t n, std::int64_t f, cudaStream_t stream) {
  if (n * f == 0) return;
  swiglu_backward_kernel<T><<<grid_for(n * f), kThreads, 0, stream>>>(dinp, dout, inp, n, f);
  TESSERA_CUDA_CHECK_LAUNCH("swiglu_backward_kernel");
}

#define TESSERA_INSTANTIATE_SWIGLU(T)                                                             \
  template void launch_swiglu_forward<T>(T*, const T*, std::int64_t, std::int64_t, cudaStream_t); \
  template void launch_swiglu_backward<T>(T*, const T*, const T*, std::int64_t, std::int64_t, cudaStream_t);
TESSERA_INSTANTIATE_SWIGLU(float)
TESSERA_INSTANTIATE_SWIGLU(__nv_bfloat16)
#undef TESSERA_INSTANTIATE_SWIGLU

}  // namespace tessera::detail
