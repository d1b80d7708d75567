// dropout_math: the dropout mask as a counter-based hash, a pure function of (key, element index) —
// no generator state, so any backend, thread count or launch shape draws the same mask, and a
// backward regenerates it instead of keeping it.
//
//   draw(key, i)  = mix64(key + (i + 1) * 0x9E3779B97F4A7C15)   (SplitMix64's (i+1)-th output from
//                                                                 state `key`, core/splitmix64.hpp)
//   keep(key, i)  = (draw(key, i) >> 32) >= threshold            threshold = floor(p * 2^32)
//   out[i]        = keep ? x[i] * scale : 0                      scale = 1 / (1 - p) in f32
//
// The keep probability is 1 - threshold / 2^32 (p to within 2^-32). The key is the caller's (the
// Dropout module makes it from the seed, its full name and its counter: model/modules/dropout.hpp).
#pragma once

#include <cmath>
#include <cstdint>

#include "tessera/precision/host_device.hpp"

namespace tessera {

// One dropout mask: which elements are kept (key, threshold) and the factor applied to them.
struct DropoutMask {
  std::uint64_t key = 0;
  std::uint32_t threshold = 0;  // floor(p * 2^32): a draw's high 32 bits below it drop the element
  float scale = 1.0f;           // 1 / (1 - p)
};

inline constexpr std::uint64_t kDropoutGamma = 0x9E3779B97F4A7C15ULL;

// The SplitMix64 output function (the same as core/splitmix64.hpp's mix64, callable on a GPU).
TESSERA_HD std::uint64_t dropout_mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

TESSERA_HD bool dropout_keeps(std::uint64_t key, std::int64_t i, std::uint32_t threshold) {
  const std::uint64_t draw = dropout_mix64(key + (static_cast<std::uint64_t>(i) + 1) * kDropoutGamma);
  return static_cast<std::uint32_t>(draw >> 32) >= threshold;
}

TESSERA_HD float dropout_value(float x, std::int64_t i, const DropoutMask& mask) {
  return dropout_keeps(mask.key, i, mask.threshold) ? x * mask.scale : 0.0f;
}

// The mask of drop probability p in [0, 1) under `key`.
inline DropoutMask dropout_mask(std::uint64_t key, float p) {
  const double scaled = std::floor(static_cast<double>(p) * 4294967296.0);
  return {key, static_cast<std::uint32_t>(scaled < 4294967295.0 ? scaled : 4294967295.0), 1.0f / (1.0f - p)};
}

}  // namespace tessera
