// SimFlatUnit: the shadow of FlatParamUnit (sharding/flat_param_unit.cpp). It allocates the same
// buffers, with the same dtypes and categories, at the same calls: persistent model state at
// construction, gathered parameters and f32 compute copies around a unit's run, full gradient
// buffers and reduce staging around its gradient collective.
//
// Two what-ifs the engine does not have (yet): `grad_dtype` other than f32 (the engine always
// accumulates in f32; the ZeRO paper counts 2 bytes) and offload, which allocates the offloaded
// buffers on `offloaded` (host or NVMe) instead of the device.
#pragma once

#include <cstdint>
#include <string>

#include "planning/sim_tensor.hpp"
#include "precision/mixed_precision.hpp"
#include "sharding/sharding_config.hpp"

namespace tessera {

struct SimUnitPlacement {
  bool offload_optimizer = false;   // f32 master + Adam m, v live off the device
  bool offload_parameters = false;  // stage 3 only: the parameter shard lives off the device
};

class SimFlatUnit {
 public:
  SimFlatUnit(std::string name, std::int64_t numel, ZeroStage stage, const MixedPrecision& precision,
              DType grad_dtype, int shard_ranks, MemoryTracker& device, MemoryTracker& offloaded,
              SimUnitPlacement placement);

  const std::string& name() const { return name_; }
  std::int64_t numel() const { return numel_; }
  std::int64_t padded_numel() const { return shard_numel_ * shard_ranks_; }
  std::int64_t shard_numel() const { return shard_numel_; }

  bool params_ready() const { return ready_; }
  bool gather_in_flight() const { return gather_in_flight_; }
  void start_gather();
  void finish_gather();
  void release_params();
  bool params_transient() const;

  void prepare_grads();
  void start_grad_reduce();
  void finish_grad_reduce();

 private:
  SimTensor allocate(std::int64_t numel, DType dtype, MemoryCategory category, bool off_device = false);

  std::string name_;
  std::int64_t numel_, shard_numel_;
  ZeroStage stage_;
  MixedPrecision precision_;
  DType grad_dtype_;
  int shard_ranks_;
  MemoryTracker& device_;
  MemoryTracker& offloaded_;

  SimTensor compute_, params_full_, param_shard_, gathered_;
  SimTensor master_, exp_avg_, exp_avg_sq_;
  SimTensor grad_full_, grad_shard_, reduce_buffer_;
  bool ready_ = false, gather_in_flight_ = false, grads_bound_ = false;
};

}  // namespace tessera
