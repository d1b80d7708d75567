// ShardingConfig: how ShardedEngine distributes model state over ranks (ZeRO stage, mixed
// precision, offload, hybrid groups, prefetch and in-flight depths, unit policy) and the
// optimizer settings it applies. validate() refuses impossible values with a SettingError naming
// the setting ("sharding.prefetch_units"); programs map those names to their flags.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tessera/comm/node_layout.hpp"
#include "tessera/model/module.hpp"
#include "tessera/model/optim/optimizer_state.hpp"
#include "tessera/precision/loss_scaler.hpp"
#include "tessera/precision/mixed_precision.hpp"
#include "tessera/sharding/offload_config.hpp"
#include "tessera/sharding/placement.hpp"

namespace tessera {

// 0..3 to a stage; anything else throws a SettingError for "sharding.stage".
ZeroStage parse_zero_stage(int stage);

// Dynamic loss scaling: kAuto turns it on when parameters or gradient collectives use f16.
enum class LossScaling { kAuto, kOff, kDynamic };

// What the engine is for. kInference (evaluation, sampling) keeps the parameters and the f32 master
// a checkpoint restores them through, but no gradient buffers and no optimizer state: backward and
// step are refused.
enum class EngineUse { kTraining, kInference };

// FSDP's auto-wrap policy: returns true for a module (by full dotted name and type) that starts its
// own unit. Parameters of modules under no unit form the root unit.
using UnitPolicy = std::function<bool(const std::string& name, const Module& module)>;

// Units by type name, e.g. {"TransformerBlock", "Embedding"}.
UnitPolicy unit_policy_by_type(std::vector<std::string> type_names);

struct ShardingConfig {
  ZeroStage stage = ZeroStage::kStage0;
  MixedPrecision precision;
  OffloadConfig offload;
  // Shard within groups of this many ranks and replicate across groups (HSDP); groups are taken
  // node by node (make_shard_groups). 0: one group of all ranks (plain ZeRO/FSDP).
  int hybrid_group = 0;
  // Where the world's ranks run (launch/'s RankInfo::nodes); empty: one node.
  NodeLayout nodes;
  // Stage 3: free each unit's gathered parameters after its forward (re-gather for backward).
  bool reshard_after_forward = true;
  // Gathers issued ahead of the running unit, and the most that may be in flight (limit_all_gathers).
  int prefetch_units = 1;
  // Gradient reductions in flight before the oldest is finished (each holds a unit's full
  // gradient buffer at stages 2-3).
  int max_reduces_in_flight = 2;
  // Empty: every direct child of the root is a unit (for GPT: embed, each block h.i, ln_f; the
  // head owns no parameter and uses embed's through its tie).
  UnitPolicy unit_policy;
  OptimizerConfig optimizer;
  float grad_clip = 1.0f;  // global-norm clip; <= 0 disables
  LossScaling loss_scaling = LossScaling::kAuto;
  EngineUse use = EngineUse::kTraining;
  LossScalerConfig loss_scaler;

  bool uses_loss_scaling() const;
  // Throws SettingError for a value no engine can run with.
  void validate() const;
  std::string to_string() const;  // "ZeRO-3, param f32, reduce bf16, prefetch 1"
};

}  // namespace tessera
