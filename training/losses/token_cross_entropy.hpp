// TokenCrossEntropy: the language model's loss and the Trainer's default — fused softmax +
// cross-entropy of logits (B,T,V) f32 or bf16 against targets (B,T) i32 in [0, V), the mean over
// all B*T positions (CrossEntropyLoss: its f32 log-sum-exp, double sum and in-place backward).
#pragma once

#include "tessera/model/modules/cross_entropy_loss.hpp"
#include "tessera/training/loss.hpp"

namespace tessera {

class TokenCrossEntropy final : public Loss {
 public:
  TokenCrossEntropy() = default;
  // Vocabulary-parallel logits (B,T,V/N) of a tensor-parallel model over a vocabulary of `vocab`.
  TokenCrossEntropy(std::shared_ptr<const TensorParallel> tp, std::int64_t vocab) : loss_(std::move(tp), vocab) {}

  std::string name() const override { return "cross-entropy"; }
  // outputs: logits (B,T,V); batch.targets (B,T) i32. Returns B*T.
  std::int64_t forward_sum(Context& ctx, const Tensor& outputs, const MicroBatch& batch, double* device_sum) override;
  // dlogits (B,T,V), in the logits' storage.
  Tensor backward(Context& ctx, float scale) override;

 private:
  CrossEntropyLoss loss_;
};

}  // namespace tessera
