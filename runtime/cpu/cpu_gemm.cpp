// CPU GEMM and linear layer: the matrix products in fixed output tiles of single-threaded OpenBLAS
// calls spread over the OpenMP threads (tiled_sgemm.hpp: the same bits at every thread count),
// OpenMP loops for the bias.
//
// The bias gradient is a column sum over rows. It is parallelised over column blocks and each column
// is summed over rows 0..n-1 in order, so the result is the same bits for every thread count.
// bf16 tensors: the products run in the same output tiles on f32 panels widened inside the tile
// (tiled_sgemm.hpp's tiled_gemm_bf16), each output element rounded once; sums accumulate in f32.
#include <climits>
#include <type_traits>
#include <stdexcept>
#include <string>

#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/cpu/kernel_errors.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/cpu/tiled_sgemm.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

constexpr std::int64_t kColumnBlock = 64;  // floats per column block (4 cache lines)

void check_blas_int(std::int64_t value, const char* what) {
  if (value < 0 || value > INT_MAX) {
    throw_blas_int(what, value);
  }
}

// dbias (oc) += sum over rows of dout (n,oc), each column summed in row order (in f32).
template <typename T>
void bias_grad(T* dbias, const T* dout, std::int64_t n, std::int64_t oc) {
  const std::int64_t blocks = (oc + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (n * oc > (1 << 15))
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t j0 = blk * kColumnBlock;
    const std::int64_t width = oc - j0 < kColumnBlock ? oc - j0 : kColumnBlock;
    float acc[kColumnBlock] = {};
    for (std::int64_t i = 0; i < n; ++i) {
      const T* row = dout + i * oc + j0;
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) acc[j] += to_f32(row[j]);
    }
    for (std::int64_t j = 0; j < width; ++j) dbias[j0 + j] = from_f32<T>(to_f32(dbias[j0 + j]) + acc[j]);
  }
}

template <typename T>
void gemm_t(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const T* a,
            std::int64_t lda, const T* b, std::int64_t ldb, float beta, T* c, std::int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // c = beta * c (BLAS may skip the update when k is 0)
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) {
        c[i * ldc + j] = from_f32<T>(beta == 0.0f ? 0.0f : beta * to_f32(c[i * ldc + j]));
      }
    }
    return;
  }
  check_blas_int(m, "m");
  check_blas_int(n, "n");
  check_blas_int(k, "k");
  check_blas_int(lda, "lda");
  check_blas_int(ldb, "ldb");
  check_blas_int(ldc, "ldc");
  if constexpr (std::is_same_v<T, float>) {
    detail::tiled_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    detail::tiled_gemm_bf16(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

template <typename T>
void linear_forward_t(T* out,           // (n,oc)
                      const T* inp,     // (n,c)
                      const T* weight,  // (oc,c)
                      const T* bias,    // (oc) or null
                      std::int64_t n, std::int64_t c, std::int64_t oc) {
  float beta = 0.0f;
  if (bias != nullptr) {  // out = bias, then out += inp @ weight^T
#pragma omp parallel for schedule(static) if (n * oc > (1 << 15))
    for (std::int64_t i = 0; i < n; ++i) {
      T* row = out + i * oc;
#pragma omp simd
      for (std::int64_t j = 0; j < oc; ++j) row[j] = bias[j];
    }
    beta = 1.0f;
  }
  gemm_t(false, true, n, oc, c, 1.0f, inp, c, weight, c, beta, out, oc);
}

template <typename T>
void linear_backward_t(T* dinp,          // (n,c) written, or null
                       T* dweight,       // (oc,c) accumulated
                       T* dbias,         // (oc) accumulated, or null
                       const T* dout,    // (n,oc)
                       const T* inp,     // (n,c)
                       const T* weight,  // (oc,c)
                       std::int64_t n, std::int64_t c, std::int64_t oc) {
  if (dinp != nullptr) gemm_t(false, false, n, c, oc, 1.0f, dout, oc, weight, c, 0.0f, dinp, c);
  gemm_t(true, false, oc, c, n, 1.0f, dout, oc, inp, c, 1.0f, dweight, c);
  if (dbias != nullptr) bias_grad(dbias, dout, n, oc);
}

}  // namespace

#define TESSERA_CPU_GEMM_OPS(T)                                                                                  \
  void LevelKernels::gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, \
                          const T* a, std::int64_t lda, const T* b, std::int64_t ldb, float beta, T* c,             \
                          std::int64_t ldc) const {                                                                \
    gemm_t(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);                                        \
  }                                                                                                                \
  void LevelKernels::linear_forward(T* out, const T* inp, const T* weight, const T* bias, std::int64_t n,         \
                                    std::int64_t c, std::int64_t oc) const {                                       \
    linear_forward_t(out, inp, weight, bias, n, c, oc);                                                            \
  }                                                                                                                \
  void LevelKernels::linear_backward(T* dinp, T* dweight, T* dbias, const T* dout, const T* inp, const T* weight, \
                                     std::int64_t n, std::int64_t c, std::int64_t oc) const {                      \
    linear_backward_t(dinp, dweight, dbias, dout, inp, weight, n, c, oc);                                          \
  }
TESSERA_CPU_GEMM_OPS(float)
TESSERA_CPU_GEMM_OPS(Bf16)
#undef TESSERA_CPU_GEMM_OPS

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
