// Tensor parallelism (Megatron-LM's) as the modules see it: the group of ranks that split each
// layer's matrices between them, and the collectives at the edges of the parallel regions.
//
// A column-parallel layer (qkv, fc, gate_up, the vocabulary-parallel head) holds a piece of the
// output features and needs the whole input; a row-parallel layer (attn.proj, mlp.proj, down)
// holds the matching piece of the input features and produces a partial sum of the whole output.
// Between them nothing is communicated. At the edges:
//
//   region entry (before a column-parallel layer)   forward                 backward
//     without sequence parallelism                   identity                all-reduce dx
//     with sequence parallelism                      all-gather rows         reduce-scatter dx rows
//   region exit (after a row-parallel layer)
//     without sequence parallelism                   all-reduce              identity
//     with sequence parallelism                      reduce-scatter rows     all-gather dy rows
//
// With sequence parallelism the norms, residual adds and the embedding's output hold 1/N of the
// micro-batch's token rows: rank r the rows [r B T / N, (r+1) B T / N) of the (B*T, C) activations,
// as a tensor (1, B*T/N, C). Megatron-LM splits the sequence dimension of its (T, B, C) layout;
// splitting the rows of Tessera's (B, T, C) layout is the same for every op in those regions (they
// are row-wise) and keeps each rank's rows contiguous, so the collectives need no reordering. The
// norms' parameters are replicated, so their gradients from 1/N of the rows are partial: they are
// summed over the group (ReplicatedGrads) before they reach the parameters' gradients.
//
// The collectives are blocking and run on the device's memory, in rank order (deterministic).
// Every rank of the group must run the same modules in the same order, as data-parallel ranks do.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tessera/model/context.hpp"
#include "tessera/model/parallel/tensor_slice.hpp"
#include "tessera/model/parameter.hpp"
#include "tessera/runtime/tensor.hpp"

namespace tessera {

// Collectives over the ranks of one tensor-parallel group, on device tensors (f32 or bf16), blocking.
// The sharding layer implements it on a Communicator (sharding/tensor_parallel_comm.hpp).
class TensorParallelGroup {
 public:
  virtual ~TensorParallelGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // x (n) in place: the sum of every rank's x, added in rank order.
  virtual void all_reduce_sum(Tensor& x) = 0;
  // out (size * n): rank r's in (n) at [r n, (r+1) n).
  virtual void all_gather(const Tensor& in, Tensor& out) = 0;
  // out (n): the sum over ranks of their in (size * n) elements [rank() n, (rank()+1) n).
  virtual void reduce_scatter_sum(const Tensor& in, Tensor& out) = 0;
};

class TensorParallel {
 public:
  TensorParallel(std::shared_ptr<TensorParallelGroup> group, bool sequence_parallel);

  int rank() const { return group_->rank(); }
  int size() const { return group_->size(); }
  // Sequence parallelism in the current forward and its backward: as configured, except in an
  // inference forward whose token rows the group's size does not divide (sampling's growing
  // prompt), which runs with every rank holding every row.
  bool sequence_parallel() const { return active_; }
  TensorParallelGroup& group() const { return *group_; }

  // This rank's piece of a tensor whose dimension `dim` holds `segments` (tensor_slice.hpp).
  TensorSlice split(int dim, std::vector<std::int64_t> segments) const;
  // `count` (heads, key/value heads, hidden features) divided over the group; throws
  // std::invalid_argument naming `what` and both numbers when it does not divide.
  std::int64_t divided(std::int64_t count, const std::string& what) const;

  // The micro-batch's (B, T), set by the embedding at each forward: the shape the region entries
  // gather sequence-parallel rows back into. Throws std::invalid_argument when sequence parallelism
  // is on, B*T is not a multiple of the group's size and `training` (an inference forward then runs
  // without it).
  void set_token_shape(std::int64_t batch, std::int64_t seq_len, bool training);

  // Region entry: x (1, B*T/N, C) sequence-parallel rows -> (B, T, C); x itself otherwise.
  Tensor enter(Context& ctx, const Tensor& x) const;
  // Its backward: dx (B, T, C) -> the rows' gradient summed over the group (sequence parallel:
  // (1, B*T/N, C)), or dx all-reduced in place.
  Tensor enter_backward(Context& ctx, Tensor dx) const;
  // Region exit: a partial (B, T, C) -> summed over the group: this rank's rows (1, B*T/N, C)
  // (sequence parallel) or the whole sum in place.
  Tensor exit(Context& ctx, Tensor partial) const;
  // Its backward: dy (1, B*T/N, C) -> (B, T, C) gathered (sequence parallel); dy itself otherwise.
  Tensor exit_backward(Context& ctx, const Tensor& dy) const;

  // One row of vocabulary-parallel logits made whole, on the host: this rank's piece `row` (its
  // columns of a vocabulary of `vocab`, compute dtype) gathered from every rank of the group, in
  // vocabulary order, as f32 (vocab). For sampling, which reads whole rows.
  std::vector<float> whole_vocabulary_row(Context& ctx, const Tensor& row, std::int64_t vocab) const;

 private:
  Tensor gather_rows(Context& ctx, const Tensor& rows) const;
  Tensor scatter_rows(Context& ctx, const Tensor& full) const;

  std::shared_ptr<TensorParallelGroup> group_;
  bool sequence_parallel_;  // as configured
  bool active_;             // in the current forward
  std::int64_t batch_ = 0, seq_len_ = 0;
};

// A module's region edges when it may run without tensor parallelism (tp null: identity).
inline Tensor enter_region(const TensorParallel* tp, Context& ctx, const Tensor& x) {
  return tp ? tp->enter(ctx, x) : x;
}
inline Tensor enter_region_backward(const TensorParallel* tp, Context& ctx, Tensor dx) {
  return tp ? tp->enter_backward(ctx, std::move(dx)) : dx;
}
inline Tensor exit_region(const TensorParallel* tp, Context& ctx, Tensor partial) {
  return tp ? tp->exit(ctx, std::move(partial)) : partial;
}
inline Tensor exit_region_backward(const TensorParallel* tp, Context& ctx, const Tensor& dy) {
  return tp ? tp->exit_backward(ctx, dy) : dy;
}

// Sequence parallelism's saving at a region entry (Megatron-LM's): the column-parallel layer after
// the entry needs the gathered (B, T, C) input again for its weight gradient; instead of keeping it,
// the module keeps this rank's rows (1, B*T/N, C) and gathers them again in backward (enter() once
// more: one all-gather more per layer, 1/N of the bytes kept). True when it applies to a forward
// in `ctx` (training, sequence parallel).
inline bool keeps_rows(const TensorParallel* tp, const Context& ctx) {
  return tp != nullptr && tp->sequence_parallel() && ctx.training;
}

// The gradients a module accumulates for replicated parameters (norms) under sequence parallelism:
// the kernels add into zeroed buffers of the parameters' shapes (grad(i)), and finish() sums them
// over the group and adds the sums into the parameters' gradients. Without sequence parallelism (or
// tensor parallelism) grad(i) is the parameter's gradient itself and finish() does nothing.
class ReplicatedGrads {
 public:
  ReplicatedGrads(Context& ctx, const TensorParallel* tp, std::vector<Parameter*> parameters);
  Tensor& grad(std::size_t i);
  void finish();

 private:
  Context& ctx_;
  const TensorParallel* tp_;
  std::vector<Parameter*> parameters_;
  std::vector<Tensor> partial_;  // empty unless summed over the group
};

}  // namespace tessera
