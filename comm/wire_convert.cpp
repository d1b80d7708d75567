// narrow_to_wire / widen_from_wire: one loop per codec (comm/wire_codec.hpp: branch-free, so they
// vectorise).
#include "tessera/comm/wire_convert.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "tessera/comm/wire_codec.hpp"

namespace tessera {
namespace {

template <class Codec>
void narrow(const float* src, void* dst_void, std::size_t count) {
  auto* dst = static_cast<typename Codec::Storage*>(dst_void);
  for (std::size_t i = 0; i < count; ++i) dst[i] = Codec::store(src[i]);
}

template <class Codec>
void widen(const void* src_void, float* dst, std::size_t count) {
  const auto* src = static_cast<const typename Codec::Storage*>(src_void);
  for (std::size_t i = 0; i < count; ++i) dst[i] = Codec::load(src[i]);
}

[[noreturn]] void refuse(const char* what, DType wire) {
  throw std::invalid_argument(std::string(what) + ": the wire dtype must be f32, bf16 or f16, got " + dtype_name(wire));
}

}  // namespace

void narrow_to_wire(const float* src, void* dst, std::size_t count, DType wire) {
  switch (wire) {
    case DType::kF32: std::memcpy(dst, src, count * sizeof(float)); return;
    case DType::kBF16: return narrow<detail::WireBf16Codec>(src, dst, count);
    case DType::kF16: return narrow<detail::WireF16Codec>(src, dst, count);
    case DType::kI32:
    case DType::kI8:
    case DType::kU8: break;
  }
  refuse("narrow_to_wire", wire);
}

void widen_from_wire(const void* src, float* dst, std::size_t count, DType wire) {
  switch (wire) {
    case DType::kF32: std::memcpy(dst, src, count * sizeof(float)); return;
    case DType::kBF16: return widen<detail::WireBf16Codec>(src, dst, count);
    case DType::kF16: return widen<detail::WireF16Codec>(src, dst, count);
    case DType::kI32:
    case DType::kI8:
    case DType::kU8: break;
  }
  refuse("widen_from_wire", wire);
}

}  // namespace tessera
