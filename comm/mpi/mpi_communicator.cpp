// MpiCommunicator: argument checks on the caller's thread, then each collective is queued to the
// progress thread, which (in debug mode) first verifies that all ranks made the same call, runs the
// algorithm under the watchdog, and completes the Work.
#include "tessera/comm/mpi/mpi_communicator.hpp"

#include <unistd.h>

#include <stdexcept>
#include <utility>
#include <vector>

#include "tessera/comm/collective_args.hpp"
#include "tessera/comm/mpi/mpi_algorithms.hpp"
#include "tessera/comm/mpi/mpi_check.hpp"
#include "tessera/comm/watchdog.hpp"
#include "tessera/core/completion_work.hpp"
#include "tessera/core/serial_executor.hpp"

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
  algorithms_ = std::make_unique<detail::MpiAlgorithms>(comm_, rank, size, tuning_.segment_bytes);
  if (options().watchdog_timeout.count() > 0) {
    watchdog_ = std::make_unique<Watchdog>(options().watchdog_timeout, describe_world_rank());
  }
  executor_ = std::make_unique<detail::SerialExecutor>();
}

MpiCommunicator::~MpiCommunicator() {
  executor_.reset();  // cancels queued collectives, finishes the running one
  watchdog_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

Work MpiCommunicator::enqueue(CollectiveCall call, std::function<void()> body) {
  throw_if_failed();
  call.sequence = next_sequence();
  const CollectiveCheck check = collective_check();
  auto work = std::make_shared<detail::CompletionWork>();
  executor_->post(
      [this, call, check, body = std::move(body), work] { execute(call, check, body, *work); },
      [this, call, work] {
        work->fail(std::make_exception_ptr(std::runtime_error(
            "collective " + describe_here(call) + " was cancelled: the communicator was destroyed before it ran")));
      });
  return Work(work);
}

void MpiCommunicator::execute(const CollectiveCall& call, CollectiveCheck check, const std::function<void()>& body,
                              detail::CompletionWork& work) {
  try {
    throw_if_failed();
  } catch (...) {
    work.fail(std::current_exception());
    return;
  }
  const std::uint64_t ticket = watchdog_ ? watchdog_->begin(describe_here(call)) : 0;
  try {
    if (check == CollectiveCheck::kMatchCalls) verify_matching_calls(call);
    body();
    if (watchdog_) watchdog_->end(ticket);
    work.complete();
  } catch (const std::exception& error) {
    if (watchdog_) watchdog_->end(ticket);
    record_failure(error.what());
    work.fail(std::current_exception());
  } catch (...) {
    if (watchdog_) watchdog_->end(ticket);
    record_failure("unknown error");
    work.fail(std::current_exception());
  }
}

void MpiCommunicator::verify_matching_calls(const CollectiveCall& call) {
  std::vector<CollectiveCall> calls(static_cast<std::size_t>(size()));
  TESSERA_MPI_CHECK(
      MPI_Allgather(&call, sizeof(CollectiveCall), MPI_BYTE, calls.data(), sizeof(CollectiveCall), MPI_BYTE, comm_));
  const std::string mismatch = find_collective_mismatch(calls, name());
  if (!mismatch.empty()) throw CollectiveMismatchError(mismatch);
}

Work MpiCommunicator::all_reduce(Span buf, DType dtype, ReduceOp op) {
  detail::check_all_reduce_args(group_shape(), buf, dtype, op);
  const auto call = make_collective_call(CollectiveKind::kAllReduce, 0, buf.count, dtype, op, -1);
  return enqueue(call, [this, buf, dtype, op] { algorithms_->all_reduce(buf.data, buf.count, dtype, op); });
}

Work MpiCommunicator::reduce_scatter(ConstSpan in, Span out, DType dtype, ReduceOp op) {
  detail::check_reduce_scatter_args(group_shape(), in, out, dtype, op);
  const auto call = make_collective_call(CollectiveKind::kReduceScatter, 0, out.count, dtype, op, -1);
  return enqueue(call,
                 [this, in, out, dtype, op] { algorithms_->reduce_scatter(in.data, out.data, out.count, dtype, op); });
}

Work MpiCommunicator::all_reduce_f32(Span buf, DType wire, ReduceOp op) {
  detail::check_all_reduce_f32_args(group_shape(), buf, wire, op);
  const auto call = make_collective_call(CollectiveKind::kAllReduceF32, 0, buf.count, wire, op, -1);
  return enqueue(
      call, [this, buf, wire, op] { algorithms_->all_reduce_f32(static_cast<float*>(buf.data), buf.count, wire, op); });
}

Work MpiCommunicator::reduce_scatter_f32(ConstSpan in, Span out, DType wire, ReduceOp op) {
  detail::check_reduce_scatter_f32_args(group_shape(), in, out, wire, op);
  const auto call = make_collective_call(CollectiveKind::kReduceScatterF32, 0, out.count, wire, op, -1);
  return enqueue(call, [this, in, out, wire, op] {
    algorithms_->reduce_scatter_f32(static_cast<const float*>(in.data), static_cast<float*>(out.data), out.count, wire,
                                    op);
  });
}

Work MpiCommunicator::all_gather(ConstSpan in, Span out, DType dtype) {
  detail::check_all_gather_args(group_shape(), in, out, dtype);
  const auto call = make_collective_call(CollectiveKind::kAllGather, 0, in.count, dtype, ReduceOp::kSum, -1);
  return enqueue(call, [this, in, out, dtype] { algorithms_->all_gather(in.data, out.data, in.count, dtype); });
}

Work MpiCommunicator::broadcast(Span buf, DType dtype, int root) {
  detail::check_broadcast_args(group_shape(), buf, dtype, root);
  const auto call = make_collective_call(CollectiveKind::kBroadcast, 0, buf.count, dtype, ReduceOp::kSum, root);
  return enqueue(call, [this, buf, dtype, root] { algorithms_->broadcast(buf.data, buf.count, dtype, root); });
}

Work MpiCommunicator::barrier() {
  const auto call = make_collective_call(CollectiveKind::kBarrier, 0, 0, DType::kF32, ReduceOp::kSum, -1);
  return enqueue(call, [this] { algorithms_->barrier(); });
}

std::unique_ptr<Communicator> MpiCommunicator::split(int color, int key) {
  check_split_color(color);
  MPI_Comm child = MPI_COMM_NULL;
  const auto call = make_collective_call(CollectiveKind::kSplit, 0, 0, DType::kF32, ReduceOp::kSum, -1);
  enqueue(call, [this, color, key, &child] {
    TESSERA_MPI_CHECK(MPI_Comm_split(comm_, color == kNoGroup ? MPI_UNDEFINED : color, key, &child));
  }).wait();
  if (child == MPI_COMM_NULL) return nullptr;
  return std::unique_ptr<Communicator>(new MpiCommunicator(Adopt{}, child, child_options(color), tuning_));
}

}  // namespace tessera
