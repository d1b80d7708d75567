// CrossEntropyLoss through the device's cross-entropy kernels; the losses are summed in double on the device.
#include "tessera/model/modules/cross_entropy_loss.hpp"

#include <stdexcept>

#include "tessera/model/module.hpp"
#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/storage.hpp"

namespace tessera {

CrossEntropyLoss::CrossEntropyLoss(std::shared_ptr<const TensorParallel> tp, std::int64_t vocab)
    : tp_(std::move(tp)), vocab_(vocab), first_(tp_ ? piece_start(vocab, tp_->size(), tp_->rank()) : 0) {}

template <typename T>
void CrossEntropyLoss::shard_forward(Context& ctx, const T* logits, const std::int32_t* targets, std::int64_t rows,
                                     std::int64_t columns, float* losses, float* lse) {
  const Kernels& kernels = ctx.device.kernels();
  const int parts = tp_->size();
  Tensor local_lse = Tensor::empty(ctx.device, {rows}, DType::kF32, MemoryCategory::kWorkspace);
  Tensor target_logit = Tensor::empty(ctx.device, {rows}, DType::kF32, MemoryCategory::kWorkspace);
  kernels.cross_entropy_shard_forward(local_lse.data_as<float>(), target_logit.data_as<float>(), logits, targets, rows,
                                      columns, first_, vocab_);
  Tensor lse_parts = Tensor::empty(ctx.device, {parts, rows}, DType::kF32, MemoryCategory::kWorkspace);
  tp_->group().all_gather(local_lse, lse_parts);
  tp_->group().all_reduce_sum(target_logit);  // one rank holds each target: a sum of one term and zeros
  kernels.cross_entropy_shard_combine(losses, lse, lse_parts.data_as<float>(), target_logit.data_as<float>(), targets,
                                      rows, parts);
}

void CrossEntropyLoss::forward_sum(Context& ctx, const Tensor& logits, const Tensor& targets, double* device_sum) {
  check_input((logits.ndim() == 3 || logits.ndim() == 2) && is_compute_dtype(logits.dtype()), "CrossEntropyLoss",
              "logits f32 or bf16 (B, T, V) or (B, V)", logits);
  const Shape rows_shape(logits.shape().begin(), logits.shape().end() - 1);
  check_input(targets.dtype() == DType::kI32 && targets.shape() == rows_shape, "CrossEntropyLoss",
              "targets i32 " + shape_string(rows_shape) + " matching logits " + shape_string(logits.shape()), targets);
  const std::int64_t vocab = logits.dim(logits.ndim() - 1), rows = logits.numel() / vocab;
  Tensor losses = Tensor::empty(ctx.device, {rows}, DType::kF32, MemoryCategory::kWorkspace);
  Tensor lse = new_statistics(ctx, {rows});
  with_element_type(logits.dtype(), "CrossEntropyLoss", [&]<typename T>() {
    if (tp_) {
      shard_forward(ctx, logits.data_as<T>(), targets.data_as<std::int32_t>(), rows, vocab, losses.data_as<float>(),
                    lse.data_as<float>());
    } else {
      ctx.device.kernels().cross_entropy_forward(losses.data_as<float>(), lse.data_as<float>(), logits.data_as<T>(),
                                                 targets.data_as<std::int32_t>(), rows, vocab);
    }
  });
  ctx.device.kernels().sum(losses.data_as<float>(), rows, device_sum);  // summed in double on the device
  if (ctx.training) {
    logits_ = logits;
    targets_ = targets;
    lse_ = lse;
  }
}

float CrossEntropyLoss::forward(Context& ctx, const Tensor& logits, const Tensor& targets) {
  // One double back to the host (the meta device leaves it 0).
  double sum = 0.0;
  const auto total = Storage::allocate(ctx.device, sizeof(double), MemoryCategory::kWorkspace);
  forward_sum(ctx, logits, targets, static_cast<double*>(total->data()));
  ctx.device.copy_to_host(&sum, total->data(), sizeof(double));
  return static_cast<float>(sum / static_cast<double>(logits.numel() / logits.dim(logits.ndim() - 1)));
}

Tensor CrossEntropyLoss::backward(Context& ctx, float scale) {
  if (!logits_.defined()) throw std::logic_error("CrossEntropyLoss::backward without a training forward");
  return backward_mean_over(ctx, scale, logits_.numel() / logits_.dim(logits_.ndim() - 1));
}

Tensor CrossEntropyLoss::backward_mean_over(Context& ctx, float scale, std::int64_t terms) {
  if (!logits_.defined()) throw std::logic_error("CrossEntropyLoss::backward without a training forward");
  const std::int64_t vocab = logits_.dim(logits_.ndim() - 1), rows = logits_.numel() / vocab;
  with_element_type(logits_.dtype(), "CrossEntropyLoss::backward", [&]<typename T>() {
    const float dloss = scale / static_cast<float>(terms);
    if (tp_) {
      ctx.device.kernels().cross_entropy_shard_backward(logits_.data_as<T>(), logits_.data_as<T>(),
                                                        lse_.data_as<float>(), targets_.data_as<std::int32_t>(), dloss,
                                                        rows, vocab, first_);
    } else {
      ctx.device.kernels().cross_entropy_backward(logits_.data_as<T>(), logits_.data_as<T>(), lse_.data_as<float>(),
                                                  targets_.data_as<std::int32_t>(), dloss, rows, vocab);
    }
  });
  Tensor dlogits = logits_;
  logits_ = Tensor();
  targets_ = Tensor();
  lse_ = Tensor();
  return dlogits;
}

}  // namespace tessera
