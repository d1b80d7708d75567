// The custom op of the custom_op example: squared ReLU, y = max(x, 0)^2 (Primer's activation), its
// math written once as TESSERA_HD functors (compiled for the CPU by the C++ compiler and for the GPU
// by nvcc), and a Module whose forward and backward run them with elementwise_map on whatever device
// the tensors live on.
#pragma once

#include <string>
#include <tessera/model/module.hpp>
#include <tessera/precision/host_device.hpp>
#include <tessera/runtime/elementwise_map.hpp>

// y = max(x, 0)^2
struct SquaredReluForward {
  TESSERA_HD float operator()(float x) const { return x > 0.0f ? x * x : 0.0f; }
};

// dx = 2 max(x, 0) dy
struct SquaredReluBackward {
  TESSERA_HD float operator()(float x, float dy) const { return x > 0.0f ? (x + x) * dy : 0.0f; }
};

// x (...) -> y (...) of x's dtype (f32 or bf16). Forward keeps x for backward.
class SquaredRelu final : public tessera::Module {
 public:
  std::string type_name() const override { return "SquaredRelu"; }

  tessera::Tensor forward(tessera::Context& ctx, const tessera::Tensor& x) override {
    tessera::Tensor y = tessera::new_activation(ctx, x.shape(), x.dtype());
    tessera::elementwise_map(ctx.device, SquaredReluForward{}, y, x);
    if (ctx.training) input_ = x;
    return y;
  }

  tessera::Tensor backward(tessera::Context& ctx, tessera::Tensor dy) override {
    tessera::check_input(input_.defined(), "SquaredRelu::backward", "a preceding training forward", dy);
    tessera::Tensor dx = tessera::new_activation(ctx, dy.shape(), dy.dtype());
    tessera::elementwise_map(ctx.device, SquaredReluBackward{}, dx, input_, dy);
    input_ = tessera::Tensor();
    return dx;
  }

 protected:
  void clear_own_saved() override { input_ = tessera::Tensor(); }

 private:
  tessera::Tensor input_;  // (...) kept for backward
};
