// CPU element-wise kernels: GELU forward/backward (formula in runtime/math/gelu_math.hpp), add,
// scale and dtype conversion. Each is one OpenMP-parallel, vectorised loop.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tessera/precision/float_codec.hpp"
#include "tessera/runtime/cpu/kernel_errors.hpp"
#include "tessera/runtime/cpu/level_kernels.hpp"
#include "tessera/runtime/math/gelu_math.hpp"

namespace tessera::inline TESSERA_CPU_LEVEL_NS {
namespace {

constexpr std::int64_t kParallelMin = 1 << 14;  // below this many elements one thread is faster

template <typename From, typename To>
void convert_loop(const void* src, void* dst, std::int64_t n) {
  const auto* in = static_cast<const typename From::Storage*>(src);
  auto* out = static_cast<typename To::Storage*>(dst);
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) out[i] = To::store(From::load(in[i]));
}

template <typename From>
void convert_from(const void* src, void* dst, DType to, std::int64_t n) {
  switch (to) {
    case DType::kF32: convert_loop<From, F32Codec>(src, dst, n); return;
    case DType::kBF16: convert_loop<From, BF16Codec>(src, dst, n); return;
    case DType::kF16: convert_loop<From, F16Codec>(src, dst, n); return;
    case DType::kI32:
    case DType::kI8:
    case DType::kU8: break;
  }
}

}  // namespace

void LevelKernels::gelu_forward(float* out,        // (n)
                              const float* inp,  // (n)
                              std::int64_t n) const {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) out[i] = gelu_value(inp[i]);
}

void LevelKernels::gelu_backward(float* dinp,        // (n) written; may alias dout
                               const float* inp,   // (n)
                               const float* dout,  // (n)
                               std::int64_t n) const {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) dinp[i] = gelu_derivative(inp[i]) * dout[i];
}

void LevelKernels::add(float* out, const float* a, const float* b, std::int64_t n) const {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void LevelKernels::scale(float* x, float s, std::int64_t n) const {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) x[i] *= s;
}

void LevelKernels::convert(const void* src, DType from, void* dst, DType to, std::int64_t n) const {
  if (!is_floating(from) || !is_floating(to)) {
    if (from == to) {
      std::memcpy(dst, src, static_cast<std::size_t>(n) * dtype_size(from));
      return;
    }
    throw_convert(from, to);
  }
  if (from == to) {
    std::memcpy(dst, src, static_cast<std::size_t>(n) * dtype_size(from));
    return;
  }
  switch (from) {
    case DType::kF32: convert_from<F32Codec>(src, dst, to, n); return;
    case DType::kBF16: convert_from<BF16Codec>(src, dst, to, n); return;
    case DType::kF16: convert_from<F16Codec>(src, dst, to, n); return;
    case DType::kI32:
    case DType::kI8:
    case DType::kU8: return;
  }
}

}  // namespace tessera::TESSERA_CPU_LEVEL_NS
