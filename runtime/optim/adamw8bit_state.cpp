// AdamW8bitState: quantized m and v over the optimizer range, one kernel call per step.
#include "runtime/optim/adamw8bit_state.hpp"

#include <stdexcept>
#include <string>

#include "runtime/kernels.hpp"

namespace tessera {

AdamW8bitState::AdamW8bitState(const AdamWConfig& config, std::int64_t block, Device& device, std::int64_t count,
                               MemoryKind memory)
    : config_(config), block_(block) {
  if (block < 1 || count % block != 0) {
    throw std::invalid_argument("AdamW8bitState: a range of " + std::to_string(count) +
                                " elements is not a whole number of blocks of " + std::to_string(block));
  }
  const MemoryCategory c = MemoryCategory::kOptimizerState;
  m_codes_ = Tensor::zeros(device, {count}, DType::kI8, c, memory);
  m_absmax_ = Tensor::zeros(device, {count / block}, DType::kF32, c, memory);
  v_codes_ = Tensor::zeros(device, {count}, DType::kU8, c, memory);
  v_absmax_ = Tensor::zeros(device, {count / block}, DType::kF32, c, memory);
}

std::vector<StateSpec> AdamW8bitState::specs(std::int64_t block) {
  return {{"exp_avg_q", DType::kI8, 1},
          {"exp_avg_absmax", DType::kF32, block},
          {"exp_avg_sq_q", DType::kU8, 1},
          {"exp_avg_sq_absmax", DType::kF32, block}};
}

void AdamW8bitState::step(const Kernels& kernels, Tensor& master, const Tensor& grads,
                          std::span<const ParamSegment> segments, float lr, std::int64_t step) {
  kernels.adamw8bit_update(master.data_as<float>(), grads.data_as<float>(), m_codes_.data_as<std::int8_t>(),
                           m_absmax_.data_as<float>(), v_codes_.data_as<std::uint8_t>(), v_absmax_.data_as<float>(),
                           master.numel(), block_, segments, adamw_scalars(config_, step, lr, false),
                           adamw_scalars(config_, step, lr, true));
}

std::vector<StateTensor> AdamW8bitState::state() const {
  return {{"exp_avg_q", m_codes_, 1},
          {"exp_avg_absmax", m_absmax_, block_},
          {"exp_avg_sq_q", v_codes_, 1},
          {"exp_avg_sq_absmax", v_absmax_, block_}};
}

void AdamW8bitState::reset() {
  m_codes_.zero_();
  m_absmax_.zero_();
  v_codes_.zero_();
  v_absmax_.zero_();
}

}  // namespace tessera
