// HierarchicalCommunicator against the flat world communicator, with node layouts given (one host
// stands for two nodes of two ranks, placed consecutively and round-robin): all_reduce,
// reduce_scatter, all_gather in f32, bf16 wire and i32, with values whose sums are exact in any
// order, so the two-level results must equal the flat ones bit for bit; an uneven count falls back
// to the world; a layout of uneven nodes is refused.
// tessera-test-ranks: 4
#include "tessera/comm/hierarchical/hierarchical_communicator.hpp"

#include <gtest/gtest.h>
#include <mpi.h>

#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"

namespace tessera {
namespace {

NodeLayout layout_of(std::vector<int> node_of_rank) {
  NodeLayout layout;
  layout.node_of_rank = std::move(node_of_rank);
  return layout;
}

// Small integers (exact in f32 and bf16, and their sums too) that differ by rank and position.
std::vector<float> values(int rank, std::size_t count) {
  std::vector<float> v(count);
  for (std::size_t i = 0; i < count; ++i) v[i] = static_cast<float>((rank * 7 + static_cast<int>(i) * 3) % 17 - 8);
  return v;
}

class Hierarchical : public ::testing::TestWithParam<std::vector<int>> {};

TEST_P(Hierarchical, EqualsTheFlatCollectives) {
  MpiCommunicator world(MPI_COMM_WORLD);
  ASSERT_EQ(world.size(), 4);
  HierarchicalCommunicator two_level(world, layout_of(GetParam()));
  EXPECT_EQ(two_level.ranks_per_node(), 2);
  EXPECT_EQ(two_level.num_nodes(), 2);
  MpiCommunicator flat(MPI_COMM_WORLD);
  const int r = world.rank();

  for (const std::size_t count : {std::size_t{8}, std::size_t{4096}, std::size_t{7}}) {  // 7: uneven shards
    std::vector<float> a = values(r, count), b = a;
    two_level.all_reduce(a, DType::kF32, ReduceOp::kSum).wait();
    flat.all_reduce(b, DType::kF32, ReduceOp::kSum).wait();
    EXPECT_EQ(a, b) << "all_reduce of " << count;

    a = values(r, count);
    b = a;
    two_level.all_reduce_f32(a, DType::kBF16, ReduceOp::kAvg).wait();
    flat.all_reduce_f32(b, DType::kBF16, ReduceOp::kAvg).wait();
    EXPECT_EQ(a, b) << "all_reduce_f32 (bf16 wire, avg) of " << count;
  }

  const std::size_t per_rank = 300;
  const std::vector<float> in = values(r, per_rank * 4);
  std::vector<float> mine(per_rank), expected(per_rank);
  two_level.reduce_scatter(in, mine, DType::kF32, ReduceOp::kSum).wait();
  flat.reduce_scatter(in, expected, DType::kF32, ReduceOp::kSum).wait();
  EXPECT_EQ(mine, expected) << "reduce_scatter: rank " << r << " gets its own chunk";

  two_level.reduce_scatter_f32(in, mine, DType::kBF16, ReduceOp::kSum).wait();
  flat.reduce_scatter_f32(in, expected, DType::kBF16, ReduceOp::kSum).wait();
  EXPECT_EQ(mine, expected) << "reduce_scatter_f32";

  std::vector<std::int32_t> ids(5, r + 1), all(20), all_flat(20);
  two_level.all_gather(ids, all, DType::kI32).wait();
  flat.all_gather(ids, all_flat, DType::kI32).wait();
  EXPECT_EQ(all, all_flat) << "all_gather lands each rank's values at its rank";

  std::vector<std::int32_t> in_place(20, -1);
  std::fill(in_place.begin() + 5 * r, in_place.begin() + 5 * (r + 1), r + 1);
  two_level.all_gather(ConstSpan(in_place.data() + 5 * r, 5), in_place, DType::kI32).wait();
  EXPECT_EQ(in_place, all_flat) << "in place";

  std::unique_ptr<Communicator> pair = two_level.split(r / 2, r);
  ASSERT_NE(pair, nullptr);
  EXPECT_EQ(pair->size(), 2);
}

INSTANTIATE_TEST_SUITE_P(Placements, Hierarchical,
                         ::testing::Values(std::vector<int>{0, 0, 1, 1},    // --map-by slot
                                           std::vector<int>{0, 1, 0, 1}));  // --map-by node

TEST(HierarchicalLayout, UnevenNodesAreRefused) {
  MpiCommunicator world(MPI_COMM_WORLD);
  EXPECT_THROW(HierarchicalCommunicator(world, layout_of({0, 0, 0, 1})), std::invalid_argument);
  EXPECT_THROW(HierarchicalCommunicator(world, layout_of({0, 1})), std::invalid_argument);
}

}  // namespace
}  // namespace tessera
