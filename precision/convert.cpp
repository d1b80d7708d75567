// Host loops for dtype conversion; OpenMP-parallel above a size where threads pay off.
#include "tessera/precision/convert.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "tessera/precision/float_bits.hpp"

namespace tessera {
namespace {

float load(const void* src, DType dtype, std::size_t i) {
  switch (dtype) {
    case DType::kF32: return static_cast<const float*>(src)[i];
    case DType::kBF16: return bf16_to_f32(static_cast<const std::uint16_t*>(src)[i]);
    case DType::kF16: return f16_to_f32(static_cast<const std::uint16_t*>(src)[i]);
    case DType::kI32:
    case DType::kI8:
    case DType::kU8: break;
  }
  return 0.0f;
}

void store(void* dst, DType dtype, std::size_t i, float x) {
  switch (dtype) {
    case DType::kF32: static_cast<float*>(dst)[i] = x; return;
    case DType::kBF16: static_cast<std::uint16_t*>(dst)[i] = f32_to_bf16(x); return;
    case DType::kF16: static_cast<std::uint16_t*>(dst)[i] = f32_to_f16(x); return;
    case DType::kI32:
    case DType::kI8:
    case DType::kU8: return;
  }
}

}  // namespace

void convert_host(const void* src, DType from, void* dst, DType to, std::size_t n) {
  if (!is_floating(from) || !is_floating(to)) {
    if (from == to) {
      std::memcpy(dst, src, n * dtype_size(from));
      return;
    }
    throw std::invalid_argument(std::string("convert_host: cannot convert ") + dtype_name(from) + " to " +
                                dtype_name(to));
  }
  if (from == to) {
    std::memcpy(dst, src, n * dtype_size(from));
    return;
  }
  const auto count = static_cast<std::int64_t>(n);
#pragma omp parallel for schedule(static) if (count > (1 << 16))
  for (std::int64_t i = 0; i < count; ++i) store(dst, to, i, load(src, from, i));
}

}  // namespace tessera
