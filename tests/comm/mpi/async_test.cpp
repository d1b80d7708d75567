// Asynchronous Work handles of the MPI communicator: many collectives in flight, handles waited in
// any order, polling with is_completed(), and completion out of issue order across communicators.
// tessera-test-ranks: 1 2 4
#include <gtest/gtest.h>
#include <mpi.h>

#include <thread>
#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tests/comm/comm_test_support.hpp"

namespace tessera {
namespace {

using testing::small_int;
using testing::small_int_sum;


TEST(MpiAsync, ManyInFlightWaitedInReverseOrder) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  constexpr int kInFlight = 12;
  const std::size_t count = 10007;
  std::vector<std::vector<float>> buffers(kInFlight, std::vector<float>(count));
  std::vector<Work> works;
  for (int k = 0; k < kInFlight; ++k) {
    for (std::size_t i = 0; i < count; ++i) buffers[k][i] = static_cast<float>(small_int(k, comm.rank(), i));
    works.push_back(comm.all_reduce(buffers[k], DType::kF32, ReduceOp::kSum));
  }
  for (int k = kInFlight - 1; k >= 0; --k) {
    works[k].wait();
    EXPECT_TRUE(works[k].is_completed());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) wrong += buffers[k][i] != small_int_sum(k, n, i);
    EXPECT_EQ(wrong, 0u) << "collective " << k << " (rank " << comm.rank() << ", f32): " << wrong << " wrong";
  }
}

TEST(MpiAsync, MixedCollectivesOverlapAndCompleteInIssueOrder) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  const std::size_t per_rank = 4096;
  std::vector<std::uint16_t> grads(per_rank * n), shard(per_rank);
  for (std::size_t i = 0; i < grads.size(); ++i)
    grads[i] = f32_to_bf16(static_cast<float>(small_int(5, comm.rank(), i)));
  std::vector<float> params(per_rank), full(per_rank * n);
  for (std::size_t i = 0; i < per_rank; ++i)
    params[i] = static_cast<float>(comm.rank() * 1000 + static_cast<int>(i % 1000));
  Work scatter = comm.reduce_scatter(grads, shard, DType::kBF16, ReduceOp::kSum);
  Work gather = comm.all_gather(params, full, DType::kF32);
  Work fence = comm.barrier();
  // "Compute" while the collectives run.
  double busy = 0.0;
  for (int i = 0; i < 100000; ++i) busy += i * 0.5;
  EXPECT_GT(busy, 0.0);
  fence.wait();  // a later collective completing implies the earlier ones did
  EXPECT_TRUE(scatter.is_completed());
  EXPECT_TRUE(gather.is_completed());
  gather.wait();
  scatter.wait();
  scatter.wait();  // waiting twice is fine
  for (std::size_t i = 0; i < per_rank; ++i) {
    ASSERT_EQ(bf16_to_f32(shard[i]), small_int_sum(5, n, comm.rank() * per_rank + i))
        << "rank " << comm.rank() << " index " << i;
  }
  for (int p = 0; p < n; ++p) {
    for (std::size_t i = 0; i < per_rank; ++i) {
      ASSERT_EQ(full[p * per_rank + i], static_cast<float>(p * 1000 + static_cast<int>(i % 1000)))
          << "rank " << comm.rank();
    }
  }
}

TEST(MpiAsync, PollingUntilCompleted) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  std::vector<float> value{1.0f};
  Work work = comm.all_reduce(value, DType::kF32, ReduceOp::kSum);
  while (!work.is_completed()) std::this_thread::yield();
  work.wait();
  EXPECT_EQ(value[0], static_cast<float>(comm.size()));
}

TEST(MpiAsync, DefaultWorkIsCompletedAndWaitAllRethrowsNothing) {
  Work nothing;
  EXPECT_TRUE(nothing.is_completed());
  nothing.wait();
  std::vector<Work> works(3);
  wait_all(works);
}

// Rank 0 issues A (on one communicator) before B (on another); the other ranks issue A only after
// B has completed and rank 0 has confirmed that A is still pending. So on rank 0 the handle issued
// later completes first, and A completes afterwards.
TEST(MpiAsync, HandlesCompleteOutOfIssueOrderAcrossCommunicators) {
  MpiCommunicator a(MPI_COMM_WORLD);
  MpiCommunicator b(MPI_COMM_WORLD);
  if (a.size() == 1) GTEST_SKIP() << "needs 2 ranks";
  std::vector<float> x{1.0f}, y{2.0f};
  if (a.rank() == 0) {
    Work wa = a.all_reduce(x, DType::kF32, ReduceOp::kSum);
    Work wb = b.all_reduce(y, DType::kF32, ReduceOp::kSum);
    wb.wait();
    EXPECT_FALSE(wa.is_completed()) << "A cannot complete before the other ranks issue it";
    b.barrier().wait();  // lets the other ranks issue A
    wa.wait();
  } else {
    b.all_reduce(y, DType::kF32, ReduceOp::kSum).wait();
    b.barrier().wait();
    a.all_reduce(x, DType::kF32, ReduceOp::kSum).wait();
  }
  EXPECT_EQ(x[0], static_cast<float>(a.size()));
  EXPECT_EQ(y[0], static_cast<float>(2 * a.size()));
}

}  // namespace
}  // namespace tessera
