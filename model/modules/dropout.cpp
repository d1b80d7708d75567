// Dropout: the key of each training forward from (stream, counter), the mask applied by the Kernels'
// dropout_apply forward on x and backward on dy.
#include "tessera/model/modules/dropout.hpp"

#include <stdexcept>

#include "tessera/core/random.hpp"
#include "tessera/core/splitmix64.hpp"
#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {
namespace {

Tensor apply_mask(Context& ctx, const Tensor& x, const DropoutMask& mask, const char* who) {
  Tensor y = new_activation(ctx, x.shape(), x.dtype());
  with_element_type(x.dtype(), who, [&]<typename T>() {
    ctx.device.kernels().dropout_apply(y.data_as<T>(), x.data_as<T>(), x.numel(), mask);
  });
  return y;
}

}  // namespace

Dropout::Dropout(float p) : p_(p) {
  if (!(p >= 0.0f && p < 1.0f)) {
    throw std::invalid_argument("Dropout: p = " + std::to_string(p) +
                                ": the drop probability must be in [0, 1) (0 turns dropout off)");
  }
}

void Dropout::seed(std::uint64_t seed, const std::string& full_name, std::uint64_t counter) {
  stream_ = detail::mix64(seed ^ hash_string(full_name));
  counter_ = counter;
  seeded_ = true;
}

DropoutMask Dropout::next_mask() const {
  return dropout_mask(detail::mix64(stream_ + (counter_ + 1) * detail::SplitMix64::kGamma), p_);
}

Tensor Dropout::forward(Context& ctx, const Tensor& x) {
  if (!ctx.training) return x;
  check_input(x.defined() && is_compute_dtype(x.dtype()), "Dropout", "an f32 or bf16 tensor", x);
  pending_ = true;
  shape_ = x.shape();
  if (p_ == 0.0f) return x;
  if (!seeded_) {
    throw std::logic_error(
        "Dropout: no mask seed: call seed_dropout(model, seed) on the model before training (the masks are a "
        "function of the seed, each Dropout's full name and its counter)");
  }
  mask_ = next_mask();
  return apply_mask(ctx, x, mask_, "Dropout");
}

Tensor Dropout::backward(Context& ctx, Tensor dy) {
  check_input(pending_, "Dropout::backward", "a preceding training forward", dy);
  check_input(dy.shape() == shape_ && is_compute_dtype(dy.dtype()), "Dropout::backward",
              "a tensor of shape " + shape_string(shape_), dy);
  pending_ = false;
  ++counter_;
  if (p_ == 0.0f) return dy;
  return apply_mask(ctx, dy, mask_, "Dropout::backward");
}

int seed_dropout(Module& root, std::uint64_t seed, std::uint64_t counter) {
  int seeded = 0;
  for (const NamedModule& nm : root.named_modules()) {
    if (auto* dropout = dynamic_cast<Dropout*>(nm.module)) {
      dropout->seed(seed, nm.name, counter);
      ++seeded;
    }
  }
  return seeded;
}

}  // namespace tessera
