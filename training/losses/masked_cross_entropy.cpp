// MaskedCrossEntropy through the device's cross-entropy kernels (whose kIgnoredTarget rows add 0).
#include "tessera/training/losses/masked_cross_entropy.hpp"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "tessera/model/module.hpp"
#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {

std::int64_t MaskedCrossEntropy::forward_sum(Context& ctx, const Tensor& outputs, const MicroBatch& batch,
                                             double* device_sum) {
  const Tensor& targets = batch.targets;
  check_input((outputs.ndim() == 2 || outputs.ndim() == 3) && is_compute_dtype(outputs.dtype()), "MaskedCrossEntropy",
              "logits f32 or bf16 (B, V) or (B, T, V)", outputs);
  const std::int64_t rows = outputs.numel() / outputs.dim(outputs.ndim() - 1), vocab = outputs.dim(outputs.ndim() - 1);
  check_input(targets.dtype() == DType::kI32 && targets.numel() == rows && targets.ndim() == outputs.ndim() - 1 &&
                  targets.dim(0) == outputs.dim(0),
              "MaskedCrossEntropy",
              "targets i32 " + shape_string(Shape(outputs.shape().begin(), outputs.shape().end() - 1)), targets);
  std::vector<std::int32_t> host(static_cast<std::size_t>(rows));
  ctx.device.copy_to_host(host.data(), targets.data(), host.size() * sizeof(std::int32_t));
  const std::int64_t counted =
      std::count_if(host.begin(), host.end(), [](std::int32_t t) { return t != kIgnoredTarget; });
  Tensor losses = Tensor::empty(ctx.device, {rows}, DType::kF32, MemoryCategory::kWorkspace);
  Tensor lse = new_statistics(ctx, {rows});
  with_element_type(outputs.dtype(), "MaskedCrossEntropy", [&]<typename T>() {
    ctx.device.kernels().cross_entropy_forward(losses.data_as<float>(), lse.data_as<float>(), outputs.data_as<T>(),
                                               targets.data_as<std::int32_t>(), rows, vocab);
  });
  ctx.device.kernels().sum(losses.data_as<float>(), rows, device_sum);
  counted_ = std::max<std::int64_t>(counted, 1);
  if (ctx.training) {
    logits_ = outputs;
    targets_ = targets;
    lse_ = lse;
  }
  return counted_;
}

Tensor MaskedCrossEntropy::backward(Context& ctx, float scale) {
  if (!logits_.defined()) throw std::logic_error("MaskedCrossEntropy::backward without a training forward");
  const std::int64_t vocab = logits_.dim(logits_.ndim() - 1), rows = logits_.numel() / vocab;
  with_element_type(logits_.dtype(), "MaskedCrossEntropy::backward", [&]<typename T>() {
    ctx.device.kernels().cross_entropy_backward(logits_.data_as<T>(), logits_.data_as<T>(), lse_.data_as<float>(),
                                                targets_.data_as<std::int32_t>(), scale / static_cast<float>(counted_),
                                                rows, vocab);
  });
  Tensor dlogits = logits_;
  logits_ = Tensor();
  targets_ = Tensor();
  lse_ = Tensor();
  return dlogits;
}

}  // namespace tessera
