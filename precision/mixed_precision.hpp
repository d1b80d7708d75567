// MixedPrecision: which dtype each kind of tensor is stored or communicated in.
// Master weights and optimizer state are always f32; gradients are always accumulated in f32
// (never in bf16) — reduce_dtype only sets what travels over the wire. Activations are f32 on the
// CPU backend.
#pragma once

#include <string>

#include "tessera/precision/dtype.hpp"

namespace tessera {

struct MixedPrecision {
  DType param_dtype = DType::kF32;   // stored/gathered parameters (f32, bf16 or f16)
  DType reduce_dtype = DType::kF32;  // gradient collectives (f32, bf16 or f16)

  // Throws SettingError ("precision.param_dtype", "precision.reduce_dtype") for a non-float dtype.
  void validate() const;
  std::string to_string() const;  // "param bf16, reduce bf16"
};

}  // namespace tessera
