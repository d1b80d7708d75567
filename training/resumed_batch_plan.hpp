// The batch plan of a resumed run: by default a resume keeps the global batch the checkpoint was
// trained with, whatever the rank count now (as DeepSpeed's elastic batch does), and re-derives the
// accumulation (saved global 16 = micro 4 x ranks 2 x accumulation 2, resumed on 4 ranks: micro 4 x
// ranks 4 x accumulation 1). At the new rank count N:
//   * the global batch given explicitly (global or global_tokens), or BatchChange::kAllow: planned as
//     a fresh run would be (plan_batch); a global batch other than the checkpoint's is a change, said
//     in the line;
//   * otherwise the checkpoint's global batch is kept: the micro-batch asked for, or, when neither
//     micro nor accumulation was asked for, the checkpoint's; the accumulation is derived. When that
//     does not divide, the run is refused (std::invalid_argument) with the valid micro-batches that
//     keep the global batch at N ranks, the nearest global batches that divide, and the options
//     that choose them.
// The line says what happened, exactly: "resume: global batch 16 kept at 4 ranks: ranks 2 -> 4,
// micro 8 -> 4 (micro 4 x ranks 4 x accumulation 1)". Pure arithmetic: every rank gets the same.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/training/batch_plan.hpp"

namespace tessera {

// The batch plan a checkpoint was saved with (its run fields global_batch, micro_batch, grad_accum,
// data_parallel_ranks).
struct SavedBatch {
  std::int64_t global = 0;
  std::int64_t micro = 0;
  std::int64_t accumulation = 0;
  int ranks = 0;
};

// Whether a resume may change the global batch without naming a new one (batch.change).
enum class BatchChange { kKeep, kAllow };

// "keep" or "allow"; anything else: std::invalid_argument naming `setting` and the value.
BatchChange parse_batch_change(const std::string& value, const std::string& setting = "batch.change");

struct ResumedBatch {
  BatchPlan plan;
  bool global_changed = false;  // plan.global != the checkpoint's
  std::string line;             // "resume: global batch ..." (one line, no newline)
};

// `request`: what the user asked for at this rank count (as for plan_batch); `names.change` names
// the BatchChange option in messages. Throws std::invalid_argument as described above.
ResumedBatch plan_resumed_batch(const BatchRequest& request, const SavedBatch& saved, BatchChange change);

}  // namespace tessera
