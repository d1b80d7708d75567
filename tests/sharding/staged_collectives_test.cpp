// Staged collectives on host buffers: over the MPI world they equal the communicator's own
// collectives (rank-derived inputs, expected values worked out by hand), and sum_in_rank_order adds
// in rank order bit for bit. The GPU path is tested with NCCL in tests/sharding/cuda/.
// tessera-test-ranks: 1 2
#include "tessera/sharding/staged_collectives.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "tessera/comm/loopback/loopback_communicator.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"

namespace tessera {
namespace {

TEST(StagedCollectives, HostCommunicatorsUseTheHostBuffers) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  const int n = world.size(), r = world.rank();
  std::vector<float> values{1.0f + static_cast<float>(r), 10.0f * static_cast<float>(r + 1)};
  all_reduce_host(*device, world, Span(values), DType::kF32, ReduceOp::kSum);
  // sum over p of (1 + p) and of 10 (p + 1)
  EXPECT_EQ(values[0], static_cast<float>(n + n * (n - 1) / 2)) << "rank " << r;
  EXPECT_EQ(values[1], static_cast<float>(10 * n * (n + 1) / 2)) << "rank " << r;

  const std::vector<std::int32_t> mine{r, 100 + r, -r};
  std::vector<std::int32_t> all(3 * static_cast<std::size_t>(n), 7);
  all_gather_host(*device, world, ConstSpan(mine), Span(all), DType::kI32);
  for (int p = 0; p < n; ++p) {
    EXPECT_EQ(all[3 * p], p) << "rank " << r << " slot " << p;
    EXPECT_EQ(all[3 * p + 1], 100 + p) << "rank " << r << " slot " << p;
    EXPECT_EQ(all[3 * p + 2], -p) << "rank " << r << " slot " << p;
  }
  EXPECT_EQ(device->memory().peak_total(), 0) << "host communicators stage nothing";
}

TEST(StagedCollectives, SumInRankOrderIsTheSameBitsEverywhere) {
  auto device = make_cpu_device();
  MpiCommunicator world(MPI_COMM_WORLD);
  // Values whose sum depends on the order: 1e16, then small ones that vanish unless added first.
  const double local = world.rank() == 0 ? 1e16 : 1.0 + world.rank();
  double expected = 0.0;
  for (int p = 0; p < world.size(); ++p) expected += p == 0 ? 1e16 : 1.0 + p;
  EXPECT_EQ(sum_in_rank_order(*device, world, local), expected) << "rank " << world.rank();
  LoopbackCommunicator alone(0, 1);
  EXPECT_EQ(sum_in_rank_order(*device, alone, 2.5), 2.5);
}

}  // namespace
}  // namespace tessera
