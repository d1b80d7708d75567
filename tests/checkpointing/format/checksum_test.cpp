// XXH64 against the reference implementation's published values, and its sensitivity to one bit.
#include "tessera/checkpointing/format/checksum.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace tessera {
namespace {

std::uint64_t of(const std::string& s) { return xxh64(s.data(), s.size()); }

TEST(Xxh64, MatchesReferenceValues) {
  EXPECT_EQ(of(""), 0xEF46DB3751D8E999ULL);
  EXPECT_EQ(of("a"), 0xD24EC4F1A98C6E5BULL);
  EXPECT_EQ(of("abc"), 0x44BC2CF5AD770999ULL);
  // 39 bytes: one 32-byte stripe, then the 8-, 4- and 1-byte tails.
  EXPECT_EQ(of("Nobody inspects the spammish repetition"), 0xFBCEA83C8A378BF1ULL);
}

TEST(Xxh64, EveryBitFlipChangesTheSum) {
  std::vector<float> data(1000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) * 0.37f - 11.0f;
  const std::uint64_t clean = xxh64(data.data(), data.size() * sizeof(float));
  auto* bytes = reinterpret_cast<unsigned char*>(data.data());
  for (std::size_t byte : {std::size_t{0}, std::size_t{1999}, data.size() * sizeof(float) - 1}) {
    for (int bit = 0; bit < 8; ++bit) {
      bytes[byte] ^= static_cast<unsigned char>(1u << bit);
      EXPECT_NE(xxh64(data.data(), data.size() * sizeof(float)), clean) << "byte " << byte << " bit " << bit;
      bytes[byte] ^= static_cast<unsigned char>(1u << bit);
    }
  }
  EXPECT_EQ(xxh64(data.data(), data.size() * sizeof(float)), clean);
}

}  // namespace
}  // namespace tessera
