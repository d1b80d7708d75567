// WireBf16Codec / WireF16Codec: f32 <-> bf16 and f32 <-> f16 element codecs written without
// branches or loops (selects and integer arithmetic only), so that the host collectives' loops over
// whole segments vectorise. Bit for bit the conversions of precision/float_bits.hpp — round to
// nearest even, overflow to inf, f16 subnormals kept, a NaN narrowed to the canonical quiet NaN of
// its sign (f16) or quieted with its payload's top bits (bf16) — including every NaN, so a
// collective gives the same bits whichever codec a loop uses.
#pragma once

#include <cstdint>
#include <cstring>

namespace tessera::detail {

inline std::uint32_t wire_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

inline float wire_float(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

struct WireBf16Codec {
  using Storage = std::uint16_t;
  static float load(std::uint16_t h) { return wire_float(static_cast<std::uint32_t>(h) << 16); }
  static std::uint16_t store(float x) {
    const std::uint32_t u = wire_bits(x);
    const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    const std::uint32_t nan = (u >> 16) | 0x0040u;
    return static_cast<std::uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
  }
};

struct WireF16Codec {
  using Storage = std::uint16_t;
  static float load(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t bits = static_cast<std::uint32_t>(h & 0x7fffu) << 13;  // exponent and mantissa
    const std::uint32_t exponent = bits & (0x7c00u << 13);
    // Normal: rebias the exponent (15 -> 127). Inf/NaN: all exponent bits. Zero/subnormal: the
    // value m * 2^-24 as (2^-14 + m * 2^-24) - 2^-14, exact in f32.
    const std::uint32_t normal = bits + ((127u - 15u) << 23);
    const std::uint32_t special = bits + ((255u - 31u) << 23);
    const float tiny = wire_float(bits + (113u << 23)) - wire_float(113u << 23);
    const std::uint32_t magnitude = exponent == (0x7c00u << 13) ? special : exponent == 0 ? wire_bits(tiny) : normal;
    return wire_float(magnitude | sign);
  }
  static std::uint16_t store(float x) {
    const std::uint32_t u = wire_bits(x);
    const std::uint32_t sign = (u >> 16) & 0x8000u;
    const std::uint32_t a = u & 0x7fffffffu;
    // Normal results: rebias (127 -> 15) and round the 13 dropped bits to nearest even (a carry
    // into the exponent, up to inf, is the right result).
    const std::uint32_t normal = (a - ((127u - 15u) << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
    // Subnormal results (|x| < 2^-14): adding 0.5 aligns the 10 kept bits at the bottom of the
    // mantissa, rounded to nearest even by the f32 addition itself.
    const std::uint32_t subnormal = wire_bits(wire_float(a) + 0.5f) - 0x3f000000u;
    const std::uint32_t special = a > 0x7f800000u ? 0x7e00u : 0x7c00u;  // NaN, or inf (overflow)
    const std::uint32_t magnitude = a >= 0x47800000u ? special : a < 0x38800000u ? subnormal : normal;
    return static_cast<std::uint16_t>(magnitude | sign);
  }
};

}  // namespace tessera::detail
