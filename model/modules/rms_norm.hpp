// RmsNorm: root-mean-square normalisation over the last dimension with a learned scale (Llama).
// x (..., C) -> y (..., C) = x / sqrt(mean(x^2) + eps) * weight, in the dtype of its weight (the compute
// dtype). Parameter "weight" (C), ones.
// Kept for backward: the input and the (rows) f32 reciprocal RMS. As a block's PreNorm, the residual add
// and its gradient run as separate add kernels (the same bits as a fused kernel would give).
// Under sequence parallelism (tp given, sequence-parallel) it runs on this rank's token rows and its
// parameters' gradients are summed over the tensor-parallel group (ReplicatedGrads).
#pragma once

#include <memory>

#include "tessera/model/modules/pre_norm.hpp"
#include "tessera/model/parallel/tensor_parallel.hpp"

namespace tessera {

class RmsNorm final : public PreNorm {
 public:
  explicit RmsNorm(std::int64_t channels, float eps = 1e-5f, std::shared_ptr<const TensorParallel> tp = nullptr);

  std::string type_name() const override { return "RMSNorm"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;
  ResidualOutput forward_residual(Context& ctx, const Tensor& a, const Tensor& b) override;    // add, then forward
  Tensor backward_residual(Context& ctx, const Tensor& dy, const Tensor& dresidual) override;  // backward, then add
  Tensor recompute_output(Context& ctx) override;

 protected:
  void clear_own_saved() override;

 private:
  std::shared_ptr<const TensorParallel> tp_;  // null: not tensor parallel
  std::int64_t channels_;
  float eps_;
  Parameter& weight_;
  Tensor input_;  // (..., C)
  Tensor rstd_;   // (rows)
};

}  // namespace tessera
