// NcclCommunicator: the Communicator over NCCL, on device memory of one GPU per rank (built only
// with CUDA). Collectives run on a communication stream — the CUDA device's (make_device_world,
// comm/device_communicator.hpp) or one of the communicator's own; each one first waits (through an
// event) for the work already queued on the compute stream, and its Work's wait() makes the compute
// stream wait for it (no host block) — so parameter gathers and gradient reductions overlap compute
// without host synchronisation. Communicators split from one share its communication stream when it
// is the device's, so their collectives also run in issue order.
// Make one with make_device_world / make_nccl_communicator (comm/device_communicator.hpp) or from an
// id that nccl_rendezvous produced.
//
// Differences from the MPI backend: NCCL reduces bf16/f16 in its own order and precision, so
// results are reproducible run to run on the same topology but not bit-identical between all_reduce
// and reduce_scatter + all_gather. Debug mode synchronises the host once per collective. The
// watchdog polls each collective's completion event.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <functional>
#include <memory>

#include "tessera/comm/collective_call.hpp"
#include "tessera/comm/communicator_base.hpp"

namespace tessera {

class Device;
class Watchdog;
namespace detail {
class NcclWork;
}

class NcclCommunicator final : public CommunicatorBase {
 public:
  // Collective over the `size` ranks that share `id`. Uses GPU `device`; collectives follow and
  // are awaited on `compute_stream` (nullptr: the legacy default stream) and run on `comm_stream`
  // (nullptr: a stream of its own; otherwise the caller's, which must outlive this communicator and
  // every one split from it).
  // `memory`, when given, is the CUDA device whose communication stream `comm_stream` is: the bf16/f16
  // wire buffers then come from its pool, counted as comm buffers by its memory tracker (else from
  // CUDA's stream-ordered default pool, outside every tracker).
  NcclCommunicator(const ncclUniqueId& id, int rank, int size, int device, cudaStream_t compute_stream,
                   CommOptions options, cudaStream_t comm_stream = nullptr, Device* memory = nullptr);
  // Aborts the NCCL communicator when a collective may still be running (a peer may be gone),
  // destroys it otherwise. Never throws or blocks on peers.
  ~NcclCommunicator() override;

  CommBackend backend() const override { return CommBackend::kNccl; }
  MemorySpace memory_space() const override { return MemorySpace::kGpu; }

  Work all_reduce(Span buf, DType dtype, ReduceOp op) override;
  Work reduce_scatter(ConstSpan in, Span out, DType dtype, ReduceOp op) override;
  // With a bf16/f16 wire: narrows the f32 input into a wire buffer (2 bytes per input element, from
  // the device's pool when the communicator has its device, freed once the collective ran), NCCL
  // reduces in the wire dtype, the result is widened into the f32 output — all on the communication
  // stream.
  Work all_reduce_f32(Span buf, DType wire, ReduceOp op) override;
  Work reduce_scatter_f32(ConstSpan in, Span out, DType wire, ReduceOp op) override;
  Work all_gather(ConstSpan in, Span out, DType dtype) override;
  Work broadcast(Span buf, DType dtype, int root) override;
  Work barrier() override;
  std::unique_ptr<Communicator> split(int color, int key) override;

  int device() const { return device_; }
  // Collectives issued afterwards follow, and are awaited on, this stream.
  void set_compute_stream(cudaStream_t stream) { compute_stream_ = stream; }

 private:
  struct Adopt {};
  NcclCommunicator(Adopt, ncclComm_t comm, int device, cudaStream_t compute_stream, CommOptions options,
                   cudaStream_t comm_stream, Device* memory);
  class WireBuffer;
  WireBuffer wire_buffer(std::size_t bytes);
  void start(cudaStream_t comm_stream);

  Work launch(CollectiveCall call, const std::function<void(cudaStream_t)>& enqueue);
  void verify_matching_calls(const CollectiveCall& call);
  bool probe(detail::NcclWork& work);

  ncclComm_t comm_ = nullptr;
  int device_ = 0;
  cudaStream_t comm_stream_ = nullptr;
  bool owns_comm_stream_ = false;
  cudaStream_t compute_stream_ = nullptr;
  Device* memory_ = nullptr;  // the device whose pool holds wire buffers, or null
  void* scratch_ = nullptr;  // device: barrier word, then size() CollectiveCalls for debug mode
  std::shared_ptr<detail::NcclWork> last_;

  std::unique_ptr<Watchdog> watchdog_;
};

}  // namespace tessera
