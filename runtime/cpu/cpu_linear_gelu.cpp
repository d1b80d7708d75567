// CPU linear layer + GELU (the MLP's fc). Forward: the linear layer (bias in C, OpenBLAS GEMM) and
// the GELU over its output — OpenBLAS has no epilogue to put the GELU in, so this is the same two
// passes as linear_forward + gelu_forward (a row-panelled GEMM with the GELU on each panel while it
// is in cache measured slower: every panel packs the weight again). Backward: the GELU derivative
// and the bias gradient in one pass over dout (column blocks, each column summed in row order as
// linear_backward's bias gradient, so the same bits on every thread count), then the two GEMMs of
// linear_backward without their bias pass. The GELU formulas are gelu_math.hpp's.
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/math/gelu_math.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

constexpr std::int64_t kColumnBlock = 64;       // floats per column block (4 cache lines)
constexpr std::int64_t kParallelMin = 1 << 14;  // below this many elements one thread is faster

// dout (n,oc) *= gelu'(pre) in place; dbias (oc) += column sums of the result, when not null.
void gelu_backward_bias_grad(float* dbias, float* dout, const float* pre, std::int64_t n, std::int64_t oc) {
  const std::int64_t blocks = (oc + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (n * oc > kParallelMin)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t j0 = blk * kColumnBlock;
    const std::int64_t width = oc - j0 < kColumnBlock ? oc - j0 : kColumnBlock;
    float acc[kColumnBlock] = {};
    for (std::int64_t i = 0; i < n; ++i) {
      float* d = dout + i * oc + j0;
      const float* p = pre + i * oc + j0;
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) {
        const float v = gelu_derivative(p[j]) * d[j];
        d[j] = v;
        acc[j] += v;
      }
    }
    if (dbias != nullptr) {
      for (std::int64_t j = 0; j < width; ++j) dbias[j0 + j] += acc[j];
    }
  }
}

}  // namespace

void LevelKernels::linear_gelu_forward(float* out,           // (n,oc) gelu(pre)
                                     float* pre,           // (n,oc) inp @ weight^T + bias
                                     const float* inp,     // (n,c)
                                     const float* weight,  // (oc,c)
                                     const float* bias,    // (oc) or null
                                     std::int64_t n, std::int64_t c, std::int64_t oc) const {
  linear_forward(pre, inp, weight, bias, n, c, oc);
  const std::int64_t count = n * oc;
#pragma omp parallel for simd schedule(static) if (count > kParallelMin)
  for (std::int64_t i = 0; i < count; ++i) out[i] = gelu_value(pre[i]);
}

void LevelKernels::linear_gelu_backward(float* dinp,          // (n,c) written, or null
                                      float* dweight,       // (oc,c) accumulated
                                      float* dbias,         // (oc) accumulated, or null
                                      float* dout,          // (n,oc) d gelu(pre) in, d pre out
                                      const float* pre,     // (n,oc)
                                      const float* inp,     // (n,c)
                                      const float* weight,  // (oc,c)
                                      std::int64_t n, std::int64_t c, std::int64_t oc) const {
  gelu_backward_bias_grad(dbias, dout, pre, n, oc);
  linear_backward(dinp, dweight, nullptr, dout, inp, weight, n, c, oc);
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
