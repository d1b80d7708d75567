// Who runs an MPI collective (comm/mpi/collective_queue.hpp): a caller that waits for it at once
// runs it on its own thread (no hand-off to the progress thread, no wake-up back), and one that
// does not wait still sees it complete, run by the progress thread, so it overlaps compute.
// tessera-test-ranks: 1 2 3
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <thread>
#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tests/comm/comm_test_support.hpp"

namespace tessera {
namespace {

using testing::small_int;
using testing::small_int_sum;


TEST(CollectiveQueue, WaitingAtOnceRunsTheCollectiveOnTheWaitingThread) {
  MpiTuning tuning;
  tuning.progress.start_delay = std::chrono::seconds(30);  // the progress thread never gets there first
  MpiCommunicator comm(MPI_COMM_WORLD, CommOptions{}, tuning);
  const int n = comm.size();
  const MpiCounters before = comm.counters();
  constexpr int kCalls = 10;
  for (int k = 0; k < kCalls; ++k) {
    std::vector<float> buf(1000);
    for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(small_int(k, comm.rank(), i));
    comm.all_reduce(buf, DType::kF32, ReduceOp::kSum).wait();
    for (std::size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(buf[i], small_int_sum(k, n, i)) << "call " << k;
  }
  const MpiCounters after = comm.counters();
  EXPECT_EQ(after.collectives - before.collectives, static_cast<std::uint64_t>(kCalls));
  EXPECT_EQ(after.run_by_waiter - before.run_by_waiter, static_cast<std::uint64_t>(kCalls));
}

TEST(CollectiveQueue, ACollectiveNobodyWaitsForCompletesOnTheProgressThread) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  const int n = comm.size();
  std::vector<float> buf(4096);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(small_int(7, comm.rank(), i));
  const MpiCounters before = comm.counters();
  Work work = comm.all_reduce(buf, DType::kF32, ReduceOp::kSum);
  // "Compute" without waiting: the progress thread takes the collective within a poll interval.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!work.is_completed() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ASSERT_TRUE(work.is_completed()) << "the collective did not progress without a wait";
  work.wait();
  EXPECT_EQ(comm.counters().run_by_waiter, before.run_by_waiter);
  for (std::size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(buf[i], small_int_sum(7, n, i)) << "index " << i;
}

TEST(CollectiveQueue, AWaiterRunsTheCollectivesIssuedBeforeItsOwnInOrder) {
  MpiTuning tuning;
  tuning.progress.start_delay = std::chrono::seconds(30);
  MpiCommunicator comm(MPI_COMM_WORLD, CommOptions{}, tuning);
  const int n = comm.size();
  std::vector<std::vector<float>> bufs(4, std::vector<float>(512));
  std::vector<Work> works;
  for (int k = 0; k < 4; ++k) {
    for (std::size_t i = 0; i < bufs[k].size(); ++i) bufs[k][i] = static_cast<float>(small_int(k, comm.rank(), i));
    works.push_back(comm.all_reduce(bufs[k], DType::kF32, ReduceOp::kSum));
  }
  works.back().wait();  // runs all four here, in issue order
  for (int k = 0; k < 4; ++k) {
    EXPECT_TRUE(works[k].is_completed()) << "collective " << k;
    for (std::size_t i = 0; i < bufs[k].size(); ++i) ASSERT_EQ(bufs[k][i], small_int_sum(k, n, i)) << "collective " << k;
  }
}

}  // namespace
}  // namespace tessera
