// elementwise_map: a program's own element-wise op, written once as a functor over f32 values and
// run on the device its tensors live on — the Kernels table's idea (one formula, one implementation
// per backend) for ops the table does not have:
//
//   struct SquaredRelu {  // y = max(x, 0)^2; TESSERA_HD: also compiled for the GPU by nvcc
//     TESSERA_HD float operator()(float x) const { return x > 0.0f ? x * x : 0.0f; }
//   };
//   elementwise_map(ctx.device, SquaredRelu{}, y, x);        // y[i] = f(x[i])
//   elementwise_map(ctx.device, Backward{}, dx, x, dy);      // dx[i] = g(x[i], dy[i])
//
// `out` and every input are tensors of one dtype, f32 or bf16, and one element count, on `device`;
// f gets each element widened to f32 and its result is rounded to the dtype once (bf16: to nearest
// even). out may be one of the inputs (in place). Where it runs:
//   * the CPU device: an OpenMP loop on the calling thread (the CPU's compute stream is inline);
//   * the simulated GPU: the same loop on the device's backing memory;
//   * the meta device: nothing (its tensors hold no data);
//   * a CUDA device: a grid-stride kernel on the device's compute stream, ordered with the modules'
//     kernels. The kernel comes from tessera/runtime/cuda/elementwise_map.cuh: a source file of the
//     program compiled by nvcc registers it once per functor type and arity with
//     TESSERA_CUDA_ELEMENTWISE(F, N); without it, elementwise_map on a CUDA device throws
//     std::invalid_argument saying so.
// f must not depend on the element's position or on other elements, and must be deterministic: the
// CPU and the GPU then compute the same formula (bit for bit when it uses only +, -, *, / and
// comparisons without contractible multiply-adds — spell those with madd, runtime/math/fma_math.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "tessera/precision/bf16.hpp"
#include "tessera/precision/host_device.hpp"
#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/simulated/simulated_gpu_device.hpp"
#include "tessera/runtime/tensor.hpp"

namespace tessera {
namespace detail {

// The input pointers of one call (a plain array: usable in a CUDA kernel's arguments).
template <typename T, std::size_t N>
struct ElementwiseInputs {
  const T* p[N > 0 ? N : 1];
};

// A CUDA launcher of functor F over T (float or Bf16) with N inputs: queues the kernel on `device`'s
// compute stream. Set by TESSERA_CUDA_ELEMENTWISE in a CUDA source of the program.
template <typename F, typename T, std::size_t N>
using ElementwiseCudaLauncher = void (*)(Device& device, const F& f, T* out, ElementwiseInputs<T, N> in,
                                         std::int64_t n);
template <typename F, typename T, std::size_t N>
inline ElementwiseCudaLauncher<F, T, N> elementwise_cuda_launcher = nullptr;

// out[i] = f(in[0][i], ..., in[N-1][i]) on host memory.
template <typename F, typename T, std::size_t N, std::size_t... I>
void elementwise_host_loop(const F& f, T* out, ElementwiseInputs<T, N> in, std::int64_t n, std::index_sequence<I...>) {
#pragma omp parallel for schedule(static) if (n > (1 << 14))
  for (std::int64_t i = 0; i < n; ++i) out[i] = from_f32<T>(f(to_f32(in.p[I][i])...));
}

inline std::string elementwise_operand(const Tensor& t) {
  return std::string(dtype_name(t.dtype())) + " " + shape_string(t.shape());
}

}  // namespace detail

template <typename F, typename... In>
void elementwise_map(Device& device, const F& f, Tensor& out, const In&... in) {
  constexpr std::size_t kArity = sizeof...(In);
  static_assert(kArity >= 1, "elementwise_map: give at least one input tensor");
  static_assert((std::is_same_v<In, Tensor> && ...), "elementwise_map: the inputs are Tensors");
  const std::string who = std::string("elementwise_map(") + typeid(F).name() + ")";
  if (!out.defined() || !is_compute_dtype(out.dtype())) {
    throw std::invalid_argument(who + ": the output must be an f32 or bf16 tensor, got " +
                                detail::elementwise_operand(out));
  }
  for (const Tensor* t : std::initializer_list<const Tensor*>{&in...}) {
    if (!t->defined() || t->dtype() != out.dtype() || t->numel() != out.numel()) {
      throw std::invalid_argument(who + ": every input must match the output's dtype and element count (" +
                                  detail::elementwise_operand(out) + "), got " + detail::elementwise_operand(*t));
    }
  }
  for (const Tensor* t : std::initializer_list<const Tensor*>{&out, &in...}) {
    if (&t->device() != &device) {
      throw std::invalid_argument(who + ": a tensor lives on " + t->device().name() + ", not on " + device.name());
    }
  }
  if (!device.holds_data() || out.numel() == 0) return;
  with_element_type(out.dtype(), "elementwise_map", [&]<typename T>() {
    detail::ElementwiseInputs<T, kArity> ptrs{{in.template data_as<T>()...}};
    T* dst = out.data_as<T>();
    switch (device.kind()) {
      case DeviceKind::kCpu: break;
      case DeviceKind::kSimulatedGpu: {
        const DeviceAddressSpace& space = static_cast<SimulatedGpuDevice&>(device).address_space();
        dst = static_cast<T*>(space.translate(dst, "elementwise_map"));
        for (const T*& p : ptrs.p) p = static_cast<const T*>(space.translate(p, "elementwise_map"));
        break;
      }
      case DeviceKind::kCuda: {
        auto launch = detail::elementwise_cuda_launcher<F, T, kArity>;
        if (launch == nullptr) {
          throw std::invalid_argument(who + " on " + device.name() +
                                      ": no CUDA kernel registered for this functor with " + std::to_string(kArity) +
                                      " inputs; compile a source file of the program with nvcc that includes "
                                      "tessera/runtime/cuda/elementwise_map.cuh and says "
                                      "TESSERA_CUDA_ELEMENTWISE(<functor>, " +
                                      std::to_string(kArity) + ")");
        }
        launch(device, f, dst, ptrs, out.numel());
        return;
      }
      case DeviceKind::kMeta: return;
    }
    detail::elementwise_host_loop(f, dst, ptrs, out.numel(), std::make_index_sequence<kArity>{});
  });
}

}  // namespace tessera
