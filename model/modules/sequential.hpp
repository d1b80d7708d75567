// Sequential: a container that runs its children in order — forward child 0, 1, ..., backward in
// reverse — so a model built from modules that each have a backward needs none of its own:
//
//   Sequential mlp(std::make_unique<Linear>(16, 64, true), std::make_unique<Relu>(),
//                  std::make_unique<Linear>(64, 16, true));
//
// Children live in slots named "0", "1", ... by position (or the name given to add()), so parameter
// names are "0.weight", "2.bias", ...; an engine (ShardedEngine's units, activation checkpointing)
// replaces a child in its slot and Sequential keeps calling it through the slot, hooks included.
// With no children, forward returns x and backward dy. Sequential keeps no tensor of its own.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tessera/model/module.hpp"

namespace tessera {

class Sequential final : public Module {
 public:
  Sequential() = default;
  // The modules in order, in slots "0", "1", ...
  template <typename... M>
  explicit Sequential(std::unique_ptr<M>... modules) {
    (add(std::move(modules)), ...);
  }

  // Appends `module` in a slot named `name` (empty: its position, "3"). A name must be new in this
  // Sequential and hold no '.' (the separator of full names); throws std::invalid_argument naming it.
  // Add every child before the model is materialised or wrapped by an engine.
  Sequential& add(std::unique_ptr<Module> module, std::string name = "");

  std::string type_name() const override { return "Sequential"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  Tensor backward(Context& ctx, Tensor dy) override;

  std::size_t size() const { return slots_.size(); }
  // The module in slot i (an engine's wrapper once the model is wrapped).
  Module& at(std::size_t i) const;
  const std::string& name_at(std::size_t i) const { return slots_.at(i)->name; }

 private:
  std::vector<ModuleSlot*> slots_;  // in order; the slots themselves never move (Module's deque)
};

}  // namespace tessera
