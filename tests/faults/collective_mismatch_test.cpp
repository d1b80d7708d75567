// Collectives called with different counts on different ranks, without debug mode: every rank gets
// an exception naming the collective and both calls ("different counts"), instead of a hang or a
// write past a buffer. The check rides on the collectives' own first messages, whose MPI tag is a
// digest of the call (comm/mpi/call_check.hpp); a broadcast first exchanges the call itself.
// tessera-test-ranks: 2
// tessera-test-timeout: 120
#include <gtest/gtest.h>
#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"

namespace tessera {
namespace {

CommOptions normal_options() {
  CommOptions options;
  options.check = CollectiveCheck::kOff;
  options.watchdog_timeout = std::chrono::seconds(60);
  return options;
}

std::string error_of(const std::function<Work()>& issue) {
  try {
    issue().wait();
  } catch (const std::exception& error) {
    return error.what();
  }
  return "no error raised";
}

void expect_names_the_mismatch(const std::string& message, const std::string& collective, int rank) {
  for (const std::string& part : std::vector<std::string>{collective, "different counts"}) {
    EXPECT_NE(message.find(part), std::string::npos)
        << "rank " << rank << ": message lacks \"" << part << "\": " << message;
  }
}

TEST(CollectiveMismatch, AllReduceWithDifferentCountsThrowsOnEveryRank) {
  MpiCommunicator comm(MPI_COMM_WORLD, normal_options());
  const int rank = comm.rank();
  // rank 0: 1000 floats; rank 1: 10, with guard floats behind them that must stay untouched.
  const std::size_t count = rank == 0 ? 1000 : 10;
  std::vector<float> buf(count + 64, 1.0f);
  for (std::size_t i = count; i < buf.size(); ++i) buf[i] = -7.0f;
  const std::string message =
      error_of([&] { return comm.all_reduce(Span(buf.data(), count), DType::kF32, ReduceOp::kSum); });
  expect_names_the_mismatch(message, "all_reduce", rank);
  for (std::size_t i = count; i < buf.size(); ++i) ASSERT_EQ(buf[i], -7.0f) << "rank " << rank << " guard " << i;
}

TEST(CollectiveMismatch, AllGatherWithDifferentCountsThrowsOnEveryRank) {
  MpiCommunicator comm(MPI_COMM_WORLD, normal_options());
  const int rank = comm.rank();
  const std::size_t count = rank == 0 ? 8 : 300;
  std::vector<float> mine(count, 2.0f), all(count * 2 + 64, -7.0f);
  const std::string message = error_of(
      [&] { return comm.all_gather(ConstSpan(mine.data(), count), Span(all.data(), count * 2), DType::kF32); });
  expect_names_the_mismatch(message, "all_gather", rank);
  for (std::size_t i = count * 2; i < all.size(); ++i) ASSERT_EQ(all[i], -7.0f) << "rank " << rank << " guard " << i;
}

TEST(CollectiveMismatch, BroadcastWithDifferentCountsThrowsOnEveryRank) {
  MpiCommunicator comm(MPI_COMM_WORLD, normal_options());
  const int rank = comm.rank();
  const std::size_t count = rank == 0 ? 500 : 20;
  std::vector<float> buf(count + 64, -7.0f);
  const std::string message = error_of([&] { return comm.broadcast(Span(buf.data(), count), DType::kF32, 0); });
  expect_names_the_mismatch(message, "broadcast", rank);
  for (std::size_t i = count; i < buf.size(); ++i) ASSERT_EQ(buf[i], -7.0f) << "rank " << rank << " guard " << i;
}

}  // namespace
}  // namespace tessera
