// The plan counts the attention scratch of the device it is for (PlanConfig::attention_scratch, a
// CUDA table's bf16 copies and cuDNN's workspace): asked at the run's shape (micro-batch, tokens per
// sample, channels, heads), booked as workspace byte for byte (a scratch larger by X makes the
// workspace peak larger by X once it dominates), and nothing without it, as on the CPU.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "tests/planning/plan_test_support.hpp"

namespace tessera {
namespace {

using Shape4 = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>;

MemoryPlan plan_with_scratch(std::size_t bytes, std::set<Shape4>* asked = nullptr) {
  PlanConfig c = testing::plan_for("tiny", ZeroStage::kStage0, 1, 2);
  if (bytes > 0) {
    c.attention_scratch = [=](std::int64_t b, std::int64_t t, std::int64_t ch, std::int64_t nh, DType) {
      if (asked != nullptr) asked->insert({b, t, ch, nh});
      return bytes;
    };
  }
  return plan_memory(c);
}

TEST(AttentionScratchPlan, AskedAtTheRunsShapeAndBookedAsWorkspace) {
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  std::set<Shape4> asked;
  const MemoryPlan none = plan_with_scratch(0);
  const MemoryPlan one = plan_with_scratch(64 * kMiB, &asked);
  const MemoryPlan two = plan_with_scratch(128 * kMiB);
  const GptConfig gpt = *testing::plan_for("tiny", ZeroStage::kStage0, 1, 2).model.gpt;
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(*asked.begin(), Shape4(2, gpt.max_seq_len, gpt.channels, gpt.heads));
  EXPECT_GT(one.peak(MemoryCategory::kWorkspace), none.peak(MemoryCategory::kWorkspace));
  EXPECT_EQ(two.peak(MemoryCategory::kWorkspace) - one.peak(MemoryCategory::kWorkspace),
            static_cast<std::int64_t>(64 * kMiB));
  for (MemoryCategory c : {MemoryCategory::kParameters, MemoryCategory::kGradients, MemoryCategory::kActivations}) {
    EXPECT_EQ(one.peak(c), none.peak(c)) << memory_category_name(c);
  }
}

}  // namespace
}  // namespace tessera
