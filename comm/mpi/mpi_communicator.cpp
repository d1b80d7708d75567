// MpiCommunicator: argument checks on the caller's thread, then each collective is queued; the
// thread that runs it (the progress thread, or one waiting for it) runs the algorithm — which
// checks on its first messages that all ranks made the same call — under the watchdog.
#include "tessera/comm/mpi/mpi_communicator.hpp"

#include <unistd.h>

#include <stdexcept>
#include <utility>

#include "tessera/comm/collective_args.hpp"
#include "tessera/comm/mpi/mpi_algorithms.hpp"
#include "tessera/comm/mpi/mpi_check.hpp"
#include "tessera/comm/watchdog.hpp"

namespace tessera {
namespace {

// "rank 1/4 (host node17)", ranks of MPI_COMM_WORLD.
std::string describe_world_rank() {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '?';
  return "rank " + std::to_string(rank) + "/" + std::to_string(size) + " (host " + host + ")";
}

}  // namespace

const char* mpi_thread_level_name(int level) {
  if (level == MPI_THREAD_SINGLE) return "MPI_THREAD_SINGLE";
  if (level == MPI_THREAD_FUNNELED) return "MPI_THREAD_FUNNELED";
  if (level == MPI_THREAD_SERIALIZED) return "MPI_THREAD_SERIALIZED";
  if (level == MPI_THREAD_MULTIPLE) return "MPI_THREAD_MULTIPLE";
  return "unknown MPI thread level";
}

void require_mpi_thread_level() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) {
    throw std::runtime_error(std::string("MPI is ") + (finalized ? "already finalised" : "not initialised") +
                             ": create MPI communicators inside tessera::run_distributed "
                             "(launch/run_distributed.hpp), or between MPI_Init_thread(..., "
                             "MPI_THREAD_MULTIPLE, ...) and MPI_Finalize");
  }
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < kRequiredMpiThreadLevel) {
    throw std::runtime_error(std::string("MPI was initialised with ") + mpi_thread_level_name(provided) +
                             " but the MPI communicator needs " + mpi_thread_level_name(kRequiredMpiThreadLevel) +
                             " (its progress thread calls MPI beside the application thread): "
                             "initialise MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...), "
                             "or use an MPI library built with thread support");
  }
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm, CommOptions options, MpiTuning tuning)
    : CommunicatorBase(std::move(options)), tuning_(tuning) {
  require_mpi_thread_level();
  TESSERA_MPI_CHECK(MPI_Comm_dup(comm, &comm_));
  start();
}

MpiCommunicator::MpiCommunicator(Adopt, MPI_Comm owned, CommOptions options, MpiTuning tuning)
    : CommunicatorBase(std::move(options)), comm_(owned), tuning_(tuning) {
  start();
}

void MpiCommunicator::start() {
  TESSERA_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPI_Comm_set_name(comm_, name().c_str());
  int rank = 0;
  int size = 1;
  TESSERA_MPI_CHECK(MPI_Comm_rank(comm_, &rank));
  TESSERA_MPI_CHECK(MPI_Comm_size(comm_, &size));
  set_group(rank, size);
  algorithms_ = std::make_unique<detail::MpiAlgorithms>(comm_, rank, size, tuning_.segment_bytes,
                                                        tuning_.shared_memory_bytes, name(), counters_);
  if (options().watchdog_timeout.count() > 0) {
    watchdog_ = std::make_unique<Watchdog>(options().watchdog_timeout, describe_world_rank());
  }
  detail::CollectiveRunner& runner = *this;
  queue_ = std::make_unique<detail::CollectiveQueue>(runner, counters_, tuning_.progress);
}

MpiCommunicator::~MpiCommunicator() {
  queue_.reset();  // cancels queued collectives, finishes the running one
  watchdog_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::size_t MpiCommunicator::shared_memory_slot_bytes() const { return algorithms_->shared_memory_slot_bytes(); }

Work MpiCommunicator::enqueue(detail::CollectiveTask task) {
  throw_if_failed();
  task.call.sequence = next_sequence();
  return queue_->post(task);
}

std::exception_ptr MpiCommunicator::cancelled(const detail::CollectiveTask& task) noexcept {
  try {
    return std::make_exception_ptr(std::runtime_error("collective " + describe_here(task.call) +
                                                      " was cancelled: the communicator was destroyed before it ran"));
  } catch (...) {
    return std::current_exception();
  }
}

std::exception_ptr MpiCommunicator::run(const detail::CollectiveTask& task, bool by_waiter) noexcept {
  detail::LiveMpiCounters::bump(counters_.collectives);
  std::uint64_t ticket = 0;
  std::exception_ptr error;
  try {
    throw_if_failed();
    // The description is formatted only if the watchdog reports this collective.
    if (watchdog_) ticket = watchdog_->begin_lazy([this, &task] { return describe_here(task.call); });
    algorithms_->set_run_by_waiter(by_waiter);
    run_algorithm(task);
  } catch (const std::exception& failure) {
    record_failure(failure.what());  // keeps the first failure only
    error = std::current_exception();
  } catch (...) {
    record_failure("unknown error");
    error = std::current_exception();
  }
  if (ticket != 0) watchdog_->end(ticket);
  return error;
}

void MpiCommunicator::run_algorithm(const detail::CollectiveTask& task) {
  const CollectiveCall& call = task.call;
  detail::MpiAlgorithms& algorithms = *algorithms_;
  switch (call.kind) {
    case CollectiveKind::kAllReduce: return algorithms.all_reduce(call, task.out, call.count, call.dtype, call.op);
    case CollectiveKind::kReduceScatter:
      return algorithms.reduce_scatter(call, task.in, task.out, call.count, call.dtype, call.op);
    case CollectiveKind::kAllGather: return algorithms.all_gather(call, task.in, task.out, call.count, call.dtype);
    case CollectiveKind::kAllReduceF32:
      return algorithms.all_reduce_f32(call, static_cast<float*>(task.out), call.count, call.dtype, call.op);
    case CollectiveKind::kReduceScatterF32:
      return algorithms.reduce_scatter_f32(call, static_cast<const float*>(task.in), static_cast<float*>(task.out),
                                           call.count, call.dtype, call.op);
    case CollectiveKind::kBroadcast: return algorithms.broadcast(call, task.out, call.count, call.dtype, call.root);
    case CollectiveKind::kBarrier: return algorithms.barrier(call);
    case CollectiveKind::kSplit:
      algorithms.agree_on_call(call);
      TESSERA_MPI_CHECK(
          MPI_Comm_split(comm_, task.color == kNoGroup ? MPI_UNDEFINED : task.color, task.key, task.child));
      return;
  }
  throw std::logic_error("MpiCommunicator: unknown collective");
}

namespace {

detail::CollectiveTask task_of(CollectiveCall call, const void* in, void* out) {
  detail::CollectiveTask task;
  task.call = call;
  task.in = in;
  task.out = out;
  return task;
}

}  // namespace

Work MpiCommunicator::all_reduce(Span buf, DType dtype, ReduceOp op) {
  detail::check_all_reduce_args(group_shape(), buf, dtype, op);
  return enqueue(
      task_of(make_collective_call(CollectiveKind::kAllReduce, 0, buf.count, dtype, op, -1), nullptr, buf.data));
}

Work MpiCommunicator::reduce_scatter(ConstSpan in, Span out, DType dtype, ReduceOp op) {
  detail::check_reduce_scatter_args(group_shape(), in, out, dtype, op);
  return enqueue(
      task_of(make_collective_call(CollectiveKind::kReduceScatter, 0, out.count, dtype, op, -1), in.data, out.data));
}

Work MpiCommunicator::all_reduce_f32(Span buf, DType wire, ReduceOp op) {
  detail::check_all_reduce_f32_args(group_shape(), buf, wire, op);
  return enqueue(
      task_of(make_collective_call(CollectiveKind::kAllReduceF32, 0, buf.count, wire, op, -1), nullptr, buf.data));
}

Work MpiCommunicator::reduce_scatter_f32(ConstSpan in, Span out, DType wire, ReduceOp op) {
  detail::check_reduce_scatter_f32_args(group_shape(), in, out, wire, op);
  return enqueue(
      task_of(make_collective_call(CollectiveKind::kReduceScatterF32, 0, out.count, wire, op, -1), in.data, out.data));
}

Work MpiCommunicator::all_gather(ConstSpan in, Span out, DType dtype) {
  detail::check_all_gather_args(group_shape(), in, out, dtype);
  return enqueue(task_of(make_collective_call(CollectiveKind::kAllGather, 0, in.count, dtype, ReduceOp::kSum, -1),
                         in.data, out.data));
}

Work MpiCommunicator::broadcast(Span buf, DType dtype, int root) {
  detail::check_broadcast_args(group_shape(), buf, dtype, root);
  return enqueue(task_of(make_collective_call(CollectiveKind::kBroadcast, 0, buf.count, dtype, ReduceOp::kSum, root),
                         nullptr, buf.data));
}

Work MpiCommunicator::barrier() {
  return enqueue(
      task_of(make_collective_call(CollectiveKind::kBarrier, 0, 0, DType::kF32, ReduceOp::kSum, -1), nullptr, nullptr));
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  check_split_color(color);
  MPI_Comm child = MPI_COMM_NULL;
  detail::CollectiveTask task =
      task_of(make_collective_call(CollectiveKind::kSplit, 0, 0, DType::kF32, ReduceOp::kSum, -1), nullptr, nullptr);
  task.color = color;
  task.key = key;
  task.child = &child;
  enqueue(task).wait();
  if (child == MPI_COMM_NULL) return nullptr;
  return std::unique_ptr<Communicator>(new MpiCommunicator(Adopt{}, child, child_options(color), tuning_));
}

}  // namespace tessera
