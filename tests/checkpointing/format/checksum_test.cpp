// XXH64 and XXH3-64 against the reference implementation's values, their sensitivity to one bit,
// hashing in pieces, and the checksum names files record.
#include "tessera/checkpointing/format/checksum.hpp"

#include <gtest/gtest.h>

#include <algorithm>
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

std::uint64_t of3(const std::string& s) { return xxh3_64(s.data(), s.size()); }

TEST(Xxh3, MatchesReferenceValues) {
  EXPECT_EQ(of3(""), 0x2D06800538D394C2ULL);
  EXPECT_EQ(of3("a"), 0xE6C632B61E964E1FULL);
  EXPECT_EQ(of3("abc"), 0x78AF5F94892F3950ULL);
  EXPECT_EQ(of3("Nobody inspects the spammish repetition"), 0x6CB00603B5CC47E9ULL);
  // Past the short-input paths: whole stripes and blocks (the vector loop).
  std::vector<unsigned char> big(5000);
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<unsigned char>(i * 7 + 3);
  EXPECT_EQ(xxh3_64(big.data(), big.size()), 0x799AADDD7339581DULL);
}

TEST(Xxh3, EveryBitFlipChangesTheSum) {
  std::vector<float> data(1000);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i) * 0.37f - 11.0f;
  const std::size_t bytes = data.size() * sizeof(float);
  const std::uint64_t clean = xxh3_64(data.data(), bytes);
  auto* raw = reinterpret_cast<unsigned char*>(data.data());
  for (std::size_t byte : {std::size_t{0}, std::size_t{1999}, bytes - 1}) {
    for (int bit = 0; bit < 8; ++bit) {
      raw[byte] ^= static_cast<unsigned char>(1u << bit);
      EXPECT_NE(xxh3_64(data.data(), bytes), clean) << "byte " << byte << " bit " << bit;
      raw[byte] ^= static_cast<unsigned char>(1u << bit);
    }
  }
}

TEST(ChunkHasher, PiecesGiveTheWholeSumOfEitherKind) {
  std::vector<unsigned char> data(3 * 1024 * 1024 + 77);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 131 + (i >> 9));
  ChunkHasher hasher;
  for (ChunkChecksum kind : {ChunkChecksum::kXxh64, ChunkChecksum::kXxh3_64}) {
    const std::uint64_t whole = chunk_checksum(kind, data.data(), data.size());
    EXPECT_EQ(whole, kind == ChunkChecksum::kXxh64 ? xxh64(data.data(), data.size()) : xxh3_64(data.data(), data.size()));
    for (std::size_t piece : {std::size_t{1}, std::size_t{1000}, std::size_t{512} << 10, data.size()}) {
      if (piece == 1 && kind == ChunkChecksum::kXxh3_64) continue;  // 3 MiB a byte at a time: slow, adds nothing
      hasher.reset(kind);
      for (std::size_t at = 0; at < data.size(); at += piece) hasher.update(&data[at], std::min(piece, data.size() - at));
      EXPECT_EQ(hasher.digest(), whole) << chunk_checksum_name(kind) << " in pieces of " << piece;
    }
  }
}

TEST(ChunkChecksum, NamesRoundTripAndNameTheTables) {
  for (ChunkChecksum kind : {ChunkChecksum::kXxh64, ChunkChecksum::kXxh3_64}) {
    EXPECT_EQ(parse_chunk_checksum(chunk_checksum_name(kind)), kind) << chunk_checksum_name(kind);
  }
  EXPECT_EQ(std::string(chunk_checksum_name(ChunkChecksum::kXxh3_64)), "xxh3_64");
  EXPECT_EQ(checksum_table_name("master", ChunkChecksum::kXxh64), "master_xxh64");  // what format 3 files hold
  EXPECT_EQ(checksum_table_name("exp_avg", ChunkChecksum::kXxh3_64), "exp_avg_xxh3_64");
  EXPECT_EQ(parse_chunk_checksum("crc32c"), std::nullopt);
}

}  // namespace
}  // namespace tessera
