// FlatParamUnit: the buffers of one unit, sized and placed by its Placement, and the gathers,
// gradient collectives, optimizer step and publishing that run on them.
#include "tessera/sharding/flat_param_unit.hpp"

#include <chrono>
#include <stdexcept>

#include "tessera/precision/bf16.hpp"
#include "tessera/precision/convert.hpp"
#include "tessera/runtime/cpu/cpu_kernels.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/offload/window_stream.hpp"

namespace tessera {

FlatParamUnit::FlatParamUnit(std::string name, FlatLayout layout, const Placement& placement,
                             const MixedPrecision& precision, const OptimizerConfig& optimizer, Device& device,
                             NvmeStore* store)
    : name_(std::move(name)),
      layout_(std::move(layout)),
      placement_(placement),
      precision_(precision),
      device_(device),
      store_(store),
      rule_(make_optimizer_rule(optimizer)),
      staged_(&device.memory(), MemoryCategory::kCommBuffers, device.holds_data()) {
  const Placement& p = placement_;
  const DType pd = precision_.param_dtype;
  const std::int64_t P = layout_.padded_numel(), S = layout_.shard_numel();
  const FlatRange range = optimizer_range();
  // Stored parameters; with f32 parameters and no gathering they are the compute copy itself.
  stored_ = PlacedTensor(device_, store_, p.stored_params == Extent::kFull ? P : S, pd, 1, MemoryCategory::kParameters,
                         p.params_memory);
  if (!p.transient_compute_copy) compute_ = stored_.tensor();
  // The f32 master over the optimizer range: the stored parameters (or a view), or its own copy.
  if (!p.master_is_params) {
    master_ =
        PlacedTensor(device_, store_, range.count, DType::kF32, 1, MemoryCategory::kOptimizerState, p.optimizer_memory);
  } else if (stored_.values() == range.count) {
    master_ = stored_;
  } else {
    master_ = PlacedTensor::resident(stored_.tensor().view(range.begin, {range.count}));
  }
  for (const StateSpec& spec : p.optimizer_state ? rule_->specs() : std::vector<StateSpec>{}) {
    state_.emplace_back(device_, store_, range.count / spec.elements_per_value, spec.dtype, spec.elements_per_value,
                        MemoryCategory::kOptimizerState, p.optimizer_memory);
  }
  // Gradients: a persistent full accumulator, or a persistent shard plus transient full buffers.
  if (!p.gradients) {
    // none: the engine refuses backward
  } else if (p.grad_accumulator == Extent::kFull) {
    grad_full_ = allocate(P, DType::kF32, MemoryCategory::kGradients);
    if (!p.transient_compute_grads) bind_grads(grad_full_);
  } else {
    grad_shard_ = allocate(S, DType::kF32, MemoryCategory::kGradients);
  }
  if (p.update_on_host) {  // an inference engine publishes through it too (a checkpoint's master)
    grad_host_ =
        Tensor::empty(device_, {range.count}, DType::kF32, MemoryCategory::kGradients, MemoryKind::kPinnedHost);
    if (p.params_memory == MemoryKind::kDevice && !p.master_is_params) {
      // The updated parameters take the place of the gradients they were computed from: each
      // window's gradients are read before its parameters are written, at or below their bytes.
      params_host_ = grad_host_.reinterpret(pd, {range.count});
    }
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

Tensor FlatParamUnit::allocate_overwritten(std::int64_t numel, DType dtype, MemoryCategory category) {
  return Tensor::empty(device_, {numel}, dtype, category);
}

FlatRange FlatParamUnit::optimizer_range() const {
  return placement_.optimizer_range == Extent::kFull ? layout_.full() : layout_.shard();
}

void FlatParamUnit::initialize(std::uint64_t seed) {
  if (!device_.holds_data()) return;
  // The master from the init rule; the stored parameters from the same values, as every step
  // publishes them afterwards (every rank fills its full copy itself instead of communicating). A
  // full copy beside a sharded master (ZeRO-1/2) is drawn once: the master is its slice.
  const FlatRange range = optimizer_range();
  const FlatRange drawn = stored_.values() == range.count ? range : layout_.full();
  const std::vector<float> image = layout_.initial_image(drawn, seed);
  auto write_f32 = [](PlacedTensor& t, const float* values, std::int64_t count) {
    std::vector<std::byte> raw(static_cast<std::size_t>(count) * dtype_size(t.dtype()));
    convert_host(values, DType::kF32, raw.data(), t.dtype(), static_cast<std::size_t>(count));
    t.write(0, count, raw.data());
  };
  if (!placement_.master_is_params) write_f32(master_, image.data() + (range.begin - drawn.begin), range.count);
  write_f32(stored_, image.data(), drawn.count);
}

Work FlatParamUnit::start_gather(Communicator& shard_comm) {
  if (ready_ || gather_in_flight_) throw std::logic_error("FlatParamUnit " + name_ + ": gather already started");
  gather_in_flight_ = true;
  if (!placement_.gather_for_compute) return Work();
  const DType pd = precision_.param_dtype;
  const auto S = static_cast<std::size_t>(layout_.shard_numel());
  gathered_ = allocate_overwritten(layout_.padded_numel(), pd, MemoryCategory::kCommBuffers);  // every shard lands
  const Span out(gathered_.data(), static_cast<std::size_t>(layout_.padded_numel()));
  // (Parameter offload on a discrete device always comes with the host's update.)
  const bool upload = placement_.update_on_host && placement_.params_memory != MemoryKind::kDevice;
  // On a discrete device a shard in host memory is copied in first (the copy stream), and the
  // gather, queued behind that copy on the compute stream, reads the device copy.
  auto gather_from_host = [this, &shard_comm, S, out, pd, upload](const void* shard) {
    if (!upload) return shard_comm.all_gather(ConstSpan(shard, S), out, pd);
    uploaded_ = allocate_overwritten(static_cast<std::int64_t>(S), pd, MemoryCategory::kCommBuffers);
    Stream& copy = device_.stream(StreamRole::kCopy);
    copy.wait(device_.stream(StreamRole::kCompute).record());  // earlier users of the memory first
    device_.copy_from_host_async(uploaded_.data(), shard, S * dtype_size(pd), copy);
    stats_.bytes_to_device += static_cast<std::int64_t>(S * dtype_size(pd));
    device_.stream(StreamRole::kCompute).wait(copy.record());
    return shard_comm.all_gather(ConstSpan(uploaded_.data(), S), out, pd);
  };
  if (!stored_.in_store()) return gather_from_host(stored_.tensor().data());
  // The shard comes from the file first; the gather starts once it is in.
  std::byte* staged = staged_.reserve(static_cast<std::size_t>(stored_.extent().file_bytes()));
  Work read = store_->read_all(stored_.extent(), staged);
  return then(std::move(read), [gather_from_host, staged] { return gather_from_host(staged); });
}

void FlatParamUnit::finish_gather() {
  if (!gather_in_flight_) throw std::logic_error("FlatParamUnit " + name_ + ": finish_gather without a gather");
  gather_in_flight_ = false;
  const Tensor& source = placement_.gather_for_compute ? gathered_ : stored_.tensor();
  const DType cd = precision_.compute_dtype;
  if (precision_.param_dtype == cd) {
    compute_ = source;
  } else {
    compute_ = allocate_overwritten(layout_.padded_numel(), cd, MemoryCategory::kCommBuffers);
    device_.kernels().convert(source.data(), precision_.param_dtype, compute_.data(), cd, layout_.padded_numel());
  }
  gathered_ = Tensor();
  uploaded_ = Tensor();
  staged_.release();
  bind_values();
}

void FlatParamUnit::release_params() {
  if (!placement_.transient_compute_copy || !ready_) return;
  unbind_values();
  compute_ = Tensor();
}

void FlatParamUnit::bind_values() {
  ready_ = true;
  sync_bindings();
}

void FlatParamUnit::unbind_values() {
  ready_ = false;
  sync_bindings();
}

void FlatParamUnit::bind_grads(const Tensor& buffer) {
  grad_binding_ = buffer;
  grads_bound_ = true;
  sync_bindings();
}

void FlatParamUnit::unbind_grads() {
  grad_binding_ = Tensor();
  grads_bound_ = false;
  sync_bindings();
}

void FlatParamUnit::sync_bindings() {
  const bool accessible = !access_closed();
  for (const FlatEntry& e : layout_.entries()) {
    e.parameter->value = accessible && ready_ ? compute_.view(e.offset, e.parameter->shape) : Tensor();
    e.parameter->grad = accessible && grads_bound_ ? grad_binding_.view(e.offset, e.parameter->shape) : Tensor();
  }
}

void FlatParamUnit::set_access_guard(bool on) {
  guarded_ = on;
  open_ = 0;
  sync_bindings();
}

void FlatParamUnit::open_access() {
  if (open_++ == 0 && guarded_) sync_bindings();
}

void FlatParamUnit::close_access() {
  if (open_ == 0) return;
  if (--open_ == 0 && guarded_) sync_bindings();
}

void FlatParamUnit::prepare_grads() {
  if (grads_bound_) return;
  if (placement_.transient_compute_grads) {
    grad_compute_ = allocate(layout_.padded_numel(), precision_.compute_dtype, MemoryCategory::kGradients);
    bind_grads(grad_compute_);
    return;
  }
  grad_full_ = allocate(layout_.padded_numel(), DType::kF32, MemoryCategory::kGradients);
  bind_grads(grad_full_);
}

void FlatParamUnit::accumulate_grads() {
  if (!placement_.transient_compute_grads || !grad_compute_.defined()) return;
  if (placement_.grad_accumulator != Extent::kFull) {
    throw std::logic_error("FlatParamUnit " + name_ + ": gradients are accumulated unreduced only at stages 0-1");
  }
  device_.kernels().add_bf16(grad_full_.data_as<float>(), grad_full_.data_as<float>(), grad_compute_.data_as<Bf16>(),
                             layout_.padded_numel(), nullptr);
  unbind_grads();
  grad_compute_ = Tensor();
  sum_squares_kept_in_ = nullptr;
  grad_offloaded_ = false;
}

Work FlatParamUnit::start_grad_reduce(Communicator& shard_comm) {
  prepare_grads();  // a unit no module touched this micro-step reduces zeros
  const std::int64_t P = layout_.padded_numel(), S = layout_.shard_numel();
  const DType wire = precision_.reduce_dtype;  // f32 gradients travel as this; the communicator converts
  reduced_in_compute_ = false;
  if (placement_.transient_compute_grads) {
    if (placement_.grad_accumulator == Extent::kFull) {
      accumulate_grads();  // into the f32 accumulator, reduced below as in f32
    } else if (wire == precision_.compute_dtype) {
      // The micro-batch's bf16 gradients go on the bf16 wire as they are, reduced in place into this
      // rank's slice; finish_grad_reduce adds the slice into the f32 shard.
      reduced_in_compute_ = true;
      std::byte* base = static_cast<std::byte*>(grad_compute_.data());
      return shard_comm.reduce_scatter(
          ConstSpan(base, static_cast<std::size_t>(P)),
          Span(base + static_cast<std::size_t>(layout_.shard_begin()) * dtype_size(wire), static_cast<std::size_t>(S)),
          wire, ReduceOp::kAvg);
    } else {
      // Another wire: the gradients widened into a transient f32 buffer, reduced as in f32.
      grad_full_ = allocate_overwritten(P, DType::kF32, MemoryCategory::kGradients);
      device_.kernels().convert(grad_compute_.data(), precision_.compute_dtype, grad_full_.data(), DType::kF32, P);
      unbind_grads();
      grad_compute_ = Tensor();
    }
  }
  float* grads = grad_full_.data_as<float>();
  if (placement_.grad_collective == GradCollective::kAllReduce) {
    reduced_into_shard_ = false;
    return shard_comm.all_reduce_f32(Span(grads, static_cast<std::size_t>(P)), wire, ReduceOp::kAvg);
  }
  // The first reduction after zero_grads lands straight in the shard accumulator (stages 2-3);
  // otherwise in place, in this rank's slice of the full buffer (added to the shard when finished).
  reduced_into_shard_ = placement_.transient_full_grads && shard_is_zero_;
  float* out = reduced_into_shard_ ? grad_shard_.data_as<float>() : grads + layout_.shard_begin();
  if (reduced_into_shard_) shard_is_zero_ = false;
  return shard_comm.reduce_scatter_f32(ConstSpan(grads, static_cast<std::size_t>(P)),
                                       Span(out, static_cast<std::size_t>(S)), wire, ReduceOp::kAvg);
}

void FlatParamUnit::finish_grad_reduce(Communicator* replicate_comm, double* sum_squares_out) {
  if (reduced_in_compute_) {
    finish_compute_grad_reduce(replicate_comm, sum_squares_out);
    return;
  }
  const FlatRange range = placement_.grad_collective == GradCollective::kAllReduce ? layout_.full() : layout_.shard();
  float* reduced = reduced_into_shard_ ? grad_shard_.data_as<float>() : grad_full_.data_as<float>() + range.begin;
  if (replicate_comm != nullptr) {
    replicate_comm
        ->all_reduce_f32(Span(reduced, static_cast<std::size_t>(range.count)), precision_.reduce_dtype, ReduceOp::kAvg)
        .wait();
  }
  sum_squares_kept_in_ = nullptr;
  if (placement_.transient_full_grads) {
    // Accumulate the micro-step's reduced shard in f32 (unless it landed there), with its sum of
    // squares when asked, then drop the full buffer.
    float* shard = grad_shard_.data_as<float>();
    if (reduced_into_shard_) {
      // Nothing to add; grad_sum_squares reads the shard itself.
    } else if (sum_squares_out != nullptr) {
      device_.kernels().add_sum_squares(shard, shard, reduced, layout_.shard_numel(), sum_squares_out);
      sum_squares_kept_in_ = sum_squares_out;
    } else {
      device_.kernels().add(shard, shard, reduced, layout_.shard_numel());
    }
    if (grads_bound_) unbind_grads();
    grad_full_ = Tensor();
  }
  reduced_into_shard_ = false;
  grad_offloaded_ = false;
}

void FlatParamUnit::finish_compute_grad_reduce(Communicator* replicate_comm, double* sum_squares_out) {
  // grad_compute_'s slice at shard_begin holds the reduced bf16 shard (stages 2-3).
  const DType cd = precision_.compute_dtype;
  const std::int64_t S = layout_.shard_numel();
  auto* slice = grad_compute_.data_as<Bf16>() + layout_.shard_begin();
  if (replicate_comm != nullptr) {
    replicate_comm->all_reduce(Span(slice, static_cast<std::size_t>(S)), cd, ReduceOp::kAvg).wait();
  }
  float* shard = grad_shard_.data_as<float>();
  device_.kernels().add_bf16(shard, shard, slice, S, sum_squares_out);
  sum_squares_kept_in_ = sum_squares_out;
  shard_is_zero_ = false;
  unbind_grads();
  grad_compute_ = Tensor();
  reduced_in_compute_ = false;
  grad_offloaded_ = false;
}

void FlatParamUnit::zero_grads() {
  sum_squares_kept_in_ = nullptr;
  grad_offload_.synchronize();  // a skipped step's copy still reading the gradients
  grad_offloaded_ = false;
  if (grad_compute_.defined()) {  // a backward that did not finish: its micro-batch is dropped
    unbind_grads();
    grad_compute_ = Tensor();
  }
  if (grad_full_.defined()) grad_full_.zero_();
  if (grad_shard_.defined()) grad_shard_.zero_();
  shard_is_zero_ = true;
}

void FlatParamUnit::start_grad_offload() {
  if (!placement_.update_on_host || grad_offloaded_) return;
  const Tensor grads = reduced_grad_range();
  Stream& copy = device_.stream(StreamRole::kCopy);
  copy.wait(device_.stream(StreamRole::kCompute).record());  // after the reduction that wrote them
  device_.copy_to_host_async(grad_host_.data(), grads.data(), grads.nbytes(), copy);
  grad_offload_ = copy.record();
  grad_offloaded_ = true;
  stats_.bytes_to_host += static_cast<std::int64_t>(grads.nbytes());
}

Tensor FlatParamUnit::reduced_grads() {
  sum_squares_kept_in_ = nullptr;
  grad_offloaded_ = false;
  return reduced_grad_range();
}

Tensor FlatParamUnit::reduced_grad_range() const {
  if (placement_.grad_accumulator == Extent::kShard) return grad_shard_;
  const FlatRange range = optimizer_range();
  return grad_full_.view(range.begin, {range.count});
}

void FlatParamUnit::grad_sum_squares(const Kernels& kernels, double* out) const {
  if (out != nullptr && out == sum_squares_kept_in_) return;
  const float* g = placement_.grad_accumulator == Extent::kShard ? grad_shard_.data_as<float>()
                                                                 : grad_full_.data_as<float>() + layout_.shard_begin();
  kernels.sum_squares(g, layout_.shard_numel(), out);
}

void FlatParamUnit::grad_sum_squares(const Kernels& kernels, FlatRange range, double* out) const {
  const std::int64_t shard_begin = layout_.shard_begin();
  const std::int64_t lo = std::max(range.begin, shard_begin);
  const std::int64_t hi = std::min(range.end(), shard_begin + layout_.shard_numel());
  const float* g = placement_.grad_accumulator == Extent::kShard ? grad_shard_.data_as<float>()
                                                                 : grad_full_.data_as<float>() + shard_begin;
  kernels.sum_squares(g == nullptr ? nullptr : g + std::max<std::int64_t>(0, lo - shard_begin),
                      std::max<std::int64_t>(0, hi - lo), out);
}

PlacedTensor FlatParamUnit::published_range() const {
  const FlatRange range = optimizer_range();
  if (stored_.values() == range.count) return stored_;
  return PlacedTensor::resident(stored_.tensor().view(range.begin, {range.count}));
}

const Kernels& FlatParamUnit::update_kernels(const Kernels& kernels) const {
  return placement_.update_on_host && device_.holds_data() ? host_kernels() : kernels;
}

PlacedTensor FlatParamUnit::publish_target() const {
  return params_host_.defined() ? PlacedTensor::resident(params_host_) : published_range();
}

void FlatParamUnit::upload_published() {
  if (!params_host_.defined()) return;
  Tensor target = published_range().tensor();
  Stream& copy = device_.stream(StreamRole::kCopy);
  copy.wait(device_.stream(StreamRole::kCompute).record());  // after every earlier read of the parameters
  device_.copy_from_host_async(target.data(), params_host_.data(), params_host_.nbytes(), copy);
  upload_ = copy.record();
  device_.stream(StreamRole::kCompute).wait(upload_);
  stats_.bytes_to_device += static_cast<std::int64_t>(params_host_.nbytes());
}

void FlatParamUnit::optimizer_step(const Kernels& device_kernels, float lr, std::int64_t step, float grad_scale) {
  const FlatRange range = optimizer_range();
  const Kernels& kernels = update_kernels(device_kernels);
  using Clock = std::chrono::steady_clock;
  const auto waited = Clock::now();
  if (placement_.update_on_host) {
    start_grad_offload();
    grad_offload_.synchronize();  // queued after the last upload: params_host_ is free again too
  }
  const auto updating = Clock::now();
  const Tensor grads = placement_.update_on_host ? grad_host_ : reduced_grad_range();
  // Slots of the pass: master, gradients, the rule's state, then (separate master) the stored
  // parameters it publishes into.
  std::vector<StreamSlot> slots{master_.slot(true, true), PlacedTensor::resident(grads).slot(true, false)};
  for (const PlacedTensor& t : state_) slots.push_back(t.slot(true, true));
  const bool publish = !placement_.master_is_params;
  const PlacedTensor target = publish ? publish_target() : PlacedTensor();
  if (publish) slots.push_back(target.slot(false, true));
  const std::size_t states = state_.size();
  const DType pd = precision_.param_dtype;
  stream_windows(store_, slots, range.count,
                 [&](std::int64_t begin, std::int64_t count, std::span<std::byte* const> data) {
                   auto* master = reinterpret_cast<float*>(data[0]);
                   const std::vector<ParamSegment> segments = layout_.segments({range.begin + begin, count});
                   rule_->update(kernels, master, reinterpret_cast<const float*>(data[1]), data.subspan(2, states),
                                 count, segments, lr, step, grad_scale);
                   if (publish) kernels.convert(master, DType::kF32, data[2 + states], pd, count);
                 });
  if (placement_.update_on_host) {
    stats_.copy_wait_seconds += std::chrono::duration<double>(updating - waited).count();
    stats_.update_seconds += std::chrono::duration<double>(Clock::now() - updating).count();
    stats_.updated_elements += range.count;
  }
  if (publish) upload_published();
  published_by_step_ = true;
}

Work FlatParamUnit::start_publish(Communicator& shard_comm) {
  const DType pd = precision_.param_dtype;
  const FlatRange range = optimizer_range();
  if (!placement_.master_is_params && !published_by_step_) {
    upload_.synchronize();  // params_host_ may still be on its way to the device
    const PlacedTensor target = publish_target();
    const StreamSlot slots[] = {master_.slot(true, false), target.slot(false, true)};
    const Kernels& kernels = update_kernels(device_.kernels());
    stream_windows(store_, slots, range.count, [&](std::int64_t, std::int64_t count, std::span<std::byte* const> data) {
      kernels.convert(data[0], DType::kF32, data[1], pd, count);
    });
    upload_published();
  }
  published_by_step_ = false;
  if (!placement_.publish_by_all_gather) return Work();
  Tensor stored = stored_.tensor();
  const void* mine =
      static_cast<const std::byte*>(stored.data()) + static_cast<std::size_t>(range.begin) * dtype_size(pd);
  return shard_comm.all_gather(ConstSpan(mine, static_cast<std::size_t>(range.count)),
                               Span(stored.data(), static_cast<std::size_t>(stored.numel())), pd);
}

std::vector<StateTensor> FlatParamUnit::state() const {
  std::vector<StateTensor> out{{"master", master_.tensor()}};
  const std::vector<StateSpec> specs = rule_->specs();
  for (std::size_t k = 0; k < state_.size(); ++k) {
    out.push_back({specs[k].name, state_[k].tensor(), specs[k].elements_per_value});
  }
  return out;
}

void FlatParamUnit::read_state(std::size_t k, std::int64_t first, std::int64_t count, void* host) const {
  placed_state(k).read(first, count, host);
}

void FlatParamUnit::write_state(std::size_t k, std::int64_t first, std::int64_t count, const void* host) {
  placed_state(k).write(first, count, host);
}

void FlatParamUnit::reset_optimizer() {
  for (PlacedTensor& t : state_) t.zero();
}

}  // namespace tessera
