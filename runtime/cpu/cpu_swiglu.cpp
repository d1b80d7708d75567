// CPU SwiGLU (Llama's MLP activation; formulas in runtime/math/silu_math.hpp): element-wise over
// rows of [gate | up], one OpenMP-parallel loop over rows with a vectorised inner loop; bf16
// elements are widened as they are read and each result rounded once.
#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/math/silu_math.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

constexpr std::int64_t kParallelMin = 1 << 14;

template <typename T>
void swiglu_forward_t(T* out,        // (n,f)
                      const T* inp,  // (n,2f) [gate | up]
                      std::int64_t n, std::int64_t f) {
#pragma omp parallel for schedule(static) if (n * f > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    const T* gate = inp + i * 2 * f;
    const T* up = gate + f;
    T* o = out + i * f;
#pragma omp simd
    for (std::int64_t j = 0; j < f; ++j) o[j] = from_f32<T>(silu_value(to_f32(gate[j])) * to_f32(up[j]));
  }
}

template <typename T>
void swiglu_backward_t(T* dinp,        // (n,2f) written
                       const T* dout,  // (n,f)
                       const T* inp,   // (n,2f) [gate | up]
                       std::int64_t n, std::int64_t f) {
#pragma omp parallel for schedule(static) if (n * f > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    const T* gate = inp + i * 2 * f;
    const T* up = gate + f;
    const T* d = dout + i * f;
    T* dgate = dinp + i * 2 * f;
    T* dup = dgate + f;
#pragma omp simd
    for (std::int64_t j = 0; j < f; ++j) {
      const SiluParts g = silu_parts(to_f32(gate[j]));
      dgate[j] = from_f32<T>(to_f32(d[j]) * to_f32(up[j]) * g.derivative);
      dup[j] = from_f32<T>(to_f32(d[j]) * g.value);
    }
  }
}

}  // namespace

void LevelKernels::swiglu_forward(float* out, const float* inp, std::int64_t n, std::int64_t f) const {
  swiglu_forward_t(out, inp, n, f);
}
void LevelKernels::swiglu_forward(Bf16* out, const Bf16* inp, std::int64_t n, std::int64_t f) const {
  swiglu_forward_t(out, inp, n, f);
}
void LevelKernels::swiglu_backward(float* dinp, const float* dout, const float* inp, std::int64_t n,
                                   std::int64_t f) const {
  swiglu_backward_t(dinp, dout, inp, n, f);
}
void LevelKernels::swiglu_backward(Bf16* dinp, const Bf16* dout, const Bf16* inp, std::int64_t n,
                                   std::int64_t f) const {
  swiglu_backward_t(dinp, dout, inp, n, f);
}

}  // namespace tessera::inline TESSERA_CPU_LEVEL_NS
