// TokenCrossEntropy through CrossEntropyLoss.
#include "tessera/training/losses/token_cross_entropy.hpp"

namespace tessera {

std::int64_t TokenCrossEntropy::forward_sum(Context& ctx, const Tensor& outputs, const MicroBatch& batch,
                                            double* device_sum) {
  loss_.forward_sum(ctx, outputs, batch.targets, device_sum);
  return outputs.dim(0) * outputs.dim(1);
}

Tensor TokenCrossEntropy::backward(Context& ctx, float scale) { return loss_.backward(ctx, scale); }

}  // namespace tessera
