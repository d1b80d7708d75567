// Portable deterministic random numbers: SplitMix64 seeding, xoshiro256** generator, and
// Box-Muller normals. The standard library's distributions are implementation-defined, so Tessera
// never uses them where results must repeat across machines.
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

#include "tessera/core/splitmix64.hpp"

namespace tessera {

// FNV-1a 64-bit hash of a string: mixes a parameter name into a seed.
inline std::uint64_t hash_string(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    detail::SplitMix64 sm(seed);
    for (auto& word : s_) word = sm.next();
  }

  std::uint64_t next_u64() {
    const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const std::uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

  // Uniform in [0, 1) with 24 random bits (exactly representable in f32).
  float uniform() { return static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f); }

  // Uniform integer in [0, n) (n > 0), by rejection so every value is equally likely.
  std::uint64_t below(std::uint64_t n) {
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    std::uint64_t x;
    do {
      x = next_u64();
    } while (x >= limit);
    return x % n;
  }

  // Standard normal N(0, 1) by Box-Muller in double precision.
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1, u2;
    do {
      u1 = static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
    } while (u1 <= 0.0);
    u2 = static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    const double theta = 6.283185307179586476925286766559 * u2;
    spare_ = r * std::sin(theta);
    has_spare_ = true;
    return r * std::cos(theta);
  }

  // Advances past the next `count` normal() values exactly as drawing them would, without computing
  // them (a pair costs two or more generator steps instead of a log, a square root and a sine and
  // cosine): for starting a draw part-way, as a shard's initialisation does.
  void discard_normals(std::uint64_t count) {
    if (count > 0 && has_spare_) {
      has_spare_ = false;
      --count;
    }
    for (; count >= 2; count -= 2) {
      std::uint64_t u1_bits;
      do {
        u1_bits = next_u64() >> 11;  // normal()'s u1, redrawn while zero
      } while (u1_bits == 0);
      (void)next_u64();  // its u2
    }
    if (count == 1) (void)normal();  // the pair's second value stays as the spare
  }

  // The full generator state, for checkpoints.
  struct State {
    std::uint64_t words[4];
  };
  State state() const { return {{s_[0], s_[1], s_[2], s_[3]}}; }
  void set_state(const State& st) {
    for (int i = 0; i < 4; ++i) s_[i] = st.words[i];
    has_spare_ = false;
  }

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  std::uint64_t s_[4];
  double spare_ = 0.0;
  bool has_spare_ = false;
};

}  // namespace tessera
