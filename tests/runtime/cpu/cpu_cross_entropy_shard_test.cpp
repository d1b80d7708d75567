// CpuKernels vocabulary-sharded cross-entropy: vocabularies of 11 and 4501 (past one 2048-logit
// block per shard) split into 2 and 3 uneven shards. The shards' lse and target logits combined give
// cross_entropy_forward's losses within 1e-6 (relative to the largest), their dlogits concatenated
// cross_entropy_backward's within 1e-6, and exactly the whole-vocabulary backward's bits given the
// same global lse, in f32 and bf16, in place and out of place; a shard of the whole vocabulary is
// the whole-vocabulary ops bit for bit and a combine of one part is that part; ignored targets give
// zeros; a shard without columns adds nothing; targets outside the vocabulary are refused naming
// them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tests/runtime/cpu/kernel_check.hpp"
#include "tests/runtime/cpu/vocab_shards.hpp"

namespace tessera {
namespace {

using test::VocabShard;

constexpr double kCeShardTolerance = 1e-6;

template <typename T>
std::vector<T> ce_shard_logits(std::size_t n, std::uint32_t seed) {
  std::vector<T> out;
  for (float x : test::random_floats(n, seed, -6.0f, 6.0f)) out.push_back(from_f32<T>(x));
  return out;
}

template <typename T>
std::vector<float> ce_shard_widened(const std::vector<T>& x) {
  std::vector<float> out;
  for (const T& v : x) out.push_back(to_f32(v));
  return out;
}

std::vector<double> ce_shard_double(const std::vector<float>& x) { return {x.begin(), x.end()}; }

template <typename T>
const char* ce_shard_dtype() {
  return sizeof(T) == 4 ? "f32" : "bf16";
}

// Targets spread over the vocabulary, every third row's kIgnoredTarget.
std::vector<std::int32_t> ce_shard_targets(std::int64_t n, std::int64_t vocab) {
  std::vector<std::int32_t> targets(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    targets[i] = i % 3 == 2 ? kIgnoredTarget : static_cast<std::int32_t>((i * 977 + 5) % vocab);
  }
  return targets;
}

// What the group computes: each shard's forward, the target logits summed in shard order, the
// combine; then each shard's backward against the global lse, the dlogits concatenated.
struct CeShardRun {
  std::vector<float> losses, lse;
  std::vector<float> dlogits;  // (n,vocab) widened
};

template <typename T>
CeShardRun run_ce_shards(const CpuKernels& k, const std::vector<T>& logits, const std::vector<std::int32_t>& targets,
                         std::int64_t n, std::int64_t vocab, std::int64_t parts, float dloss, bool in_place) {
  const auto shards = test::split_vocab(vocab, parts);
  std::vector<float> lse_parts(static_cast<std::size_t>(parts * n)), target_logit(n, 0.0f), part_logit(n);
  for (std::int64_t p = 0; p < parts; ++p) {
    const auto local = test::shard_columns(logits, shards[p], n, vocab);
    k.cross_entropy_shard_forward(lse_parts.data() + p * n, part_logit.data(), local.data(), targets.data(), n,
                                  shards[p].rows, shards[p].first, vocab);
    for (std::int64_t i = 0; i < n; ++i) target_logit[i] += part_logit[i];
  }
  CeShardRun run;
  run.losses.assign(n, -1.0f);
  run.lse.assign(n, -1.0f);
  k.cross_entropy_shard_combine(run.losses.data(), run.lse.data(), lse_parts.data(), target_logit.data(),
                                targets.data(), n, parts);
  std::vector<T> dlogits(logits.size());
  for (const VocabShard& shard : shards) {
    auto local = test::shard_columns(logits, shard, n, vocab);
    std::vector<T> d(local.size());
    T* out = in_place ? local.data() : d.data();
    k.cross_entropy_shard_backward(out, local.data(), run.lse.data(), targets.data(), dloss, n, shard.rows,
                                   shard.first);
    test::put_shard_columns(dlogits, in_place ? local : d, shard, n, vocab);
  }
  run.dlogits = ce_shard_widened(dlogits);
  return run;
}

template <typename T>
class CpuCrossEntropyShard : public ::testing::Test {
 protected:
  CpuKernels k_;
};
using CeShardTypes = ::testing::Types<float, Bf16>;
TYPED_TEST_SUITE(CpuCrossEntropyShard, CeShardTypes);

TYPED_TEST(CpuCrossEntropyShard, CombinedShardsAreTheWholeVocabularysLossAndGradient) {
  using T = TypeParam;
  const std::int64_t n = 9;
  const float dloss = 0.37f;
  for (const std::int64_t vocab : {11, 4501}) {
    const auto logits = ce_shard_logits<T>(n * vocab, 1);
    const auto targets = ce_shard_targets(n, vocab);
    std::vector<float> losses(n), lse(n);
    this->k_.cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), n, vocab);
    std::vector<T> dlogits(logits.size());
    this->k_.cross_entropy_backward(dlogits.data(), logits.data(), lse.data(), targets.data(), dloss, n, vocab);
    for (const std::int64_t parts : {2, 3}) {
      for (const bool in_place : {false, true}) {
        const std::string label = std::string(ce_shard_dtype<T>()) + " vocab " + std::to_string(vocab) + " in " +
                                  std::to_string(parts) + " shards" + (in_place ? ", in place" : "");
        const CeShardRun run = run_ce_shards(this->k_, logits, targets, n, vocab, parts, dloss, in_place);
        test::expect_close(run.losses, ce_shard_double(losses), kCeShardTolerance, label + ": losses");
        test::expect_close(run.lse, ce_shard_double(lse), kCeShardTolerance, label + ": lse");
        if constexpr (sizeof(T) == 4) {
          test::expect_close(run.dlogits, ce_shard_double(dlogits), kCeShardTolerance, label + ": dlogits");
        }
        // Given the same global lse, the whole-vocabulary backward's bits.
        std::vector<T> expected(logits.size());
        this->k_.cross_entropy_backward(expected.data(), logits.data(), run.lse.data(), targets.data(), dloss, n,
                                        vocab);
        test::expect_bit_equal(run.dlogits, ce_shard_widened(expected),
                               label + ": dlogits vs cross_entropy_backward at the combined lse");
        for (std::int64_t i = 2; i < n; i += 3) {  // the ignored rows
          EXPECT_EQ(run.losses[i], 0.0f) << label << ": ignored row " << i << " loss";
          EXPECT_EQ(run.lse[i], 0.0f) << label << ": ignored row " << i << " lse";
          for (std::int64_t j = 0; j < vocab; ++j) {
            ASSERT_EQ(run.dlogits[i * vocab + j], 0.0f) << label << ": ignored row " << i << " dlogits[" << j << "]";
          }
        }
      }
    }
  }
}

TYPED_TEST(CpuCrossEntropyShard, AShardOfTheWholeVocabularyIsTheWholeVocabularyOpBitForBit) {
  using T = TypeParam;
  const std::int64_t n = 7;
  for (const std::int64_t vocab : {11, 4501}) {
    const auto logits = ce_shard_logits<T>(n * vocab, 2);
    const auto targets = ce_shard_targets(n, vocab);
    std::vector<float> losses(n), lse(n);
    this->k_.cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), n, vocab);
    std::vector<float> shard_lse(n), target_logit(n), combined_losses(n), combined_lse(n);
    this->k_.cross_entropy_shard_forward(shard_lse.data(), target_logit.data(), logits.data(), targets.data(), n, vocab,
                                         0, vocab);
    const std::string label = std::string(ce_shard_dtype<T>()) + " vocab " + std::to_string(vocab);
    test::expect_bit_equal(shard_lse, lse, label + ": whole-vocabulary shard lse vs cross_entropy_forward's");
    this->k_.cross_entropy_shard_combine(combined_losses.data(), combined_lse.data(), shard_lse.data(),
                                         target_logit.data(), targets.data(), n, 1);
    test::expect_bit_equal(combined_lse, lse, label + ": combine of one part, lse");
    test::expect_bit_equal(combined_losses, losses, label + ": combine of one part, losses");
    std::vector<T> expected(logits.size()), d(logits.size());
    this->k_.cross_entropy_backward(expected.data(), logits.data(), lse.data(), targets.data(), 0.5f, n, vocab);
    this->k_.cross_entropy_shard_backward(d.data(), logits.data(), lse.data(), targets.data(), 0.5f, n, vocab, 0);
    test::expect_bit_equal(ce_shard_widened(d), ce_shard_widened(expected), label + ": whole-vocabulary dlogits");
  }
}

TEST(CpuCrossEntropyShardCombine, OnePartIsReturnedBitForBit) {
  CpuKernels k;
  const std::int64_t n = 6;
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> parts = {0.1f, -3.7f, 12345.678f, -inf, 1e-30f, 88.5f};
  const std::vector<float> target_logit = {0.0f, 1.0f, 2.0f, 0.0f, 0.5f, -1.0f};
  const std::vector<std::int32_t> targets = {0, 1, 2, 3, 4, 5};
  std::vector<float> losses(n), lse(n);
  k.cross_entropy_shard_combine(losses.data(), lse.data(), parts.data(), target_logit.data(), targets.data(), n, 1);
  test::expect_bit_equal(lse, parts, "combine of one part: lse");
  for (std::int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(losses[i], parts[i] - target_logit[i]) << "row " << i << ": loss = lse - target logit";
  }
}

TEST(CpuCrossEntropyShardCombine, PartsOfMinusInfinityAddNothing) {
  CpuKernels k;
  const float inf = std::numeric_limits<float>::infinity();
  // Row 0: a shard without columns (lse -inf) beside two others; row 1: every part -inf.
  const std::vector<float> parts = {1.5f, -inf, 0.25f, -inf, -inf, -inf};  // (3 parts, 2 rows)
  const std::vector<float> target_logit = {0.25f, 0.0f};
  const std::vector<std::int32_t> targets = {2, 0};
  std::vector<float> losses(2), lse(2), two_losses(2), two_lse(2);
  k.cross_entropy_shard_combine(losses.data(), lse.data(), parts.data(), target_logit.data(), targets.data(), 2, 3);
  const std::vector<float> without = {1.5f, 0.25f};  // row 0's finite parts alone
  k.cross_entropy_shard_combine(two_losses.data(), two_lse.data(), without.data(), target_logit.data(), targets.data(),
                                1, 2);
  EXPECT_EQ(lse[0], two_lse[0]) << "a part of -inf changed the combined lse";
  EXPECT_NEAR(lse[0], std::log(std::exp(1.5) + std::exp(0.25)), 1e-6);
  EXPECT_EQ(lse[1], -inf) << "every part -inf";
}

TEST(CpuCrossEntropyShardCombine, AShardWithoutColumnsAddsNothing) {
  CpuKernels k;
  const std::int64_t n = 4, vocab = 2, parts = 3;  // shards of 1, 1 and 0 columns
  const auto logits = ce_shard_logits<float>(n * vocab, 3);
  const std::vector<std::int32_t> targets = {0, 1, 1, 0};
  std::vector<float> losses(n), lse(n);
  k.cross_entropy_forward(losses.data(), lse.data(), logits.data(), targets.data(), n, vocab);
  const CeShardRun run = run_ce_shards(k, logits, targets, n, vocab, parts, 1.0f, false);
  test::expect_close(run.losses, ce_shard_double(losses), kCeShardTolerance, "losses, a shard of no columns");
}

TYPED_TEST(CpuCrossEntropyShard, ATargetOutsideTheVocabularyIsRefusedNamingIt) {
  using T = TypeParam;
  const std::int64_t n = 3, vocab = 11, first = 6, v = 5;
  const auto logits = ce_shard_logits<T>(n * v, 4);
  for (const std::int32_t bad : {11, -2, 5000}) {
    const std::vector<std::int32_t> targets = {7, bad, 2};
    std::vector<float> lse(n, -9.0f), target_logit(n, -9.0f);
    try {
      this->k_.cross_entropy_shard_forward(lse.data(), target_logit.data(), logits.data(), targets.data(), n, v, first,
                                           vocab);
      ADD_FAILURE() << "cross_entropy_shard_forward accepted target " << bad << " with vocab = " << vocab;
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("target[1] = " + std::to_string(bad)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("[0, 11)"), std::string::npos) << e.what();
    }
    for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(lse[i], -9.0f) << "forward wrote lse before refusing " << bad;
  }
  std::vector<float> lse(n), target_logit(n);
  const std::vector<std::int32_t> targets = {7, 1, 2};
  EXPECT_THROW(this->k_.cross_entropy_shard_forward(lse.data(), target_logit.data(), logits.data(), targets.data(), n,
                                                    v, 7, vocab),
               std::invalid_argument)
      << "columns [7, 12) of a vocabulary of 11";
}

}  // namespace
}  // namespace tessera
