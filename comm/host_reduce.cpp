// reduce_in_order and reduce_wire_in_order: blocked loops (an L1-sized f32 accumulator per block)
// that the compiler vectorises (bf16 and f16 through the branch-free codecs of comm/wire_codec.hpp);
// one pass per source per block, sources visited in order 0, 1, ..., N-1.
#include "tessera/comm/host_reduce.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "tessera/comm/wire_codec.hpp"
#include "tessera/precision/float_codec.hpp"

namespace tessera {
namespace {

constexpr std::size_t kBlock = 2048;  // elements per block: 8 KiB of f32 accumulator

// NaN wins; among equal values the earlier one is kept (so -0 vs +0 depends only on rank order).
inline float max_keep_nan(float acc, float v) { return (v > acc || v != v) ? v : acc; }

template <class Codec>
void reduce_floating(std::span<const void* const> sources, void* dst_void, std::size_t count, ReduceOp op) {
  using T = typename Codec::Storage;
  T* dst = static_cast<T*>(dst_void);
  const float divisor = static_cast<float>(sources.size());
  float acc[kBlock];
  for (std::size_t begin = 0; begin < count; begin += kBlock) {
    const std::size_t n = std::min(kBlock, count - begin);
    const T* first = static_cast<const T*>(sources[0]) + begin;
    for (std::size_t i = 0; i < n; ++i) acc[i] = Codec::load(first[i]);
    for (std::size_t q = 1; q < sources.size(); ++q) {
      const T* src = static_cast<const T*>(sources[q]) + begin;
      if (op == ReduceOp::kMax) {
        for (std::size_t i = 0; i < n; ++i) acc[i] = max_keep_nan(acc[i], Codec::load(src[i]));
      } else {
        for (std::size_t i = 0; i < n; ++i) acc[i] += Codec::load(src[i]);
      }
    }
    if (op == ReduceOp::kAvg) {
      for (std::size_t i = 0; i < n; ++i) acc[i] /= divisor;
    }
    T* out = dst + begin;
    for (std::size_t i = 0; i < n; ++i) out[i] = Codec::store(acc[i]);
  }
}

void reduce_i32(std::span<const void* const> sources, void* dst_void, std::size_t count, ReduceOp op) {
  auto* dst = static_cast<std::int32_t*>(dst_void);
  std::uint32_t acc[kBlock];
  for (std::size_t begin = 0; begin < count; begin += kBlock) {
    const std::size_t n = std::min(kBlock, count - begin);
    const auto* first = static_cast<const std::int32_t*>(sources[0]) + begin;
    for (std::size_t i = 0; i < n; ++i) acc[i] = static_cast<std::uint32_t>(first[i]);
    for (std::size_t q = 1; q < sources.size(); ++q) {
      const auto* src = static_cast<const std::int32_t*>(sources[q]) + begin;
      if (op == ReduceOp::kMax) {
        for (std::size_t i = 0; i < n; ++i) {
          acc[i] = static_cast<std::uint32_t>(std::max(static_cast<std::int32_t>(acc[i]), src[i]));
        }
      } else {
        for (std::size_t i = 0; i < n; ++i) acc[i] += static_cast<std::uint32_t>(src[i]);
      }
    }
    for (std::size_t i = 0; i < n; ++i) dst[begin + i] = static_cast<std::int32_t>(acc[i]);
  }
}

// reduce_floating over wire values and rounded f32 values (f32 sources are read as
// Codec::load(Codec::store(x)), exactly what narrowing them first would give), into f32.
template <class Codec>
void reduce_wire(std::span<const WireSource> sources, float* dst, std::size_t count, ReduceOp op) {
  using T = typename Codec::Storage;
  const float divisor = static_cast<float>(sources.size());
  float acc[kBlock];
  for (std::size_t begin = 0; begin < count; begin += kBlock) {
    const std::size_t n = std::min(kBlock, count - begin);
    for (std::size_t q = 0; q < sources.size(); ++q) {
      const WireSource& s = sources[q];
      const bool first = q == 0, max = op == ReduceOp::kMax;
      if (s.f32) {
        const float* src = static_cast<const float*>(s.data) + begin;
        if (first) {
          for (std::size_t i = 0; i < n; ++i) acc[i] = Codec::load(Codec::store(src[i]));
        } else if (max) {
          for (std::size_t i = 0; i < n; ++i) acc[i] = max_keep_nan(acc[i], Codec::load(Codec::store(src[i])));
        } else {
          for (std::size_t i = 0; i < n; ++i) acc[i] += Codec::load(Codec::store(src[i]));
        }
      } else {
        const T* src = static_cast<const T*>(s.data) + begin;
        if (first) {
          for (std::size_t i = 0; i < n; ++i) acc[i] = Codec::load(src[i]);
        } else if (max) {
          for (std::size_t i = 0; i < n; ++i) acc[i] = max_keep_nan(acc[i], Codec::load(src[i]));
        } else {
          for (std::size_t i = 0; i < n; ++i) acc[i] += Codec::load(src[i]);
        }
      }
    }
    if (op == ReduceOp::kAvg) {
      for (std::size_t i = 0; i < n; ++i) acc[i] /= divisor;
    }
    float* out = dst + begin;
    for (std::size_t i = 0; i < n; ++i) out[i] = Codec::load(Codec::store(acc[i]));
  }
}

}  // namespace

void reduce_wire_in_order(std::span<const WireSource> sources, float* dst, std::size_t count, DType wire, ReduceOp op) {
  if (sources.empty()) throw std::invalid_argument("reduce_wire_in_order: no sources to reduce");
  switch (wire) {
    case DType::kF32: return reduce_wire<F32Codec>(sources, dst, count, op);
    case DType::kBF16: return reduce_wire<detail::WireBf16Codec>(sources, dst, count, op);
    case DType::kF16: return reduce_wire<detail::WireF16Codec>(sources, dst, count, op);
    case DType::kI32:
    case DType::kI8:
    case DType::kU8: break;
  }
  throw std::invalid_argument(std::string("reduce_wire_in_order: the wire dtype must be f32, bf16 or f16, got ") +
                              dtype_name(wire));
}

void reduce_in_order(std::span<const void* const> sources, void* dst, std::size_t count, DType dtype, ReduceOp op) {
  if (sources.empty()) throw std::invalid_argument("reduce_in_order: no sources to reduce");
  if (op == ReduceOp::kAvg && !is_floating(dtype)) {
    throw std::invalid_argument(std::string("reduce_in_order: avg needs a floating dtype, got ") + dtype_name(dtype));
  }
  switch (dtype) {
    case DType::kF32: return reduce_floating<F32Codec>(sources, dst, count, op);
    case DType::kBF16: return reduce_floating<detail::WireBf16Codec>(sources, dst, count, op);
    case DType::kF16: return reduce_floating<detail::WireF16Codec>(sources, dst, count, op);
    case DType::kI32: return reduce_i32(sources, dst, count, op);
    case DType::kI8:
    case DType::kU8: break;
  }
  if (dtype == DType::kI8 || dtype == DType::kU8) {
    throw std::invalid_argument(std::string("reduce_in_order: ") + dtype_name(dtype) +
                                " codes cannot be reduced (they are quantized values); gather or broadcast them");
  }
  throw std::invalid_argument("reduce_in_order: unknown dtype");
}

}  // namespace tessera
