// Closed-form ZeRO model-state bytes and their formula text, from the Placement table.
#include "tessera/planning/model_state.hpp"

#include <cstdio>
#include <stdexcept>

namespace tessera {

std::int64_t optimizer_range_bytes(const Placement& placement, const OptimizerConfig& optimizer, std::int64_t count) {
  return optimizer_state_bytes(optimizer, count) + (placement.master_is_params ? 0 : 4 * count);
}

ModelStateBytes model_state_bytes(std::int64_t parameters, const MixedPrecision& precision, DType grad_dtype,
                                  ZeroStage stage, int shard_ranks, const OptimizerConfig& optimizer,
                                  const OffloadConfig& offload) {
  if (parameters < 0) throw std::invalid_argument("parameter count must be >= 0");
  if (shard_ranks < 1) throw std::invalid_argument("shard group size must be >= 1");
  const Placement p = make_placement(stage, precision, offload);
  const std::int64_t shard = (parameters + shard_ranks - 1) / shard_ranks;
  auto count = [&](Extent e) { return e == Extent::kFull ? parameters : shard; };
  ModelStateBytes b;
  b.parameters = static_cast<std::int64_t>(dtype_size(precision.param_dtype)) * count(p.stored_params);
  b.gradients = static_cast<std::int64_t>(dtype_size(grad_dtype)) * count(p.grad_accumulator);
  b.optimizer_state = optimizer_range_bytes(p, optimizer, count(p.optimizer_range));
  return b;
}

std::string model_state_formula(const MixedPrecision& precision, DType grad_dtype, ZeroStage stage,
                                const OptimizerConfig& optimizer, const OffloadConfig& offload) {
  const Placement p = make_placement(stage, precision, offload);
  auto term = [](double bytes, Extent e) {
    char text[32];
    std::snprintf(text, sizeof text, bytes == static_cast<double>(static_cast<std::int64_t>(bytes)) ? "%.0f" : "%.3f",
                  bytes);
    return std::string(text) + (e == Extent::kShard ? "Ψ/N" : "Ψ");
  };
  const double k = optimizer_state_bytes_per_element(optimizer) + (p.master_is_params ? 0.0 : 4.0);
  return term(static_cast<double>(dtype_size(precision.param_dtype)), p.stored_params) + " + " +
         term(static_cast<double>(dtype_size(grad_dtype)), p.grad_accumulator) + " + " + term(k, p.optimizer_range);
}

}  // namespace tessera
