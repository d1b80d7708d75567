// Global-batch planner: every derivation branch, the exact error messages, tokens arithmetic, and the
// global batch given in tokens (4,000,000 tokens of sequences of 4,000 on 1 and 8 ranks).
#include "tessera/training/batch_plan.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

namespace tessera {
namespace {

BatchRequest request(std::optional<std::int64_t> global, std::optional<std::int64_t> micro,
                     std::optional<std::int64_t> accumulation, int ranks, std::int64_t seq_len = 1024) {
  BatchRequest r;
  r.global = global;
  r.micro = micro;
  r.accumulation = accumulation;
  r.data_parallel_ranks = ranks;
  r.seq_len = seq_len;
  r.names = {"--global-batch", "--micro-batch", "--grad-accum", "--seq-len"};  // as train_gpt spells them
  return r;
}

// The message plan_batch throws for `r`, or a failure when it throws nothing.
std::string error_of(const BatchRequest& r) {
  try {
    const BatchPlan plan = plan_batch(r);
    ADD_FAILURE() << "expected std::invalid_argument, got the plan: " << plan.describe();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

void expect_plan(const BatchPlan& plan, std::int64_t global, std::int64_t micro, std::int64_t accumulation, int ranks) {
  EXPECT_EQ(plan.global, global) << plan.describe();
  EXPECT_EQ(plan.micro, micro) << plan.describe();
  EXPECT_EQ(plan.accumulation, accumulation) << plan.describe();
  EXPECT_EQ(plan.ranks, ranks) << plan.describe();
  EXPECT_EQ(plan.global, plan.micro * plan.ranks * plan.accumulation) << plan.describe();
}

TEST(BatchPlan, GlobalAndMicroDeriveAccumulation) {
  expect_plan(plan_batch(request(512, 4, std::nullopt, 8)), 512, 4, 16, 8);
  expect_plan(plan_batch(request(32, 4, std::nullopt, 8)), 32, 4, 1, 8);
}

TEST(BatchPlan, GlobalNotDivisibleByMicroTimesRanksShowsArithmeticAndNearest) {
  EXPECT_EQ(error_of(request(1000, 4, std::nullopt, 8)),
            "global 1000 is not divisible by micro 4 x ranks 8 = 32; nearest valid: 992 or 1024, "
            "or use accumulation 31");
  // Below one micro-step there is no smaller valid global and no accumulation to suggest.
  EXPECT_EQ(error_of(request(20, 4, std::nullopt, 8)),
            "global 20 is not divisible by micro 4 x ranks 8 = 32; nearest valid: 32");
}

TEST(BatchPlan, GlobalAndAccumulationDeriveMicro) {
  expect_plan(plan_batch(request(512, std::nullopt, 16, 8)), 512, 4, 16, 8);
  EXPECT_EQ(error_of(request(1000, std::nullopt, 16, 8)),
            "global 1000 is not divisible by ranks 8 x accumulation 16 = 128; nearest valid: 896 or 1024, "
            "or use micro 7");
  EXPECT_EQ(error_of(request(100, std::nullopt, 16, 8)),
            "global 100 is not divisible by ranks 8 x accumulation 16 = 128; nearest valid: 128");
}

TEST(BatchPlan, MicroAndAccumulationDeriveGlobal) {
  expect_plan(plan_batch(request(std::nullopt, 4, 16, 8)), 512, 4, 16, 8);
  expect_plan(plan_batch(request(std::nullopt, 3, 5, 7)), 105, 3, 5, 7);
}

TEST(BatchPlan, AllThreeMustMultiplyOut) {
  expect_plan(plan_batch(request(512, 4, 16, 8)), 512, 4, 16, 8);
  // 1024 fits either by changing --grad-accum or --micro-batch: all three fixes are named.
  EXPECT_EQ(error_of(request(1024, 4, 16, 8)),
            "global 1024 != micro 4 x ranks 8 x accumulation 16 = 512; change one: --global-batch 512, "
            "--grad-accum 32 or --micro-batch 8 (or leave one of the three options out to have it derived)");
  // 1000 fits neither: only --global-batch can change alone.
  EXPECT_EQ(error_of(request(1000, 4, 16, 8)),
            "global 1000 != micro 4 x ranks 8 x accumulation 16 = 512; change one: --global-batch 512 "
            "(or leave one of the three options out to have it derived)");
  // 96 = 4 x 8 x 3, but 96 / (8 x 16) is not whole: --grad-accum only.
  EXPECT_EQ(error_of(request(96, 4, 16, 8)),
            "global 96 != micro 4 x ranks 8 x accumulation 16 = 512; change one: --global-batch 512 or "
            "--grad-accum 3 (or leave one of the three options out to have it derived)");
}

TEST(BatchPlan, MicroOnlyMeansNoAccumulation) {
  expect_plan(plan_batch(request(std::nullopt, 4, std::nullopt, 8)), 32, 4, 1, 8);
}

TEST(BatchPlan, AccumulationOnlyUsesDefaultMicro) {
  expect_plan(plan_batch(request(std::nullopt, std::nullopt, 3, 2)), 48, kDefaultMicroBatch, 3, 2);
}

TEST(BatchPlan, NothingGivenUsesDefaultMicro) {
  expect_plan(plan_batch(request(std::nullopt, std::nullopt, std::nullopt, 4)), 32, 8, 1, 4);
  BatchRequest r = request(std::nullopt, std::nullopt, std::nullopt, 1);
  r.default_micro = 2;
  expect_plan(plan_batch(r), 2, 2, 1, 1);
}

TEST(BatchPlan, GlobalOnlyPicksLargestMicroDivisorUpToDefault) {
  // per rank 16: micro 8 (the default cap), accumulation 2.
  expect_plan(plan_batch(request(64, std::nullopt, std::nullopt, 4)), 64, 8, 2, 4);
  // per rank 12: 8 does not divide, 6 is the largest divisor <= 8.
  expect_plan(plan_batch(request(48, std::nullopt, std::nullopt, 4)), 48, 6, 2, 4);
  // per rank 13 (prime): micro 1, accumulation 13.
  expect_plan(plan_batch(request(52, std::nullopt, std::nullopt, 4)), 52, 1, 13, 4);
  // per rank 3, below the cap: one micro-batch of 3.
  expect_plan(plan_batch(request(24, std::nullopt, std::nullopt, 8)), 24, 3, 1, 8);
  BatchRequest r = request(96, std::nullopt, std::nullopt, 2);  // per rank 48
  r.default_micro = 20;
  expect_plan(plan_batch(r), 96, 16, 3, 2);
}

TEST(BatchPlan, GlobalOnlyMustDivideByRanks) {
  EXPECT_EQ(error_of(request(1000, std::nullopt, std::nullopt, 24)),
            "global 1000 is not divisible by ranks 24; nearest valid: 984 or 1008");
  EXPECT_EQ(error_of(request(6, std::nullopt, std::nullopt, 8)),
            "global 6 is not divisible by ranks 8; nearest valid: 8");
}

TEST(BatchPlan, TokensAndDescription) {
  const BatchPlan plan = plan_batch(request(512, 4, std::nullopt, 8, 1024));
  EXPECT_EQ(plan.global_tokens(), 524288);
  EXPECT_EQ(plan.micro_tokens(), 4096);
  EXPECT_EQ(plan.per_rank(), 64);
  EXPECT_EQ(plan.seq_len, 1024);
  EXPECT_EQ(plan.describe(),
            "global batch 512 sequences = micro 4 x ranks 8 x accumulation 16 "
            "(524288 tokens per step at seq_len 1024)");
  const BatchPlan odd = plan_batch(request(std::nullopt, 3, 5, 7, 100));
  EXPECT_EQ(odd.global_tokens(), 105 * 100);
  EXPECT_EQ(odd.micro_tokens(), 300);
}

TEST(BatchPlan, NonPositiveValuesNameTheOption) {
  EXPECT_EQ(error_of(request(0, 4, std::nullopt, 8)), "--global-batch must be >= 1 sequence per step, got 0");
  EXPECT_EQ(error_of(request(512, -4, std::nullopt, 8)), "--micro-batch must be >= 1 sequence per rank, got -4");
  EXPECT_EQ(error_of(request(512, std::nullopt, 0, 8)), "--grad-accum must be >= 1 micro-batch per step, got 0");
  EXPECT_EQ(error_of(request(std::nullopt, -1, -1, 8)), "--micro-batch must be >= 1 sequence per rank, got -1");
  EXPECT_EQ(error_of(request(512, 4, std::nullopt, 0)), "data-parallel ranks must be >= 1 rank, got 0");
  EXPECT_EQ(error_of(request(512, 4, std::nullopt, 8, 0)), "--seq-len must be >= 1 token, got 0");
  BatchRequest r = request(std::nullopt, std::nullopt, std::nullopt, 8);
  r.default_micro = 0;
  EXPECT_EQ(error_of(r), "the default micro-batch must be >= 1 sequence, got 0");
}

TEST(BatchPlan, OverflowIsAnErrorNotAWrongPlan) {
  const std::int64_t huge = std::numeric_limits<std::int64_t>::max() / 2;
  EXPECT_NE(error_of(request(std::nullopt, huge, 4, 8)).find("overflows"), std::string::npos);
  EXPECT_NE(error_of(request(huge, 1, std::nullopt, 1, 1024)).find("overflows"), std::string::npos);
}

TEST(BatchPlan, MessagesUseTheSettingNamesUnlessAProgramSpellsThem) {
  BatchRequest r;
  r.global = 0;
  r.data_parallel_ranks = 8;
  EXPECT_EQ(error_of(r), "batch.global must be >= 1 sequence per step, got 0");
  r.global = 1024;
  r.micro = 4;
  r.accumulation = 16;
  EXPECT_NE(error_of(r).find("change one: batch.global 512, batch.accumulation 32 or batch.micro 8"), std::string::npos)
      << error_of(r);
}

// The global batch in tokens: 4,000,000 tokens of sequences of 4,000 = 1000 sequences.
BatchRequest tokens_request(std::int64_t tokens, std::optional<std::int64_t> micro,
                            std::optional<std::int64_t> accumulation, int ranks, std::int64_t seq_len = 4000) {
  BatchRequest r = request(std::nullopt, micro, accumulation, ranks, seq_len);
  r.global_tokens = tokens;
  r.names.global_tokens = "--global-batch-tokens";
  return r;
}

TEST(BatchPlanTokens, MicroTimesAccumulationTimesSeqLenOnOneRank) {
  const BatchPlan plan = plan_batch(tokens_request(4'000'000, 8, 125, 1));
  expect_plan(plan, 1000, 8, 125, 1);
  EXPECT_EQ(plan.global_tokens(), 4'000'000);
  // Either factor is derived from the other.
  expect_plan(plan_batch(tokens_request(4'000'000, 8, std::nullopt, 1)), 1000, 8, 125, 1);
  expect_plan(plan_batch(tokens_request(4'000'000, std::nullopt, 125, 1)), 1000, 8, 125, 1);
}

TEST(BatchPlanTokens, EightRanksWithMicroAndAccumulationFixedNamesEachFix) {
  // 8 x 8 x 125 = 8000 sequences: 8x too many; --micro-batch 1 is the one single change that keeps the tokens.
  EXPECT_EQ(error_of(tokens_request(4'000'000, 8, 125, 8)),
            "global 4000000 tokens (1000 sequences of 4000) != micro 8 x ranks 8 x accumulation 125 = 8000 sequences "
            "= 32000000 tokens; change one: --global-batch-tokens 32000000 or --micro-batch 1 (or leave one of the "
            "three options out to have it derived)");
}

TEST(BatchPlanTokens, EightRanksWithMicroFixedShowsNearestTokensAndASmallerMicro) {
  // 1000 / (8 x 8) = 15.625 micro-batches per rank.
  EXPECT_EQ(error_of(tokens_request(4'000'000, 8, std::nullopt, 8)),
            "global 4000000 tokens (1000 sequences of 4000) is not divisible by micro 8 x ranks 8 = 64 sequences = "
            "256000 tokens; nearest valid: 3840000 (accumulation 15) or 4096000 (accumulation 16) tokens, or keep "
            "4000000 with --micro-batch 5 (accumulation 25)");
  // And the suggestions are valid plans.
  expect_plan(plan_batch(tokens_request(3'840'000, 8, std::nullopt, 8)), 960, 8, 15, 8);
  expect_plan(plan_batch(tokens_request(4'096'000, 8, std::nullopt, 8)), 1024, 8, 16, 8);
  expect_plan(plan_batch(tokens_request(4'000'000, 5, std::nullopt, 8)), 1000, 5, 25, 8);
}

TEST(BatchPlanTokens, EightRanksWithAccumulationFixedShowsNearestTokensAndASmallerAccumulation) {
  EXPECT_EQ(error_of(tokens_request(4'000'000, std::nullopt, 16, 8)),
            "global 4000000 tokens (1000 sequences of 4000) is not divisible by ranks 8 x accumulation 16 = 128 "
            "sequences = 512000 tokens; nearest valid: 3584000 (micro 7) or 4096000 (micro 8) tokens, or keep "
            "4000000 with --grad-accum 5 (micro 25)");
  expect_plan(plan_batch(tokens_request(4'000'000, std::nullopt, 125, 8)), 1000, 1, 125, 8);
}

TEST(BatchPlanTokens, EightRanksWithTokensOnlyChoosesMicroAndAccumulation) {
  // 125 sequences per rank: the largest micro <= 8 dividing 125 is 5.
  expect_plan(plan_batch(tokens_request(4'000'000, std::nullopt, std::nullopt, 8)), 1000, 5, 25, 8);
  EXPECT_EQ(error_of(tokens_request(4'000'000, std::nullopt, std::nullopt, 24)),
            "global 4000000 tokens (1000 sequences of 4000) is not divisible by ranks 24 = 24 sequences = 96000 "
            "tokens; nearest valid: 3936000 or 4032000 tokens");
}

TEST(BatchPlanTokens, TokensMustBeWholeSequencesAndNotGivenTwice) {
  EXPECT_EQ(error_of(tokens_request(4'000'001, 8, std::nullopt, 1)),
            "--global-batch-tokens 4000001 is not a multiple of --seq-len 4000; nearest valid: 4000000 or 4004000");
  EXPECT_EQ(error_of(tokens_request(3'000, 8, std::nullopt, 1)),
            "--global-batch-tokens 3000 is not a multiple of --seq-len 4000; nearest valid: 4000");
  EXPECT_EQ(error_of(tokens_request(0, 8, std::nullopt, 1)),
            "--global-batch-tokens must be >= 1 token per step, got 0");
  BatchRequest both = tokens_request(4'000'000, 8, std::nullopt, 1);
  both.global = 1000;
  EXPECT_EQ(error_of(both), "give --global-batch (sequences) or --global-batch-tokens (tokens), not both");
  EXPECT_EQ(sequences_in_tokens(4'000'000, 4000), 1000);
}

}  // namespace
}  // namespace tessera
