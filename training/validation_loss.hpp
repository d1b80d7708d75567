// Validation loss that does not depend on the number of ranks.
//
// The validation set is a fixed list of windows of the loader: batches x micro windows, global
// sample indices 0 .. batches * micro - 1, cut into `batches` micro-batches of `micro` windows
// (micro-batch k holds indices [k * micro, (k + 1) * micro)). Micro-batch k is evaluated by rank
// k % ranks; each rank puts its micro-batches' mean losses into a vector of `batches` zeros, one
// all-reduce adds the vectors (exactly: every slot has one non-zero term), and every rank adds the
// slots in micro-batch order in double. So the result is the same float on 1, 2, 4 or any number of
// ranks, as long as micro-batch k's loss is: its forward sees the same windows, shapes and weights
// wherever it runs.
//
// Collective over the trainer's engine's world: every rank calls it with the same arguments. At
// ZeRO stage 3 the forward gathers parameters, so a rank with fewer micro-batches than another in
// a round runs a padding forward (micro-batch 0 again, its loss not used).
#pragma once

#include <cstdint>

#include "tessera/text/data/sample_loader.hpp"
#include "tessera/training/trainer.hpp"

namespace tessera {

struct ValidationSet {
  std::int64_t batches = 4;  // --eval-batches: micro-batches in the set, >= 1
  std::int64_t micro = 8;    // windows per micro-batch, >= 1 (train_gpt: its --micro-batch)
  std::int64_t windows() const { return batches * micro; }
};

// Mean cross-entropy over every position of every window of `set`, read from `loader` (its
// seq_len; use SampleOrder::kSequential for windows in file order). Throws std::invalid_argument
// naming eval.batches / eval.micro when one is < 1.
float validation_loss(Trainer& trainer, const SampleLoader& loader, const ValidationSet& set);

}  // namespace tessera
