// FlatParamUnit: the buffers of one unit, sized and placed by its Placement, and the gathers,
// gradient collectives, optimizer step and publishing that run on them.
#include "sharding/flat_param_unit.hpp"

#include <stdexcept>

#include "runtime/device.hpp"
#include "runtime/kernels.hpp"

namespace tessera {

FlatParamUnit::FlatParamUnit(std::string name, FlatLayout layout, const Placement& placement,
                             const MixedPrecision& precision, const OptimizerConfig& optimizer, Device& device)
    : name_(std::move(name)), layout_(std::move(layout)), placement_(placement), precision_(precision), device_(device) {
  const Placement& p = placement_;
  const DType pd = precision_.param_dtype;
  const std::int64_t P = layout_.padded_numel(), S = layout_.shard_numel();
  const FlatRange range = optimizer_range();
  // Stored parameters; with f32 parameters and no gathering they are the compute copy itself.
  stored_ = allocate(p.stored_params == Extent::kFull ? P : S, pd, MemoryCategory::kParameters, p.params_memory);
  if (!p.transient_compute_copy) compute_ = stored_;
  // The f32 master over the optimizer range: a view of the stored parameters, or its own copy.
  if (p.master_is_params) {
    master_ = p.stored_params == Extent::kFull ? stored_.view(range.begin, {range.count}) : stored_;
  } else {
    master_ = allocate(range.count, DType::kF32, MemoryCategory::kOptimizerState, p.optimizer_memory);
  }
  optimizer_ = make_optimizer_state(optimizer, device_, range.count, p.optimizer_memory);
  // Gradients: a persistent full accumulator, or a persistent shard plus transient full buffers.
  if (p.grad_accumulator == Extent::kFull) {
    prepare_grads();
  } else {
    grad_shard_ = allocate(S, DType::kF32, MemoryCategory::kGradients);
  }
  if (!p.transient_compute_copy) bind_values();
}

FlatParamUnit::~FlatParamUnit() {
  for (const FlatEntry& e : layout_.entries()) {
    e.parameter->value = Tensor();
    e.parameter->grad = Tensor();
  }
}

Tensor FlatParamUnit::allocate(std::int64_t numel, DType dtype, MemoryCategory category, MemoryKind kind) {
  return Tensor::zeros(device_, {numel}, dtype, category, kind);
}

FlatRange FlatParamUnit::optimizer_range() const {
  return placement_.optimizer_range == Extent::kFull ? layout_.full() : layout_.shard();
}

void FlatParamUnit::initialize(std::uint64_t seed) {
  optimizer_->reset();
  if (!device_.holds_data()) return;
  // The master from the init rule; the stored parameters from the same values, as every step
  // publishes them afterwards (every rank fills its full copy itself instead of communicating).
  const FlatRange range = optimizer_range();
  const std::vector<float> image = layout_.initial_image(range, seed);
  if (!placement_.master_is_params) master_.copy_from_host_f32(image);
  if (stored_.numel() == range.count) {
    stored_.copy_from_host_f32(image);
  } else {
    stored_.copy_from_host_f32(layout_.initial_image(layout_.full(), seed));
  }
}

Work FlatParamUnit::start_gather(Communicator& shard_comm) {
  if (ready_ || gather_in_flight_) throw std::logic_error("FlatParamUnit " + name_ + ": gather already started");
  gather_in_flight_ = true;
  if (!placement_.gather_for_compute) return Work();
  gathered_ = allocate(layout_.padded_numel(), precision_.param_dtype, MemoryCategory::kCommBuffers);
  return shard_comm.all_gather(ConstSpan(stored_.data(), static_cast<std::size_t>(layout_.shard_numel())),
                               Span(gathered_.data(), static_cast<std::size_t>(layout_.padded_numel())),
                               precision_.param_dtype);
}

void FlatParamUnit::finish_gather() {
  if (!gather_in_flight_) throw std::logic_error("FlatParamUnit " + name_ + ": finish_gather without a gather");
  gather_in_flight_ = false;
  const Tensor& source = placement_.gather_for_compute ? gathered_ : stored_;
  if (precision_.param_dtype == DType::kF32) {
    compute_ = source;
  } else {
    compute_ = allocate(layout_.padded_numel(), DType::kF32, MemoryCategory::kCommBuffers);
    device_.kernels().convert(source.data(), precision_.param_dtype, compute_.data(), DType::kF32,
                              layout_.padded_numel());
  }
  gathered_ = Tensor();
  bind_values();
}

void FlatParamUnit::release_params() {
  if (!placement_.transient_compute_copy || !ready_) return;
  unbind_values();
  compute_ = Tensor();
}

void FlatParamUnit::bind_values() {
  for (const FlatEntry& e : layout_.entries()) e.parameter->value = compute_.view(e.offset, e.parameter->shape);
  ready_ = true;
}

void FlatParamUnit::unbind_values() {
  for (const FlatEntry& e : layout_.entries()) e.parameter->value = Tensor();
  ready_ = false;
}

void FlatParamUnit::prepare_grads() {
  if (grads_bound_) return;
  grad_full_ = allocate(layout_.padded_numel(), DType::kF32, MemoryCategory::kGradients);
  for (const FlatEntry& e : layout_.entries()) e.parameter->grad = grad_full_.view(e.offset, e.parameter->shape);
  grads_bound_ = true;
}

Work FlatParamUnit::start_grad_reduce(Communicator& shard_comm) {
  prepare_grads();  // a unit no module touched this micro-step reduces zeros
  const std::int64_t P = layout_.padded_numel(), S = layout_.shard_numel();
  const DType wire = precision_.reduce_dtype;
  void* buffer = grad_full_.data();
  if (wire != DType::kF32) {
    wire_ = allocate(P, wire, MemoryCategory::kCommBuffers);
    device_.kernels().convert(grad_full_.data(), DType::kF32, wire_.data(), wire, P);
    buffer = wire_.data();
  }
  if (placement_.grad_collective == GradCollective::kAllReduce) {
    return shard_comm.all_reduce(Span(buffer, static_cast<std::size_t>(P)), wire, ReduceOp::kAvg);
  }
  // In place: this rank's slice of the buffer receives the reduced shard.
  char* out = static_cast<char*>(buffer) + static_cast<std::size_t>(layout_.shard_begin()) * dtype_size(wire);
  return shard_comm.reduce_scatter(ConstSpan(buffer, static_cast<std::size_t>(P)),
                                   Span(out, static_cast<std::size_t>(S)), wire, ReduceOp::kAvg);
}

void FlatParamUnit::finish_grad_reduce(Communicator* replicate_comm) {
  const DType wire = precision_.reduce_dtype;
  const FlatRange reduced_range =
      placement_.grad_collective == GradCollective::kAllReduce ? layout_.full() : layout_.shard();
  Tensor reduced = (wire == DType::kF32 ? grad_full_ : wire_).view(reduced_range.begin, {reduced_range.count});
  if (replicate_comm != nullptr) {
    replicate_comm->all_reduce(Span(reduced.data(), static_cast<std::size_t>(reduced_range.count)), wire,
                               ReduceOp::kAvg).wait();
  }
  float* target = grad_full_.data_as<float>() + reduced_range.begin;  // f32 result in place in the full buffer
  if (wire != DType::kF32) device_.kernels().convert(reduced.data(), wire, target, DType::kF32, reduced_range.count);
  wire_ = Tensor();
  if (placement_.transient_full_grads) {
    // Accumulate the micro-step's reduced shard in f32, then drop the full buffer.
    device_.kernels().add(grad_shard_.data_as<float>(), grad_shard_.data_as<float>(), target, layout_.shard_numel());
    for (const FlatEntry& e : layout_.entries()) e.parameter->grad = Tensor();
    grad_full_ = Tensor();
    grads_bound_ = false;
  }
}

void FlatParamUnit::zero_grads() {
  if (grad_full_.defined()) grad_full_.zero_();
  if (grad_shard_.defined()) grad_shard_.zero_();
}

Tensor FlatParamUnit::reduced_grads() const {
  if (placement_.grad_accumulator == Extent::kShard) return grad_shard_;
  const FlatRange range = optimizer_range();
  return grad_full_.view(range.begin, {range.count});
}

void FlatParamUnit::grad_sum_squares(const Kernels& kernels, double* out) const {
  const float* g = placement_.grad_accumulator == Extent::kShard
                       ? grad_shard_.data_as<float>()
                       : grad_full_.data_as<float>() + layout_.shard_begin();
  kernels.sum_squares(g, layout_.shard_numel(), out);
}

void FlatParamUnit::scale_grads(const Kernels& kernels, float factor) {
  Tensor g = reduced_grads();
  kernels.scale(g.data_as<float>(), factor, g.numel());
}

void FlatParamUnit::optimizer_step(const Kernels& kernels, float lr, std::int64_t step) {
  const std::vector<ParamSegment> segments = layout_.segments(optimizer_range());
  optimizer_->step(kernels, master_, reduced_grads(), segments, lr, step);
}

Work FlatParamUnit::start_publish(Communicator& shard_comm) {
  const DType pd = precision_.param_dtype;
  const FlatRange range = optimizer_range();
  // Where this rank's updated range goes in the stored parameters.
  Tensor mine = stored_.numel() == range.count ? stored_ : stored_.view(range.begin, {range.count});
  if (!placement_.master_is_params) {
    device_.kernels().convert(master_.data(), DType::kF32, mine.data(), pd, range.count);
  }
  if (!placement_.publish_by_all_gather) return Work();
  return shard_comm.all_gather(ConstSpan(mine.data(), static_cast<std::size_t>(range.count)),
                               Span(stored_.data(), static_cast<std::size_t>(stored_.numel())), pd);
}

std::vector<StateTensor> FlatParamUnit::state() const {
  std::vector<StateTensor> out{{"master", master_}};
  for (StateTensor& t : optimizer_->state()) out.push_back(std::move(t));
  return out;
}

}  // namespace tessera
