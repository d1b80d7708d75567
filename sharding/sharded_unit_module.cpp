// ShardedUnitModule: hooks around the wrapped module.
#include "tessera/sharding/sharded_unit_module.hpp"

#include <string>
#include <utility>
#include <vector>

namespace tessera {

ShardedUnitModule::ShardedUnitModule(std::unique_ptr<Module> inner, UnitHooks& hooks, UnitUse use)
    : inner_(register_child("", std::move(inner))), hooks_(hooks), use_(std::move(use)) {}

Tensor ShardedUnitModule::forward(Context& ctx, const Tensor& x) {
  hooks_.before_forward(use_);
  Tensor y = inner_->forward(ctx, x);
  hooks_.after_forward(use_);
  return y;
}

Tensor ShardedUnitModule::backward(Context& ctx, Tensor dy) {
  hooks_.before_backward(use_);
  Tensor dx = inner_->backward(ctx, std::move(dy));
  hooks_.after_backward(use_);
  return dx;
}

void unwrap_sharded_units(Module& root) {
  // Collect first (unwrapping destroys wrappers the module list still points to), then unwrap the
  // innermost first so every parent recorded is still alive when its turn comes.
  std::vector<std::pair<Module*, std::string>> wrapped;
  for (const NamedModule& nm : root.named_modules()) {
    for (const ModuleSlot& slot : nm.module->children()) {
      if (dynamic_cast<ShardedUnitModule*>(slot.module.get()) != nullptr) wrapped.emplace_back(nm.module, slot.name);
    }
  }
  for (auto it = wrapped.rbegin(); it != wrapped.rend(); ++it) {
    it->first->wrap_child(it->second, [](std::unique_ptr<Module> wrapper) {
      return static_cast<ShardedUnitModule&>(*wrapper).release_inner();
    });
  }
}

}  // namespace tessera
