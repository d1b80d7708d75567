// Scalar f32 <-> bf16 and f32 <-> f16 conversions, round to nearest even, NaN kept NaN.
// Bit-exact and branch-light; shared by CPU loops and CUDA kernels (TESSERA_HD).
#pragma once

#include <cstdint>
#include <cstring>

#include "tessera/precision/host_device.hpp"

namespace tessera {

TESSERA_HD std::uint32_t f32_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

TESSERA_HD float f32_from_bits(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// f32 -> bf16, round to nearest even; NaN stays a (quiet) NaN of the same sign.
TESSERA_HD std::uint16_t f32_to_bf16(float x) {
  const std::uint32_t u = f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  const std::uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>((u + rounding) >> 16);
}

TESSERA_HD float bf16_to_f32(std::uint16_t h) { return f32_from_bits(static_cast<std::uint32_t>(h) << 16); }

// f32 -> IEEE f16, round to nearest even, overflow to inf, subnormals kept, NaN stays NaN.
TESSERA_HD std::uint16_t f32_to_f16(float x) {
  const std::uint32_t u = f32_bits(x);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (abs < 0x38800000u) {  // below the smallest normal f16 (2^-14): subnormal or zero
    if (abs < 0x33000000u) return static_cast<std::uint16_t>(sign);  // < 2^-25 rounds to 0
    const std::uint32_t exp = abs >> 23;
    const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    const std::uint32_t shift = 126u - exp;  // 14 + 127 - exp - 1 + 10 bits kept
    const std::uint32_t half = 1u << (shift - 1);
    const std::uint32_t rest = mant & ((1u << shift) - 1u);
    std::uint32_t r = mant >> shift;
    if (rest > half || (rest == half && (r & 1u))) ++r;
    return static_cast<std::uint16_t>(sign | r);
  }
  const std::uint32_t rebiased = abs - 0x38000000u;  // exponent 127 -> 15
  const std::uint32_t rounding = 0xfffu + ((rebiased >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | ((rebiased + rounding) >> 13));
}

TESSERA_HD float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return f32_from_bits(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return f32_from_bits(sign);
  int e = -1;  // subnormal: normalise
  do {
    mant <<= 1;
    ++e;
  } while ((mant & 0x400u) == 0);
  return f32_from_bits(sign | ((112u - static_cast<std::uint32_t>(e)) << 23) | ((mant & 0x3ffu) << 13));
}

}  // namespace tessera
