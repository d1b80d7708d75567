// CPU element-wise kernels: GELU forward/backward (formula in runtime/math/gelu_math.hpp), add,
// scale and dtype conversion. Each is one OpenMP-parallel, vectorised loop; the bf16 forms widen
// each element as they load it and round each result once.
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tessera/precision/bf16.hpp"
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

template <typename T>
void gelu_forward_t(T* out, const T* inp, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) out[i] = from_f32<T>(gelu_value(to_f32(inp[i])));
}

template <typename T>
void gelu_backward_t(T* dinp, const T* inp, const T* dout, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) dinp[i] = from_f32<T>(gelu_derivative(to_f32(inp[i])) * to_f32(dout[i]));
}

template <typename T>
void add_t(T* out, const T* a, const T* b, std::int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (std::int64_t i = 0; i < n; ++i) out[i] = from_f32<T>(to_f32(a[i]) + to_f32(b[i]));
}

}  // namespace

void LevelKernels::gelu_forward(float* out, const float* inp, std::int64_t n) const { gelu_forward_t(out, inp, n); }
void LevelKernels::gelu_forward(Bf16* out, const Bf16* inp, std::int64_t n) const { gelu_forward_t(out, inp, n); }

void LevelKernels::gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n) const {
  gelu_backward_t(dinp, inp, dout, n);
}
void LevelKernels::gelu_backward(Bf16* dinp, const Bf16* inp, const Bf16* dout, std::int64_t n) const {
  gelu_backward_t(dinp, inp, dout, n);
}

void LevelKernels::add(float* out, const float* a, const float* b, std::int64_t n) const { add_t(out, a, b, n); }
void LevelKernels::add(Bf16* out, const Bf16* a, const Bf16* b, std::int64_t n) const { add_t(out, a, b, n); }

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
