// Model-state bytes per rank in closed form: the ZeRO paper's accounting (Rajbhandari et al. 2020,
// "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models", section 5), with each
// term's extent (Ψ or Ψ/N) read from the engine's Placement table. For Ψ parameters on a shard
// group of N ranks, with p, g bytes per stored parameter and gradient and K bytes of optimizer
// state per parameter:
//   stage 0: pΨ + gΨ + KΨ        stage 2: pΨ + (g + K)Ψ/N
//   stage 1: pΨ + gΨ + KΨ/N      stage 3: (p + g + K)Ψ/N
// K is the optimizer's state (AdamW: m and v in f32, 8 bytes; 8-bit AdamW: 2 bytes plus 8 per
// block) plus an f32 master copy (4 bytes) unless the parameters are f32 and double as the master:
// mixed precision has K = 12, f32 training K = 8. Tessera accumulates gradients in f32 (g = 4); the paper's
// mixed-precision figure 2Ψ + 2Ψ + 12Ψ uses g = 2 (grad_dtype bf16/f16 here: arithmetic the engine does not run).
//
// Shards are whole elements: Ψ/N is rounded up (ceil(Ψ/N)), as the engine pads a unit to a
// multiple of N. The planner's per-unit figures (memory_plan) pad every unit separately.
#pragma once

#include <cstdint>
#include <string>

#include "tessera/model/optim/optimizer_state.hpp"
#include "tessera/precision/mixed_precision.hpp"
#include "tessera/sharding/placement.hpp"

namespace tessera {

struct ModelStateBytes {
  std::int64_t parameters = 0;       // stored parameters (param dtype)
  std::int64_t gradients = 0;        // accumulated gradients (grad dtype)
  std::int64_t optimizer_state = 0;  // master copy (when separate) + the optimizer's state

  std::int64_t total() const { return parameters + gradients + optimizer_state; }
};

// Bytes of an optimizer range of `count` elements under `placement`: the optimizer's state plus 4
// per element for a separate f32 master.
std::int64_t optimizer_range_bytes(const Placement& placement, const OptimizerConfig& optimizer, std::int64_t count);

// Per-rank model state of `parameters` elements at `stage` on a shard group of `shard_ranks`,
// wherever it lives (`offload` only decides whether f32 parameters double as the master: not when
// the optimizer range lives in another memory).
ModelStateBytes model_state_bytes(std::int64_t parameters, const MixedPrecision& precision, DType grad_dtype,
                                  ZeroStage stage, int shard_ranks, const OptimizerConfig& optimizer = {},
                                  const OffloadConfig& offload = {});

// The formula in the paper's notation, e.g. "2Ψ + 4Ψ/N + 12Ψ/N" (stage 2, bf16 params, f32 grads);
// a K that is not whole prints with three decimals ("6.004Ψ/N" for 8-bit AdamW).
std::string model_state_formula(const MixedPrecision& precision, DType grad_dtype, ZeroStage stage,
                                const OptimizerConfig& optimizer = {}, const OffloadConfig& offload = {});

}  // namespace tessera
