// Module bookkeeping: parameter and child registration, names, materialisation, gradients.
#include "tessera/model/module.hpp"

#include <stdexcept>

#include "tessera/core/random.hpp"

namespace tessera {
std::string join_module_name(const std::string& prefix, const std::string& name) {
  if (prefix.empty()) return name;
  if (name.empty()) return prefix;
  return prefix + "." + name;
}

void Module::clear_saved() {
  clear_own_saved();
  for (auto& child : children_) child->clear_saved();
}

std::vector<NamedParameter> Module::named_parameters(const std::string& prefix) {
  std::vector<NamedParameter> out;
  for (Parameter* p : own_parameters_) out.push_back({join_module_name(prefix, p->name), p});
  for (auto& child : children_) {
    auto sub = child->named_parameters(join_module_name(prefix, child.name));
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

std::vector<NamedModule> Module::named_modules(const std::string& prefix) {
  std::vector<NamedModule> out{{prefix, this}};
  for (auto& child : children_) {
    auto sub = child->named_modules(join_module_name(prefix, child.name));
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

std::vector<Parameter*> Module::parameters() {
  std::vector<Parameter*> out;
  for (auto& np : named_parameters()) out.push_back(np.parameter);
  return out;
}

std::int64_t Module::parameter_count() {
  std::int64_t n = 0;
  for (Parameter* p : parameters()) n += p->numel();
  return n;
}

Module& Module::wrap_child(const std::string& name,
                           const std::function<std::unique_ptr<Module>(std::unique_ptr<Module>)>& wrap) {
  for (auto& slot : children_) {
    if (slot.name == name) {
      slot.module = wrap(std::move(slot.module));
      if (!slot.module) throw std::invalid_argument("wrap_child: wrapper for '" + name + "' returned null");
      return *slot.module;
    }
  }
  throw std::invalid_argument(type_name() + " has no child named '" + name + "'");
}

Parameter& Module::register_parameter(std::string name, Shape shape, ParameterInit init, bool decay) {
  parameter_storage_.push_back(std::make_unique<Parameter>(std::move(name), std::move(shape), init, decay));
  own_parameters_.push_back(parameter_storage_.back().get());
  return *parameter_storage_.back();
}

Parameter& Module::register_parameter(std::string name, const Shape& full_shape, ParameterInit init, bool decay,
                                      TensorSlice slice) {
  Shape shape = local_shape(full_shape, slice);
  parameter_storage_.push_back(
      std::make_unique<Parameter>(std::move(name), std::move(shape), init, decay, std::move(slice)));
  own_parameters_.push_back(parameter_storage_.back().get());
  return *parameter_storage_.back();
}

ModuleSlot& Module::register_child(std::string name, std::unique_ptr<Module> child) {
  children_.push_back({std::move(name), std::move(child)});
  return children_.back();
}

void initial_values(const Parameter& parameter, const std::string& full_name, std::uint64_t seed, std::span<float> out,
                    std::int64_t first) {
  if (first < 0 || first + static_cast<std::int64_t>(out.size()) > parameter.numel()) {
    throw std::out_of_range("initial_values: elements [" + std::to_string(first) + ", " +
                            std::to_string(first + static_cast<std::int64_t>(out.size())) + ") of '" + full_name +
                            "', which has " + std::to_string(parameter.numel()));
  }
  switch (parameter.init.kind) {
    case ParameterInit::Kind::kZeros: std::fill(out.begin(), out.end(), 0.0f); return;
    case ParameterInit::Kind::kOnes: std::fill(out.begin(), out.end(), 1.0f); return;
    case ParameterInit::Kind::kNormal: {
      // The draws of the global tensor's elements, in its order: a tensor-parallel piece skips the
      // elements other ranks hold (their positions only increase with the local ones).
      Rng rng(seed ^ hash_string(full_name));
      const double std = parameter.init.std;
      std::int64_t drawn = 0;  // global elements drawn or skipped so far
      for_each_global_run(parameter.shape, parameter.slice, first, static_cast<std::int64_t>(out.size()),
                          [&](std::int64_t global_first, std::int64_t local_first, std::int64_t count) {
                            rng.discard_normals(static_cast<std::uint64_t>(global_first - drawn));
                            for (std::int64_t i = 0; i < count; ++i) {
                              out[static_cast<std::size_t>(local_first - first + i)] =
                                  static_cast<float>(rng.normal() * std);
                            }
                            drawn = global_first + count;
                          });
      return;
    }
  }
}

void initial_values(const Parameter& parameter, const std::string& full_name, std::uint64_t seed,
                    std::vector<float>& out) {
  out.resize(static_cast<std::size_t>(parameter.numel()));
  initial_values(parameter, full_name, seed, std::span<float>(out), 0);
}

void materialize_parameters(Module& root, Device& device, std::uint64_t seed) {
  std::vector<float> values;
  for (auto& [name, p] : root.named_parameters()) {
    initial_values(*p, name, seed, values);
    p->value = Tensor::from_host(device, values, p->shape, DType::kF32, MemoryCategory::kParameters);
  }
}

void allocate_gradients(Module& root, Device& device) {
  for (Parameter* p : root.parameters()) {
    if (!p->grad.defined()) p->grad = Tensor::zeros(device, p->shape, DType::kF32, MemoryCategory::kGradients);
  }
}

void zero_gradients(Module& root) {
  for (Parameter* p : root.parameters()) {
    if (p->grad.defined()) p->grad.zero_();
  }
}

const Tensor& require_value(const Parameter& p) {
  if (!p.value.defined()) {
    throw MissingParameterStorage(p, "parameter '" + p.name +
                                         "' has no storage: call materialize_parameters() "
                                         "or wrap the model in an engine before forward");
  }
  return p.value;
}

Tensor& require_grad(Parameter& p) {
  if (!p.grad.defined()) {
    throw MissingParameterStorage(p, "parameter '" + p.name +
                                         "' has no gradient buffer: call allocate_gradients() "
                                         "before backward");
  }
  return p.grad;
}

}  // namespace tessera

namespace tessera {

void check_input(bool ok, const std::string& module, const std::string& what, const Tensor& x) {
  if (!ok) {
    throw std::invalid_argument(module + ": expected " + what + ", got " + dtype_name(x.dtype()) + " " +
                                shape_string(x.shape()));
  }
}

std::string rows_of(DType dtype, std::int64_t last) {
  return std::string(dtype_name(dtype)) + " (..., " + std::to_string(last) + ")";
}

}  // namespace tessera
