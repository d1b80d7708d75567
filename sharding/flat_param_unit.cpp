// FlatParamUnit: buffers, gathers, gradient reduction and the sharded AdamW step of one unit.
#include "sharding/flat_param_unit.hpp"

#include <algorithm>
#include <stdexcept>

#include "runtime/device.hpp"
#include "runtime/kernels.hpp"

namespace tessera {
namespace {

// Runs `reduce(out)` into one T of device memory and returns it on the host. The scratch is not
// tracked: the memory planner's model of the step (planning/) has no entry for it.
template <typename T, typename Reduce>
T reduce_to_host(Device& device, Reduce reduce) {
  void* scratch = device.allocate(sizeof(T), MemoryKind::kDevice);
  T host{};
  try {
    reduce(static_cast<T*>(scratch));
    device.copy_to_host(&host, scratch, sizeof(T));
  } catch (...) {
    device.deallocate(scratch, sizeof(T), MemoryKind::kDevice, {});
    throw;
  }
  device.deallocate(scratch, sizeof(T), MemoryKind::kDevice, {});
  return host;
}

}  // namespace

FlatParamUnit::FlatParamUnit(std::string name, const std::vector<NamedParameter>& parameters, ZeroStage stage,
                             const MixedPrecision& precision, int shard_ranks, int shard_rank, Device& device)
    : name_(std::move(name)),
      stage_(stage),
      precision_(precision),
      shard_ranks_(shard_ranks),
      shard_rank_(shard_rank),
      device_(device) {
  for (const auto& np : parameters) {
    entries_.push_back({np.name, np.parameter, numel_, np.parameter->numel()});
    numel_ += np.parameter->numel();
  }
  shard_numel_ = (numel_ + shard_ranks - 1) / shard_ranks;
  const std::int64_t P = padded_numel(), S = shard_numel_;
  const bool f32_params = precision_.param_dtype == DType::kF32;

  // Parameters.
  if (stage_ != ZeroStage::kStage3) {
    if (f32_params) {
      compute_ = allocate(P, DType::kF32, MemoryCategory::kParameters);
    } else {
      params_full_ = allocate(P, precision_.param_dtype, MemoryCategory::kParameters);
    }
  } else {
    param_shard_ = allocate(S, precision_.param_dtype, MemoryCategory::kParameters);
  }
  // Optimizer state over the optimizer range; f32 parameters double as the master weights.
  const std::int64_t begin = optimizer_begin(), count = optimizer_numel();
  if (!f32_params) {
    master_ = allocate(count, DType::kF32, MemoryCategory::kOptimizerState);
  } else if (stage_ == ZeroStage::kStage3) {
    master_ = param_shard_;
  } else {
    master_ = compute_.view(begin, {count});
  }
  exp_avg_ = allocate(count, DType::kF32, MemoryCategory::kOptimizerState);
  exp_avg_sq_ = allocate(count, DType::kF32, MemoryCategory::kOptimizerState);
  // Gradients: full and persistent at stages 0-1, a persistent shard at stages 2-3.
  if (stage_ == ZeroStage::kStage0 || stage_ == ZeroStage::kStage1) {
    grad_full_ = allocate(P, DType::kF32, MemoryCategory::kGradients);
    grad_shard_ = grad_full_.view(begin, {count});
    for (auto& e : entries_) e.parameter->grad = grad_full_.view(e.offset, e.parameter->shape);
    grads_bound_ = true;
  } else {
    grad_shard_ = allocate(S, DType::kF32, MemoryCategory::kGradients);
  }
  if (!params_transient()) bind_values();
}

FlatParamUnit::~FlatParamUnit() {
  for (auto& e : entries_) {
    e.parameter->value = Tensor();
    e.parameter->grad = Tensor();
  }
}

Tensor FlatParamUnit::allocate(std::int64_t numel, DType dtype, MemoryCategory category) {
  return Tensor::zeros(device_, {numel}, dtype, category);
}

std::int64_t FlatParamUnit::optimizer_begin() const { return stage_ == ZeroStage::kStage0 ? 0 : shard_begin(); }
std::int64_t FlatParamUnit::optimizer_numel() const {
  return stage_ == ZeroStage::kStage0 ? padded_numel() : shard_numel_;
}

bool FlatParamUnit::params_transient() const {
  return stage_ == ZeroStage::kStage3 || precision_.param_dtype != DType::kF32;
}

void FlatParamUnit::initialize(std::uint64_t seed) {
  // Host image of the optimizer range, filled entry by entry from the init rule.
  const std::int64_t begin = optimizer_begin(), count = optimizer_numel();
  std::vector<float> image(static_cast<std::size_t>(count), 0.0f), values;
  for (const auto& e : entries_) {
    const std::int64_t lo = std::max(begin, e.offset), hi = std::min(begin + count, e.offset + e.numel);
    if (lo >= hi) continue;
    initial_values(*e.parameter, e.name, seed, values);
    std::copy(values.begin() + (lo - e.offset), values.begin() + (hi - e.offset), image.begin() + (lo - begin));
  }
  master_.copy_from_host_f32(image);
  exp_avg_.zero_();
  exp_avg_sq_.zero_();
  // Stored parameters from the master: the same path every step takes afterwards.
  if (stage_ == ZeroStage::kStage1 || stage_ == ZeroStage::kStage2) {
    // Every rank needs the full buffer; fill it from the full host image instead of communicating.
    std::vector<float> full(static_cast<std::size_t>(padded_numel()), 0.0f);
    for (const auto& e : entries_) {
      initial_values(*e.parameter, e.name, seed, values);
      std::copy(values.begin(), values.end(), full.begin() + e.offset);
    }
    (precision_.param_dtype == DType::kF32 ? compute_ : params_full_).copy_from_host_f32(full);
  } else if (stage_ == ZeroStage::kStage0 && precision_.param_dtype != DType::kF32) {
    params_full_.copy_from_host_f32(image);
  } else if (stage_ == ZeroStage::kStage3 && precision_.param_dtype != DType::kF32) {
    param_shard_.copy_from_host_f32(image);
  }
}

Work FlatParamUnit::start_gather(Communicator& shard_comm) {
  if (ready_ || gather_in_flight_) throw std::logic_error("FlatParamUnit " + name_ + ": gather already started");
  gather_in_flight_ = true;
  if (stage_ != ZeroStage::kStage3) return Work();
  gathered_ = allocate(padded_numel(), precision_.param_dtype, MemoryCategory::kCommBuffers);
  return shard_comm.all_gather(ConstSpan(param_shard_.data(), shard_numel_),
                               Span(gathered_.data(), padded_numel()), precision_.param_dtype);
}

void FlatParamUnit::finish_gather() {
  if (!gather_in_flight_) throw std::logic_error("FlatParamUnit " + name_ + ": finish_gather without a gather");
  gather_in_flight_ = false;
  const Tensor& source = stage_ == ZeroStage::kStage3 ? gathered_ : params_full_;
  if (precision_.param_dtype == DType::kF32) {
    compute_ = source;
  } else {
    compute_ = allocate(padded_numel(), DType::kF32, MemoryCategory::kCommBuffers);
    device_.kernels().convert(source.data(), precision_.param_dtype, compute_.data(), DType::kF32, padded_numel());
  }
  gathered_ = Tensor();
  bind_values();
}

void FlatParamUnit::release_params() {
  if (!params_transient() || !ready_) return;
  unbind_values();
  compute_ = Tensor();
}

void FlatParamUnit::bind_values() {
  for (auto& e : entries_) e.parameter->value = compute_.view(e.offset, e.parameter->shape);
  ready_ = true;
}

void FlatParamUnit::unbind_values() {
  for (auto& e : entries_) e.parameter->value = Tensor();
  ready_ = false;
}

void FlatParamUnit::prepare_grads() {
  if (grads_bound_) return;
  grad_full_ = allocate(padded_numel(), DType::kF32, MemoryCategory::kGradients);
  for (auto& e : entries_) e.parameter->grad = grad_full_.view(e.offset, e.parameter->shape);
  grads_bound_ = true;
}

Work FlatParamUnit::start_grad_reduce(Communicator& shard_comm) {
  if (!grads_bound_) prepare_grads();  // a unit no module touched this micro-step: zero gradients
  const std::int64_t P = padded_numel(), S = shard_numel_;
  const Kernels& k = device_.kernels();
  const DType wire = precision_.reduce_dtype;
  void* buffer = grad_full_.data();
  if (wire != DType::kF32) {
    reduce_buffer_ = allocate(P, wire, MemoryCategory::kCommBuffers);
    k.convert(grad_full_.data(), DType::kF32, reduce_buffer_.data(), wire, P);
    buffer = reduce_buffer_.data();
  }
  if (stage_ == ZeroStage::kStage0) return shard_comm.all_reduce(Span(buffer, P), wire, ReduceOp::kAvg);
  // In place: this rank's slice of the buffer receives the reduced shard.
  char* out = static_cast<char*>(buffer) + static_cast<std::size_t>(shard_begin()) * dtype_size(wire);
  return shard_comm.reduce_scatter(ConstSpan(buffer, P), Span(out, S), wire, ReduceOp::kAvg);
}

void FlatParamUnit::finish_grad_reduce(Communicator* replicate_comm) {
  const Kernels& k = device_.kernels();
  const DType wire = precision_.reduce_dtype;
  const bool full = stage_ == ZeroStage::kStage0;
  const std::int64_t begin = full ? 0 : shard_begin(), count = full ? padded_numel() : shard_numel_;
  Tensor reduced = (wire == DType::kF32 ? grad_full_ : reduce_buffer_).view(begin, {count});
  if (replicate_comm != nullptr) replicate_comm->all_reduce(Span(reduced.data(), count), wire, ReduceOp::kAvg).wait();
  float* target = grad_full_.data_as<float>() + begin;  // f32 result in place in the full buffer
  if (wire != DType::kF32) k.convert(reduced.data(), wire, target, DType::kF32, count);
  reduce_buffer_ = Tensor();
  if (stage_ == ZeroStage::kStage2 || stage_ == ZeroStage::kStage3) {
    // Accumulate the micro-step's reduced shard in f32, then drop the full buffer.
    k.add(grad_shard_.data_as<float>(), grad_shard_.data_as<float>(), target, shard_numel_);
    for (auto& e : entries_) e.parameter->grad = Tensor();
    grad_full_ = Tensor();
    grads_bound_ = false;
  }
}

void FlatParamUnit::zero_grads() {
  if (grad_full_.defined()) grad_full_.zero_();
  grad_shard_.zero_();
}

double FlatParamUnit::grad_sum_squares(const Kernels& kernels) {
  const float* g = grad_shard_.data_as<float>() + (stage_ == ZeroStage::kStage0 ? shard_begin() : 0);
  return reduce_to_host<double>(device_, [&](double* out) { kernels.sum_squares(g, shard_numel_, out); });
}

void FlatParamUnit::scale_grads(const Kernels& kernels, float factor) {
  kernels.scale(grad_shard_.data_as<float>(), factor, optimizer_numel());
}

bool FlatParamUnit::grads_finite(const Kernels& kernels) {
  return reduce_to_host<std::int32_t>(device_, [&](std::int32_t* out) {
           kernels.has_non_finite(grad_shard_.data_as<float>(), optimizer_numel(), out);
         }) == 0;
}

void FlatParamUnit::adamw_step(const Kernels& kernels, const AdamWConfig& config, std::int64_t step, float lr) {
  const std::int64_t begin = optimizer_begin(), end = begin + optimizer_numel();
  for (const auto& e : entries_) {
    const std::int64_t lo = std::max(begin, e.offset), hi = std::min(end, e.offset + e.numel);
    if (lo >= hi) continue;
    const std::int64_t at = lo - begin;
    kernels.adamw_update(master_.data_as<float>() + at, grad_shard_.data_as<float>() + at,
                         exp_avg_.data_as<float>() + at, exp_avg_sq_.data_as<float>() + at, hi - lo,
                         adamw_scalars(config, step, lr, e.parameter->decay));
  }
}

Work FlatParamUnit::start_publish(Communicator& shard_comm) {
  const bool f32_params = precision_.param_dtype == DType::kF32;
  const Kernels& k = device_.kernels();
  const DType pd = precision_.param_dtype;
  switch (stage_) {
    case ZeroStage::kStage0:
      if (!f32_params) k.convert(master_.data(), DType::kF32, params_full_.data(), pd, padded_numel());
      return Work();
    case ZeroStage::kStage3:
      if (!f32_params) k.convert(master_.data(), DType::kF32, param_shard_.data(), pd, shard_numel_);
      return Work();
    case ZeroStage::kStage1:
    case ZeroStage::kStage2: {
      Tensor& full = f32_params ? compute_ : params_full_;
      char* mine = static_cast<char*>(full.data()) + static_cast<std::size_t>(shard_begin()) * dtype_size(pd);
      if (!f32_params) k.convert(master_.data(), DType::kF32, mine, pd, shard_numel_);
      return shard_comm.all_gather(ConstSpan(mine, shard_numel_), Span(full.data(), padded_numel()), pd);
    }
  }
  return Work();
}

}  // namespace tessera
