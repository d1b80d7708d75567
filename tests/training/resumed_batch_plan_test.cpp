// A resume keeps the checkpoint's global batch at another rank count: the accumulation is re-derived
// from the micro-batch asked for (or the checkpoint's), the line says exactly what changed, a global
// batch that cannot be kept is refused with the valid micro-batches and global batches, and a new
// global batch needs --global-batch / --global-batch-tokens or --batch-change allow.
#include "tessera/training/resumed_batch_plan.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace tessera {
namespace {

BatchRequest resumed_request(int ranks, std::optional<std::int64_t> micro = std::nullopt,
                     std::optional<std::int64_t> accumulation = std::nullopt,
                     std::optional<std::int64_t> global = std::nullopt) {
  BatchRequest r;
  r.global = global;
  r.micro = micro;
  r.accumulation = accumulation;
  r.data_parallel_ranks = ranks;
  r.seq_len = 32;
  r.names = {"--global-batch", "--micro-batch", "--grad-accum", "--seq-len", "--global-batch-tokens", "--batch-change"};
  return r;
}

std::string error_of(const BatchRequest& r, const SavedBatch& saved, BatchChange change = BatchChange::kKeep) {
  try {
    const ResumedBatch b = plan_resumed_batch(r, saved, change);
    ADD_FAILURE() << "expected std::invalid_argument, got " << b.line;
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

const SavedBatch kSaved{24, 4, 3, 2};  // global 24 = micro 4 x ranks 2 x accumulation 3

TEST(ResumedBatchPlan, KeepsTheGlobalBatchWithTheCheckpointsMicroBatch) {
  const ResumedBatch at3 = plan_resumed_batch(resumed_request(3), kSaved, BatchChange::kKeep);
  EXPECT_EQ(at3.plan.global, 24);
  EXPECT_EQ(at3.plan.micro, 4);
  EXPECT_EQ(at3.plan.accumulation, 2);
  EXPECT_FALSE(at3.global_changed);
  EXPECT_EQ(at3.line,
            "resume: global batch 24 kept at 3 ranks: ranks 2 -> 3, accumulation 3 -> 2 "
            "(micro 4 x ranks 3 x accumulation 2)");
  const ResumedBatch at6 = plan_resumed_batch(resumed_request(6), kSaved, BatchChange::kKeep);
  EXPECT_EQ(at6.plan.accumulation, 1);
  const ResumedBatch same = plan_resumed_batch(resumed_request(2), kSaved, BatchChange::kKeep);
  EXPECT_EQ(same.line, "resume: global batch 24 kept at 2 ranks: as saved (micro 4 x ranks 2 x accumulation 3)");
}

TEST(ResumedBatchPlan, KeepsTheGlobalBatchWithTheMicroBatchAskedFor) {
  // Without the rule the flags would make 2 x 4 x 1 = 8: the micro-batch is kept, the accumulation derived.
  const ResumedBatch b = plan_resumed_batch(resumed_request(4, 2), kSaved, BatchChange::kKeep);
  EXPECT_EQ(b.plan.global, 24);
  EXPECT_EQ(b.plan.micro, 2);
  EXPECT_EQ(b.plan.accumulation, 3);
  EXPECT_EQ(b.line, "resume: global batch 24 kept at 4 ranks: ranks 2 -> 4, micro 4 -> 2 "
                    "(micro 2 x ranks 4 x accumulation 3)");
  // --grad-accum alone: the micro-batch is derived from the kept global batch.
  const ResumedBatch a = plan_resumed_batch(resumed_request(3, std::nullopt, 4), kSaved, BatchChange::kKeep);
  EXPECT_EQ(a.plan.micro, 2);
  EXPECT_EQ(a.plan.accumulation, 4);
}

TEST(ResumedBatchPlan, RefusesAGlobalBatchThatDoesNotDivideWithTheChoices) {
  // 16 on 3 ranks: no micro-batch keeps it.
  EXPECT_EQ(error_of(resumed_request(3), SavedBatch{16, 8, 1, 2}),
            "resume: the checkpoint's global batch 16 (micro 8 x ranks 2 x accumulation 1) is kept by default, but at "
            "3 ranks it is not divisible by micro 8 x ranks 3 = 24; no micro-batch keeps 16 at 3 ranks (it is not a "
            "multiple of 3): change it with --global-batch 15 or 18 (or 24 with --micro-batch 8); a new global "
            "batch needs --global-batch or --batch-change allow");
  // 24 on 4 ranks with the checkpoint's micro 4: 6 sequences per rank, micro 3 or 6 keep it.
  EXPECT_EQ(error_of(resumed_request(4), kSaved),
            "resume: the checkpoint's global batch 24 (micro 4 x ranks 2 x accumulation 3) is kept by default, but at "
            "4 ranks it is not divisible by micro 4 x ranks 4 = 16; keep 24 with --micro-batch 3 (accumulation 2) or "
            "--micro-batch 6 (accumulation 1), or change it with --global-batch 20 or 28 (or 16 or 32 with "
            "--micro-batch 4); a new global batch needs --global-batch or --batch-change allow");
}

TEST(ResumedBatchPlan, FlagsThatMultiplyToAnotherGlobalBatchAreRefused) {
  const std::string e = error_of(resumed_request(3, 4, 4), kSaved);
  EXPECT_NE(e.find("global 24 != micro 4 x ranks 3 x accumulation 4 = 48"), std::string::npos) << e;
  EXPECT_NE(e.find("keep 24 with --micro-batch 4 (accumulation 2), or change it with --global-batch 21 or 27"),
            std::string::npos)
      << e;
}

TEST(ResumedBatchPlan, ChangingTheGlobalBatchNeedsAnExplicitChoice) {
  const ResumedBatch given = plan_resumed_batch(resumed_request(3, 8, std::nullopt, 48), kSaved, BatchChange::kKeep);
  EXPECT_EQ(given.plan.global, 48);
  EXPECT_EQ(given.plan.accumulation, 2);
  EXPECT_TRUE(given.global_changed);
  EXPECT_EQ(given.line, "resume: global batch changed from 24 (micro 4 x ranks 2 x accumulation 3) to 48 "
                        "(micro 8 x ranks 3 x accumulation 2) by --global-batch 48");
  BatchRequest tokens = resumed_request(2);
  tokens.global_tokens = 32 * 32;  // 32 sequences of 32 tokens
  const ResumedBatch in_tokens = plan_resumed_batch(tokens, kSaved, BatchChange::kKeep);
  EXPECT_EQ(in_tokens.plan.global, 32);
  EXPECT_NE(in_tokens.line.find("to 32 (micro 8 x ranks 2 x accumulation 2) by --global-batch-tokens 1024"),
            std::string::npos)
      << in_tokens.line;
  // --batch-change allow: the flags plan as for a fresh run (default micro 8, accumulation 1).
  const ResumedBatch allowed = plan_resumed_batch(resumed_request(3), kSaved, BatchChange::kAllow);
  EXPECT_EQ(allowed.plan.global, 24);  // 8 x 3 x 1 happens to equal the saved 24
  EXPECT_FALSE(allowed.global_changed);
  EXPECT_EQ(allowed.line, "resume: global batch 24 kept at 3 ranks: ranks 2 -> 3, micro 4 -> 8, accumulation 3 -> 1 "
                          "(micro 8 x ranks 3 x accumulation 1)");
  const ResumedBatch allowed4 = plan_resumed_batch(resumed_request(4), kSaved, BatchChange::kAllow);
  EXPECT_EQ(allowed4.plan.global, 32);
  EXPECT_EQ(allowed4.line, "resume: global batch changed from 24 (micro 4 x ranks 2 x accumulation 3) to 32 "
                           "(micro 8 x ranks 4 x accumulation 1) by --batch-change allow");
  // An explicit global batch equal to the saved one is a keep.
  EXPECT_FALSE(plan_resumed_batch(resumed_request(3, std::nullopt, std::nullopt, 24), kSaved, BatchChange::kKeep)
                   .global_changed);
}

TEST(ResumedBatchPlan, ParsesTheOption) {
  EXPECT_EQ(parse_batch_change("keep", "--batch-change"), BatchChange::kKeep);
  EXPECT_EQ(parse_batch_change("allow", "--batch-change"), BatchChange::kAllow);
  try {
    parse_batch_change("yes", "--batch-change");
    ADD_FAILURE() << "expected a refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--batch-change 'yes': use keep (a resume keeps the checkpoint's global batch) or allow");
  }
}

}  // namespace
}  // namespace tessera
