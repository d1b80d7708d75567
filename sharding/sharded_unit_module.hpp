// ShardedUnitModule: the wrapper ShardedEngine puts in place of a unit's module (or of a module
// using tied weights). Around the inner module's forward and backward it asks the engine to gather
// the units it needs and to reduce their gradients afterwards. The inner module is a child with an
// empty name, so parameter names are unchanged ("h.3.attn.qkv.weight").
#pragma once

#include <memory>
#include <vector>

#include "runtime/module.hpp"

namespace tessera {

class ShardedEngine;

class ShardedUnitModule final : public Module {
 public:
  ShardedUnitModule(std::unique_ptr<Module> inner, ShardedEngine& engine, std::vector<int> units);

  std::string type_name() const override { return "ShardedUnit"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;
  std::vector<Parameter*> tied_parameters() override { return inner_->tied_parameters(); }

  Module& inner() { return *inner_.module; }
  // Gives the inner module back (the wrapper is left empty).
  std::unique_ptr<Module> release_inner() { return std::move(inner_.module); }

 private:
  ModuleSlot& inner_;
  ShardedEngine& engine_;
  std::vector<int> units_;
};

}  // namespace tessera
