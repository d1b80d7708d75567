// SimFlatUnit: FlatParamUnit's allocations, call for call.
#include "planning/sim_flat_unit.hpp"

#include <stdexcept>

namespace tessera {

SimFlatUnit::SimFlatUnit(std::string name, std::int64_t numel, ZeroStage stage, const MixedPrecision& precision,
                         DType grad_dtype, int shard_ranks, MemoryTracker& device, MemoryTracker& offloaded,
                         SimUnitPlacement placement)
    : name_(std::move(name)),
      numel_(numel),
      shard_numel_((numel + shard_ranks - 1) / shard_ranks),
      stage_(stage),
      precision_(precision),
      grad_dtype_(grad_dtype),
      shard_ranks_(shard_ranks),
      device_(device),
      offloaded_(offloaded) {
  if (placement.offload_parameters && stage != ZeroStage::kStage3) {
    throw std::invalid_argument("parameter offload needs ZeRO stage 3 (--zero 3): at stages 0-2 every rank "
                                "computes on its full stored parameters");
  }
  const std::int64_t P = padded_numel(), S = shard_numel_;
  const bool f32_params = precision_.param_dtype == DType::kF32;
  if (stage_ != ZeroStage::kStage3) {
    if (f32_params) {
      compute_ = allocate(P, DType::kF32, MemoryCategory::kParameters);
    } else {
      params_full_ = allocate(P, precision_.param_dtype, MemoryCategory::kParameters);
    }
  } else {
    param_shard_ = allocate(S, precision_.param_dtype, MemoryCategory::kParameters, placement.offload_parameters);
  }
  const std::int64_t count = stage_ == ZeroStage::kStage0 ? P : S;
  // With f32 parameters the master weights are the parameters (stage 0-2: the compute copy; 3: the shard).
  if (!f32_params) master_ = allocate(count, DType::kF32, MemoryCategory::kOptimizerState, placement.offload_optimizer);
  exp_avg_ = allocate(count, DType::kF32, MemoryCategory::kOptimizerState, placement.offload_optimizer);
  exp_avg_sq_ = allocate(count, DType::kF32, MemoryCategory::kOptimizerState, placement.offload_optimizer);
  if (stage_ == ZeroStage::kStage0 || stage_ == ZeroStage::kStage1) {
    grad_full_ = allocate(P, grad_dtype_, MemoryCategory::kGradients);
    grads_bound_ = true;
  } else {
    grad_shard_ = allocate(S, grad_dtype_, MemoryCategory::kGradients);
  }
  if (!params_transient()) ready_ = true;
}

SimTensor SimFlatUnit::allocate(std::int64_t numel, DType dtype, MemoryCategory category, bool off_device) {
  return SimTensor::allocate(off_device ? offloaded_ : device_, {numel}, dtype, category);
}

bool SimFlatUnit::params_transient() const {
  return stage_ == ZeroStage::kStage3 || precision_.param_dtype != DType::kF32;
}

void SimFlatUnit::start_gather() {
  gather_in_flight_ = true;
  if (stage_ != ZeroStage::kStage3) return;
  gathered_ = allocate(padded_numel(), precision_.param_dtype, MemoryCategory::kCommBuffers);
}

void SimFlatUnit::finish_gather() {
  gather_in_flight_ = false;
  const SimTensor& source = stage_ == ZeroStage::kStage3 ? gathered_ : params_full_;
  if (precision_.param_dtype == DType::kF32) {
    compute_ = source;
  } else {
    compute_ = allocate(padded_numel(), DType::kF32, MemoryCategory::kCommBuffers);
  }
  gathered_ = SimTensor();
  ready_ = true;
}

void SimFlatUnit::release_params() {
  if (!params_transient() || !ready_) return;
  ready_ = false;
  compute_ = SimTensor();
}

void SimFlatUnit::prepare_grads() {
  if (grads_bound_) return;
  grad_full_ = allocate(padded_numel(), grad_dtype_, MemoryCategory::kGradients);
  grads_bound_ = true;
}

void SimFlatUnit::start_grad_reduce() {
  if (!grads_bound_) prepare_grads();
  if (precision_.reduce_dtype != grad_dtype_) {
    reduce_buffer_ = allocate(padded_numel(), precision_.reduce_dtype, MemoryCategory::kCommBuffers);
  }
}

void SimFlatUnit::finish_grad_reduce() {
  reduce_buffer_ = SimTensor();
  if (stage_ == ZeroStage::kStage2 || stage_ == ZeroStage::kStage3) {
    grad_full_ = SimTensor();
    grads_bound_ = false;
  }
}

}  // namespace tessera
