// MpiCommunicator: the Communicator over MPI, on host memory (f32, bf16, f16, i32).
// Each communicator owns a private duplicate of its MPI_Comm, a progress thread that runs its
// collectives in issue order (so they overlap the caller's compute; a collective waited for before
// the progress thread started it runs on the waiting thread: comm/mpi/collective_queue.hpp), and a
// watchdog.
// Algorithms: comm/mpi/mpi_algorithms.hpp (direct reduce-scatter / all-gather; bf16 and f16 travel
// as 2 bytes per element and are summed in f32, rounded once; the _f32 collectives convert f32
// buffers to and from their wire dtype segment by segment as they run).
//
// Every call is checked against the other ranks' in both CollectiveCheck modes: ranks that call
// different collectives, or the same one with a different count, dtype, op or root, all get
// CollectiveMismatchError naming the ranks and their calls. The check rides on the messages the
// collectives send anyway (comm/mpi/call_check.hpp), so it costs matching calls nothing;
// broadcast, barrier and split exchange the call itself first.
//
// MPI thread level: the progress thread calls MPI while the application thread may call MPI too, so
// MPI must be initialised with MPI_THREAD_MULTIPLE (kRequiredMpiThreadLevel);
// launch/run_distributed does that. Construction throws when the level provided is lower.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>

#include "tessera/comm/collective_call.hpp"
#include "tessera/comm/communicator_base.hpp"
#include "tessera/comm/mpi/collective_queue.hpp"
#include "tessera/comm/mpi/mpi_counters.hpp"

namespace tessera {

namespace detail {
class MpiAlgorithms;
}  // namespace detail
class Watchdog;

inline constexpr int kRequiredMpiThreadLevel = MPI_THREAD_MULTIPLE;

// "MPI_THREAD_SINGLE", ..., "MPI_THREAD_MULTIPLE"
const char* mpi_thread_level_name(int level);

// Throws std::runtime_error saying what to do when MPI is not initialised, already finalised, or
// initialised below kRequiredMpiThreadLevel.
void require_mpi_thread_level();

struct MpiTuning {
  MpiTuning() = default;
  explicit MpiTuning(std::size_t segment) : segment_bytes(segment) {}

  // Pipeline segment of the reduce-scatter phase, per peer. Must be equal on every rank. Scratch is
  // 2 * (ranks - 1) segments. On one node a rank copies its peers' segments itself (MPI's
  // single-copy transfers), so smaller segments overlap nothing and add messages; 2 MiB keeps a
  // 2-rank all_reduce of 4 MiB in one segment.
  std::size_t segment_bytes = std::size_t{2} << 20;
  // When every rank is on one node, collectives that move up to this many bytes run through shared
  // memory instead of messages (comm/mpi/shared_memory_collectives.hpp): all_reduce of a buffer
  // and reduce_scatter of an input of that size, all_gather of that much per rank. The block
  // (/dev/shm) is reserved when the communicator is made: about 2 x this per rank on the node, per
  // communicator. 0 on any rank: messages only; otherwise rank 0's value holds for all.
  std::size_t shared_memory_bytes = std::size_t{4} << 20;
  // When the progress thread starts a collective no caller has waited for yet
  // (comm/mpi/collective_queue.hpp). May differ between ranks.
  detail::ProgressTiming progress;
};

class MpiCommunicator final : public CommunicatorBase, private detail::CollectiveRunner {
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

  // What this communicator has done on this rank so far (for tests and benchmarks).
  MpiCounters counters() const { return counters_.snapshot(); }
  // The most bytes a collective moves through shared memory (MpiTuning::shared_memory_bytes);
  // 0 when its ranks are not all on one node, or shared memory is off or could not be had.
  std::size_t shared_memory_slot_bytes() const;

 private:
  struct Adopt {};
  MpiCommunicator(Adopt, MPI_Comm owned, CommOptions options, MpiTuning tuning);
  void start();

  // Numbers the task's call and queues it.
  Work enqueue(detail::CollectiveTask task);
  // CollectiveRunner: runs one task under the watchdog (on the progress thread or a waiting one).
  std::exception_ptr run(const detail::CollectiveTask& task, bool by_waiter) noexcept override;
  std::exception_ptr cancelled(const detail::CollectiveTask& task) noexcept override;
  void run_algorithm(const detail::CollectiveTask& task);

  MPI_Comm comm_ = MPI_COMM_NULL;
  MpiTuning tuning_;
  detail::LiveMpiCounters counters_;
  std::unique_ptr<detail::MpiAlgorithms> algorithms_;  // one task at a time
  std::unique_ptr<Watchdog> watchdog_;
  std::unique_ptr<detail::CollectiveQueue> queue_;
};

}  // namespace tessera
