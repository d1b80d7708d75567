// MaskedCrossEntropy: cross-entropy of logits (B,T,V) (or (B,V): one label per sample) against
// targets (B,T) (or (B)) i32 where kIgnoredTarget (-1, runtime/kernels.hpp) marks a position the loss
// leaves out — padding, a prompt's tokens, unlabelled samples (PyTorch's ignore_index). The mean is
// over the counted positions of the micro-batch; one with none counted has loss 0 and no gradient.
// Counting them reads the targets back to the host once per micro-batch (B*T i32; the Trainer needs
// the count before the backward's scale).
#pragma once

#include "tessera/model/modules/cross_entropy_loss.hpp"
#include "tessera/training/loss.hpp"

namespace tessera {

class MaskedCrossEntropy final : public Loss {
 public:
  std::string name() const override { return "masked cross-entropy"; }
  std::int64_t forward_sum(Context& ctx, const Tensor& outputs, const MicroBatch& batch, double* device_sum) override;
  Tensor backward(Context& ctx, float scale) override;

 private:
  CrossEntropyLoss loss_;     // the kernels, which give an ignored row 0 and no gradient
  std::int64_t counted_ = 1;  // rows counted in the last forward (at least 1)
};

}  // namespace tessera
