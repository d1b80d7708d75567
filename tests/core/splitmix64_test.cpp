// Tests for SplitMix64 (published reference outputs) and the xoshiro256** Rng it seeds.
#include "tessera/core/splitmix64.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tessera/core/random.hpp"

namespace tessera {
namespace {

TEST(SplitMix64, MatchesReferenceOutputs) {
  // Published reference outputs of SplitMix64 seeded with 1234567.
  detail::SplitMix64 rng(1234567);
  EXPECT_EQ(rng.next(), 6457827717110365317ULL);
  EXPECT_EQ(rng.next(), 3203168211198807973ULL);
  EXPECT_EQ(rng.next(), 9817491932198370423ULL);
  EXPECT_EQ(rng.next(), 4593380528125082431ULL);
  EXPECT_EQ(rng.next(), 16408922859458223821ULL);
}

TEST(SplitMix64, BelowStaysInRange) {
  detail::SplitMix64 rng(7);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(rng.below(1), 0u);
  std::vector<int> seen(5, 0);
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t v = rng.below(5);
    ASSERT_LT(v, 5u);
    ++seen[v];
  }
  for (int v = 0; v < 5; ++v) EXPECT_GT(seen[v], 100) << "value " << v << " drawn " << seen[v] << " times of 1000";
}

TEST(Rng, SeedsItsStateWithSplitMix64) {
  // xoshiro256**'s four state words are the first four SplitMix64 outputs of the seed.
  detail::SplitMix64 sm(42);
  const std::uint64_t w0 = sm.next(), w1 = sm.next();
  (void)w0;
  Rng rng(42);
  // The first xoshiro256** output is rotl(s1 * 5, 7) * 9.
  const std::uint64_t x = w1 * 5;
  EXPECT_EQ(rng.next_u64(), ((x << 7) | (x >> 57)) * 9);
}

}  // namespace
}  // namespace tessera
