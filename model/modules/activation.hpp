// Activation: an element-wise non-linearity as a module — Relu, Gelu (tanh approximation, GPT-2's)
// and Silu (x sigmoid(x)) — with its backward, through the device's Kernels table (relu_*, gelu_*,
// silu_* in runtime/kernel_ops_typed.hpp; formulas in runtime/math/). x (...) -> y (...) of x's
// dtype (f32 or bf16: the dtype of the layer before it, the model's compute dtype); bf16 is computed
// in f32 and rounded once per element. Forward keeps x for backward (when ctx.training); backward
// writes dx into a new tensor and leaves dy as it was (a Residual around it still reads dy).
#pragma once

#include <string>

#include "tessera/model/module.hpp"

namespace tessera {

enum class ActivationKind { kRelu, kGelu, kSilu };

// "ReLU", "GELU", "SiLU".
const char* activation_name(ActivationKind kind);

class Activation : public Module {
 public:
  explicit Activation(ActivationKind kind) : kind_(kind) {}

  std::string type_name() const override { return activation_name(kind_); }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;

  ActivationKind kind() const { return kind_; }

 protected:
  void clear_own_saved() override { input_ = Tensor(); }

 private:
  ActivationKind kind_;
  Tensor input_;  // (...) kept for backward
};

// relu(x) = max(x, 0); relu'(0) = 0.
class Relu final : public Activation {
 public:
  Relu() : Activation(ActivationKind::kRelu) {}
};

// gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
class Gelu final : public Activation {
 public:
  Gelu() : Activation(ActivationKind::kGelu) {}
};

// silu(x) = x / (1 + exp(-x)).
class Silu final : public Activation {
 public:
  Silu() : Activation(ActivationKind::kSilu) {}
};

}  // namespace tessera
