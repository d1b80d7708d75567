// ShardedUnitModule: engine hooks around the wrapped module.
#include "sharding/sharded_unit_module.hpp"

#include "sharding/sharded_engine.hpp"

namespace tessera {

ShardedUnitModule::ShardedUnitModule(std::unique_ptr<Module> inner, ShardedEngine& engine, std::vector<int> units)
    : inner_(register_child("", std::move(inner))), engine_(engine), units_(std::move(units)) {}

Tensor ShardedUnitModule::forward(Context& ctx, const Tensor& x) {
  engine_.before_forward(units_);
  Tensor y = inner_->forward(ctx, x);
  engine_.after_forward(units_);
  return y;
}

Tensor ShardedUnitModule::backward(Context& ctx, Tensor dy) {
  engine_.before_backward(units_);
  Tensor dx = inner_->backward(ctx, std::move(dy));
  engine_.after_backward(units_);
  return dx;
}

}  // namespace tessera
