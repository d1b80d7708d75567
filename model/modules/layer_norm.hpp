// LayerNorm over the last dimension with learned scale and shift. x (..., C) -> y (..., C) in the
// dtype of its weight (the compute dtype); mean and rstd (rows) f32.
// forward_residual / backward_residual fuse the residual add in front of it (x = a + b) into the
// same kernel: what a pre-LN transformer block does between its two branches.
// Under sequence parallelism (tp given, sequence-parallel) it runs on this rank's token rows and its
// parameters' gradients are summed over the tensor-parallel group (ReplicatedGrads).
#pragma once

#include <memory>

#include "tessera/model/modules/pre_norm.hpp"
#include "tessera/model/parallel/tensor_parallel.hpp"

namespace tessera {

class LayerNorm final : public PreNorm {
 public:
  explicit LayerNorm(std::int64_t channels, float eps = 1e-5f, std::shared_ptr<const TensorParallel> tp = nullptr);

  std::string type_name() const override { return "LayerNorm"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;

  ResidualOutput forward_residual(Context& ctx, const Tensor& a, const Tensor& b) override;    // one kernel
  Tensor backward_residual(Context& ctx, const Tensor& dy, const Tensor& dresidual) override;  // one kernel
  Tensor recompute_output(Context& ctx) override;

 protected:
  void clear_own_saved() override;

 private:
  // The weight's dtype, checking that x is (..., C) of it (`what` names the caller in the message).
  DType checked_dtype(const Tensor& x, const char* what) const;

  std::shared_ptr<const TensorParallel> tp_;  // null: not tensor parallel
  std::int64_t channels_;
  float eps_;
  Parameter& weight_;
  Parameter& bias_;
  Tensor input_;  // (..., C) the compute dtype
  Tensor mean_;   // (rows) f32
  Tensor rstd_;   // (rows) f32
};

}  // namespace tessera
