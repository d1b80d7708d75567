// CPU RMSNorm over the last dimension (formulas in runtime/math/rmsnorm_math.hpp). Rows are
// independent (parallel over rows); the weight gradient is a column sum over rows, parallelised over
// column blocks with each column summed in row order, so it is the same bits for every thread
// count. The column sums run before the input gradient is written, so dinp may alias dout.
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/math/rmsnorm_math.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {
constexpr std::int64_t kColumnBlock = 64;  // floats per column block (4 cache lines)
constexpr std::int64_t kParallelMin = 1 << 14;
}  // namespace

void LevelKernels::rmsnorm_forward(float* out,           // (n,c)
                                   float* rstd,          // (n)
                                   const float* inp,     // (n,c)
                                   const float* weight,  // (c)
                                   std::int64_t n, std::int64_t c, float eps) const {
#pragma omp parallel for schedule(static) if (n * c > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    const float* x = inp + i * c;
    float* o = out + i * c;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t j = 0; j < c; ++j) sum += x[j] * x[j];
    const float rs = rmsnorm_rstd(sum, static_cast<float>(c), eps);
#pragma omp simd
    for (std::int64_t j = 0; j < c; ++j) o[j] = rmsnorm_output(x[j], rs, weight[j]);
    rstd[i] = rs;
  }
}

void LevelKernels::rmsnorm_backward(float* dinp,          // (n,c) written; may alias dout
                                    float* dweight,       // (c) accumulated
                                    const float* dout,    // (n,c)
                                    const float* inp,     // (n,c)
                                    const float* weight,  // (c)
                                    const float* rstd,    // (n)
                                    std::int64_t n, std::int64_t c) const {
  const std::int64_t blocks = (c + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (n * c > kParallelMin)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t j0 = blk * kColumnBlock;
    const std::int64_t width = c - j0 < kColumnBlock ? c - j0 : kColumnBlock;
    float acc[kColumnBlock] = {};
    for (std::int64_t i = 0; i < n; ++i) {
      const float* x = inp + i * c + j0;
      const float* d = dout + i * c + j0;
      const float rs = rstd[i];
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) acc[j] += d[j] * (x[j] * rs);
    }
    for (std::int64_t j = 0; j < width; ++j) dweight[j0 + j] += acc[j];
  }
  const float inv_c = 1.0f / static_cast<float>(c);
#pragma omp parallel for schedule(static) if (n * c > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    const float* x = inp + i * c;
    const float* d = dout + i * c;
    float* dx = dinp + i * c;
    const float rs = rstd[i];
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (std::int64_t j = 0; j < c; ++j) dot += (weight[j] * d[j]) * (x[j] * rs);
    const float mean = dot * inv_c;
#pragma omp simd
    for (std::int64_t j = 0; j < c; ++j) dx[j] = rmsnorm_input_grad(x[j], d[j], weight[j], rs, mean);
  }
}

}  // namespace tessera::inline TESSERA_CPU_LEVEL_NS
