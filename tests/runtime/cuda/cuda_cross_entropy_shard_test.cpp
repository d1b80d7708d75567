// CudaKernels vocabulary-sharded cross-entropy against CpuKernels: vocabularies of 11 and 4501 in 2
// and 3 uneven shards: each shard's lse within the f32 tolerance of the CPU's and its target logits
// exactly, the combine's lse and losses within it, the dlogits (in place) within it, and the
// combined shards' losses within 1e-6 of the GPU whole-vocabulary forward's; a shard of the whole
// vocabulary gives the whole-vocabulary kernels' bits (lse, losses through a combine of one part,
// dlogits); ignored targets give zeros; a target outside the vocabulary gives a NaN target logit
// (and loss) instead of a stray read; bf16 logits within the bf16 tolerance. Skips without a CUDA
// device.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tessera/precision/bf16.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tests/runtime/cpu/vocab_shards.hpp"
#include "tests/runtime/cuda/cuda_test_support.hpp"

namespace tessera {
namespace {

using test::DeviceBuffer;
using test::expect_close;
using test::random_floats;
using test::VocabShard;

class CudaCrossEntropyShard : public test::CudaKernelTest {};

// Targets spread over the vocabulary, every third row's kIgnoredTarget.
std::vector<std::int32_t> cuda_ce_shard_targets(std::int64_t n, std::int64_t vocab) {
  std::vector<std::int32_t> targets(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    targets[i] = i % 3 == 2 ? kIgnoredTarget : static_cast<std::int32_t>((i * 977 + 5) % vocab);
  }
  return targets;
}

TEST_F(CudaCrossEntropyShard, ShardsMatchTheCpuAndCombineToTheWholeVocabulary) {
  const std::int64_t n = 9;
  const float dloss = 0.37f;
  for (const std::int64_t vocab : {11, 4501}) {
    const auto logits = random_floats(n * vocab, 1, -6.0f, 6.0f);
    const auto targets = cuda_ce_shard_targets(n, vocab);
    DeviceBuffer<float> g_logits(logits), g_losses(n), g_lse(n);
    DeviceBuffer<std::int32_t> g_targets(targets);
    gpu_->cross_entropy_forward(g_losses.get(), g_lse.get(), g_logits.get(), g_targets.get(), n, vocab);
    const auto full_losses = g_losses.download();
    for (const std::int64_t parts : {2, 3}) {
      const std::string label =
          "cross_entropy shard f32 vocab " + std::to_string(vocab) + " in " + std::to_string(parts) + " shards";
      const auto shards = test::split_vocab(vocab, parts);
      std::vector<float> lse_parts(parts * n), target_logit(n, 0.0f);
      DeviceBuffer<float> g_lse_parts(parts * n), g_part_logit(n);
      for (std::int64_t p = 0; p < parts; ++p) {
        const auto local = test::shard_columns(logits, shards[p], n, vocab);
        std::vector<float> part_logit(n);
        DeviceBuffer<float> g_local(local);
        gpu_->cross_entropy_shard_forward(g_lse_parts.get() + p * n, g_part_logit.get(), g_local.get(), g_targets.get(),
                                          n, shards[p].rows, shards[p].first, vocab);
        cpu_.cross_entropy_shard_forward(lse_parts.data() + p * n, part_logit.data(), local.data(), targets.data(), n,
                                         shards[p].rows, shards[p].first, vocab);
        expect_close(g_part_logit.download(), part_logit, 0.0, label + " target logits of shard " + std::to_string(p));
        for (std::int64_t i = 0; i < n; ++i) target_logit[i] += part_logit[i];
      }
      expect_close(g_lse_parts.download(), lse_parts, kF32Tolerance, label + " lse parts vs CPU");
      g_lse_parts.upload(lse_parts);  // the combine and the backward from the same numbers on both
      DeviceBuffer<float> g_target_logit(target_logit), g_combined_losses(n), g_combined_lse(n);
      std::vector<float> losses(n), lse(n);
      gpu_->cross_entropy_shard_combine(g_combined_losses.get(), g_combined_lse.get(), g_lse_parts.get(),
                                        g_target_logit.get(), g_targets.get(), n, parts);
      cpu_.cross_entropy_shard_combine(losses.data(), lse.data(), lse_parts.data(), target_logit.data(), targets.data(),
                                       n, parts);
      expect_close(g_combined_lse.download(), lse, kF32Tolerance, label + " combined lse vs CPU");
      expect_close(g_combined_losses.download(), losses, kF32Tolerance, label + " combined losses vs CPU");
      expect_close(g_combined_losses.download(), full_losses, 1e-6, label + " combined losses vs the whole vocabulary");
      g_combined_lse.upload(lse);
      for (const VocabShard& shard : shards) {
        auto local = test::shard_columns(logits, shard, n, vocab);
        DeviceBuffer<float> g_local(local);
        gpu_->cross_entropy_shard_backward(g_local.get(), g_local.get(), g_combined_lse.get(), g_targets.get(), dloss,
                                           n, shard.rows, shard.first);
        cpu_.cross_entropy_shard_backward(local.data(), local.data(), lse.data(), targets.data(), dloss, n, shard.rows,
                                          shard.first);
        expect_close(g_local.download(), local, kF32Tolerance,
                     label + " dlogits (in place) of " + test::describe_shard(shard, vocab));
        for (std::int64_t i = 2; i < n; i += 3) {
          for (std::int64_t j = 0; j < shard.rows; ++j) {
            ASSERT_EQ(local[i * shard.rows + j], 0.0f) << label << ": ignored row " << i;
          }
        }
      }
    }
  }
}

TEST_F(CudaCrossEntropyShard, AShardOfTheWholeVocabularyGivesTheWholeVocabularyBits) {
  const std::int64_t n = 7, vocab = 4501;
  const auto logits = random_floats(n * vocab, 2, -6.0f, 6.0f);
  const auto targets = cuda_ce_shard_targets(n, vocab);
  DeviceBuffer<float> g_logits(logits), g_losses(n), g_lse(n), g_shard_lse(n), g_target_logit(n);
  DeviceBuffer<float> g_combined_losses(n), g_combined_lse(n), g_d(n * vocab), g_shard_d(n * vocab);
  DeviceBuffer<std::int32_t> g_targets(targets);
  gpu_->cross_entropy_forward(g_losses.get(), g_lse.get(), g_logits.get(), g_targets.get(), n, vocab);
  gpu_->cross_entropy_shard_forward(g_shard_lse.get(), g_target_logit.get(), g_logits.get(), g_targets.get(), n, vocab,
                                    0, vocab);
  test::expect_same_bits(g_shard_lse.download(), g_lse.download(), "whole-vocabulary shard lse");
  gpu_->cross_entropy_shard_combine(g_combined_losses.get(), g_combined_lse.get(), g_shard_lse.get(),
                                    g_target_logit.get(), g_targets.get(), n, 1);
  test::expect_same_bits(g_combined_lse.download(), g_lse.download(), "combine of one part: lse");
  test::expect_same_bits(g_combined_losses.download(), g_losses.download(), "combine of one part: losses");
  gpu_->cross_entropy_backward(g_d.get(), g_logits.get(), g_lse.get(), g_targets.get(), 0.5f, n, vocab);
  gpu_->cross_entropy_shard_backward(g_shard_d.get(), g_logits.get(), g_lse.get(), g_targets.get(), 0.5f, n, vocab, 0);
  test::expect_same_bits(g_shard_d.download(), g_d.download(), "whole-vocabulary shard dlogits");
}

TEST_F(CudaCrossEntropyShard, ATargetOutsideTheVocabularyGivesNaNNotAStrayRead) {
  const std::int64_t n = 3, vocab = 11, first = 6, v = 5;
  const std::vector<std::int32_t> targets = {7, 11, -2};  // rows 1 and 2 are bad (-1 is kIgnoredTarget)
  DeviceBuffer<float> g_logits(random_floats(n * v, 3)), g_lse(n), g_target_logit(n);
  DeviceBuffer<std::int32_t> g_targets(targets);
  gpu_->cross_entropy_shard_forward(g_lse.get(), g_target_logit.get(), g_logits.get(), g_targets.get(), n, v, first,
                                    vocab);
  const auto target_logit = g_target_logit.download();
  EXPECT_TRUE(std::isfinite(target_logit[0])) << "row 0 (target 7) target logit " << target_logit[0];
  for (std::int64_t row : {1, 2}) {
    EXPECT_TRUE(std::isnan(target_logit[row]))
        << "row " << row << " (target " << targets[row] << ") target logit " << target_logit[row] << ", expected NaN";
  }
}

TEST_F(CudaCrossEntropyShard, Bf16LogitsMatchTheCpu) {
  const std::int64_t n = 6, v = 3001, first = 2000, vocab = 9000;
  std::vector<Bf16> logits;
  for (float x : random_floats(n * v, 4, -10.0f, 10.0f)) logits.push_back(from_f32<Bf16>(x));
  const auto targets = test::random_tokens(n, static_cast<std::int32_t>(vocab), 5);
  std::vector<float> lse(n), target_logit(n);
  DeviceBuffer<Bf16> g_logits(logits);
  DeviceBuffer<std::int32_t> g_targets(targets);
  DeviceBuffer<float> g_lse(n), g_target_logit(n);
  gpu_->cross_entropy_shard_forward(g_lse.get(), g_target_logit.get(), g_logits.get(), g_targets.get(), n, v, first,
                                    vocab);
  cpu_.cross_entropy_shard_forward(lse.data(), target_logit.data(), logits.data(), targets.data(), n, v, first, vocab);
  expect_close(g_lse.download(), lse, kF32Tolerance, "cross_entropy shard bf16 lse");
  expect_close(g_target_logit.download(), target_logit, 0.0, "cross_entropy shard bf16 target logits");
  gpu_->cross_entropy_shard_backward(g_logits.get(), g_logits.get(), g_lse.get(), g_targets.get(), 1.0f, n, v, first);
  cpu_.cross_entropy_shard_backward(logits.data(), logits.data(), lse.data(), targets.data(), 1.0f, n, v, first);
  std::vector<float> gpu_d, cpu_d;
  for (Bf16 x : g_logits.download()) gpu_d.push_back(to_f32(x));
  for (Bf16 x : logits) cpu_d.push_back(to_f32(x));
  expect_close(gpu_d, cpu_d, kBf16Tolerance, "cross_entropy shard bf16 dlogits (in place)");
}

}  // namespace
}  // namespace tessera
