// Residual: y = x + inner(x), with inner's output of x's shape and dtype; backward returns
// dx = dy + inner'(dy) (the skip path's gradient added to the inner module's), through the Kernels'
// add. The inner module is this module's child under the empty name, as a wrapper's is: parameter
// names do not change when a module is wrapped in a Residual ("2.weight" stays "2.weight"), and an
// engine wraps the Residual as a whole. Keeps no tensor of its own (inner keeps what it needs).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tessera/model/module.hpp"

namespace tessera {

class Residual final : public Module {
 public:
  // Throws std::invalid_argument when inner is null.
  explicit Residual(std::unique_ptr<Module> inner);

  std::string type_name() const override { return "Residual"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;
  std::vector<Parameter*> tied_parameters() override { return inner_->tied_parameters(); }

  Module& inner() const { return *inner_; }

 private:
  ModuleSlot& inner_;
};

}  // namespace tessera
