// SplitMix64: a small, fully specified 64-bit generator (Steele, Lea & Flood 2014; the seeding
// generator of xoshiro). Used wherever a sequence must be identical on every platform and standard
// library — e.g. the sample order, which checkpoints record only as (seed, index). std::shuffle and
// std::uniform_int_distribution are implementation-defined and are not used for that reason.
#pragma once

#include <cstdint>

namespace tessera::detail {

// The SplitMix64 output function: a bijective 64-bit mix.
constexpr std::uint64_t mix64(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

class SplitMix64 {
 public:
  static constexpr std::uint64_t kGamma = 0x9E3779B97F4A7C15ULL;

  explicit constexpr SplitMix64(std::uint64_t seed) : state_(seed) {}

  constexpr std::uint64_t next() {
    state_ += kGamma;
    return mix64(state_);
  }

  // Uniform in [0, bound), bound > 0, without modulo bias: draws below the largest multiple of
  // `bound` that fits in 2^64 are kept, the rest redrawn.
  constexpr std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
    for (;;) {
      const std::uint64_t r = next();
      if (r >= threshold) return r % bound;
    }
  }

 private:
  std::uint64_t state_;
};

}  // namespace tessera::detail
