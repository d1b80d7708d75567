// Closed-form ZeRO model-state bytes and their formula text, from the Placement table.
#include "planning/model_state.hpp"

#include <stdexcept>

namespace tessera {

std::int64_t optimizer_bytes_per_parameter(const Placement& placement, OptimizerKind optimizer) {
  return optimizer_state_bytes_per_element(optimizer) + (placement.master_is_params ? 0 : 4);
}

ModelStateBytes model_state_bytes(std::int64_t parameters, const MixedPrecision& precision, DType grad_dtype,
                                  ZeroStage stage, int shard_ranks, OptimizerKind optimizer) {
  if (parameters < 0) throw std::invalid_argument("parameter count must be >= 0");
  if (shard_ranks < 1) throw std::invalid_argument("shard group size must be >= 1");
  const Placement p = make_placement(stage, precision, {});
  const std::int64_t shard = (parameters + shard_ranks - 1) / shard_ranks;
  auto count = [&](Extent e) { return e == Extent::kFull ? parameters : shard; };
  ModelStateBytes b;
  b.parameters = static_cast<std::int64_t>(dtype_size(precision.param_dtype)) * count(p.stored_params);
  b.gradients = static_cast<std::int64_t>(dtype_size(grad_dtype)) * count(p.grad_accumulator);
  b.optimizer_state = optimizer_bytes_per_parameter(p, optimizer) * count(p.optimizer_range);
  return b;
}

std::string model_state_formula(const MixedPrecision& precision, DType grad_dtype, ZeroStage stage,
                                OptimizerKind optimizer) {
  const Placement p = make_placement(stage, precision, {});
  auto term = [](std::int64_t bytes, Extent e) { return std::to_string(bytes) + (e == Extent::kShard ? "Ψ/N" : "Ψ"); };
  return term(static_cast<std::int64_t>(dtype_size(precision.param_dtype)), p.stored_params) + " + " +
         term(static_cast<std::int64_t>(dtype_size(grad_dtype)), p.grad_accumulator) + " + " +
         term(optimizer_bytes_per_parameter(p, optimizer), p.optimizer_range);
}

}  // namespace tessera
