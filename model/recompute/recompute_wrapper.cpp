// RecomputeWrapper: forward keeps the input only; backward recomputes, then differentiates.
#include "tessera/model/recompute/recompute_wrapper.hpp"

#include <stdexcept>

namespace tessera {

RecomputeWrapper::RecomputeWrapper(std::unique_ptr<Module> inner)
    : inner_(register_child("", [&inner]() {
        if (!inner) throw std::invalid_argument("RecomputeWrapper: the module to wrap is null");
        return std::move(inner);
      }())) {}

Tensor RecomputeWrapper::forward(Context& ctx, const Tensor& x) {
  Tensor y = inner_->forward(ctx, x);
  if (ctx.training) {
    inner_->clear_saved();
    input_ = x;
  }
  return y;
}

Tensor RecomputeWrapper::backward(Context& ctx, Tensor dy) {
  check_input(input_.defined(), "RecomputeWrapper(" + inner_->type_name() + ")::backward",
              "a preceding training forward", dy);
  Context recompute = ctx;
  recompute.training = true;
  inner_->forward(recompute, input_);  // keeps what backward needs; the output itself is not needed
  input_ = Tensor();
  return inner_->backward(ctx, std::move(dy));
}

}  // namespace tessera
