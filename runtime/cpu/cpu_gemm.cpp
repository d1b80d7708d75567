// CPU GEMM and linear layer: the matrix products in fixed output tiles of single-threaded OpenBLAS
// calls spread over the OpenMP threads (tiled_sgemm.hpp: the same bits at every thread count),
// OpenMP loops for the bias.
//
// The bias gradient is a column sum over rows. It is parallelised over column blocks and each column
// is summed over rows 0..n-1 in order, so the result is the same bits for every thread count.
#include <climits>
#include <stdexcept>
#include <string>

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

// dbias (oc) += sum over rows of dout (n,oc), each column summed in row order.
void bias_grad(float* dbias, const float* dout, std::int64_t n, std::int64_t oc) {
  const std::int64_t blocks = (oc + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (n * oc > (1 << 15))
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t j0 = blk * kColumnBlock;
    const std::int64_t width = oc - j0 < kColumnBlock ? oc - j0 : kColumnBlock;
    float acc[kColumnBlock] = {};
    for (std::int64_t i = 0; i < n; ++i) {
      const float* row = dout + i * oc + j0;
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) acc[j] += row[j];
    }
    for (std::int64_t j = 0; j < width; ++j) dbias[j0 + j] += acc[j];
  }
}

}  // namespace

void LevelKernels::gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                      const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                      std::int64_t ldc) const {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // c = beta * c (BLAS may skip the update when k is 0)
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    }
    return;
  }
  check_blas_int(m, "m");
  check_blas_int(n, "n");
  check_blas_int(k, "k");
  check_blas_int(lda, "lda");
  check_blas_int(ldb, "ldb");
  check_blas_int(ldc, "ldc");
  detail::tiled_sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void LevelKernels::linear_forward(float* out,           // (n,oc)
                                const float* inp,     // (n,c)
                                const float* weight,  // (oc,c)
                                const float* bias,    // (oc) or null
                                std::int64_t n, std::int64_t c, std::int64_t oc) const {
  float beta = 0.0f;
  if (bias != nullptr) {  // out = bias, then out += inp @ weight^T
#pragma omp parallel for schedule(static) if (n * oc > (1 << 15))
    for (std::int64_t i = 0; i < n; ++i) {
      float* row = out + i * oc;
#pragma omp simd
      for (std::int64_t j = 0; j < oc; ++j) row[j] = bias[j];
    }
    beta = 1.0f;
  }
  gemm(false, true, n, oc, c, 1.0f, inp, c, weight, c, beta, out, oc);
}

void LevelKernels::linear_backward(float* dinp,          // (n,c) written, or null
                                 float* dweight,       // (oc,c) accumulated
                                 float* dbias,         // (oc) accumulated, or null
                                 const float* dout,    // (n,oc)
                                 const float* inp,     // (n,c)
                                 const float* weight,  // (oc,c)
                                 std::int64_t n, std::int64_t c, std::int64_t oc) const {
  if (dinp != nullptr) gemm(false, false, n, c, oc, 1.0f, dout, oc, weight, c, 0.0f, dinp, c);
  gemm(true, false, oc, c, n, 1.0f, dout, oc, inp, c, 1.0f, dweight, c);
  if (dbias != nullptr) bias_grad(dbias, dout, n, oc);
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
