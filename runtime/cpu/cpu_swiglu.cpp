// CPU SwiGLU (Llama's MLP activation; formulas in runtime/math/silu_math.hpp): element-wise over
// rows of [gate | up], one OpenMP-parallel loop over rows with a vectorised inner loop.
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/math/silu_math.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {
constexpr std::int64_t kParallelMin = 1 << 14;
}  // namespace

void LevelKernels::swiglu_forward(float* out,        // (n,f)
                                  const float* inp,  // (n,2f) [gate | up]
                                  std::int64_t n, std::int64_t f) const {
#pragma omp parallel for schedule(static) if (n * f > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    const float* gate = inp + i * 2 * f;
    const float* up = gate + f;
    float* o = out + i * f;
#pragma omp simd
    for (std::int64_t j = 0; j < f; ++j) o[j] = silu_value(gate[j]) * up[j];
  }
}

void LevelKernels::swiglu_backward(float* dinp,        // (n,2f) written
                                   const float* dout,  // (n,f)
                                   const float* inp,   // (n,2f) [gate | up]
                                   std::int64_t n, std::int64_t f) const {
#pragma omp parallel for schedule(static) if (n * f > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    const float* gate = inp + i * 2 * f;
    const float* up = gate + f;
    const float* d = dout + i * f;
    float* dgate = dinp + i * 2 * f;
    float* dup = dgate + f;
#pragma omp simd
    for (std::int64_t j = 0; j < f; ++j) {
      const SiluParts g = silu_parts(gate[j]);
      dgate[j] = d[j] * up[j] * g.derivative;
      dup[j] = d[j] * g.value;
    }
  }
}

}  // namespace tessera::inline TESSERA_CPU_LEVEL_NS
