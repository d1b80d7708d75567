// MicroBatch: the tensors of one forward/backward pass — what the model's forward takes, what the
// loss compares its output with, and any other tensor a loss of your own reads.
//
// The shipped GPT/Llama path: inputs and targets (B,T) i32 token ids (TokenCrossEntropy). Your own
// model and loss: inputs is whatever your model's forward takes (f32 features (B,F), i32 ids, ...),
// targets whatever your Loss reads (f32 values for MeanSquaredError, per-sequence labels (B) i32,
// ids with kIgnoredTarget at the positions MaskedCrossEntropy leaves out), and `extra` holds the
// rest by name (a mask, per-sample weights). The first dimension of inputs is the micro-batch's
// sample count.
#pragma once

#include <map>
#include <string>

#include "tessera/runtime/tensor.hpp"

namespace tessera {

struct MicroBatch {
  Tensor inputs;                             // the model's input, (B, ...)
  Tensor targets;                            // what the loss reads, (B, ...)
  std::map<std::string, Tensor> extra = {};  // any other tensor a loss of your own reads, by name
};

}  // namespace tessera
