// Embedding forward/backward through the device's embedding kernels.
#include "tessera/model/modules/embedding.hpp"

#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {

Embedding::Embedding(std::int64_t vocab_size, std::int64_t max_seq_len, std::int64_t channels, float init_std,
                     std::shared_ptr<TensorParallel> tp)
    : tp_(std::move(tp)),
      vocab_(vocab_size),
      max_seq_len_(max_seq_len),
      channels_(channels),
      wte_(register_parameter("wte", {vocab_size, channels}, ParameterInit::normal(init_std), true,
                              tp_ ? tp_->split(0, {vocab_size}) : TensorSlice{})) {
  if (max_seq_len > 0) {
    wpe_ = &register_parameter("wpe", {max_seq_len, channels}, ParameterInit::normal(init_std), true);
  }
}

Tensor Embedding::forward(Context& ctx, const Tensor& tokens) {
  check_input(tokens.dtype() == DType::kI32 && tokens.ndim() == 2 && (wpe_ == nullptr || tokens.dim(1) <= max_seq_len_),
              "Embedding", wpe_ == nullptr ? "i32 (B, T)" : "i32 (B, T<=" + std::to_string(max_seq_len_) + ")", tokens);
  const std::int64_t b = tokens.dim(0), t = tokens.dim(1);
  const DType dtype = require_value(wte_).dtype();
  Tensor x = new_activation(ctx, {b, t, channels_}, dtype);
  if (tp_) {
    tp_->set_token_shape(b, t, ctx.training);
    const std::int64_t first = piece_start(vocab_, tp_->size(), tp_->rank()), rows = wte_.shape[0];
    with_element_type(dtype, "Embedding", [&]<typename T>() {
      ctx.device.kernels().embedding_shard_forward(
          x.data_as<T>(), tokens.data_as<std::int32_t>(), require_value(wte_).data_as<T>(),
          wpe_ != nullptr && tp_->rank() == 0 ? require_value(*wpe_).data_as<T>() : nullptr, b, t, channels_, first,
          rows, vocab_);
    });
    x = tp_->exit(ctx, std::move(x));
  } else {
    with_element_type(dtype, "Embedding", [&]<typename T>() {
      ctx.device.kernels().embedding_forward(
          x.data_as<T>(), tokens.data_as<std::int32_t>(), require_value(wte_).data_as<T>(),
          wpe_ != nullptr ? require_value(*wpe_).data_as<T>() : nullptr, b, t, channels_, vocab_);
    });
  }
  if (ctx.training) tokens_ = tokens;
  return x;
}

Tensor Embedding::backward(Context& ctx, Tensor dy) {
  check_input(tokens_.defined(), "Embedding::backward", "a preceding training forward", dy);
  check_input(dy.dtype() == require_grad(wte_).dtype(), "Embedding::backward",
              std::string(dtype_name(require_grad(wte_).dtype())) + " (B, T, C)", dy);
  // Every rank adds the positions' gradient from the whole (gathered) dy: wpe stays the same on all.
  const Tensor whole = exit_region_backward(tp_.get(), ctx, dy);
  with_element_type(dy.dtype(), "Embedding::backward", [&]<typename T>() {
    T* dwpe = wpe_ != nullptr ? require_grad(*wpe_).data_as<T>() : nullptr;
    if (tp_) {
      ctx.device.kernels().embedding_shard_backward(
          require_grad(wte_).data_as<T>(), dwpe, whole.data_as<T>(), tokens_.data_as<std::int32_t>(), tokens_.dim(0),
          tokens_.dim(1), channels_, piece_start(vocab_, tp_->size(), tp_->rank()), wte_.shape[0], vocab_);
    } else {
      ctx.device.kernels().embedding_backward(require_grad(wte_).data_as<T>(), dwpe, whole.data_as<T>(),
                                              tokens_.data_as<std::int32_t>(), tokens_.dim(0), tokens_.dim(1),
                                              channels_, vocab_);
    }
  });
  tokens_ = Tensor();
  return Tensor();
}

}  // namespace tessera
