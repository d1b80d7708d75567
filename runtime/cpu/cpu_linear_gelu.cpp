// CPU linear layer + GELU (the MLP's fc). Forward: the linear layer (bias in C, OpenBLAS GEMM) and
// the GELU over its output — OpenBLAS has no epilogue to put the GELU in, so this is the same two
// passes as linear_forward + gelu_forward (a row-panelled GEMM with the GELU on each panel while it
// is in cache measured slower: every panel packs the weight again). Backward: the GELU derivative
// and the bias gradient in one pass over dout (column blocks, each column summed in row order as
// linear_backward's bias gradient, so the same bits on every thread count), then the two GEMMs of
// linear_backward without their bias pass. The GELU formulas are gelu_math.hpp's. bf16: pre is
// rounded to bf16 before the GELU reads it, and d pre before the bias sums read it, so the bits are
// those of the separate ops, whose results are bf16 in memory.
#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/math/gelu_math.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

constexpr std::int64_t kColumnBlock = 64;       // floats per column block (4 cache lines)
constexpr std::int64_t kParallelMin = 1 << 14;  // below this many elements one thread is faster

// dout (n,oc) *= gelu'(pre) in place; dbias (oc) += column sums of the result, when not null.
template <typename T>
void gelu_backward_bias_grad(T* dbias, T* dout, const T* pre, std::int64_t n, std::int64_t oc) {
  const std::int64_t blocks = (oc + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (n * oc > kParallelMin)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t j0 = blk * kColumnBlock;
    const std::int64_t width = oc - j0 < kColumnBlock ? oc - j0 : kColumnBlock;
    float acc[kColumnBlock] = {};
    for (std::int64_t i = 0; i < n; ++i) {
      T* d = dout + i * oc + j0;
      const T* p = pre + i * oc + j0;
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) {
        const T v = from_f32<T>(gelu_derivative(to_f32(p[j])) * to_f32(d[j]));
        d[j] = v;
        acc[j] += to_f32(v);
      }
    }
    if (dbias != nullptr) {
      for (std::int64_t j = 0; j < width; ++j) dbias[j0 + j] = from_f32<T>(to_f32(dbias[j0 + j]) + acc[j]);
    }
  }
}

template <typename T>
void linear_gelu_forward_t(const LevelKernels& kernels, T* out, T* pre, const T* inp, const T* weight, const T* bias,
                           std::int64_t n, std::int64_t c, std::int64_t oc) {
  kernels.linear_forward(pre, inp, weight, bias, n, c, oc);
  const std::int64_t count = n * oc;
#pragma omp parallel for simd schedule(static) if (count > kParallelMin)
  for (std::int64_t i = 0; i < count; ++i) out[i] = from_f32<T>(gelu_value(to_f32(pre[i])));
}

}  // namespace

#define TESSERA_CPU_LINEAR_GELU_OPS(T)                                                                          \
  void LevelKernels::linear_gelu_forward(T* out,           /* (n,oc) gelu(pre) */                              \
                                         T* pre,           /* (n,oc) inp @ weight^T + bias */                  \
                                         const T* inp,     /* (n,c) */                                         \
                                         const T* weight,  /* (oc,c) */                                        \
                                         const T* bias,    /* (oc) or null */                                  \
                                         std::int64_t n, std::int64_t c, std::int64_t oc) const {              \
    linear_gelu_forward_t(*this, out, pre, inp, weight, bias, n, c, oc);                                       \
  }                                                                                                            \
  void LevelKernels::linear_gelu_backward(T* dinp,          /* (n,c) written, or null */                       \
                                          T* dweight,       /* (oc,c) accumulated */                           \
                                          T* dbias,         /* (oc) accumulated, or null */                    \
                                          T* dout,          /* (n,oc) d gelu(pre) in, d pre out */             \
                                          const T* pre,     /* (n,oc) */                                       \
                                          const T* inp,     /* (n,c) */                                        \
                                          const T* weight,  /* (oc,c) */                                       \
                                          std::int64_t n, std::int64_t c, std::int64_t oc) const {             \
    gelu_backward_bias_grad(dbias, dout, pre, n, oc);                                                          \
    linear_backward(dinp, dweight, static_cast<T*>(nullptr), dout, inp, weight, n, c, oc);                     \
  }
TESSERA_CPU_LINEAR_GELU_OPS(float)
TESSERA_CPU_LINEAR_GELU_OPS(Bf16)
#undef TESSERA_CPU_LINEAR_GELU_OPS

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
