// AdamWState: m and v over the optimizer range, updated segment by segment.
#include "runtime/optim/adamw_state.hpp"

#include "runtime/kernels.hpp"

namespace tessera {

AdamWState::AdamWState(const AdamWConfig& config, Device& device, std::int64_t count, MemoryKind memory)
    : config_(config),
      exp_avg_(Tensor::zeros(device, {count}, DType::kF32, MemoryCategory::kOptimizerState, memory)),
      exp_avg_sq_(Tensor::zeros(device, {count}, DType::kF32, MemoryCategory::kOptimizerState, memory)) {}

std::vector<StateSpec> AdamWState::specs() { return {{"exp_avg", DType::kF32}, {"exp_avg_sq", DType::kF32}}; }

void AdamWState::step(const Kernels& kernels, Tensor& master, const Tensor& grads,
                      std::span<const ParamSegment> segments, float lr, std::int64_t step) {
  float* p = master.data_as<float>();
  const float* g = grads.data_as<float>();
  float* m = exp_avg_.data_as<float>();
  float* v = exp_avg_sq_.data_as<float>();
  for (const ParamSegment& s : segments) {
    kernels.adamw_update(p + s.begin, g + s.begin, m + s.begin, v + s.begin, s.count,
                         adamw_scalars(config_, step, lr, s.decay));
  }
}

std::vector<StateTensor> AdamWState::state() const { return {{"exp_avg", exp_avg_}, {"exp_avg_sq", exp_avg_sq_}}; }

void AdamWState::reset() {
  exp_avg_.zero_();
  exp_avg_sq_.zero_();
}

}  // namespace tessera
