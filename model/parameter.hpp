// Parameter: one named weight of a Module, with its gradient and how it is initialised.
// `value` and `grad` are plain Tensors, so an engine may rebind them to views inside flat
// (sharded) buffers; modules read them at every call and never cache their pointers.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/runtime/tensor.hpp"

namespace tessera {

struct ParameterInit {
  enum class Kind { kNormal, kZeros, kOnes };
  Kind kind = Kind::kNormal;
  float std = 0.02f;  // for kNormal: N(0, std^2)

  static ParameterInit normal(float std) { return {Kind::kNormal, std}; }
  static ParameterInit zeros() { return {Kind::kZeros, 0.0f}; }
  static ParameterInit ones() { return {Kind::kOnes, 0.0f}; }
};

struct Parameter {
  Parameter(std::string local_name, Shape param_shape, ParameterInit param_init, bool weight_decay)
      : name(std::move(local_name)), shape(std::move(param_shape)), init(param_init), decay(weight_decay) {}

  std::string name;    // local name inside its module ("weight")
  Shape shape;         // full (unsharded) shape
  ParameterInit init;  // initial values are a function of (seed, full name) only
  bool decay;          // AdamW weight decay applies (matrices: yes; biases, norms: no)
  Tensor value;        // (shape) f32; undefined until materialised
  Tensor grad;         // (shape) f32 accumulated gradient; undefined until allocated

  std::int64_t numel() const { return shape_numel(shape); }
};

}  // namespace tessera
