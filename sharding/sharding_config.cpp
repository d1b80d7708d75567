// ZeroStage parsing, unit policies and ShardingConfig description.
#include "sharding/sharding_config.hpp"

#include <algorithm>
#include <stdexcept>

namespace tessera {

ZeroStage parse_zero_stage(int stage) {
  if (stage < 0 || stage > 3) {
    throw std::invalid_argument("--zero must be 0, 1, 2 or 3 (got " + std::to_string(stage) +
                                "): 0 replicates, 1 shards optimizer state, 2 also gradients, 3 also parameters");
  }
  return static_cast<ZeroStage>(stage);
}

int zero_stage_number(ZeroStage stage) { return static_cast<int>(stage); }

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

std::string ShardingConfig::to_string() const {
  std::string s = "ZeRO-" + std::to_string(zero_stage_number(stage)) + ", " + precision.to_string() + ", prefetch " +
                  std::to_string(prefetch_units);
  if (hybrid_group > 0) s += ", hybrid groups of " + std::to_string(hybrid_group);
  if (stage == ZeroStage::kStage3 && !reshard_after_forward) s += ", keep params after forward";
  if (uses_loss_scaling()) s += ", dynamic loss scale";
  return s;
}

}  // namespace tessera
