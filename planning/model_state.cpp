// Closed-form ZeRO model-state bytes and their formula text.
#include "planning/model_state.hpp"

#include <stdexcept>

namespace tessera {

std::int64_t adamw_state_bytes_per_parameter(DType param_dtype) { return param_dtype == DType::kF32 ? 8 : 12; }

ModelStateBytes model_state_bytes(std::int64_t parameters, const MixedPrecision& precision, DType grad_dtype,
                                  ZeroStage stage, int shard_ranks) {
  if (parameters < 0) throw std::invalid_argument("parameter count must be >= 0");
  if (shard_ranks < 1) throw std::invalid_argument("shard group size must be >= 1");
  const std::int64_t full = parameters;
  const std::int64_t shard = (parameters + shard_ranks - 1) / shard_ranks;
  const auto p = static_cast<std::int64_t>(dtype_size(precision.param_dtype));
  const auto g = static_cast<std::int64_t>(dtype_size(grad_dtype));
  const std::int64_t k = adamw_state_bytes_per_parameter(precision.param_dtype);
  const int st = zero_stage_number(stage);
  ModelStateBytes b;
  b.parameters = p * (st >= 3 ? shard : full);
  b.gradients = g * (st >= 2 ? shard : full);
  b.optimizer_state = k * (st >= 1 ? shard : full);
  return b;
}

std::string model_state_formula(const MixedPrecision& precision, DType grad_dtype, ZeroStage stage) {
  const int st = zero_stage_number(stage);
  auto term = [](std::int64_t bytes, bool sharded) {
    return std::to_string(bytes) + (sharded ? "Ψ/N" : "Ψ");
  };
  return term(static_cast<std::int64_t>(dtype_size(precision.param_dtype)), st >= 3) + " + " +
         term(static_cast<std::int64_t>(dtype_size(grad_dtype)), st >= 2) + " + " +
         term(adamw_state_bytes_per_parameter(precision.param_dtype), st >= 1);
}

}  // namespace tessera
