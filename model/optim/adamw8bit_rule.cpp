// AdamW8bitRule: one adamw8bit_update call per window.
#include "tessera/model/optim/adamw8bit_rule.hpp"

#include <stdexcept>
#include <string>

#include "tessera/runtime/kernels.hpp"

namespace tessera {

std::vector<StateSpec> AdamW8bitRule::static_specs(std::int64_t block) {
  return {{"exp_avg_q", DType::kI8, 1},
          {"exp_avg_absmax", DType::kF32, block},
          {"exp_avg_sq_q", DType::kU8, 1},
          {"exp_avg_sq_absmax", DType::kF32, block}};
}

void AdamW8bitRule::update(const Kernels& kernels, float* master, const float* grads, std::span<std::byte* const> state,
                           std::int64_t count, std::span<const ParamSegment> segments, float lr, std::int64_t step,
                           float grad_scale) const {
  if (count % block_ != 0) {
    throw std::invalid_argument("AdamW8bitRule: a window of " + std::to_string(count) +
                                " elements is not a whole number of blocks of " + std::to_string(block_));
  }
  kernels.adamw8bit_update(master, grads, reinterpret_cast<std::int8_t*>(state[0]), reinterpret_cast<float*>(state[1]),
                           reinterpret_cast<std::uint8_t*>(state[2]), reinterpret_cast<float*>(state[3]), count, block_,
                           segments, adamw_scalars(config_, step, lr, false, grad_scale),
                           adamw_scalars(config_, step, lr, true, grad_scale));
}

}  // namespace tessera
