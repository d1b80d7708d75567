// Parameter: one named weight of a Module, with its gradient and how it is initialised.
// `value` and `grad` are plain Tensors, so an engine may rebind them to views inside flat
// (sharded) buffers; modules read them at every call and never cache their pointers.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/model/parallel/tensor_slice.hpp"
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
  Parameter(std::string local_name, Shape param_shape, ParameterInit param_init, bool weight_decay,
            TensorSlice tensor_slice = {})
      : name(std::move(local_name)),
        shape(std::move(param_shape)),
        init(param_init),
        decay(weight_decay),
        slice(std::move(tensor_slice)) {}

  std::string name;    // local name inside its module ("weight")
  Shape shape;         // the shape this rank holds: the full shape unless split by tensor parallelism
  ParameterInit init;  // initial values are a function of (seed, full name) only: a tensor-parallel
                       // piece holds the values of the global tensor's elements it covers
  bool decay;          // AdamW weight decay applies (matrices: yes; biases, norms: no)
  TensorSlice slice;   // the piece of the global tensor held (parts 1: all of it; tensor_slice.hpp)
  // Stored, computed and updated in f32 whatever the run's dtypes (a norm's gain and bias: a gain
  // near 1 moves by about the learning rate a step, below bf16's spacing of 2^-8 there, so a bf16
  // copy would stay put for steps and then jump). The sharding engine keeps such parameters in a
  // unit of their own (partition_units); the norms read them in f32 beside bf16 activations.
  bool keep_f32 = false;
  Tensor value;        // (shape) f32; undefined until materialised
  Tensor grad;         // (shape) f32 accumulated gradient; undefined until allocated

  std::int64_t numel() const { return shape_numel(shape); }
  Shape full_shape() const { return global_shape(shape, slice); }  // the global tensor's shape
};

}  // namespace tessera
