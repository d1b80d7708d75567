// NcclCommunicator: argument checks, optional call matching, then the NCCL call on the
// communication stream between a "compute work is ready" event and a "collective done" event.
#include "tessera/comm/nccl/nccl_communicator.hpp"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include "tessera/comm/collective_args.hpp"
#include "tessera/comm/job_abort.hpp"
#include "tessera/comm/nccl/device_wire_convert.hpp"
#include "tessera/comm/nccl/nccl_check.hpp"
#include "tessera/comm/nccl/nccl_work.hpp"
#include "tessera/comm/watchdog.hpp"
#include "tessera/core/completion_work.hpp"
#include "tessera/runtime/cuda/cuda_check.hpp"
#include "tessera/runtime/cuda/cuda_device_select.hpp"
#include "tessera/runtime/cuda/cuda_event_work.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/storage.hpp"

namespace tessera {
namespace {

ncclDataType_t nccl_dtype(DType dtype) {
  switch (dtype) {
    case DType::kF32: return ncclFloat32;
    case DType::kBF16: return ncclBfloat16;
    case DType::kF16: return ncclFloat16;
    case DType::kI32: return ncclInt32;
    case DType::kI8: return ncclInt8;
    case DType::kU8: return ncclUint8;
  }
  throw std::invalid_argument("NCCL communicator: unknown dtype");
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return ncclSum;
    case ReduceOp::kAvg: return ncclAvg;
    case ReduceOp::kMax: return ncclMax;
  }
  throw std::invalid_argument("NCCL communicator: unknown reduce op");
}

std::string describe_world_rank(int device) {
  int rank = 0;
  int size = 1;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '?';
  return "rank " + std::to_string(rank) + "/" + std::to_string(size) + " (host " + host + ", GPU " +
         std::to_string(device) + ")";
}

constexpr std::size_t kBarrierBytes = 256;  // keeps the call table that follows aligned

}  // namespace

NcclCommunicator::NcclCommunicator(const ncclUniqueId& id, int rank, int size, int device, cudaStream_t compute_stream,
                                   CommOptions options, cudaStream_t comm_stream, Device* memory)
    : CommunicatorBase(std::move(options)), device_(device), compute_stream_(compute_stream), memory_(memory) {
  select_cuda_device(device_);
  TESSERA_NCCL_CHECK(ncclCommInitRank(&comm_, size, id, rank));
  start(comm_stream);
}

NcclCommunicator::NcclCommunicator(Adopt, ncclComm_t comm, int device, cudaStream_t compute_stream, CommOptions options,
                                   cudaStream_t comm_stream, Device* memory)
    : CommunicatorBase(std::move(options)),
      comm_(comm),
      device_(device),
      compute_stream_(compute_stream),
      memory_(memory) {
  start(comm_stream);
}

void NcclCommunicator::start(cudaStream_t comm_stream) {
  select_cuda_device(device_);
  int rank = 0;
  int size = 1;
  TESSERA_NCCL_CHECK(ncclCommUserRank(comm_, &rank));
  TESSERA_NCCL_CHECK(ncclCommCount(comm_, &size));
  set_group(rank, size);
  comm_stream_ = comm_stream;
  if (comm_stream_ == nullptr) {
    TESSERA_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_stream_, cudaStreamNonBlocking));
    owns_comm_stream_ = true;
  }
  TESSERA_CUDA_CHECK(cudaMalloc(&scratch_, kBarrierBytes + static_cast<std::size_t>(size) * sizeof(CollectiveCall)));
  if (options().watchdog_timeout.count() > 0) {
    watchdog_ = std::make_unique<Watchdog>(options().watchdog_timeout, describe_world_rank(device_));
  }
}

NcclCommunicator::~NcclCommunicator() {
  watchdog_.reset();
  select_cuda_device_noexcept(device_);
  bool idle = true;
  try {
    idle = !last_ || last_->is_completed();
  } catch (...) {
    idle = false;
  }
  last_.reset();
  if (comm_ != nullptr) {
    if (idle && !has_failed()) {
      ncclCommDestroy(comm_);
    } else {
      ncclCommAbort(comm_);
    }
  }
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (owns_comm_stream_ && comm_stream_ != nullptr) cudaStreamDestroy(comm_stream_);
}

bool NcclCommunicator::probe(detail::NcclWork& work) {
  ncclResult_t async_error = ncclSuccess;
  if (ncclCommGetAsyncError(comm_, &async_error) == ncclSuccess && async_error != ncclSuccess &&
      async_error != ncclInProgress) {
    abort_job(describe_world_rank(device_) + ": NCCL communicator '" + name() +
              "' failed asynchronously: " + ncclGetErrorString(async_error) + "; aborting the job");
  }
  try {
    return work.is_completed();
  } catch (...) {
    return true;  // the error surfaces in wait()
  }
}

void NcclCommunicator::verify_matching_calls(const CollectiveCall& call) {
  auto* table = static_cast<std::byte*>(scratch_) + kBarrierBytes;
  const std::size_t mine = static_cast<std::size_t>(rank()) * sizeof(CollectiveCall);
  TESSERA_CUDA_CHECK(
      cudaMemcpyAsync(table + mine, &call, sizeof(CollectiveCall), cudaMemcpyHostToDevice, comm_stream_));
  TESSERA_NCCL_CHECK(ncclAllGather(table + mine, table, sizeof(CollectiveCall), ncclUint8, comm_, comm_stream_));
  std::vector<CollectiveCall> calls(static_cast<std::size_t>(size()));
  TESSERA_CUDA_CHECK(cudaMemcpyAsync(calls.data(), table, calls.size() * sizeof(CollectiveCall), cudaMemcpyDeviceToHost,
                                     comm_stream_));
  TESSERA_CUDA_CHECK(cudaStreamSynchronize(comm_stream_));
  const std::string mismatch = find_collective_mismatch(calls, name());
  if (!mismatch.empty()) throw CollectiveMismatchError(mismatch);
}

Work NcclCommunicator::launch(CollectiveCall call, const std::function<void(cudaStream_t)>& enqueue) {
  throw_if_failed();
  call.sequence = next_sequence();
  try {
    select_cuda_device(device_);
    if (collective_check() == CollectiveCheck::kMatchCalls) verify_matching_calls(call);
    cudaEvent_t ready = nullptr;
    TESSERA_CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    TESSERA_CUDA_CHECK(cudaEventRecord(ready, compute_stream_));
    TESSERA_CUDA_CHECK(cudaStreamWaitEvent(comm_stream_, ready, 0));
    TESSERA_CUDA_CHECK(cudaEventDestroy(ready));  // released once the wait has been satisfied
    enqueue(comm_stream_);
    cudaEvent_t done = nullptr;
    TESSERA_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    auto work =
        std::make_shared<detail::NcclWork>(std::make_shared<detail::CudaEventWork>(device_, done), compute_stream_);
    TESSERA_CUDA_CHECK(cudaEventRecord(done, comm_stream_));
    if (watchdog_) watchdog_->begin(describe_here(call), [this, work] { return probe(*work); });
    last_ = work;
    return Work(work);
  } catch (const std::exception& error) {
    record_failure(error.what());
    auto failed = std::make_shared<detail::CompletionWork>();
    failed->fail(std::current_exception());
    return Work(failed);
  }
}

Work NcclCommunicator::all_reduce(Span buf, DType dtype, ReduceOp op) {
  detail::check_all_reduce_args(group_shape(), buf, dtype, op);
  return launch(make_collective_call(CollectiveKind::kAllReduce, 0, buf.count, dtype, op, -1), [&](cudaStream_t s) {
    TESSERA_NCCL_CHECK(ncclAllReduce(buf.data, buf.data, buf.count, nccl_dtype(dtype), nccl_op(op), comm_, s));
  });
}

Work NcclCommunicator::reduce_scatter(ConstSpan in, Span out, DType dtype, ReduceOp op) {
  detail::check_reduce_scatter_args(group_shape(), in, out, dtype, op);
  return launch(make_collective_call(CollectiveKind::kReduceScatter, 0, out.count, dtype, op, -1), [&](cudaStream_t s) {
    TESSERA_NCCL_CHECK(ncclReduceScatter(in.data, out.data, out.count, nccl_dtype(dtype), nccl_op(op), comm_, s));
  });
}

// A bf16/f16 wire buffer. From the device's pool: allocated before the collective is launched (on the
// compute stream, which the communication stream then waits for) and handed back with the
// communication stream recorded, so the pool reuses it only after the collective ran. Without a
// device: cudaMallocAsync / cudaFreeAsync on the communication stream.
class NcclCommunicator::WireBuffer {
 public:
  WireBuffer(Device* memory, std::size_t bytes) : bytes_(bytes), memory_(memory) {
    if (memory_ != nullptr) storage_ = Storage::allocate(*memory_, bytes_, MemoryCategory::kCommBuffers);
  }
  void* data(cudaStream_t stream) {
    if (storage_) return storage_->data();
    TESSERA_CUDA_CHECK(cudaMallocAsync(&raw_, bytes_, stream));
    return raw_;
  }
  void release(cudaStream_t stream) {
    if (storage_) {
      storage_->record_stream(memory_->stream(StreamRole::kCommunication));
      storage_.reset();
    } else if (raw_ != nullptr) {
      TESSERA_CUDA_CHECK(cudaFreeAsync(raw_, stream));
      raw_ = nullptr;
    }
  }

 private:
  std::size_t bytes_;
  Device* memory_;
  std::shared_ptr<Storage> storage_;
  void* raw_ = nullptr;
};

NcclCommunicator::WireBuffer NcclCommunicator::wire_buffer(std::size_t bytes) {
  return WireBuffer(memory_, std::max<std::size_t>(1, bytes));
}

Work NcclCommunicator::all_reduce_f32(Span buf, DType wire, ReduceOp op) {
  detail::check_all_reduce_f32_args(group_shape(), buf, wire, op);
  auto* data = static_cast<float*>(buf.data);
  const CollectiveCall call = make_collective_call(CollectiveKind::kAllReduceF32, 0, buf.count, wire, op, -1);
  if (wire == DType::kF32) {
    return launch(call, [&](cudaStream_t s) {
      TESSERA_NCCL_CHECK(ncclAllReduce(data, data, buf.count, ncclFloat32, nccl_op(op), comm_, s));
    });
  }
  WireBuffer packed = wire_buffer(buf.count * dtype_size(wire));
  return launch(call, [&](cudaStream_t s) {
    void* narrow = packed.data(s);
    detail::narrow_to_wire_on_stream(data, narrow, buf.count, wire, s);
    TESSERA_NCCL_CHECK(ncclAllReduce(narrow, narrow, buf.count, nccl_dtype(wire), nccl_op(op), comm_, s));
    detail::widen_from_wire_on_stream(narrow, data, buf.count, wire, s);
    packed.release(s);
  });
}

Work NcclCommunicator::reduce_scatter_f32(ConstSpan in, Span out, DType wire, ReduceOp op) {
  detail::check_reduce_scatter_f32_args(group_shape(), in, out, wire, op);
  const auto* input = static_cast<const float*>(in.data);
  auto* output = static_cast<float*>(out.data);
  const CollectiveCall call = make_collective_call(CollectiveKind::kReduceScatterF32, 0, out.count, wire, op, -1);
  if (wire == DType::kF32) {
    return launch(call, [&](cudaStream_t s) {
      TESSERA_NCCL_CHECK(ncclReduceScatter(input, output, out.count, ncclFloat32, nccl_op(op), comm_, s));
    });
  }
  // The wire buffer holds the narrowed input; this rank's slice of it receives the reduction (NCCL's
  // in-place layout), which is widened into `out`.
  const std::size_t element = dtype_size(wire);
  WireBuffer packed = wire_buffer(in.count * element);
  return launch(call, [&](cudaStream_t s) {
    void* narrow = packed.data(s);
    auto* mine = static_cast<std::byte*>(narrow) + static_cast<std::size_t>(rank()) * out.count * element;
    detail::narrow_to_wire_on_stream(input, narrow, in.count, wire, s);
    TESSERA_NCCL_CHECK(ncclReduceScatter(narrow, mine, out.count, nccl_dtype(wire), nccl_op(op), comm_, s));
    detail::widen_from_wire_on_stream(mine, output, out.count, wire, s);
    packed.release(s);
  });
}

Work NcclCommunicator::all_gather(ConstSpan in, Span out, DType dtype) {
  detail::check_all_gather_args(group_shape(), in, out, dtype);
  return launch(make_collective_call(CollectiveKind::kAllGather, 0, in.count, dtype, ReduceOp::kSum, -1),
                [&](cudaStream_t s) {
                  TESSERA_NCCL_CHECK(ncclAllGather(in.data, out.data, in.count, nccl_dtype(dtype), comm_, s));
                });
}

Work NcclCommunicator::broadcast(Span buf, DType dtype, int root) {
  detail::check_broadcast_args(group_shape(), buf, dtype, root);
  return launch(make_collective_call(CollectiveKind::kBroadcast, 0, buf.count, dtype, ReduceOp::kSum, root),
                [&](cudaStream_t s) {
                  TESSERA_NCCL_CHECK(ncclBroadcast(buf.data, buf.data, buf.count, nccl_dtype(dtype), root, comm_, s));
                });
}

Work NcclCommunicator::barrier() {
  return launch(
      make_collective_call(CollectiveKind::kBarrier, 0, 0, DType::kF32, ReduceOp::kSum, -1),
      [&](cudaStream_t s) { TESSERA_NCCL_CHECK(ncclAllReduce(scratch_, scratch_, 1, ncclInt32, ncclSum, comm_, s)); });
}

std::unique_ptr<Communicator> NcclCommunicator::split(int color, int key) {
  check_split_color(color);
  ncclComm_t child = nullptr;
  Work work =
      launch(make_collective_call(CollectiveKind::kSplit, 0, 0, DType::kF32, ReduceOp::kSum, -1), [&](cudaStream_t) {
        TESSERA_CUDA_CHECK(cudaStreamSynchronize(comm_stream_));  // NCCL requires no pending work on the parent
        TESSERA_NCCL_CHECK(ncclCommSplit(comm_, color == kNoGroup ? NCCL_SPLIT_NOCOLOR : color, key, &child, nullptr));
      });
  work.wait();  // rethrows a failed split
  if (child == nullptr) return nullptr;
  // A stream of the caller's is shared with the child; a stream of this communicator's own is not
  // (either communicator may be destroyed first).
  return std::unique_ptr<Communicator>(new NcclCommunicator(Adopt{}, child, device_, compute_stream_,
                                                            child_options(color),
                                                            owns_comm_stream_ ? nullptr : comm_stream_,
                                                            owns_comm_stream_ ? nullptr : memory_));
}

}  // namespace tessera
