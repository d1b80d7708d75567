// MpiCommunicator: the Communicator over MPI, on host memory (f32, bf16, f16, i32).
// Each communicator owns a private duplicate of its MPI_Comm, a progress thread that runs its
// collectives in issue order (so they overlap the caller's compute), and a watchdog.
// Algorithms: comm/mpi/mpi_algorithms.hpp (direct reduce-scatter / all-gather; bf16 and f16 travel
// as 2 bytes per element and are summed in f32, rounded once; the _f32 collectives convert f32
// buffers to and from their wire dtype segment by segment on the progress thread).
//
// MPI thread level: the progress thread calls MPI while the application thread may call MPI too, so
// MPI must be initialised with MPI_THREAD_MULTIPLE (kRequiredMpiThreadLevel);
// launch/run_distributed does that. Construction throws when the level provided is lower.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>

#include "tessera/comm/collective_call.hpp"
#include "tessera/comm/communicator_base.hpp"

namespace tessera {

namespace detail {
class CompletionWork;
class MpiAlgorithms;
class SerialExecutor;
}  // namespace detail
class Watchdog;

inline constexpr int kRequiredMpiThreadLevel = MPI_THREAD_MULTIPLE;

// "MPI_THREAD_SINGLE", ..., "MPI_THREAD_MULTIPLE"
const char* mpi_thread_level_name(int level);

// Throws std::runtime_error saying what to do when MPI is not initialised, already finalised, or
// initialised below kRequiredMpiThreadLevel.
void require_mpi_thread_level();

struct MpiTuning {
  // Pipeline segment of the reduce-scatter phase, per peer. Must be equal on every rank.
  std::size_t segment_bytes = std::size_t{1} << 20;
};

class MpiCommunicator final : public CommunicatorBase {
 public:
  // Collective over `comm`: every rank of it constructs its MpiCommunicator at the same point.
  // Duplicates `comm`; the caller keeps ownership of `comm` itself.
  explicit MpiCommunicator(MPI_Comm comm, CommOptions options = {}, MpiTuning tuning = {});
  // Collectives not yet started fail with "cancelled"; the one running is finished first (bounded
  // by the watchdog). Frees the MPI_Comm unless MPI is already finalised. Never throws.
  ~MpiCommunicator() override;

  CommBackend backend() const override { return CommBackend::kMpi; }
  MemorySpace memory_space() const override { return MemorySpace::kHost; }

  Work all_reduce(Span buf, DType dtype, ReduceOp op) override;
  Work reduce_scatter(ConstSpan in, Span out, DType dtype, ReduceOp op) override;
  Work all_reduce_f32(Span buf, DType wire, ReduceOp op) override;
  Work reduce_scatter_f32(ConstSpan in, Span out, DType wire, ReduceOp op) override;
  Work all_gather(ConstSpan in, Span out, DType dtype) override;
  Work broadcast(Span buf, DType dtype, int root) override;
  Work barrier() override;
  std::unique_ptr<Communicator> split(int color, int key) override;

 private:
  struct Adopt {};
  MpiCommunicator(Adopt, MPI_Comm owned, CommOptions options, MpiTuning tuning);
  void start();

  Work enqueue(CollectiveCall call, std::function<void()> body);
  void execute(const CollectiveCall& call, CollectiveCheck check, const std::function<void()>& body,
               detail::CompletionWork& work);
  void verify_matching_calls(const CollectiveCall& call);

  MPI_Comm comm_ = MPI_COMM_NULL;
  MpiTuning tuning_;
  std::unique_ptr<detail::MpiAlgorithms> algorithms_;  // progress thread only
  std::unique_ptr<Watchdog> watchdog_;
  std::unique_ptr<detail::SerialExecutor> executor_;
};

}  // namespace tessera
