// CPU residual add + LayerNorm, fused: forward writes the residual sum of a row and normalises it
// while the row is still in L1 (one pass over memory instead of an add pass and a LayerNorm pass);
// backward adds the residual gradient into the LayerNorm input gradient as it writes it (no add
// pass afterwards). The row and column-block bodies are layernorm_rows.hpp's, as in the plain
// kernels, so the results are the same bits as add + layernorm_forward and layernorm_backward + add.
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/cpu/layernorm_rows.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {

using detail::kLayerNormColumnBlock;

void LevelKernels::residual_layernorm_forward(float* sum,           // (n,c) written: a + b
                                            float* out,           // (n,c)
                                            float* mean,          // (n)
                                            float* rstd,          // (n)
                                            const float* a,       // (n,c)
                                            const float* b,       // (n,c)
                                            const float* weight,  // (c)
                                            const float* bias,    // (c)
                                            std::int64_t n, std::int64_t c, float eps) const {
#pragma omp parallel for schedule(static) if (n * c > (1 << 14))
  for (std::int64_t i = 0; i < n; ++i) {
    float* s = sum + i * c;
    const float* ai = a + i * c;
    const float* bi = b + i * c;
#pragma omp simd
    for (std::int64_t j = 0; j < c; ++j) s[j] = ai[j] + bi[j];
    detail::layernorm_forward_row(out + i * c, mean + i, rstd + i, s, weight, bias, c, eps);
  }
}

void LevelKernels::residual_layernorm_backward(float* dinp,             // (n,c) written
                                             float* dweight,          // (c) accumulated
                                             float* dbias,            // (c) accumulated
                                             const float* dout,       // (n,c)
                                             const float* dresidual,  // (n,c), or null: nothing added
                                             const float* inp,        // (n,c)
                                             const float* weight,     // (c)
                                             const float* mean,       // (n)
                                             const float* rstd,       // (n)
                                             std::int64_t n, std::int64_t c) const {
  // Column sums first: dout is intact when dinp (which may alias it) is written.
  const std::int64_t blocks = (c + kLayerNormColumnBlock - 1) / kLayerNormColumnBlock;
#pragma omp parallel for schedule(static) if (n * c > (1 << 14))
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t j0 = blk * kLayerNormColumnBlock;
    const std::int64_t width = c - j0 < kLayerNormColumnBlock ? c - j0 : kLayerNormColumnBlock;
    detail::layernorm_param_grads_block(dweight, dbias, dout, inp, mean, rstd, n, c, j0, width);
  }
#pragma omp parallel for schedule(static) if (n * c > (1 << 14))
  for (std::int64_t i = 0; i < n; ++i) {
    detail::layernorm_backward_row(dinp + i * c, dout + i * c, inp + i * c, weight, mean[i], rstd[i], c,
                                   dresidual == nullptr ? nullptr : dresidual + i * c);
  }
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
