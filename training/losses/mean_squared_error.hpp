// MeanSquaredError: regression — predictions of any shape, f32 or bf16, against targets f32 of the
// same shape; the mean of (prediction - target)^2 over every element of the micro-batch (the per-
// element squared errors are f32, their sum double, whatever the compute dtype).
#pragma once

#include "tessera/training/loss.hpp"

namespace tessera {

class MeanSquaredError final : public Loss {
 public:
  std::string name() const override { return "mse"; }
  std::int64_t forward_sum(Context& ctx, const Tensor& outputs, const MicroBatch& batch, double* device_sum) override;
  // d(scale * mean)/d(predictions), a new tensor (a model may keep its output for its backward).
  Tensor backward(Context& ctx, float scale) override;

 private:
  Tensor pred_;
  Tensor targets_;
};

}  // namespace tessera
