// StagedCommunicator on the CPU device: every collective gives, bit for bit, what the MPI
// communicator gives on the same inputs (random f32 values, so any change of order or precision
// shows), with the staging counted as pinned-host comm buffers; bad arguments are refused against
// the device buffers; split() stages too. The same code stages a GPU's buffers (the CUDA tests
// under tests/sharding/cuda/ and tests/comm/cuda/).
// tessera-test-ranks: 1 2 3
#include "tessera/comm/staged/staged_communicator.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/runtime/device.hpp"
#include "tessera/runtime/memory_tracker.hpp"

namespace tessera {
namespace {

std::vector<float> random_values(std::size_t n, int rank, int seed) {
  std::mt19937 rng(static_cast<std::uint32_t>(seed * 1000 + rank));
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

class Staged : public ::testing::Test {
 protected:
  void SetUp() override {
    mpi_ = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
    device_ = make_cpu_device();
    staged_ = std::make_unique<StagedCommunicator>(*device_, *mpi_);
    n_ = mpi_->size();
    r_ = mpi_->rank();
  }

  std::unique_ptr<MpiCommunicator> mpi_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<StagedCommunicator> staged_;
  int n_ = 1, r_ = 0;
};

TEST_F(Staged, ActsAsTheHostWorldOnTheDevicesMemory) {
  EXPECT_EQ(staged_->rank(), r_);
  EXPECT_EQ(staged_->size(), n_);
  EXPECT_EQ(staged_->name(), mpi_->name());
  EXPECT_EQ(staged_->backend(), CommBackend::kMpi);
  EXPECT_EQ(staged_->memory_space(), device_->memory_space());
}

TEST_F(Staged, EveryCollectiveMatchesMpiBitForBit) {
  const std::size_t count = 1000;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
    std::vector<float> a = random_values(count, r_, 1), b = a;
    staged_->all_reduce(Span(a), DType::kF32, op).wait();
    mpi_->all_reduce(Span(b), DType::kF32, op).wait();
    EXPECT_EQ(a, b) << "all_reduce f32, op " << static_cast<int>(op) << ", rank " << r_;
  }
  for (DType wire : {DType::kF32, DType::kBF16, DType::kF16}) {
    std::vector<float> a = random_values(count, r_, 2), b = a;
    staged_->all_reduce_f32(Span(a), wire, ReduceOp::kSum).wait();
    mpi_->all_reduce_f32(Span(b), wire, ReduceOp::kSum).wait();
    EXPECT_EQ(a, b) << "all_reduce_f32 wire " << dtype_name(wire) << ", rank " << r_;

    const std::vector<float> in = random_values(count * static_cast<std::size_t>(n_), r_, 3);
    std::vector<float> out_a(count), out_b(count);
    staged_->reduce_scatter_f32(ConstSpan(in), Span(out_a), wire, ReduceOp::kSum).wait();
    mpi_->reduce_scatter_f32(ConstSpan(in), Span(out_b), wire, ReduceOp::kSum).wait();
    EXPECT_EQ(out_a, out_b) << "reduce_scatter_f32 wire " << dtype_name(wire) << ", rank " << r_;
  }
  {  // reduce_scatter in place, then all_gather in place
    std::vector<float> a = random_values(count * static_cast<std::size_t>(n_), r_, 4), b = a;
    const std::size_t mine = static_cast<std::size_t>(r_) * count;
    staged_->reduce_scatter(ConstSpan(a), Span(a.data() + mine, count), DType::kF32, ReduceOp::kSum).wait();
    mpi_->reduce_scatter(ConstSpan(b), Span(b.data() + mine, count), DType::kF32, ReduceOp::kSum).wait();
    staged_->all_gather(ConstSpan(a.data() + mine, count), Span(a), DType::kF32).wait();
    mpi_->all_gather(ConstSpan(b.data() + mine, count), Span(b), DType::kF32).wait();
    EXPECT_EQ(a, b) << "reduce_scatter + all_gather in place, rank " << r_;
  }
  {  // broadcast from the last rank, i32
    std::vector<std::int32_t> a(count, r_ * 7 + 1), b = a;
    staged_->broadcast(Span(a), DType::kI32, n_ - 1).wait();
    mpi_->broadcast(Span(b), DType::kI32, n_ - 1).wait();
    EXPECT_EQ(a, b) << "broadcast, rank " << r_;
    EXPECT_EQ(a[0], (n_ - 1) * 7 + 1);
  }
  staged_->barrier().wait();
}

TEST_F(Staged, StagingIsCountedAsPinnedCommBuffers) {
  MemoryTracker& pinned = device_->memory(MemoryKind::kPinnedHost);
  const std::size_t count = 1 << 16;
  std::vector<float> a = random_values(count * static_cast<std::size_t>(n_), r_, 5);
  std::vector<float> out(count);
  staged_->reduce_scatter(ConstSpan(a), Span(out), DType::kF32, ReduceOp::kSum).wait();
  EXPECT_GE(pinned.current(MemoryCategory::kCommBuffers),
            static_cast<std::int64_t>((count * static_cast<std::size_t>(n_) + count) * sizeof(float)))
      << "the input and output staging buffers";
  staged_.reset();
  EXPECT_EQ(pinned.current(MemoryCategory::kCommBuffers), 0) << "the staging outlived its communicator";
}

TEST_F(Staged, BadArgumentsAreRefusedAgainstTheDeviceBuffers) {
  std::vector<float> in(10 * static_cast<std::size_t>(n_) + 1), out(10);
  try {
    staged_->reduce_scatter(ConstSpan(in), Span(out), DType::kF32, ReduceOp::kSum).wait();
    FAIL() << "a reduce_scatter input that is not out.count * size() elements was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(mpi_->name()), std::string::npos) << e.what();
  }
}

TEST_F(Staged, SplitGroupsStageToo) {
  std::unique_ptr<Communicator> half = staged_->split(r_ % 2, r_);
  ASSERT_NE(half, nullptr);
  EXPECT_EQ(half->memory_space(), device_->memory_space());
  std::vector<float> v(16, static_cast<float>(r_ + 1));
  half->all_reduce(Span(v), DType::kF32, ReduceOp::kSum).wait();
  float expected = 0.0f;
  for (int p = r_ % 2; p < n_; p += 2) expected += static_cast<float>(p + 1);
  EXPECT_EQ(v[5], expected) << "rank " << r_;
  EXPECT_EQ(staged_->split(kNoGroup, 0), nullptr);
}

}  // namespace
}  // namespace tessera
