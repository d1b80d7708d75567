// make_placement: the ZeRO table for one configuration.
#include "tessera/sharding/placement.hpp"

#include <stdexcept>

namespace tessera {
namespace {

MemoryKind memory_of(OffloadTarget target) {
  switch (target) {
    case OffloadTarget::kNone: return MemoryKind::kDevice;
    case OffloadTarget::kCpu: return MemoryKind::kPinnedHost;
    case OffloadTarget::kNvme: return MemoryKind::kNvme;
  }
  return MemoryKind::kDevice;
}

}  // namespace

int zero_stage_number(ZeroStage stage) { return static_cast<int>(stage); }

const char* extent_name(Extent extent) { return extent == Extent::kFull ? "full" : "shard"; }

Placement make_placement(ZeroStage stage, const MixedPrecision& precision, const OffloadConfig& offload,
                         bool memory_is_host) {
  const int st = zero_stage_number(stage);
  if (offload.parameters != OffloadTarget::kNone && stage != ZeroStage::kStage3) {
    throw std::invalid_argument("parameter offload needs ZeRO stage 3 (stage " + std::to_string(st) +
                                " was set): at stages 0-2 every rank computes on its full stored parameters");
  }
  if (!memory_is_host && offload.parameters != OffloadTarget::kNone && offload.optimizer == OffloadTarget::kNone) {
    throw std::invalid_argument(
        std::string("parameter offload on a GPU needs the optimizer offloaded too (offload optimizer: none was set): "
                    "the parameters in host memory are updated by the host; set the optimizer offload to cpu or ") +
        "nvme");
  }
  const bool f32_params = precision.param_dtype == DType::kF32;
  const bool params_are_compute_copy = precision.param_dtype == precision.compute_dtype;
  Placement p;
  p.stored_params = st >= 3 ? Extent::kShard : Extent::kFull;
  p.params_memory = memory_of(offload.parameters);
  p.gather_for_compute = st >= 3;
  p.transient_compute_copy = st >= 3 || !params_are_compute_copy;
  p.transient_compute_grads = precision.compute_dtype != DType::kF32;
  p.optimizer_memory = memory_of(offload.optimizer);
  // f32 parameters double as the master unless the optimizer range lives in another memory — but
  // state on NVMe streams past the parameters wherever they are, so they stay the master (no f32
  // copy in the files, a third less traffic per step).
  // On a discrete device the host updates offloaded state, so the master must be in host reach.
  p.update_on_host = !memory_is_host && p.optimizer_memory != MemoryKind::kDevice;
  p.master_is_params = f32_params && (p.params_memory == p.optimizer_memory ||
                                      (memory_is_host && p.optimizer_memory == MemoryKind::kNvme));
  p.publish_by_all_gather = st == 1 || st == 2;
  p.grad_accumulator = st >= 2 ? Extent::kShard : Extent::kFull;
  p.transient_full_grads = st >= 2;
  p.grad_collective = st == 0 ? GradCollective::kAllReduce : GradCollective::kReduceScatter;
  p.reduce_every_micro_step = st >= 2;
  p.optimizer_range = st >= 1 ? Extent::kShard : Extent::kFull;
  return p;
}

std::string Placement::describe() const {
  auto where = [](MemoryKind kind) { return std::string(" (") + memory_kind_name(kind) + ")"; };
  std::string s = std::string("params ") + extent_name(stored_params) + where(params_memory);
  if (gather_for_compute) s += ", gathered per unit";
  if (!gradients) return s + ", inference: no grads, no optimizer state";
  s += std::string(", grads ") + extent_name(grad_accumulator);
  if (transient_compute_grads) s += " (+ transient micro-batch grads)";
  if (transient_full_grads) s += " + transient full";
  s += std::string(", optimizer ") + extent_name(optimizer_range) + where(optimizer_memory);
  if (master_is_params) s += ", master = params";
  if (update_on_host) s += ", updated on the host";
  s += grad_collective == GradCollective::kAllReduce ? ", all-reduce" : ", reduce-scatter";
  s += reduce_every_micro_step ? " every micro-batch" : " once per step";
  if (publish_by_all_gather) s += ", all-gather after step";
  return s;
}

}  // namespace tessera
