// CountingCommunicator: a Communicator decorator for the benchmarks that forwards every call to an
// inner communicator and adds up the bytes this rank sends through it, so a table can say what a
// step costs on the wire per rank and split it by group (data- and tensor-parallel).
//
// The count is what the MPI backend's direct algorithms send from this rank
// (comm/mpi/mpi_algorithms.hpp), the same as a ring's, worked out from the call's arguments:
//   reduce_scatter   (N-1) x out.count elements      of the dtype (the wire dtype for _f32)
//   all_gather       (N-1) x in.count elements
//   all_reduce       total - own + (N-1) x own       own: this rank's near-equal chunk of the buffer
//   broadcast        count elements at the root, nothing elsewhere
//   barrier          nothing
// Collectives a communicator split from this one issues count into the same total, so an engine's
// hybrid groups are counted with their parent. A one-rank communicator sends nothing. Calls on
// several threads may add at once (the counter is atomic).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "tessera/comm/communicator.hpp"

namespace tessera::benchmarks {

class CountingCommunicator final : public Communicator {
 public:
  // Borrows `inner`, which must outlive this decorator.
  explicit CountingCommunicator(Communicator& inner) : inner_(inner), sent_(std::make_shared<Counter>()) {}

  // Bytes sent from this rank through this communicator and those split from it, since construction.
  std::int64_t bytes_sent() const { return sent_->load(std::memory_order_relaxed); }

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  const std::string& name() const override { return inner_.name(); }
  CommBackend backend() const override { return inner_.backend(); }
  MemorySpace memory_space() const override { return inner_.memory_space(); }

  Work all_reduce(Span buf, DType dtype, ReduceOp op) override {
    add_all_reduce(buf.count, dtype);
    return inner_.all_reduce(buf, dtype, op);
  }
  Work reduce_scatter(ConstSpan in, Span out, DType dtype, ReduceOp op) override {
    add(peers() * out.count, dtype);
    return inner_.reduce_scatter(in, out, dtype, op);
  }
  Work all_reduce_f32(Span buf, DType wire, ReduceOp op) override {
    add_all_reduce(buf.count, wire);
    return inner_.all_reduce_f32(buf, wire, op);
  }
  Work reduce_scatter_f32(ConstSpan in, Span out, DType wire, ReduceOp op) override {
    add(peers() * out.count, wire);
    return inner_.reduce_scatter_f32(in, out, wire, op);
  }
  Work all_gather(ConstSpan in, Span out, DType dtype) override {
    add(peers() * in.count, dtype);
    return inner_.all_gather(in, out, dtype);
  }
  Work broadcast(Span buf, DType dtype, int root) override {
    if (rank() == root && size() > 1) add(buf.count, dtype);
    return inner_.broadcast(buf, dtype, root);
  }
  Work barrier() override { return inner_.barrier(); }
  std::unique_ptr<Communicator> split(int color, int key) override {
    std::unique_ptr<Communicator> sub = inner_.split(color, key);
    if (!sub) return nullptr;
    return std::unique_ptr<Communicator>(new CountingCommunicator(std::move(sub), sent_));
  }
  void set_collective_check(CollectiveCheck check) override { inner_.set_collective_check(check); }
  CollectiveCheck collective_check() const override { return inner_.collective_check(); }

 private:
  using Counter = std::atomic<std::int64_t>;

  // A communicator split from a counted one: owns its inner communicator, shares the count.
  CountingCommunicator(std::unique_ptr<Communicator> owned, std::shared_ptr<Counter> sent)
      : owned_(std::move(owned)), inner_(*owned_), sent_(std::move(sent)) {}

  std::size_t peers() const { return static_cast<std::size_t>(size() - 1); }
  void add(std::size_t elements, DType dtype) {
    sent_->fetch_add(static_cast<std::int64_t>(elements * dtype_size(dtype)), std::memory_order_relaxed);
  }
  // Reduce-scatter phase: every chunk but its own to its owner; all-gather phase: its own chunk to
  // every peer. Chunks as the backend cuts them: the first total % N ranks hold one element more.
  void add_all_reduce(std::size_t total, DType dtype) {
    const auto n = static_cast<std::size_t>(size());
    const std::size_t own = total / n + (static_cast<std::size_t>(rank()) < total % n ? 1 : 0);
    add(total - own + peers() * own, dtype);
  }

  std::unique_ptr<Communicator> owned_;  // null unless split from a counted communicator
  Communicator& inner_;
  std::shared_ptr<Counter> sent_;
};

}  // namespace tessera::benchmarks
