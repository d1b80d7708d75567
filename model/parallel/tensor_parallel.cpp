// TensorParallel: the region entries and exits over the group's collectives, and the replicated
// parameters' partial gradients summed over the group.
#include "tessera/model/parallel/tensor_parallel.hpp"

#include <stdexcept>

#include "tessera/model/module.hpp"
#include "tessera/runtime/compute_dtype.hpp"
#include "tessera/runtime/kernels.hpp"

namespace tessera {

TensorParallel::TensorParallel(std::shared_ptr<TensorParallelGroup> group, bool sequence_parallel)
    : group_(std::move(group)), sequence_parallel_(sequence_parallel), active_(sequence_parallel) {
  if (!group_) throw std::invalid_argument("TensorParallel: no group");
}

TensorSlice TensorParallel::split(int dim, std::vector<std::int64_t> segments) const {
  return slice_of(dim, std::move(segments), size(), rank());
}

std::int64_t TensorParallel::divided(std::int64_t count, const std::string& what) const {
  if (count % size() != 0) {
    throw std::invalid_argument("tensor parallelism over " + std::to_string(size()) + " ranks splits the " +
                                std::to_string(count) + " " + what + " between them, which does not divide; choose " +
                                what + " divisible by " + std::to_string(size()) + " or another tensor-parallel size");
  }
  return count / size();
}

void TensorParallel::set_token_shape(std::int64_t batch, std::int64_t seq_len, bool training) {
  const bool divides = (batch * seq_len) % size() == 0;
  active_ = sequence_parallel_ && (divides || training);
  if (active_ && !divides) {
    throw std::invalid_argument("sequence parallelism splits the micro-batch's " + std::to_string(batch) + " x " +
                                std::to_string(seq_len) + " token rows over " + std::to_string(size()) +
                                " ranks, which does not divide; choose a micro-batch and sequence length whose "
                                "product is a multiple of " +
                                std::to_string(size()) + ", or turn sequence parallelism off");
  }
  batch_ = batch;
  seq_len_ = seq_len;
}

Tensor TensorParallel::gather_rows(Context& ctx, const Tensor& rows) const {
  if (batch_ == 0) throw std::logic_error("TensorParallel: no token shape set (the embedding sets it)");
  const std::int64_t c = rows.dim(-1);
  Tensor full = new_activation(ctx, {batch_, seq_len_, c}, rows.dtype());
  group_->all_gather(rows, full);
  return full;
}

Tensor TensorParallel::scatter_rows(Context& ctx, const Tensor& full) const {
  const std::int64_t c = full.dim(-1);
  Tensor rows = new_activation(ctx, {1, full.numel() / c / size(), c}, full.dtype());
  group_->reduce_scatter_sum(full, rows);
  return rows;
}

Tensor TensorParallel::enter(Context& ctx, const Tensor& x) const { return active_ ? gather_rows(ctx, x) : x; }

Tensor TensorParallel::enter_backward(Context& ctx, Tensor dx) const {
  if (active_) return scatter_rows(ctx, dx);
  group_->all_reduce_sum(dx);
  return dx;
}

Tensor TensorParallel::exit(Context& ctx, Tensor partial) const {
  if (active_) return scatter_rows(ctx, partial);
  group_->all_reduce_sum(partial);
  return partial;
}

Tensor TensorParallel::exit_backward(Context& ctx, const Tensor& dy) const {
  return active_ ? gather_rows(ctx, dy) : dy;
}

std::vector<float> TensorParallel::whole_vocabulary_row(Context& ctx, const Tensor& row, std::int64_t vocab) const {
  // The pieces differ by at most one column: each is sent padded to the largest, in f32.
  const std::int64_t width = piece_size(vocab, size(), 0);
  std::vector<float> mine = row.to_host_f32();
  mine.resize(static_cast<std::size_t>(width), 0.0f);
  const Tensor padded = Tensor::from_host(ctx.device, mine, {width}, DType::kF32, MemoryCategory::kWorkspace);
  Tensor all = Tensor::empty(ctx.device, {size() * width}, DType::kF32, MemoryCategory::kWorkspace);
  group_->all_gather(padded, all);
  const std::vector<float> gathered = all.to_host_f32();
  std::vector<float> whole;
  whole.reserve(static_cast<std::size_t>(vocab));
  for (int r = 0; r < size(); ++r) {
    const auto first = gathered.begin() + static_cast<std::ptrdiff_t>(r * width);
    whole.insert(whole.end(), first, first + piece_size(vocab, size(), r));
  }
  return whole;
}

ReplicatedGrads::ReplicatedGrads(Context& ctx, const TensorParallel* tp, std::vector<Parameter*> parameters)
    : ctx_(ctx), tp_(tp && tp->sequence_parallel() ? tp : nullptr), parameters_(std::move(parameters)) {
  if (!tp_) return;
  for (Parameter* p : parameters_) {
    const Tensor& g = require_grad(*p);
    partial_.push_back(Tensor::zeros(ctx_.device, g.shape(), g.dtype(), MemoryCategory::kWorkspace));
  }
}

Tensor& ReplicatedGrads::grad(std::size_t i) { return tp_ ? partial_[i] : require_grad(*parameters_[i]); }

void ReplicatedGrads::finish() {
  if (!tp_) return;
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    Tensor& partial = partial_[i];
    tp_->group().all_reduce_sum(partial);
    Tensor& g = require_grad(*parameters_[i]);
    with_element_type(g.dtype(), "sequence-parallel gradient", [&]<typename T>() {
      ctx_.device.kernels().add(g.data_as<T>(), g.data_as<T>(), partial.data_as<T>(), g.numel());
    });
  }
  partial_.clear();
}

}  // namespace tessera
