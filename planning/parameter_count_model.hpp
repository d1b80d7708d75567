// ParameterCountModel: a model known only by its parameter count — one child module "model" holding
// one flat parameter of that many elements. The planner hands it to the engine to lay out model
// state (one unit, as the ZeRO paper counts it); it cannot run forward or backward.
#pragma once

#include <cstdint>

#include "tessera/model/module.hpp"

namespace tessera {

class ParameterCountModel final : public Module {
 public:
  explicit ParameterCountModel(std::int64_t parameters);

  std::string type_name() const override { return "ParameterCountModel"; }
  Tensor forward(Context& ctx, const Tensor& x) override;  // throws std::logic_error
  Tensor backward(Context& ctx, Tensor dy) override;       // throws std::logic_error
};

}  // namespace tessera
