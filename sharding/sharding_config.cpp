// ZeroStage parsing, unit policies, ShardingConfig validation and description.
#include "tessera/sharding/sharding_config.hpp"

#include <algorithm>
#include <cmath>

#include "tessera/core/setting_error.hpp"

namespace tessera {

ZeroStage parse_zero_stage(int stage) {
  if (stage < 0 || stage > 3) {
    throw SettingError("sharding.stage", std::to_string(stage),
                       "the ZeRO stage must be 0, 1, 2 or 3: 0 replicates, 1 shards optimizer state, 2 also "
                       "gradients, 3 also parameters");
  }
  return static_cast<ZeroStage>(stage);
}

UnitPolicy unit_policy_by_type(std::vector<std::string> type_names) {
  return [types = std::move(type_names)](const std::string&, const Module& module) {
    return std::find(types.begin(), types.end(), module.type_name()) != types.end();
  };
}

bool ShardingConfig::uses_loss_scaling() const {
  if (loss_scaling == LossScaling::kAuto) {
    return precision.param_dtype == DType::kF16 || precision.reduce_dtype == DType::kF16;
  }
  return loss_scaling == LossScaling::kDynamic;
}

void ShardingConfig::validate() const {
  precision.validate();
  optimizer.validate();
  if (prefetch_units < 0) {
    throw SettingError("sharding.prefetch_units", std::to_string(prefetch_units), "must be >= 0");
  }
  if (max_reduces_in_flight < 1) {
    throw SettingError("sharding.max_reduces_in_flight", std::to_string(max_reduces_in_flight), "must be >= 1");
  }
  if (hybrid_group < 0) throw SettingError("sharding.hybrid_group", std::to_string(hybrid_group), "must be >= 0");
  if (!std::isfinite(grad_clip)) {
    throw SettingError("sharding.grad_clip", std::to_string(grad_clip), "must be a finite number (<= 0 disables)");
  }
  if (offload.parameters != OffloadTarget::kNone && stage != ZeroStage::kStage3) {
    throw SettingError("sharding.offload.parameters", offload_target_name(offload.parameters),
                       "parameter offload needs ZeRO stage 3: at stages 0-2 every rank computes on its full "
                       "stored parameters");
  }
}

std::string ShardingConfig::to_string() const {
  std::string s = "ZeRO-" + std::to_string(zero_stage_number(stage)) + ", " + precision.to_string() + ", prefetch " +
                  std::to_string(prefetch_units);
  if (hybrid_group > 0) s += ", hybrid groups of " + std::to_string(hybrid_group);
  if (stage == ZeroStage::kStage3 && !reshard_after_forward) s += ", keep params after forward";
  if (optimizer.kind != OptimizerKind::kAdamW) s += std::string(", ") + optimizer_kind_name(optimizer.kind);
  if (offload.any()) s += ", offload " + offload.to_string();
  if (uses_loss_scaling()) s += ", dynamic loss scale";
  return s;
}

}  // namespace tessera
