// Module: a piece of a model with explicit forward and backward (no autograd tape).
//
// Contract:
// - forward(ctx, x) returns the output and, when ctx.training, keeps what backward needs;
//   backward(ctx, dy) returns dx and ACCUMULATES into its parameters' grads, then drops what
//   forward kept. Calls pair up: one backward per training forward, in reverse order.
// - Parameters are declared with register_parameter (shape and init only); materialize_parameters()
//   or a sharding engine gives them storage later, so a large model is never built in full by
//   accident.
// - Children live in named slots; a wrapper (activation checkpointing, sharded units) can replace
//   a child in place with wrap_child(), and the parent keeps calling it through its slot.
// - A parent calls a child only through its slot (`slot->forward(ctx, x)`, `slot->backward(ctx, dy)`)
//   and keeps the `ModuleSlot&` that register_child returns, never a `Module*` or `Linear*` taken
//   from it: an engine puts a wrapper in the slot that gathers the child's parameters and reduces
//   its gradients, and a call past the wrapper skips both. Engines detect such a call at the first
//   parameter it reads (MissingParameterStorage, below) and name the module.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/model/context.hpp"
#include "tessera/model/parameter.hpp"
#include "tessera/runtime/tensor.hpp"

namespace tessera {

class Module;

// A child module owned by its parent, callable through a stable slot.
struct ModuleSlot {
  std::string name;
  std::unique_ptr<Module> module;

  Module* operator->() const { return module.get(); }
  Module& operator*() const { return *module; }
};

struct NamedParameter {
  std::string name;  // full dotted name, e.g. "h.3.attn.qkv.weight"
  Parameter* parameter;
};

struct NamedModule {
  std::string name;  // full dotted name, "" for the root
  Module* module;
};

class Module {
 public:
  virtual ~Module() = default;
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  virtual std::string type_name() const = 0;  // "Linear", "TransformerBlock", ...
  virtual Tensor forward(Context& ctx, const Tensor& x) = 0;
  virtual Tensor backward(Context& ctx, Tensor dy) = 0;

  // Drops every tensor kept for backward, in this module and its children.
  virtual void clear_saved();

  // Parameters this module uses but another module owns (tied weights), e.g. the LM head's use
  // of the token embedding. Engines gather their owner's storage before running this module.
  virtual std::vector<Parameter*> tied_parameters() { return {}; }

  std::vector<NamedParameter> named_parameters(const std::string& prefix = "");
  std::vector<NamedModule> named_modules(const std::string& prefix = "");
  std::vector<Parameter*> parameters();
  std::int64_t parameter_count();
  const std::deque<ModuleSlot>& children() const { return children_; }
  const std::vector<Parameter*>& own_parameters() const { return own_parameters_; }

  // Replaces the child in slot `name` by wrap(old child). Returns the new child.
  Module& wrap_child(const std::string& name,
                     const std::function<std::unique_ptr<Module>(std::unique_ptr<Module>)>& wrap);

 protected:
  Parameter& register_parameter(std::string name, Shape shape, ParameterInit init, bool decay);
  // A tensor-parallel piece of a parameter of `full_shape` (its local shape from `slice`).
  Parameter& register_parameter(std::string name, const Shape& full_shape, ParameterInit init, bool decay,
                                TensorSlice slice);
  ModuleSlot& register_child(std::string name, std::unique_ptr<Module> child);
  // Drops this module's own saved tensors (clear_saved() calls it, then recurses into children).
  virtual void clear_own_saved() {}

 private:
  std::vector<std::unique_ptr<Parameter>> parameter_storage_;
  std::vector<Parameter*> own_parameters_;
  std::deque<ModuleSlot> children_;  // deque: slots never move, so references to them stay valid
};

// "prefix.name", or whichever of the two is not empty: how full module and parameter names are
// built ("h.3" + "attn" = "h.3.attn"; a child with an empty name adds no segment).
std::string join_module_name(const std::string& prefix, const std::string& name);

// Allocates every parameter of `root` on `device` (one tensor each, category kParameters) and fills
// it from its init rule with a generator seeded by (seed, full name): the values do not depend on
// how parameters are laid out or sharded.
void materialize_parameters(Module& root, Device& device, std::uint64_t seed);

// Fills `out` (numel of the parameter) with its initial values for (seed, full_name).
void initial_values(const Parameter& parameter, const std::string& full_name, std::uint64_t seed,
                    std::vector<float>& out);
// The initial values [first, first + out.size()) of the parameter, the same as those elements of
// initial_values' (a normal init skips the generator past the values before `first`).
void initial_values(const Parameter& parameter, const std::string& full_name, std::uint64_t seed, std::span<float> out,
                    std::int64_t first);

// Allocates a zeroed f32 grad (category kGradients) for each parameter that has none.
void allocate_gradients(Module& root, Device& device);
// Zeroes every allocated grad.
void zero_gradients(Module& root);

// What require_value and require_grad throw for a parameter whose value or grad is not bound: a
// std::runtime_error that also carries the parameter, so an engine that left it unbound on purpose
// (its unit is not between its hooks) can say which module was called past its slot.
class MissingParameterStorage : public std::runtime_error {
 public:
  MissingParameterStorage(const Parameter& parameter, const std::string& message)
      : std::runtime_error(message), parameter_(&parameter) {}
  const Parameter& parameter() const { return *parameter_; }

 private:
  const Parameter* parameter_;
};

// Throw MissingParameterStorage naming the parameter when its value or grad is not bound. Modules
// read their parameters through these at every call (never a cached pointer).
const Tensor& require_value(const Parameter& p);
Tensor& require_grad(Parameter& p);

}  // namespace tessera

namespace tessera {

// A new tensor for a forward output or an activation gradient (category kActivations), in the
// module's compute dtype (its parameters' dtype, f32 or bf16: what the engine bound them as).
inline Tensor new_activation(Context& ctx, Shape shape, DType dtype) {
  return Tensor::empty(ctx.device, std::move(shape), dtype, MemoryCategory::kActivations);
}

// A new f32 tensor of statistics kept for backward (LayerNorm's mean and rstd, attention's and the
// loss's log-sum-exp), category kActivations: f32 whatever the compute dtype.
inline Tensor new_statistics(Context& ctx, Shape shape) {
  return Tensor::empty(ctx.device, std::move(shape), DType::kF32, MemoryCategory::kActivations);
}

// Throws std::invalid_argument "<module>: expected <what>, got <shape>" unless `ok`.
void check_input(bool ok, const std::string& module, const std::string& what, const Tensor& x);

// "bf16 (..., 384)": how check_input's `what` names a tensor of `dtype` whose last dimension is `last`.
std::string rows_of(DType dtype, std::int64_t last);

}  // namespace tessera
