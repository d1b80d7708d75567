// The MPI communicator's watchdog, end to end: in a child job of two ranks, rank 0 enters an
// all_reduce that rank 1 never joins; with a 2 s timeout the watchdog prints which rank waits in
// which collective and aborts the whole job (MPI_Abort) instead of hanging.
// tessera-test-timeout: 120
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tests/launch/child_job.hpp"

namespace tessera {
namespace {

constexpr int kChildLimitSeconds = 60;

TEST(WatchdogChild, RankZeroWaitsAlone) {
  if (!testing::is_child("watchdog_hang")) GTEST_SKIP() << "runs as a child job";
  CommOptions options;
  options.watchdog_timeout = std::chrono::seconds(2);
  MpiCommunicator comm(MPI_COMM_WORLD, options);
  if (comm.rank() == 1) {
    std::this_thread::sleep_for(std::chrono::seconds(2 * kChildLimitSeconds));
    return;
  }
  std::vector<std::uint16_t> buf(4096);
  comm.reduce_scatter(buf, Span(buf.data(), 2048), DType::kBF16, ReduceOp::kSum).wait();
  ADD_FAILURE() << "reduce_scatter completed without rank 1";
}

TEST(Watchdog, PlantedHangAbortsTheJobWithAMessage) {
  const testing::ChildResult result = testing::run_child_job(
      testing::mpirun_self(2, "watchdog_hang", "WatchdogChild.RankZeroWaitsAlone"), kChildLimitSeconds);
  EXPECT_FALSE(result.timed_out) << "the job hung instead of aborting:\n" << result.output;
  EXPECT_NE(result.exit_code, 0) << result.output;
  for (const std::string part : {"tessera watchdog: rank 0/2 (host ", "#1 reduce_scatter(count=2048, bf16, sum)",
                                 "on communicator 'world'", "Aborting the whole job"}) {
    EXPECT_NE(result.output.find(part), std::string::npos) << "child output lacks \"" << part << "\":\n"
                                                           << result.output;
  }
}

}  // namespace
}  // namespace tessera
