// CPU LayerNorm over the last dimension. Rows are independent (parallel over rows); the weight and
// bias gradients are column sums over rows, parallelised over column blocks with each column summed
// in row order, so they are the same bits for every thread count. The loop bodies (and the
// backward formula) are in layernorm_rows.hpp; the backward is the residual one
// (cpu_residual_layernorm.cpp) with no residual gradient. The column sums run first, so dinp may
// alias dout.
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/cpu/layernorm_rows.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {

void LevelKernels::layernorm_forward(float* out,           // (n,c)
                                   float* mean,          // (n)
                                   float* rstd,          // (n)
                                   const float* inp,     // (n,c)
                                   const float* weight,  // (c)
                                   const float* bias,    // (c)
                                   std::int64_t n, std::int64_t c, float eps) const {
#pragma omp parallel for schedule(static) if (n * c > (1 << 14))
  for (std::int64_t i = 0; i < n; ++i) {
    detail::layernorm_forward_row(out + i * c, mean + i, rstd + i, inp + i * c, weight, bias, c, eps);
  }
}

void LevelKernels::layernorm_backward(float* dinp,          // (n,c) written
                                    float* dweight,       // (c) accumulated
                                    float* dbias,         // (c) accumulated
                                    const float* dout,    // (n,c)
                                    const float* inp,     // (n,c)
                                    const float* weight,  // (c)
                                    const float* mean,    // (n)
                                    const float* rstd,    // (n)
                                    std::int64_t n, std::int64_t c) const {
  LevelKernels::residual_layernorm_backward(dinp, dweight, dbias, dout, nullptr, inp, weight, mean, rstd, n, c);
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
