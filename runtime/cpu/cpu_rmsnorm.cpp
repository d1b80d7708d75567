// CPU RMSNorm over the last dimension (formulas in runtime/math/rmsnorm_math.hpp). Rows are
// independent (parallel over rows); the weight gradient is a column sum over rows, parallelised over
// column blocks with each column summed in row order, so it is the same bits for every thread
// count. The column sums run before the input gradient is written, so dinp may alias dout. bf16
// tensors are widened element by element as they are read; sums are f32, results rounded once.
#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/math/rmsnorm_math.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

constexpr std::int64_t kColumnBlock = 64;  // floats per column block (4 cache lines)
constexpr std::int64_t kParallelMin = 1 << 14;

template <typename T, typename W>
void rmsnorm_forward_t(T* out,           // (n,c)
                       float* rstd,      // (n)
                       const T* inp,     // (n,c)
                       const W* weight,  // (c)
                       std::int64_t n, std::int64_t c, float eps) {
#pragma omp parallel for schedule(static) if (n * c > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    const T* x = inp + i * c;
    T* o = out + i * c;
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (std::int64_t j = 0; j < c; ++j) sum += to_f32(x[j]) * to_f32(x[j]);
    const float rs = rmsnorm_rstd(sum, static_cast<float>(c), eps);
#pragma omp simd
    for (std::int64_t j = 0; j < c; ++j) o[j] = from_f32<T>(rmsnorm_output(to_f32(x[j]), rs, to_f32(weight[j])));
    rstd[i] = rs;
  }
}

template <typename T, typename W>
void rmsnorm_backward_t(T* dinp,           // (n,c) written; may alias dout
                        W* dweight,        // (c) accumulated
                        const T* dout,     // (n,c)
                        const T* inp,      // (n,c)
                        const W* weight,   // (c)
                        const float* rstd,  // (n)
                        std::int64_t n, std::int64_t c) {
  const std::int64_t blocks = (c + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (n * c > kParallelMin)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t j0 = blk * kColumnBlock;
    const std::int64_t width = c - j0 < kColumnBlock ? c - j0 : kColumnBlock;
    float acc[kColumnBlock] = {};
    for (std::int64_t i = 0; i < n; ++i) {
      const T* x = inp + i * c + j0;
      const T* d = dout + i * c + j0;
      const float rs = rstd[i];
#pragma omp simd
      for (std::int64_t j = 0; j < width; ++j) acc[j] += to_f32(d[j]) * (to_f32(x[j]) * rs);
    }
    for (std::int64_t j = 0; j < width; ++j) dweight[j0 + j] = from_f32<W>(to_f32(dweight[j0 + j]) + acc[j]);
  }
  const float inv_c = 1.0f / static_cast<float>(c);
#pragma omp parallel for schedule(static) if (n * c > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) {
    const T* x = inp + i * c;
    const T* d = dout + i * c;
    T* dx = dinp + i * c;
    const float rs = rstd[i];
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (std::int64_t j = 0; j < c; ++j) dot += (to_f32(weight[j]) * to_f32(d[j])) * (to_f32(x[j]) * rs);
    const float mean = dot * inv_c;
#pragma omp simd
    for (std::int64_t j = 0; j < c; ++j) {
      dx[j] = from_f32<T>(rmsnorm_input_grad(to_f32(x[j]), to_f32(d[j]), to_f32(weight[j]), rs, mean));
    }
  }
}

}  // namespace

#define TESSERA_CPU_RMSNORM_OPS(T, W)                                                                              \
  void LevelKernels::rmsnorm_forward(T* out, float* rstd, const T* inp, const W* weight, std::int64_t n,         \
                                     std::int64_t c, float eps) const {                                          \
    rmsnorm_forward_t(out, rstd, inp, weight, n, c, eps);                                                        \
  }                                                                                                              \
  void LevelKernels::rmsnorm_backward(T* dinp, W* dweight, const T* dout, const T* inp, const W* weight,         \
                                      const float* rstd, std::int64_t n, std::int64_t c) const {                 \
    rmsnorm_backward_t(dinp, dweight, dout, inp, weight, rstd, n, c);                                            \
  }
TESSERA_CPU_RMSNORM_OPS(float, float)
TESSERA_CPU_RMSNORM_OPS(Bf16, Bf16)
TESSERA_CPU_RMSNORM_OPS(Bf16, float)
#undef TESSERA_CPU_RMSNORM_OPS

}  // namespace tessera::inline TESSERA_CPU_LEVEL_NS
