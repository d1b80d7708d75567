// Global-batch planner: global = micro x data-parallel ranks x accumulation.
//
// A run names any of the global batch, the micro-batch and the accumulation; plan_batch() derives
// what is missing and refuses, before any work starts, a combination that does not multiply out.
// Its messages show the arithmetic and the nearest valid choices, e.g.
//   "global 1000 is not divisible by micro 4 x ranks 8 = 32; nearest valid: 992 or 1024,
//    or use accumulation 31"
// and name the values as BatchNames says: the library's setting names, or a program's flags.
// Batch sizes count sequences (samples); tokens are sequences x seq_len. A run may name the global
// batch in tokens instead (global tokens = micro x ranks x accumulation x seq_len): the planner then
// speaks in tokens, e.g.
//   "global 4000000 tokens (1000 sequences of 4000) is not divisible by micro 8 x ranks 8 = 64
//    sequences = 256000 tokens; nearest valid: 3840000 (accumulation 15) or 4096000 (accumulation 16)
//    tokens, or keep 4000000 with micro 5 (accumulation 25)"
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera {

// How the planner's messages name each value: the settings by default; a program passes the
// spellings of its flags (train_gpt: "--global-batch", "--micro-batch", "--grad-accum", "--seq-len").
struct BatchNames {
  std::string global = "batch.global";
  std::string micro = "batch.micro";
  std::string accumulation = "batch.accumulation";
  std::string seq_len = "model.seq_len";
  std::string global_tokens = "batch.global_tokens";
  std::string change = "batch.change";  // a resume that may change the global batch (resumed_batch_plan.hpp)
};

inline constexpr std::int64_t kDefaultMicroBatch = 8;

// What the user asked for; unset values are derived. Every rank must build the same request
// (the planner is pure arithmetic, so every rank then gets the same plan without communicating).
struct BatchRequest {
  std::optional<std::int64_t> global;                        // --global-batch: sequences per optimizer step, all ranks
  std::optional<std::int64_t> micro;                         // --micro-batch: sequences per rank per forward/backward
  std::optional<std::int64_t> accumulation;                  // --grad-accum: micro-batches per rank per optimizer step
  int data_parallel_ranks = 1;                               // >= 1
  std::int64_t seq_len = 1;                                  // tokens per sequence, >= 1
  std::int64_t default_micro = kDefaultMicroBatch;           // micro used when --micro-batch is not given
  BatchNames names;                                          // how messages name the values
  std::optional<std::int64_t> global_tokens = std::nullopt;  // --global-batch-tokens: instead of `global`
};

// A consistent plan: global == micro * ranks * accumulation, all >= 1.
struct BatchPlan {
  std::int64_t global = 0;
  std::int64_t micro = 0;
  std::int64_t accumulation = 0;
  int ranks = 0;
  std::int64_t seq_len = 0;

  std::int64_t per_rank() const { return micro * accumulation; }   // sequences per rank per step
  std::int64_t global_tokens() const { return global * seq_len; }  // tokens per optimizer step
  std::int64_t micro_tokens() const { return micro * seq_len; }    // tokens per rank per micro-step
  // "global batch 512 sequences = micro 4 x ranks 8 x accumulation 16
  //  (524288 tokens per step at seq_len 1024)"  (one line): sequences_text() (tokens_text())
  std::string describe() const;
  std::string sequences_text() const;  // "global batch 512 sequences = micro 4 x ranks 8 x accumulation 16"
  std::string tokens_text() const;     // "524288 tokens per step at seq_len 1024"
};

// Derives the missing values:
//   global, micro, accumulation  -> checked: must multiply out exactly
//   two of them                  -> the third; it must divide exactly
//   micro only                   -> accumulation 1
//   accumulation only            -> micro = default_micro
//   global only                  -> global must divide by ranks; micro = the largest divisor of
//                                   global / ranks that is <= default_micro (so 48 on 4 ranks with
//                                   default 8 gives micro 6 x accumulation 2, and a prime per-rank
//                                   count such as 13 gives micro 1 x accumulation 13)
//   nothing                      -> micro = default_micro, accumulation 1
// With global_tokens instead of global: global_tokens must be a multiple of seq_len, and the
// sequences it makes are planned as above; the errors show the arithmetic in tokens, the nearest
// valid token counts (with the accumulation each gives) and, when the micro-batch was given and a
// smaller one divides the per-rank sequences, that micro-batch. Giving both global and
// global_tokens is an error.
// Throws std::invalid_argument with the arithmetic and the nearest valid choices when the values
// do not fit, and naming the option when a value is zero or negative.
BatchPlan plan_batch(const BatchRequest& request);

// global_tokens / seq_len, or std::invalid_argument naming both and the nearest multiples of seq_len.
std::int64_t sequences_in_tokens(std::int64_t global_tokens, std::int64_t seq_len, const BatchNames& names = {});

}  // namespace tessera
