// Model-state bytes per rank in closed form: the ZeRO paper's accounting (Rajbhandari et al. 2020,
// "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", section 5) with Tessera's
// buffers. For Ψ parameters on a shard group of N ranks, with p, g bytes per stored parameter and
// gradient and K bytes of optimizer state per parameter:
//   stage 0: pΨ + gΨ + KΨ        stage 2: pΨ + (g + K)Ψ/N
//   stage 1: pΨ + gΨ + KΨ/N      stage 3: (p + g + K)Ψ/N
// AdamW keeps m and v in f32 (8 bytes) plus an f32 master copy (4 bytes) when parameters are not
// f32, so mixed precision has K = 12 and f32 training K = 8 (the f32 parameters are the master).
// Tessera accumulates gradients in f32 (g = 4); the paper's mixed-precision figure 2Ψ + 2Ψ + 12Ψ
// uses g = 2 (grad_dtype bf16/f16 here, a what-if for Tessera).
//
// Shards are whole elements: Ψ/N is rounded up (ceil(Ψ/N)), as the engine pads a unit to a
// multiple of N. The planner's per-unit figures (memory_plan) pad every unit separately.
#pragma once

#include <cstdint>
#include <string>

#include "precision/mixed_precision.hpp"
#include "sharding/sharding_config.hpp"

namespace tessera {

struct ModelStateBytes {
  std::int64_t parameters = 0;       // stored parameters (param dtype)
  std::int64_t gradients = 0;        // accumulated gradients (grad dtype)
  std::int64_t optimizer_state = 0;  // master copy (when param dtype != f32) + Adam m, v

  std::int64_t total() const { return parameters + gradients + optimizer_state; }
};

// Optimizer bytes per parameter K: 8 (m, v) + 4 (f32 master) when `param_dtype` is not f32.
std::int64_t adamw_state_bytes_per_parameter(DType param_dtype);

// Per-rank model state of `parameters` elements at `stage` on a shard group of `shard_ranks`.
ModelStateBytes model_state_bytes(std::int64_t parameters, const MixedPrecision& precision, DType grad_dtype,
                                  ZeroStage stage, int shard_ranks);

// The formula in the paper's notation, e.g. "2Ψ + 4Ψ/N + 12Ψ/N" (stage 2, bf16 params, f32 grads).
std::string model_state_formula(const MixedPrecision& precision, DType grad_dtype, ZeroStage stage);

}  // namespace tessera
