// Loss: what a training step minimises, from the model's output and the micro-batch. The Trainer
// (and so TrainingRun, with its checkpoints, resume, data position, signals and metrics) runs any
// Loss; the shipped ones are TokenCrossEntropy (the GPT/Llama path and the default),
// MaskedCrossEntropy and MeanSquaredError (training/losses/).
//
// Contract, per micro-batch: forward_sum, then (training) backward once, in that order, before the
// next micro-batch's forward_sum; one Loss object serves every micro-batch of a run in turn. A loss
// is the MEAN of its terms over the micro-batch: forward_sum writes the SUM of the terms to one
// double in device memory (nothing waits for the device) and returns how many terms it divides by;
// backward returns d(scale * mean)/d(outputs). The step's loss is the mean over its micro-batches
// and ranks of these means. Every rank must run the same loss (it is part of the model's step).
//
// Writing one: compute through the device's Kernels table (ctx.device.kernels(): cross_entropy_*,
// squared_error_*, sum, ...), never host loops over device data, so the loss runs on every device
// (the meta device plans it: there, data pointers hold nothing and counts read from data are 0).
#pragma once

#include <cstdint>
#include <string>

#include "tessera/model/context.hpp"
#include "tessera/runtime/tensor.hpp"
#include "tessera/training/micro_batch.hpp"

namespace tessera {

class Loss {
 public:
  virtual ~Loss() = default;

  // "cross-entropy", "mse": how messages and the metrics name it.
  virtual std::string name() const = 0;

  // `outputs`: the model's forward output for batch.inputs (kept, when ctx.training, for backward;
  // a loss may return its gradient in the outputs' storage, as the cross-entropies do with the
  // logits: a model that keeps its own output for its backward pairs with a loss that does not). Writes the sum of the
  // micro-batch's loss terms to `device_sum` (one double in the device's memory) and returns the number of terms the
  // mean divides by (>= 1). Throws std::invalid_argument naming the loss and the expected shapes when they do not
  // match.
  virtual std::int64_t forward_sum(Context& ctx, const Tensor& outputs, const MicroBatch& batch,
                                   double* device_sum) = 0;

  // d(scale * mean loss)/d(outputs): the outputs' shape and dtype (may be the outputs' storage).
  // Drops what forward_sum kept. Throws std::logic_error without a training forward_sum before it.
  virtual Tensor backward(Context& ctx, float scale) = 0;
};

}  // namespace tessera
