// CpuKernels vocabulary-sharded embedding: a vocabulary of 11 split into 2 and 3 uneven shards. The
// shards' forward outputs summed are embedding_forward's bits (one non-zero term per element: the
// position row on one shard only), their dwte concatenated embedding_backward's bits and their dwpe
// its dwpe, in f32 and in bf16, at a width that runs one thread and one that runs a team; a shard of
// the whole vocabulary is the whole-table ops bit for bit; a token outside the vocabulary is
// refused naming it before anything is written, and a shard outside the vocabulary is refused.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tests/runtime/cpu/kernel_check.hpp"
#include "tests/runtime/cpu/vocab_shards.hpp"

namespace tessera {
namespace {

using test::VocabShard;

struct EmbShardShape {
  std::int64_t b = 3, t = 7, c = 6, vocab = 11;
};

// Tokens covering every row of the vocabulary, several of them more than once.
std::vector<std::int32_t> emb_shard_tokens(const EmbShardShape& s) {
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(s.b * s.t));
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>((i * 5 + 3) % s.vocab);
  return tokens;
}

template <typename T>
std::vector<T> emb_shard_values(std::size_t n, std::uint32_t seed) {
  std::vector<T> out;
  for (float x : test::random_floats(n, seed)) out.push_back(from_f32<T>(x));
  return out;
}

template <typename T>
std::vector<float> emb_shard_widened(const std::vector<T>& x) {
  std::vector<float> out;
  for (const T& v : x) out.push_back(to_f32(v));
  return out;
}

template <typename T>
const char* emb_shard_dtype() {
  return sizeof(T) == 4 ? "f32" : "bf16";
}

template <typename T>
class CpuEmbeddingShard : public ::testing::Test {
 protected:
  CpuKernels k_;
};
using EmbShardTypes = ::testing::Types<float, Bf16>;
TYPED_TEST_SUITE(CpuEmbeddingShard, EmbShardTypes);

TYPED_TEST(CpuEmbeddingShard, ShardsSummedAreTheWholeTablesForward) {
  using T = TypeParam;
  for (const std::int64_t c : {6, 2000}) {  // one thread, then a team (b * t * c past 2^15)
    EmbShardShape s;
    s.c = c;
    const auto tokens = emb_shard_tokens(s);
    const auto wte = emb_shard_values<T>(s.vocab * c, 1);
    const auto wpe = emb_shard_values<T>(s.t * c, 2);
    for (const bool positions : {true, false}) {
      std::vector<T> expected(s.b * s.t * c);
      this->k_.embedding_forward(expected.data(), tokens.data(), wte.data(), positions ? wpe.data() : nullptr, s.b, s.t,
                                 c, s.vocab);
      for (const std::int64_t parts : {2, 3}) {
        // Summed in f32 in shard order, rounded once: the position row joins on shard 0 only.
        std::vector<float> sum(expected.size(), 0.0f);
        for (const VocabShard& shard : test::split_vocab(s.vocab, parts)) {
          const auto part_wte = test::shard_rows(wte, shard, c);
          std::vector<T> out(expected.size(), from_f32<T>(-7.0f));
          const T* part_wpe = positions && shard.first == 0 ? wpe.data() : nullptr;
          this->k_.embedding_shard_forward(out.data(), tokens.data(), part_wte.data(), part_wpe, s.b, s.t, c,
                                           shard.first, shard.rows, s.vocab);
          for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += to_f32(out[i]);
        }
        std::vector<T> rounded;
        for (float x : sum) rounded.push_back(from_f32<T>(x));
        test::expect_bit_equal(emb_shard_widened(rounded), emb_shard_widened(expected),
                               std::string(emb_shard_dtype<T>()) + " embedding forward of " + std::to_string(parts) +
                                   " shards summed, c = " + std::to_string(c) + (positions ? ", wpe" : ", no wpe"));
      }
    }
  }
}

TYPED_TEST(CpuEmbeddingShard, AShardsRowOutsideIsThePositionRowExactly) {
  using T = TypeParam;
  EmbShardShape s;
  const std::vector<std::int32_t> tokens(s.b * s.t, 10);  // the last row: not in [0, 6)
  const auto wte = emb_shard_values<T>(6 * s.c, 3);
  const auto wpe = emb_shard_values<T>(s.t * s.c, 4);
  std::vector<T> out(s.b * s.t * s.c);
  this->k_.embedding_shard_forward(out.data(), tokens.data(), wte.data(), wpe.data(), s.b, s.t, s.c, 0, 6, s.vocab);
  for (std::int64_t r = 0; r < s.b * s.t; ++r) {
    for (std::int64_t j = 0; j < s.c; ++j) {
      ASSERT_EQ(to_f32(out[r * s.c + j]), to_f32(wpe[(r % s.t) * s.c + j]))
          << emb_shard_dtype<T>() << " row " << r << " column " << j << ": token 10 is outside the shard [0, 6)";
    }
  }
  this->k_.embedding_shard_forward(out.data(), tokens.data(), wte.data(), nullptr, s.b, s.t, s.c, 0, 6, s.vocab);
  for (std::size_t i = 0; i < out.size(); ++i) ASSERT_EQ(to_f32(out[i]), 0.0f) << "no wpe: element " << i;
}

TYPED_TEST(CpuEmbeddingShard, ShardsGradientsConcatenatedAreTheWholeTablesBackward) {
  using T = TypeParam;
  for (const std::int64_t c : {6, 2000}) {
    EmbShardShape s;
    s.c = c;
    const auto tokens = emb_shard_tokens(s);
    const auto dout = emb_shard_values<T>(s.b * s.t * c, 5);
    const auto dwte0 = emb_shard_values<T>(s.vocab * c, 6);  // accumulated into
    const auto dwpe0 = emb_shard_values<T>(s.t * c, 7);
    auto dwte = dwte0, dwpe = dwpe0;
    this->k_.embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), s.b, s.t, c, s.vocab);
    for (const std::int64_t parts : {2, 3}) {
      std::vector<T> joined;
      for (const VocabShard& shard : test::split_vocab(s.vocab, parts)) {
        auto part = test::shard_rows(dwte0, shard, c);
        auto part_dwpe = dwpe0;
        this->k_.embedding_shard_backward(part.data(), part_dwpe.data(), dout.data(), tokens.data(), s.b, s.t, c,
                                          shard.first, shard.rows, s.vocab);
        joined.insert(joined.end(), part.begin(), part.end());
        test::expect_bit_equal(emb_shard_widened(part_dwpe), emb_shard_widened(dwpe),
                               std::string(emb_shard_dtype<T>()) + " dwpe of " + test::describe_shard(shard, s.vocab));
      }
      test::expect_bit_equal(emb_shard_widened(joined), emb_shard_widened(dwte),
                             std::string(emb_shard_dtype<T>()) + " dwte of " + std::to_string(parts) +
                                 " shards concatenated, c = " + std::to_string(c));
    }
  }
}

TYPED_TEST(CpuEmbeddingShard, AShardOfTheWholeVocabularyIsTheWholeTableOpBitForBit) {
  using T = TypeParam;
  EmbShardShape s;
  s.c = 2000;
  const auto tokens = emb_shard_tokens(s);
  const auto wte = emb_shard_values<T>(s.vocab * s.c, 8);
  const auto wpe = emb_shard_values<T>(s.t * s.c, 9);
  std::vector<T> expected(s.b * s.t * s.c), out(expected.size());
  this->k_.embedding_forward(expected.data(), tokens.data(), wte.data(), wpe.data(), s.b, s.t, s.c, s.vocab);
  this->k_.embedding_shard_forward(out.data(), tokens.data(), wte.data(), wpe.data(), s.b, s.t, s.c, 0, s.vocab,
                                   s.vocab);
  test::expect_bit_equal(emb_shard_widened(out), emb_shard_widened(expected),
                         std::string(emb_shard_dtype<T>()) + " whole-vocabulary shard forward");
  const auto dout = emb_shard_values<T>(expected.size(), 10);
  auto dwte = emb_shard_values<T>(s.vocab * s.c, 11), dwpe = emb_shard_values<T>(s.t * s.c, 12);
  auto shard_dwte = dwte, shard_dwpe = dwpe;
  this->k_.embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), s.b, s.t, s.c, s.vocab);
  this->k_.embedding_shard_backward(shard_dwte.data(), shard_dwpe.data(), dout.data(), tokens.data(), s.b, s.t, s.c, 0,
                                    s.vocab, s.vocab);
  test::expect_bit_equal(emb_shard_widened(shard_dwte), emb_shard_widened(dwte),
                         std::string(emb_shard_dtype<T>()) + " whole-vocabulary shard dwte");
  test::expect_bit_equal(emb_shard_widened(shard_dwpe), emb_shard_widened(dwpe),
                         std::string(emb_shard_dtype<T>()) + " whole-vocabulary shard dwpe");
}

TYPED_TEST(CpuEmbeddingShard, ATokenOutsideTheVocabularyIsRefusedBeforeAnythingIsWritten) {
  using T = TypeParam;
  const std::int64_t b = 1, t = 3, c = 2, vocab = 11, first = 4, rows = 4;
  const std::vector<T> wte(rows * c, from_f32<T>(1.0f)), wpe(t * c, from_f32<T>(0.5f)),
      dout(b * t * c, from_f32<T>(1.0f));
  for (const std::int32_t bad : {11, -1, 70000}) {
    const std::vector<std::int32_t> tokens = {5, bad, 1};
    std::vector<T> out(b * t * c, from_f32<T>(-5.0f)), dwte(rows * c, from_f32<T>(0.0f)),
        dwpe(t * c, from_f32<T>(0.0f));
    try {
      this->k_.embedding_shard_forward(out.data(), tokens.data(), wte.data(), wpe.data(), b, t, c, first, rows, vocab);
      ADD_FAILURE() << "embedding_shard_forward accepted token " << bad << " with vocab = " << vocab;
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("token[1] = " + std::to_string(bad)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("embedding_shard_forward"), std::string::npos) << e.what();
    }
    try {
      this->k_.embedding_shard_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), b, t, c, first, rows,
                                        vocab);
      ADD_FAILURE() << "embedding_shard_backward accepted token " << bad << " with vocab = " << vocab;
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("token[1] = " + std::to_string(bad)), std::string::npos) << e.what();
    }
    for (const T& x : out) EXPECT_EQ(to_f32(x), -5.0f) << "forward wrote before refusing token " << bad;
    for (const T& x : dwte) EXPECT_EQ(to_f32(x), 0.0f) << "backward wrote dwte before refusing token " << bad;
    for (const T& x : dwpe) EXPECT_EQ(to_f32(x), 0.0f) << "backward wrote dwpe before refusing token " << bad;
  }
}

TYPED_TEST(CpuEmbeddingShard, AShardOutsideTheVocabularyIsRefused) {
  using T = TypeParam;
  const std::int64_t b = 1, t = 2, c = 2, vocab = 11;
  const std::vector<std::int32_t> tokens = {0, 10};
  std::vector<T> table(12 * c, from_f32<T>(0.0f)), out(b * t * c);
  for (const auto& [first, rows] : {std::pair<std::int64_t, std::int64_t>{8, 4}, {-1, 3}, {2, -1}}) {
    EXPECT_THROW(
        this->k_.embedding_shard_forward(out.data(), tokens.data(), table.data(), nullptr, b, t, c, first, rows, vocab),
        std::invalid_argument)
        << "rows [" << first << ", " << first + rows << ") of " << vocab;
    EXPECT_THROW(this->k_.embedding_shard_backward(table.data(), nullptr, out.data(), tokens.data(), b, t, c, first,
                                                   rows, vocab),
                 std::invalid_argument)
        << "rows [" << first << ", " << first + rows << ") of " << vocab;
  }
}

}  // namespace
}  // namespace tessera
