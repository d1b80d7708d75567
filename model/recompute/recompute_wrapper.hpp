// RecomputeWrapper: activation checkpointing for any Module.
//
// forward runs the wrapped module as usual (in training mode it behaves exactly as unwrapped), then
// drops everything the module kept and keeps only a reference to its input (no copy). backward runs
// the wrapped forward again from that input, which keeps what backward needs, drops that output, and
// then runs the wrapped backward. Between forward and backward a wrapped module costs its input only.
//
// Names: the wrapped module is the wrapper's child under the empty name, so parameter and module
// names do not change ("h.3.attn.qkv.weight" stays "h.3.attn.qkv.weight" when h.3 is wrapped), and
// named_modules() lists the wrapper and the wrapped module under the same name, wrapper first.
// wrap_child("", ...) on the wrapper replaces the wrapped module.
//
// Recompute is bit-identical to the first forward: kernels are deterministic, and Dropout's mask
// depends on a counter that moves in backward, not forward (model/modules/dropout.hpp), so the
// second forward draws the first one's mask.
//
// Sharding: an engine that gathers a unit's parameters around the unit's backward, with this wrapper
// inside the unit, runs the recompute forward under that same gather (see
// docs/ACTIVATION_CHECKPOINTING.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tessera/model/module.hpp"

namespace tessera {

class RecomputeWrapper final : public Module {
 public:
  explicit RecomputeWrapper(std::unique_ptr<Module> inner);

  std::string type_name() const override { return "RecomputeWrapper"; }
  Tensor forward(Context& ctx, const Tensor& x) override;
  // Recomputes the wrapped forward (always in training mode), then returns the wrapped backward.
  Tensor backward(Context& ctx, Tensor dy) override;
  std::vector<Parameter*> tied_parameters() override { return inner_->tied_parameters(); }

  Module& inner() { return *inner_; }
  const Module& inner() const { return *inner_; }

 protected:
  void clear_own_saved() override { input_ = Tensor(); }

 private:
  ModuleSlot& inner_;
  Tensor input_;  // the wrapped module's forward input, shared with the caller
};

}  // namespace tessera
