// CPU activation kernels: ReLU and SiLU forward/backward and the dropout mask (formulas in
// runtime/math/relu_math.hpp, silu_math.hpp, dropout_math.hpp, shared with the CUDA kernels). Each
// is one OpenMP-parallel, vectorised loop; the bf16 forms widen each element as they load it and
// round each result once. The dropout mask depends on the element index alone, so the split over
// threads does not change it.
#include <cstdint>

#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/math/dropout_math.hpp"
#include "tessera/runtime/math/relu_math.hpp"
#include "tessera/runtime/math/silu_math.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

constexpr std::int64_t kActivationParallelMin = 1 << 14;  // below this many elements one thread is faster

template <typename T>
void relu_forward_t(T* out, const T* inp, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kActivationParallelMin)
  for (std::int64_t i = 0; i < n; ++i) out[i] = from_f32<T>(relu_value(to_f32(inp[i])));
}

template <typename T>
void relu_backward_t(T* dinp, const T* inp, const T* dout, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kActivationParallelMin)
  for (std::int64_t i = 0; i < n; ++i) dinp[i] = from_f32<T>(relu_backward_value(to_f32(inp[i]), to_f32(dout[i])));
}

template <typename T>
void silu_forward_t(T* out, const T* inp, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kActivationParallelMin)
  for (std::int64_t i = 0; i < n; ++i) out[i] = from_f32<T>(silu_value(to_f32(inp[i])));
}

template <typename T>
void silu_backward_t(T* dinp, const T* inp, const T* dout, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kActivationParallelMin)
  for (std::int64_t i = 0; i < n; ++i) dinp[i] = from_f32<T>(silu_derivative(to_f32(inp[i])) * to_f32(dout[i]));
}

template <typename T>
void dropout_apply_t(T* out, const T* inp, std::int64_t n, const DropoutMask& mask) {
  const DropoutMask m = mask;  // by value: the loop reads no memory the stores could alias
#pragma omp parallel for simd schedule(static) if (n > kActivationParallelMin)
  for (std::int64_t i = 0; i < n; ++i) out[i] = from_f32<T>(dropout_value(to_f32(inp[i]), i, m));
}

}  // namespace

void LevelKernels::relu_forward(float* out, const float* inp, std::int64_t n) const { relu_forward_t(out, inp, n); }
void LevelKernels::relu_forward(Bf16* out, const Bf16* inp, std::int64_t n) const { relu_forward_t(out, inp, n); }
void LevelKernels::relu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n) const {
  relu_backward_t(dinp, inp, dout, n);
}
void LevelKernels::relu_backward(Bf16* dinp, const Bf16* inp, const Bf16* dout, std::int64_t n) const {
  relu_backward_t(dinp, inp, dout, n);
}

void LevelKernels::silu_forward(float* out, const float* inp, std::int64_t n) const { silu_forward_t(out, inp, n); }
void LevelKernels::silu_forward(Bf16* out, const Bf16* inp, std::int64_t n) const { silu_forward_t(out, inp, n); }
void LevelKernels::silu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n) const {
  silu_backward_t(dinp, inp, dout, n);
}
void LevelKernels::silu_backward(Bf16* dinp, const Bf16* inp, const Bf16* dout, std::int64_t n) const {
  silu_backward_t(dinp, inp, dout, n);
}

void LevelKernels::dropout_apply(float* out, const float* inp, std::int64_t n, const DropoutMask& mask) const {
  dropout_apply_t(out, inp, n, mask);
}
void LevelKernels::dropout_apply(Bf16* out, const Bf16* inp, std::int64_t n, const DropoutMask& mask) const {
  dropout_apply_t(out, inp, n, mask);
}

}  // namespace tessera::inline TESSERA_CPU_LEVEL_NS
