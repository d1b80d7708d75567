// Linear: y = x W^T + b over the last dimension. x (..., in) f32 -> y (..., out) f32.
#pragma once

#include "runtime/module.hpp"

namespace tessera {

class Linear final : public Module {
 public:
  // weight (out, in) ~ N(0, init_std^2), bias (out) zeros when `bias`.
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias, float init_std = 0.02f);

  std::string type_name() const override { return "Linear"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;

  std::int64_t in_features() const { return in_; }
  std::int64_t out_features() const { return out_; }

 protected:
  void clear_own_saved() override { input_ = Tensor(); }

 private:
  std::int64_t in_, out_;
  Parameter& weight_;
  Parameter* bias_ = nullptr;
  Tensor input_;  // (..., in) kept for backward
};

}  // namespace tessera
