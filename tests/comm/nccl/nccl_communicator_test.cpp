// The NCCL communicator on device buffers (compiled only with CUDA): every collective with
// rank-derived small-integer inputs (exact in f32, bf16 and f16), the _f32 collectives on their
// wire dtypes, split, and the debug-mode mismatch check. Skips cleanly when no GPU is present or there are fewer GPUs
// than ranks on the node. tessera-test-ranks: 1 2
#include "tessera/comm/nccl/nccl_communicator.hpp"

#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "tessera/comm/device_communicator.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/launch/rank_info.hpp"
#include "tests/comm/comm_test_support.hpp"

namespace tessera {
namespace {

using testing::compare_exact;
using testing::DTypeBuffer;
using testing::small_int;

int visible_gpus() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

// Device copy of a host DTypeBuffer, freed on destruction.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    EXPECT_EQ(cudaMalloc(&data_, bytes == 0 ? 1 : bytes), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(data_); }
  void upload(const DTypeBuffer& host) { cudaMemcpy(data_, host.data(), bytes_, cudaMemcpyHostToDevice); }
  void download(DTypeBuffer& host) const { cudaMemcpy(host.data(), data_, bytes_, cudaMemcpyDeviceToHost); }
  void* data() { return data_; }
  std::byte* at(std::size_t offset_bytes) { return static_cast<std::byte*>(data_) + offset_bytes; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_;
};

class Nccl : public ::testing::Test {
 protected:
  void SetUp() override {
    const int gpus = visible_gpus();
    bootstrap_ = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
    info_ = discover_rank_info(*bootstrap_, read_launcher_env(process_environment()));
    int enough = gpus >= 1 && gpus >= info_.local_size ? 1 : 0;
    int everywhere = 0;
    MPI_Allreduce(&enough, &everywhere, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!everywhere) GTEST_SKIP() << "needs one GPU per rank (this rank sees " << gpus << ")";
    device_ = info_.device_index(gpus);
    ASSERT_EQ(cudaSetDevice(device_), cudaSuccess);
    CommOptions options;
    options.watchdog_timeout = std::chrono::seconds(120);
    comm_ = make_nccl_communicator(*bootstrap_, device_, nullptr, options);
    n_ = comm_->size();
    r_ = comm_->rank();
  }

  void sync() { ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess); }

  std::unique_ptr<MpiCommunicator> bootstrap_;
  RankInfo info_;
  int device_ = 0;
  std::unique_ptr<Communicator> comm_;
  int n_ = 1;
  int r_ = 0;
};

TEST_F(Nccl, AllReduceSumAndMaxEveryDType) {
  EXPECT_EQ(comm_->memory_space(), MemorySpace::kGpu);
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16, DType::kI32}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
      const std::size_t count = 1001;
      DTypeBuffer host(dtype, count), expected(dtype, count);
      for (std::size_t i = 0; i < count; ++i) {
        host.set(i, static_cast<float>(small_int(1, r_, i)));
        int sum = 0, max = -100;
        for (int p = 0; p < n_; ++p) {
          sum += small_int(1, p, i);
          max = std::max(max, small_int(1, p, i));
        }
        expected.set(i, static_cast<float>(op == ReduceOp::kSum ? sum : max));
      }
      DeviceBuffer device(count * dtype_size(dtype));
      device.upload(host);
      comm_->all_reduce(Span(device.data(), count), dtype, op).wait();
      sync();
      device.download(host);
      const std::string error = compare_exact(host, expected, std::string("nccl all_reduce ") + reduce_op_name(op));
      EXPECT_TRUE(error.empty()) << error;
    }
  }
}

TEST_F(Nccl, ReduceScatterAllGatherAndBroadcast) {
  const std::size_t per_rank = 777;
  const std::size_t total = per_rank * static_cast<std::size_t>(n_);
  DTypeBuffer in(DType::kBF16, total), shard(DType::kBF16, per_rank), expected_shard(DType::kBF16, per_rank);
  for (std::size_t i = 0; i < total; ++i) in.set(i, static_cast<float>(small_int(2, r_, i)));
  for (std::size_t i = 0; i < per_rank; ++i) {
    int sum = 0;
    for (int p = 0; p < n_; ++p) sum += small_int(2, p, static_cast<std::size_t>(r_) * per_rank + i);
    expected_shard.set(i, static_cast<float>(sum));
  }
  DeviceBuffer d_in(total * 2), d_shard(per_rank * 2), d_full(total * 2);
  d_in.upload(in);
  comm_->reduce_scatter(ConstSpan(d_in.data(), total), Span(d_shard.data(), per_rank), DType::kBF16, ReduceOp::kSum)
      .wait();
  comm_->all_gather(ConstSpan(d_shard.data(), per_rank), Span(d_full.data(), total), DType::kBF16).wait();
  sync();
  d_shard.download(shard);
  std::string error = compare_exact(shard, expected_shard, "nccl reduce_scatter");
  EXPECT_TRUE(error.empty()) << error;
  DTypeBuffer full(DType::kBF16, total), expected_full(DType::kBF16, total);
  d_full.download(full);
  for (std::size_t i = 0; i < total; ++i) {
    int sum = 0;
    for (int p = 0; p < n_; ++p) sum += small_int(2, p, i);
    expected_full.set(i, static_cast<float>(sum));
  }
  error = compare_exact(full, expected_full, "nccl all_gather of the reduced shards");
  EXPECT_TRUE(error.empty()) << error;

  DTypeBuffer value(DType::kF32, 64), expected(DType::kF32, 64);
  for (std::size_t i = 0; i < 64; ++i) {
    value.set(i, static_cast<float>(small_int(3, r_, i)));
    expected.set(i, static_cast<float>(small_int(3, n_ - 1, i)));
  }
  DeviceBuffer d_value(64 * 4);
  d_value.upload(value);
  comm_->broadcast(Span(d_value.data(), 64), DType::kF32, n_ - 1).wait();
  comm_->barrier().wait();
  sync();
  d_value.download(value);
  error = compare_exact(value, expected, "nccl broadcast");
  EXPECT_TRUE(error.empty()) << error;
}

// f32 buffers travelling as bf16/f16: every input k + 2^-12 (k a non-zero small integer) is rounded
// to k on those wires and kept on an f32 wire, so the results show the rounding and are exact.
TEST_F(Nccl, F32CollectivesTravelInTheWireDType) {
  const float fraction = 1.0f / 4096.0f;
  auto value = [](int seed, int rank, std::size_t i) {
    const int k = small_int(seed, rank, i);
    return static_cast<float>(k == 0 ? 1 : k);
  };
  for (DType wire : {DType::kF32, DType::kBF16, DType::kF16}) {
    const float kept = wire == DType::kF32 ? fraction : 0.0f;
    const std::size_t per_rank = 513;
    const std::size_t total = per_rank * static_cast<std::size_t>(n_);
    DTypeBuffer in(DType::kF32, total), reduced(DType::kF32, total), shard(DType::kF32, per_rank);
    DTypeBuffer expected(DType::kF32, total), expected_shard(DType::kF32, per_rank);
    for (std::size_t i = 0; i < total; ++i) {
      in.set(i, value(4, r_, i) + fraction);
      float sum = 0.0f;
      for (int p = 0; p < n_; ++p) sum += value(4, p, i) + kept;
      expected.set(i, sum);
    }
    for (std::size_t i = 0; i < per_rank; ++i)
      expected_shard.set(i, expected.get(static_cast<std::size_t>(r_) * per_rank + i));
    DeviceBuffer d_buf(total * 4), d_in(total * 4), d_shard(per_rank * 4);
    d_buf.upload(in);
    d_in.upload(in);
    comm_->all_reduce_f32(Span(d_buf.data(), total), wire, ReduceOp::kSum).wait();
    comm_->reduce_scatter_f32(ConstSpan(d_in.data(), total), Span(d_shard.data(), per_rank), wire, ReduceOp::kSum)
        .wait();
    // In place: this rank's slice of the input receives its shard.
    comm_
        ->reduce_scatter_f32(ConstSpan(d_in.data(), total),
                             Span(d_in.at(static_cast<std::size_t>(r_) * per_rank * 4), per_rank), wire, ReduceOp::kSum)
        .wait();
    sync();
    d_buf.download(reduced);
    d_shard.download(shard);
    std::string error = compare_exact(reduced, expected, std::string("nccl all_reduce_f32, wire ") + dtype_name(wire));
    EXPECT_TRUE(error.empty()) << error;
    error = compare_exact(shard, expected_shard, std::string("nccl reduce_scatter_f32, wire ") + dtype_name(wire));
    EXPECT_TRUE(error.empty()) << error;
    DTypeBuffer in_place(DType::kF32, total), got(DType::kF32, per_rank);
    d_in.download(in_place);
    for (std::size_t i = 0; i < per_rank; ++i) got.set(i, in_place.get(static_cast<std::size_t>(r_) * per_rank + i));
    error =
        compare_exact(got, expected_shard, std::string("nccl in-place reduce_scatter_f32, wire ") + dtype_name(wire));
    EXPECT_TRUE(error.empty()) << error;
  }
}

TEST_F(Nccl, SplitAndMismatchCheck) {
  std::unique_ptr<Communicator> alone = comm_->split(r_, 0);
  ASSERT_NE(alone, nullptr);
  EXPECT_EQ(alone->size(), 1);
  comm_->set_collective_check(CollectiveCheck::kMatchCalls);
  DeviceBuffer buf(16 * 4 * static_cast<std::size_t>(n_));
  comm_->all_reduce(Span(buf.data(), 16), DType::kF32, ReduceOp::kSum).wait();
  if (n_ == 1) return;
  Work work = r_ == 1 ? comm_->all_gather(ConstSpan(buf.data(), 16), Span(buf.data(), 16 * n_), DType::kF32)
                      : comm_->all_reduce(Span(buf.data(), 16), DType::kF32, ReduceOp::kSum);
  try {
    work.wait();
    ADD_FAILURE() << "rank " << r_ << ": the planted mismatch was not caught";
  } catch (const CollectiveMismatchError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("all_reduce(count=16, f32, sum) but rank 1 called #2 all_gather(count=16, f32)"),
              std::string::npos)
        << message;
  }
}

}  // namespace
}  // namespace tessera
