// AdamWRule: the f32 AdamW update, segment by segment.
#include "tessera/model/optim/adamw_rule.hpp"

#include "tessera/runtime/kernels.hpp"

namespace tessera {

std::vector<StateSpec> AdamWRule::static_specs() { return {{"exp_avg", DType::kF32}, {"exp_avg_sq", DType::kF32}}; }

void AdamWRule::update(const Kernels& kernels, float* master, const float* grads, std::span<std::byte* const> state,
                       std::int64_t /*count*/, std::span<const ParamSegment> segments, float lr, std::int64_t step,
                       float grad_scale) const {
  auto* m = reinterpret_cast<float*>(state[0]);
  auto* v = reinterpret_cast<float*>(state[1]);
  for (const ParamSegment& s : segments) {
    kernels.adamw_update(master + s.begin, grads + s.begin, m + s.begin, v + s.begin, s.count,
                         adamw_scalars(config_, step, lr, s.decay, grad_scale));
  }
}

}  // namespace tessera
