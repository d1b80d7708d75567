// CPU residual add + LayerNorm, fused: forward writes the residual sum of a row and normalises it
// while the row is still in L1 (one pass over memory instead of an add pass and a LayerNorm pass);
// backward adds the residual gradient into the LayerNorm input gradient as it writes it (no add
// pass afterwards). The row and column-block bodies are layernorm_rows.hpp's, as in the plain
// kernels, so the results are the same bits as add + layernorm_forward and layernorm_backward + add.
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/cpu/layernorm_rows.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {

using detail::kLayerNormColumnBlock;

namespace {

template <typename T, typename W>
void residual_layernorm_forward_t(T* sum,           // (n,c) written: a + b
                                  T* out,           // (n,c)
                                  float* mean,      // (n)
                                  float* rstd,      // (n)
                                  const T* a,       // (n,c)
                                  const T* b,       // (n,c)
                                  const W* weight,  // (c)
                                  const W* bias,    // (c)
                                  std::int64_t n, std::int64_t c, float eps) {
#pragma omp parallel for schedule(static) if (n * c > (1 << 14))
  for (std::int64_t i = 0; i < n; ++i) {
    T* s = sum + i * c;
    const T* ai = a + i * c;
    const T* bi = b + i * c;
#pragma omp simd
    for (std::int64_t j = 0; j < c; ++j) s[j] = from_f32<T>(to_f32(ai[j]) + to_f32(bi[j]));
    // The rounded sum is what is normalised, as LayerNorm reads it after a separate add.
    detail::layernorm_forward_row(out + i * c, mean + i, rstd + i, s, weight, bias, c, eps);
  }
}

template <typename T, typename W>
void residual_layernorm_backward_t(T* dinp,             // (n,c) written
                                   W* dweight,          // (c) accumulated
                                   W* dbias,            // (c) accumulated
                                   const T* dout,       // (n,c)
                                   const T* dresidual,  // (n,c), or null: nothing added
                                   const T* inp,        // (n,c)
                                   const W* weight,     // (c)
                                   const float* mean,   // (n)
                                   const float* rstd,   // (n)
                                   std::int64_t n, std::int64_t c) {
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

}  // namespace

#define TESSERA_CPU_RESIDUAL_LAYERNORM_OPS(T, W)                                                                     \
  void LevelKernels::residual_layernorm_forward(T* sum, T* out, float* mean, float* rstd, const T* a, const T* b, \
                                                const W* weight, const W* bias, std::int64_t n, std::int64_t c,    \
                                                float eps) const {                                                 \
    residual_layernorm_forward_t(sum, out, mean, rstd, a, b, weight, bias, n, c, eps);                             \
  }                                                                                                                \
  void LevelKernels::residual_layernorm_backward(T* dinp, W* dweight, W* dbias, const T* dout, const T* dresidual, \
                                                 const T* inp, const W* weight, const float* mean,                 \
                                                 const float* rstd, std::int64_t n, std::int64_t c) const {        \
    residual_layernorm_backward_t(dinp, dweight, dbias, dout, dresidual, inp, weight, mean, rstd, n, c);           \
  }
TESSERA_CPU_RESIDUAL_LAYERNORM_OPS(float, float)
TESSERA_CPU_RESIDUAL_LAYERNORM_OPS(Bf16, Bf16)
TESSERA_CPU_RESIDUAL_LAYERNORM_OPS(Bf16, float)
#undef TESSERA_CPU_RESIDUAL_LAYERNORM_OPS

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
