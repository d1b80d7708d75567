// Debug mode (CollectiveCheck::kMatchCalls): ranks agree on each call before running it. A planted
// mismatch — rank 1 calls all_gather while the others call all_reduce — raises
// CollectiveMismatchError on every rank, naming both calls, instead of hanging.
// tessera-test-ranks: 1 2 3 4
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tests/comm/comm_test_support.hpp"

namespace tessera {
namespace {

using testing::mismatch_message;

CommOptions debug_options() {
  CommOptions options;
  options.check = CollectiveCheck::kMatchCalls;
  options.watchdog_timeout = std::chrono::seconds(60);
  return options;
}


void expect_contains(const std::string& text, const std::string& part, int rank) {
  EXPECT_NE(text.find(part), std::string::npos) << "rank " << rank << ": message lacks \"" << part << "\": " << text;
}

TEST(CollectiveCheck, MatchingCallsRunNormally) {
  MpiCommunicator comm(MPI_COMM_WORLD, debug_options());
  const int n = comm.size();
  std::vector<float> buf(100, 1.0f), shard(25), full(25 * n);
  comm.all_reduce(buf, DType::kF32, ReduceOp::kSum).wait();
  EXPECT_EQ(buf[99], static_cast<float>(n));
  std::vector<float> in(25 * n, 2.0f);
  comm.reduce_scatter(in, shard, DType::kF32, ReduceOp::kAvg).wait();
  EXPECT_EQ(shard[0], 2.0f);
  comm.all_gather(shard, full, DType::kF32).wait();
  comm.broadcast(buf, DType::kF32, n - 1).wait();
  comm.barrier().wait();
  EXPECT_NE(comm.split(0, 0), nullptr);
}

TEST(CollectiveCheck, AllGatherAgainstAllReduceNamesBothCalls) {
  MpiCommunicator comm(MPI_COMM_WORLD, debug_options());
  if (comm.size() == 1) GTEST_SKIP() << "needs 2 ranks";
  const int n = comm.size();
  std::vector<float> buf(64, 1.0f), gathered(64 * n);
  const std::string message = mismatch_message([&] {
    return comm.rank() == 1 ? comm.all_gather(buf, gathered, DType::kF32)
                            : comm.all_reduce(buf, DType::kF32, ReduceOp::kSum);
  });
  expect_contains(message, "rank 0 called #1 all_reduce(count=64, f32, sum)", comm.rank());
  expect_contains(message, "rank 1 called #1 all_gather(count=64, f32)", comm.rank());
  expect_contains(message, "communicator 'world'", comm.rank());
  // The communicator refuses further collectives instead of running with ranks out of step.
  EXPECT_THROW(comm.barrier(), std::runtime_error);
}

TEST(CollectiveCheck, CountDtypeOpAndRootMismatchesAreCaught) {
  const bool odd_one = [] {
    int r = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r == 1;
  }();
  MpiCommunicator probe(MPI_COMM_WORLD);
  if (probe.size() == 1) GTEST_SKIP() << "needs 2 ranks";
  const int rank = probe.rank();
  {
    MpiCommunicator comm(MPI_COMM_WORLD, debug_options());
    std::vector<float> buf(10, 1.0f);
    const std::string message = mismatch_message(
        [&] { return comm.all_reduce(Span(buf.data(), odd_one ? 9 : 10), DType::kF32, ReduceOp::kSum); });
    expect_contains(message, "all_reduce(count=9, f32, sum)", rank);
    expect_contains(message, "all_reduce(count=10, f32, sum)", rank);
  }
  {
    MpiCommunicator comm(MPI_COMM_WORLD, debug_options());
    std::vector<std::uint16_t> buf(10);
    const std::string message = mismatch_message([&] {
      return comm.all_reduce(buf, odd_one ? DType::kF16 : DType::kBF16, odd_one ? ReduceOp::kMax : ReduceOp::kSum);
    });
    expect_contains(message, "all_reduce(count=10, f16, max)", rank);
    expect_contains(message, "all_reduce(count=10, bf16, sum)", rank);
  }
  {
    MpiCommunicator comm(MPI_COMM_WORLD, debug_options());
    std::vector<float> buf(4);
    const std::string message = mismatch_message([&] { return comm.broadcast(buf, DType::kF32, odd_one ? 1 : 0); });
    expect_contains(message, "broadcast(count=4, f32, root=1)", rank);
    expect_contains(message, "broadcast(count=4, f32, root=0)", rank);
  }
}

TEST(CollectiveCheck, SwitchedOnThroughTheApiMidSequence) {
  MpiCommunicator comm(MPI_COMM_WORLD);
  EXPECT_EQ(comm.collective_check(), CollectiveCheck::kOff);
  std::vector<float> buf(8, 1.0f);
  comm.all_reduce(buf, DType::kF32, ReduceOp::kSum).wait();  // #1, unchecked
  comm.set_collective_check(CollectiveCheck::kMatchCalls);
  EXPECT_EQ(comm.collective_check(), CollectiveCheck::kMatchCalls);
  if (comm.size() == 1) return;
  std::vector<float> gathered(8 * comm.size());
  const std::string message =
      mismatch_message([&] { return comm.rank() == 1 ? comm.all_gather(buf, gathered, DType::kF32) : comm.barrier(); });
  expect_contains(message, "called #2 barrier()", comm.rank());
  expect_contains(message, "rank 1 called #2 all_gather(count=8, f32)", comm.rank());
}

}  // namespace
}  // namespace tessera
