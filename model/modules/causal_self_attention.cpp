// CausalSelfAttention forward/backward: two Linear children around the attention kernels.
#include "tessera/model/modules/causal_self_attention.hpp"

#include <stdexcept>

#include "tessera/model/modules/linear.hpp"
#include "tessera/model/modules/linear_recompute.hpp"
#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/storage.hpp"

namespace tessera {

namespace {

std::int64_t checked_heads(std::int64_t channels, std::int64_t heads) {
  if (heads <= 0 || channels % heads != 0) {
    throw std::invalid_argument("CausalSelfAttention: channels " + std::to_string(channels) +
                                " must be divisible by heads " + std::to_string(heads));
  }
  return heads;
}

std::int64_t checked_kv_heads(std::int64_t channels, std::int64_t heads, const RotaryAttentionOptions& rotary) {
  const std::int64_t kv = rotary.kv_heads > 0 ? rotary.kv_heads : heads;
  if (heads <= 0 || channels % heads != 0 || (channels / heads) % 2 != 0 || heads % kv != 0) {
    throw std::invalid_argument("CausalSelfAttention: rotary attention needs channels " + std::to_string(channels) +
                                " divisible by heads " + std::to_string(heads) + " into an even head size, and " +
                                std::to_string(kv) + " key/value heads dividing the heads");
  }
  return kv;
}

// The heads one rank computes: all of them, or the group's share.
std::int64_t local_count(const TensorParallel* tp, std::int64_t count, const char* what) {
  return tp ? tp->divided(count, what) : count;
}

// The qkv projection of `segments` output features (q, k, v blocks) from `channels`.
std::unique_ptr<Linear> qkv_layer(std::int64_t channels, const std::vector<std::int64_t>& segments, bool bias,
                                  float init_std, const TensorParallel* tp) {
  if (tp) return Linear::column_parallel(channels, segments, bias, init_std, *tp);
  return std::make_unique<Linear>(channels, segments[0] + segments[1] + segments[2], bias, init_std);
}

std::unique_ptr<Linear> proj_layer(std::int64_t channels, bool bias, float init_std, const TensorParallel* tp) {
  if (tp) return Linear::row_parallel(channels, channels, bias, init_std, *tp);
  return std::make_unique<Linear>(channels, channels, bias, init_std);
}

}  // namespace

CausalSelfAttention::CausalSelfAttention(std::int64_t channels, std::int64_t heads, float init_std, float proj_init_std,
                                         std::shared_ptr<const TensorParallel> tp)
    : tp_(std::move(tp)),
      channels_(channels),
      heads_(local_count(tp_.get(), checked_heads(channels, heads), "attention heads")),
      kv_heads_(heads_),
      width_(heads_ * (channels / heads)),
      qkv_(register_child("qkv", qkv_layer(channels, {channels, channels, channels}, true, init_std, tp_.get()))),
      proj_(register_child("proj", proj_layer(channels, true, proj_init_std, tp_.get()))) {}

CausalSelfAttention::CausalSelfAttention(std::int64_t channels, std::int64_t heads, float init_std, float proj_init_std,
                                         const RotaryAttentionOptions& rotary, std::shared_ptr<const TensorParallel> tp)
    : tp_(std::move(tp)),
      channels_(channels),
      heads_(local_count(tp_.get(), heads, "attention heads")),
      rotary_(true),
      kv_heads_(local_count(tp_.get(), checked_kv_heads(channels, heads, rotary), "key/value heads")),
      theta_(rotary.theta),
      width_(heads_ * (channels / heads)),
      qkv_(register_child("qkv", qkv_layer(channels,
                                           {channels, checked_kv_heads(channels, heads, rotary) * (channels / heads),
                                            checked_kv_heads(channels, heads, rotary) * (channels / heads)},
                                           false, init_std, tp_.get()))),
      proj_(register_child("proj", proj_layer(channels, false, proj_init_std, tp_.get()))) {}

namespace {

// The scratch the device's attention kernels take at this shape (kernel scratch, freed after the
// call); null when they need none.
std::shared_ptr<Storage> attention_scratch(Context& ctx, std::int64_t b, std::int64_t t, std::int64_t c,
                                           std::int64_t nh, DType dtype) {
  const std::size_t bytes = ctx.device.kernels().attention_scratch_bytes(b, t, c, nh, dtype);
  return bytes == 0 ? nullptr : Storage::allocate(ctx.device, bytes, MemoryCategory::kWorkspace);
}

void* data_of(const std::shared_ptr<Storage>& storage) { return storage ? storage->data() : nullptr; }

}  // namespace

void CausalSelfAttention::clear_own_saved() {
  rows_ = Tensor();
  qkv_out_ = Tensor();
  att_ = Tensor();
  lse_ = Tensor();
}

Tensor CausalSelfAttention::forward(Context& ctx, const Tensor& x_in) {
  check_input(x_in.ndim() == 3 && x_in.dim(2) == channels_ && is_compute_dtype(x_in.dtype()), "CausalSelfAttention",
              "f32 or bf16 (B, T, " + std::to_string(channels_) + ")", x_in);
  const Tensor x = enter_region(tp_.get(), ctx, x_in);  // (B,T,C): the whole rows
  const std::int64_t b = x.dim(0), t = x.dim(1), hs = width_ / heads_;
  const DType dtype = x.dtype();
  // kElementwise: the qkv layer keeps nothing (backward gets x again); sequence parallel: nor does
  // it here, this module keeps the rows and gathers them again.
  const bool rows = recompute_ == RecomputeMode::kKeepAll && keeps_rows(tp_.get(), ctx) && plain_linear(qkv_);
  Context qkv_ctx = ctx;
  if (recompute_ == RecomputeMode::kElementwise || rows) qkv_ctx.training = false;
  Tensor qkv = qkv_->forward(qkv_ctx, x);
  if (rotary_) {
    Tensor rotated = new_activation(ctx, {b, t, 3 * width_}, dtype);
    with_element_type(dtype, "CausalSelfAttention", [&]<typename T>() {
      ctx.device.kernels().rotary_qkv_forward(rotated.data_as<T>(), qkv.data_as<T>(), b, t, heads_, kv_heads_, hs,
                                              theta_);
    });
    qkv = std::move(rotated);
  }
  Tensor lse = new_statistics(ctx, {b, heads_, t});
  Tensor att = new_activation(ctx, {b, t, width_}, dtype);
  const std::shared_ptr<Storage> scratch = attention_scratch(ctx, b, t, width_, heads_, dtype);
  with_element_type(dtype, "CausalSelfAttention", [&]<typename T>() {
    ctx.device.kernels().attention_forward(att.data_as<T>(), lse.data_as<float>(), qkv.data_as<T>(), b, t, width_,
                                           heads_, data_of(scratch));
  });
  if (ctx.training) {
    qkv_out_ = qkv;
    att_ = att;
    lse_ = lse;
    if (rows) rows_ = x_in;
  }
  lse = Tensor();
  return exit_region(tp_.get(), ctx, proj_->forward(ctx, att));
}

Tensor CausalSelfAttention::backward(Context& ctx, Tensor dy) {
  if (recompute_ == RecomputeMode::kElementwise) {
    throw std::logic_error(
        "CausalSelfAttention::backward: in elementwise-recompute mode the caller passes the "
        "input again: call backward_with_input(ctx, dy, x)");
  }
  check_input(qkv_out_.defined(), "CausalSelfAttention::backward", "a preceding training forward", dy);
  const Tensor rows = rows_;  // attention_grad drops what forward kept
  Tensor dqkv = attention_grad(ctx, proj_->backward(ctx, exit_region_backward(tp_.get(), ctx, dy)));
  if (rows.defined()) {
    return enter_region_backward(tp_.get(), ctx, linear_backward_with_input(ctx, *qkv_, dqkv, tp_->enter(ctx, rows)));
  }
  return enter_region_backward(tp_.get(), ctx, qkv_->backward(ctx, dqkv));
}

Tensor CausalSelfAttention::backward_with_input(Context& ctx, const Tensor& dy, const Tensor& x) {
  if (recompute_ == RecomputeMode::kKeepAll) return backward(ctx, dy);
  check_input(qkv_out_.defined(), "CausalSelfAttention::backward", "a preceding training forward", dy);
  Tensor dqkv = attention_grad(ctx, proj_->backward(ctx, exit_region_backward(tp_.get(), ctx, dy)));
  return enter_region_backward(tp_.get(), ctx,
                               linear_backward_with_input(ctx, *qkv_, dqkv, enter_region(tp_.get(), ctx, x)));
}

Tensor CausalSelfAttention::attention_grad(Context& ctx, const Tensor& datt) {
  const std::int64_t b = qkv_out_.dim(0), t = qkv_out_.dim(1), hs = width_ / heads_;
  const DType dtype = qkv_out_.dtype();
  check_input(datt.dtype() == dtype, "CausalSelfAttention::backward",
              std::string(dtype_name(dtype)) + " " + shape_string(att_.shape()), datt);
  Tensor dqkv = new_activation(ctx, qkv_out_.shape(), dtype);
  {
    Tensor delta = Tensor::empty(ctx.device, {b, heads_, t}, DType::kF32, MemoryCategory::kWorkspace);
    const std::shared_ptr<Storage> scratch = attention_scratch(ctx, b, t, width_, heads_, dtype);
    with_element_type(dtype, "CausalSelfAttention::backward", [&]<typename T>() {
      ctx.device.kernels().attention_backward(dqkv.data_as<T>(), delta.data_as<float>(), datt.data_as<T>(),
                                              qkv_out_.data_as<T>(), att_.data_as<T>(), lse_.data_as<float>(), b, t,
                                              width_, heads_, data_of(scratch));
    });
  }
  clear_own_saved();
  if (!rotary_) return dqkv;
  Tensor dproj = new_activation(ctx, {b, t, width_ + 2 * kv_heads_ * hs}, dtype);
  with_element_type(dtype, "CausalSelfAttention::backward", [&]<typename T>() {
    ctx.device.kernels().rotary_qkv_backward(dproj.data_as<T>(), dqkv.data_as<T>(), b, t, heads_, kv_heads_, hs,
                                             theta_);
  });
  return dproj;
}

}  // namespace tessera
