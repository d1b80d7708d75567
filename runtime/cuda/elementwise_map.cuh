// The CUDA side of elementwise_map (runtime/elementwise_map.hpp): a grid-stride kernel per functor
// type, element type and arity, queued on the CUDA device's compute stream. Included by a program's
// own CUDA source (compiled by nvcc), which registers each functor it runs on the GPU once:
//
//   // squared_relu.cu
//   #include <tessera/runtime/cuda/elementwise_map.cuh>
//   #include "squared_relu.hpp"                 // struct SquaredRelu { TESSERA_HD float operator()... }
//   TESSERA_CUDA_ELEMENTWISE(SquaredRelu, 1)    // y = f(x)
//   TESSERA_CUDA_ELEMENTWISE(SquaredReluGrad, 2)  // dx = g(x, dy)
//
// The macro defines a namespace-scope object whose constructor sets the launchers (f32 and bf16)
// before main runs; put it in a source file linked into the program itself (an object file of a
// static library that nothing references may be left out by the linker). register_cuda_elementwise
// does the same from a function, for a program that prefers to call it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <utility>

#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_device_select.hpp"
#include "tessera/runtime/cuda/cuda_stream.hpp"
#include "tessera/runtime/elementwise_map.hpp"

namespace tessera {
namespace detail {

template <typename F, typename T, std::size_t N, std::size_t... I>
__global__ void elementwise_map_kernel(F f, T* out, ElementwiseInputs<T, N> in, std::int64_t n,
                                       std::index_sequence<I...>) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = from_f32<T>(f(to_f32(in.p[I][i])...));
  }
}

template <typename F, typename T, std::size_t N>
void launch_elementwise_map(Device& device, const F& f, T* out, ElementwiseInputs<T, N> in, std::int64_t n) {
  auto* stream = dynamic_cast<CudaStream*>(&device.stream(StreamRole::kCompute));
  if (stream == nullptr) throw std::invalid_argument("elementwise_map: " + device.name() + " has no CUDA stream");
  select_cuda_device(stream->device());
  constexpr int kThreads = 256;
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
  elementwise_map_kernel<F, T, N>
      <<<grid, kThreads, 0, stream->handle()>>>(f, out, in, n, std::make_index_sequence<N>{});
  TESSERA_CUDA_CHECK_LAUNCH("elementwise_map_kernel");
}

}  // namespace detail

// Sets the CUDA launchers of functor F with N inputs, for f32 and bf16 tensors. Returns true.
template <typename F, std::size_t N>
bool register_cuda_elementwise() {
  detail::elementwise_cuda_launcher<F, float, N> = &detail::launch_elementwise_map<F, float, N>;
  detail::elementwise_cuda_launcher<F, Bf16, N> = &detail::launch_elementwise_map<F, Bf16, N>;
  return true;
}

}  // namespace tessera

#define TESSERA_CUDA_ELEMENTWISE_JOIN2(a, b) a##b
#define TESSERA_CUDA_ELEMENTWISE_JOIN(a, b) TESSERA_CUDA_ELEMENTWISE_JOIN2(a, b)
// Registers functor F (a type name) with N inputs at program start-up; once per (F, N) in a program.
#define TESSERA_CUDA_ELEMENTWISE(F, N)                                                               \
  [[maybe_unused]] static const bool TESSERA_CUDA_ELEMENTWISE_JOIN(tessera_elementwise_, __LINE__) = \
      ::tessera::register_cuda_elementwise<F, N>();
