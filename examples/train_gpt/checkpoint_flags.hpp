// check_checkpoint_flags: train_gpt refuses, before it loads anything, a run whose checkpoint flags
// would lose work without saying so:
//   --save-every N without --checkpoint-dir      periodic saves with nowhere to save
//   --resume auto without --checkpoint-dir       nothing to resume from
//   --steps above kLongRunSteps without --checkpoint-dir, unless --allow-no-checkpoint-dir: a long
//                                                run that a crash, a node failure or a stop signal
//                                                (Slurm's time limit or preemption) would lose whole
// The rule and its flag are documented in docs/LAUNCH.md ("Runs without a checkpoint directory")
// and in train_gpt --help.
#pragma once

#include <cstdint>

#include "train_options.hpp"

namespace tessera {

// A run of more steps than this is "long": it needs --checkpoint-dir or --allow-no-checkpoint-dir.
constexpr std::int64_t kLongRunSteps = 1000;

// Throws std::invalid_argument naming the flags and what to change.
void check_checkpoint_flags(const TrainOptions& o);

}  // namespace tessera
