// CrossEntropyLoss: fused softmax + cross-entropy over logits (B,T,V) (or (B,V)) f32 or bf16 with
// targets (B,T) (or (B)) i32; the losses, the log-sum-exp per row and their sum are f32 (double for the sum) either
// way. forward returns the mean loss over B*T positions (one copy to the host, which waits for the device); forward_sum
// leaves the sum on the device, for a step that reads the losses of all its micro-batches once at its end. backward
// turns the logits buffer into dlogits in place (no second (B,T,V) buffer), scaled by `scale` / (B*T) — pass
// 1/accumulation as the scale.
//
// Vocabulary-parallel (constructed with a TensorParallel and the vocabulary size): the logits are
// this rank's piece of the vocabulary (model/parallel/tensor_slice.hpp's pieces of `vocab`), never
// gathered. Each rank takes the log-sum-exp of its columns and the target's logit where it holds
// the target; the group all-gathers the (rows) log-sum-exps and sums the target logits, and every
// rank combines them into the whole row's (cross_entropy_shard_combine): every rank has the same
// losses, and backward writes each rank's columns of dlogits from the whole row's log-sum-exp.
#pragma once

#include <memory>

#include "tessera/model/context.hpp"
#include "tessera/model/parallel/tensor_parallel.hpp"
#include "tessera/runtime/tensor.hpp"

namespace tessera {

class CrossEntropyLoss {
 public:
  CrossEntropyLoss() = default;
  // Vocabulary-parallel over `tp`'s group, the whole vocabulary holding `vocab` entries.
  CrossEntropyLoss(std::shared_ptr<const TensorParallel> tp, std::int64_t vocab);

  // logits (B,T,V) f32, kept (and overwritten by backward); targets (B,T) i32.
  float forward(Context& ctx, const Tensor& logits, const Tensor& targets);
  // The same, with the sum of the row losses written to `device_sum` (one double in the device's
  // memory) instead of the mean brought back: nothing waits. The mean is *device_sum / (B*T).
  // Also takes one row per sample: logits (B,V) with targets (B). A target of kIgnoredTarget
  // (runtime/kernels.hpp) adds 0 and gets no gradient.
  void forward_sum(Context& ctx, const Tensor& logits, const Tensor& targets, double* device_sum);
  // Returns dlogits = d(scale * mean loss)/dlogits, in the logits' storage: the mean over every row.
  Tensor backward(Context& ctx, float scale);
  // The same for a mean over `terms` rows (those not ignored: MaskedCrossEntropy's count).
  Tensor backward_mean_over(Context& ctx, float scale, std::int64_t terms);

 private:
  Tensor logits_;
  Tensor targets_;
  Tensor lse_;  // (B*T) logsumexp per row (of the whole vocabulary's row when vocabulary-parallel)

  // Vocabulary-parallel: the rows' losses and whole-row lse from this rank's columns.
  template <typename T>
  void shard_forward(Context& ctx, const T* logits, const std::int32_t* targets, std::int64_t rows,
                     std::int64_t columns, float* losses, float* lse);

  std::shared_ptr<const TensorParallel> tp_;  // null: the logits hold the whole vocabulary
  std::int64_t vocab_ = 0;                    // the whole vocabulary (vocabulary-parallel)
  std::int64_t first_ = 0;                    // this rank's first vocabulary entry
};

}  // namespace tessera
