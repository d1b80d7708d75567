// StagedCommunicator: collectives on a device's memory carried out by a host-memory communicator
// (MPI). Each collective copies its device buffers into pinned host staging buffers (after the work
// queued on the device's compute stream), runs the host collective on them and copies the results
// back. Slower than NCCL, but it needs no NCCL and lets ranks share one GPU, which NCCL refuses: the
// device world for --comm mpi, for a build without NCCL, and for two ranks on a one-GPU machine.
// Results are the host collective's, bit for bit (MPI's rank order, its wire conversions).
// Every collective has completed when it returns (its Work is complete, or failed with the host
// collective's error). The two staging buffers grow to the largest collective and are counted as
// comm buffers by the device's pinned-host tracker.
#pragma once

#include <functional>
#include <memory>

#include "tessera/comm/communicator.hpp"

namespace tessera {

class Device;
class Storage;

class StagedCommunicator final : public Communicator {
 public:
  // `host` works on host memory and outlives this communicator, as does `device`.
  StagedCommunicator(Device& device, Communicator& host);
  // The same, owning `host` (what split() returns).
  StagedCommunicator(Device& device, std::unique_ptr<Communicator> host);
  ~StagedCommunicator() override;

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  const std::string& name() const override { return host_->name(); }
  CommBackend backend() const override { return host_->backend(); }
  MemorySpace memory_space() const override;

  Work all_reduce(Span buf, DType dtype, ReduceOp op) override;
  Work reduce_scatter(ConstSpan in, Span out, DType dtype, ReduceOp op) override;
  Work all_reduce_f32(Span buf, DType wire, ReduceOp op) override;
  Work reduce_scatter_f32(ConstSpan in, Span out, DType wire, ReduceOp op) override;
  Work all_gather(ConstSpan in, Span out, DType dtype) override;
  Work broadcast(Span buf, DType dtype, int root) override;
  Work barrier() override;
  std::unique_ptr<Communicator> split(int color, int key) override;

  void set_collective_check(CollectiveCheck check) override { host_->set_collective_check(check); }
  CollectiveCheck collective_check() const override { return host_->collective_check(); }

 private:
  // Pinned host memory of at least `bytes` for staging slot 0 (input) or 1 (output).
  void* staging(int slot, std::size_t bytes);
  // Copies `in_bytes` of device memory at `in` (none when null) to staging slot 0, runs
  // `host_collective(host_in, host_out)` (host_out is slot 0 again when `in_place`, else slot 1) and
  // copies `out_bytes` of host_out to the device at `out` (none when null). A completed Work.
  Work staged(const void* in, std::size_t in_bytes, void* out, std::size_t out_bytes, bool in_place,
              const std::function<void(void* host_in, void* host_out)>& host_collective);

  Device* device_;
  std::unique_ptr<Communicator> owned_;
  Communicator* host_;
  std::shared_ptr<Storage> staging_[2];
};

}  // namespace tessera
