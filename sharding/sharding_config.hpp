// ShardingConfig: how ShardedEngine distributes model state over ranks (ZeRO stage, mixed
// precision, hybrid groups, prefetch, unit policy) and the optimizer settings it applies.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "precision/loss_scaler.hpp"
#include "precision/mixed_precision.hpp"
#include "runtime/module.hpp"
#include "runtime/optim/adamw.hpp"

namespace tessera {

// What is sharded (DESIGN.md's table). kStage0 replicates everything (DDP).
enum class ZeroStage { kStage0 = 0, kStage1 = 1, kStage2 = 2, kStage3 = 3 };

ZeroStage parse_zero_stage(int stage);  // throws for anything but 0..3, naming --zero
int zero_stage_number(ZeroStage stage);

// Dynamic loss scaling: kAuto turns it on when parameters or gradient collectives use f16.
enum class LossScaling { kAuto, kOff, kDynamic };

// FSDP's auto-wrap policy: returns true for a module (by full dotted name and type) that starts its
// own unit. Parameters of modules under no unit form the root unit.
using UnitPolicy = std::function<bool(const std::string& name, const Module& module)>;

// Units by type name, e.g. {"TransformerBlock", "Embedding"}.
UnitPolicy unit_policy_by_type(std::vector<std::string> type_names);

struct ShardingConfig {
  ZeroStage stage = ZeroStage::kStage0;
  MixedPrecision precision;
  // Shard within groups of this many consecutive ranks and replicate across groups (HSDP).
  // 0: one group of all ranks (plain ZeRO/FSDP).
  int hybrid_group = 0;
  // Stage 3: free each unit's gathered parameters after its forward (re-gather for backward).
  bool reshard_after_forward = true;
  // Gathers issued ahead of the running unit, and the most that may be in flight (limit_all_gathers).
  int prefetch_units = 1;
  // Empty: every direct child of the root is a unit (for GPT: embed, each block h.i, ln_f; the
  // head owns no parameter and uses embed's through its tie).
  UnitPolicy unit_policy;
  AdamWConfig adamw;
  float grad_clip = 1.0f;  // global-norm clip; <= 0 disables
  LossScaling loss_scaling = LossScaling::kAuto;
  LossScalerConfig loss_scaler;

  bool uses_loss_scaling() const;

  std::string to_string() const;  // "ZeRO-3, param f32, reduce bf16, buffer f32, prefetch 1"
};

}  // namespace tessera
