// ShardedUnitModule: the wrapper put in place of a unit's module (or of a module using tied
// weights). Around the inner module's forward and backward it calls the UnitHooks with its
// UnitUse, so the units it needs are gathered before and their gradients reduced after. The inner
// module is a child with an empty name, so parameter names are unchanged ("h.3.attn.qkv.weight").
#pragma once

#include <memory>

#include "tessera/model/module.hpp"
#include "tessera/sharding/unit_hooks.hpp"

namespace tessera {

class ShardedUnitModule final : public Module {
 public:
  ShardedUnitModule(std::unique_ptr<Module> inner, UnitHooks& hooks, UnitUse use);

  std::string type_name() const override { return "ShardedUnit"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;
  std::vector<Parameter*> tied_parameters() override { return inner_->tied_parameters(); }

  Module& inner() { return *inner_.module; }
  const UnitUse& use() const { return use_; }
  // Gives the inner module back (the wrapper is left empty).
  std::unique_ptr<Module> release_inner() { return std::move(inner_.module); }

 private:
  ModuleSlot& inner_;
  UnitHooks& hooks_;
  UnitUse use_;
};

// Puts every ShardedUnitModule under `root` back to its inner module.
void unwrap_sharded_units(Module& root);

}  // namespace tessera
