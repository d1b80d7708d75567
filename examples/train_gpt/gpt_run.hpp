// run_gpt: train_gpt's run from its options — the device, the batch plan, the token files and their
// tokenizer, the GPT, the pre-flight memory check and the sharded engine — handed to the library's
// training loop (TrainingRun: resume, checkpoints, stop signals, spike guard, progress, metrics);
// then a text sample. Rank 0 prints the effective configuration and what the run is made of first.
#pragma once

#include "tessera/launch/distributed_context.hpp"
#include "train_options.hpp"

namespace tessera {

// Collective. Returns the process exit code: 0 (trained, or stopped by a signal), 1 (the default token
// file data/corpus.bin is missing: rank 0 says how to make it), 2 (no device on
// some rank), 3 (a rank's memory does not fit), 4 (the training diverged).
int run_gpt(DistributedContext& dist, const TrainOptions& options);

}  // namespace tessera
