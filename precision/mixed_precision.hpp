// MixedPrecision: which dtype each kind of tensor is stored, computed or communicated in.
// Master weights and optimizer state are always f32, and gradients are accumulated across
// micro-batches in f32. compute_dtype is what the modules run in: the compute copy of each unit's
// parameters, the activations kept for backward, the activation gradients and the weight gradients
// one micro-batch produces (statistics — norms' mean and rstd, softmax log-sum-exp, losses — stay
// f32). reduce_dtype only sets what travels over the wire.
#pragma once

#include <string>

#include "tessera/precision/dtype.hpp"

namespace tessera {

struct MixedPrecision {
  DType param_dtype = DType::kF32;    // stored/gathered parameters (f32, bf16 or f16)
  DType reduce_dtype = DType::kF32;   // gradient collectives (f32, bf16 or f16)
  DType compute_dtype = DType::kF32;  // compute copies, activations, micro-batch gradients (f32 or bf16)

  // Throws SettingError ("precision.param_dtype", "precision.reduce_dtype", "precision.compute_dtype")
  // for a dtype that setting does not take.
  void validate() const;
  std::string to_string() const;  // "param bf16, reduce bf16, compute bf16"
};

}  // namespace tessera
