// MeanSquaredError through the device's squared-error kernels.
#include "tessera/training/losses/mean_squared_error.hpp"

#include <stdexcept>

#include "tessera/model/module.hpp"
#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {

std::int64_t MeanSquaredError::forward_sum(Context& ctx, const Tensor& outputs, const MicroBatch& batch,
                                           double* device_sum) {
  check_input(outputs.ndim() >= 1 && is_compute_dtype(outputs.dtype()), "MeanSquaredError",
              "predictions f32 or bf16 (B, ...)", outputs);
  check_input(batch.targets.dtype() == DType::kF32 && batch.targets.shape() == outputs.shape(), "MeanSquaredError",
              "targets f32 " + shape_string(outputs.shape()) + " (the predictions' shape)", batch.targets);
  const std::int64_t n = outputs.numel();
  Tensor losses = Tensor::empty(ctx.device, {n}, DType::kF32, MemoryCategory::kWorkspace);
  with_element_type(outputs.dtype(), "MeanSquaredError", [&]<typename T>() {
    ctx.device.kernels().squared_error_forward(losses.data_as<float>(), outputs.data_as<T>(),
                                               batch.targets.data_as<float>(), n);
  });
  ctx.device.kernels().sum(losses.data_as<float>(), n, device_sum);
  if (ctx.training) {
    pred_ = outputs;
    targets_ = batch.targets;
  }
  return n;
}

Tensor MeanSquaredError::backward(Context& ctx, float scale) {
  if (!pred_.defined()) throw std::logic_error("MeanSquaredError::backward without a training forward");
  const std::int64_t n = pred_.numel();
  Tensor dpred = new_activation(ctx, pred_.shape(), pred_.dtype());
  with_element_type(pred_.dtype(), "MeanSquaredError::backward", [&]<typename T>() {
    ctx.device.kernels().squared_error_backward(dpred.data_as<T>(), pred_.data_as<T>(), targets_.data_as<float>(),
                                                scale / static_cast<float>(n), n);
  });
  pred_ = Tensor();
  targets_ = Tensor();
  return dpred;
}

}  // namespace tessera
