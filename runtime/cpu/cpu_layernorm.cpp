// CPU LayerNorm over the last dimension. Rows are independent (parallel over rows); the weight and
// bias gradients are column sums over rows, parallelised over column blocks with each column summed
// in row order, so they are the same bits for every thread count. The loop bodies (and the
// backward formula) are in layernorm_rows.hpp; the backward is the residual one
// (cpu_residual_layernorm.cpp) with no residual gradient. The column sums run first, so dinp may
// alias dout.
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/cpu/layernorm_rows.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {

namespace {

template <typename T, typename W>
void layernorm_forward_t(T* out,           // (n,c)
                         float* mean,      // (n)
                         float* rstd,      // (n)
                         const T* inp,     // (n,c)
                         const W* weight,  // (c)
                         const W* bias,    // (c)
                         std::int64_t n, std::int64_t c, float eps) {
#pragma omp parallel for schedule(static) if (n * c > (1 << 14))
  for (std::int64_t i = 0; i < n; ++i) {
    detail::layernorm_forward_row(out + i * c, mean + i, rstd + i, inp + i * c, weight, bias, c, eps);
  }
}

}  // namespace

#define TESSERA_CPU_LAYERNORM_OPS(T, W)                                                                            \
  void LevelKernels::layernorm_forward(T* out, float* mean, float* rstd, const T* inp, const W* weight,            \
                                       const W* bias, std::int64_t n, std::int64_t c, float eps) const {            \
    layernorm_forward_t(out, mean, rstd, inp, weight, bias, n, c, eps);                                            \
  }                                                                                                                \
  void LevelKernels::layernorm_backward(T* dinp, W* dweight, W* dbias, const T* dout, const T* inp,               \
                                        const W* weight, const float* mean, const float* rstd, std::int64_t n,     \
                                        std::int64_t c) const {                                                    \
    residual_layernorm_backward(dinp, dweight, dbias, dout, static_cast<const T*>(nullptr), inp, weight, mean,     \
                                rstd, n, c);                                                                       \
  }
TESSERA_CPU_LAYERNORM_OPS(float, float)
TESSERA_CPU_LAYERNORM_OPS(Bf16, Bf16)
TESSERA_CPU_LAYERNORM_OPS(Bf16, float)
#undef TESSERA_CPU_LAYERNORM_OPS

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
