// split(color, key) of the MPI communicator: group membership, ranking by key, opting out with
// kNoGroup, nested splits, collectives inside groups, and options inherited from the parent.
// tessera-test-ranks: 1 2 3 4
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <vector>

#include "tessera/comm/mpi/mpi_communicator.hpp"

namespace tessera {
namespace {

TEST(MpiSplit, EvenAndOddRanks) {
  MpiCommunicator world(MPI_COMM_WORLD);
  const int n = world.size();
  const int r = world.rank();
  std::unique_ptr<Communicator> group = world.split(r % 2, r);
  ASSERT_NE(group, nullptr);
  const int expected_size = (n + 1 - r % 2) / 2;  // evens: ceil(n/2), odds: floor(n/2)
  EXPECT_EQ(group->size(), expected_size) << "rank " << r;
  EXPECT_EQ(group->rank(), r / 2) << "rank " << r;
  EXPECT_EQ(group->name(), "world/" + std::to_string(r % 2));
  // Sum of the world ranks in my group: evens 0+2+..., odds 1+3+...
  std::vector<std::int32_t> value{r};
  group->all_reduce(value, DType::kI32, ReduceOp::kSum).wait();
  int expected = 0;
  for (int p = r % 2; p < n; p += 2) expected += p;
  EXPECT_EQ(value[0], expected) << "rank " << r;
  // The parent still works while the child exists.
  std::vector<std::int32_t> all{1};
  world.all_reduce(all, DType::kI32, ReduceOp::kSum).wait();
  EXPECT_EQ(all[0], n);
}

TEST(MpiSplit, KeyOrdersRanks) {
  MpiCommunicator world(MPI_COMM_WORLD);
  std::unique_ptr<Communicator> reversed = world.split(0, -world.rank());
  ASSERT_NE(reversed, nullptr);
  EXPECT_EQ(reversed->rank(), world.size() - 1 - world.rank());
  std::vector<std::int32_t> mine{world.rank()}, gathered(world.size());
  reversed->all_gather(mine, gathered, DType::kI32).wait();
  for (int p = 0; p < world.size(); ++p) EXPECT_EQ(gathered[p], world.size() - 1 - p) << "slot " << p;
}

TEST(MpiSplit, NoGroupGivesNullAndOthersProceed) {
  MpiCommunicator world(MPI_COMM_WORLD);
  const bool joins = world.rank() < 2;
  std::unique_ptr<Communicator> pair = world.split(joins ? 7 : kNoGroup, 0);
  EXPECT_EQ(pair != nullptr, joins) << "rank " << world.rank();
  if (pair) {
    EXPECT_EQ(pair->size(), std::min(world.size(), 2));
    std::vector<float> one{1.0f};
    pair->all_reduce(one, DType::kF32, ReduceOp::kSum).wait();
    EXPECT_EQ(one[0], static_cast<float>(pair->size()));
  }
  EXPECT_THROW(world.split(-5, 0), std::invalid_argument);
}

TEST(MpiSplit, NestedSplitAndParentDestroyedFirst) {
  std::unique_ptr<Communicator> leaf;
  {
    MpiCommunicator world(MPI_COMM_WORLD);
    std::unique_ptr<Communicator> halves = world.split(world.rank() / 2, world.rank());
    ASSERT_NE(halves, nullptr);
    leaf = halves->split(0, 0);
    ASSERT_NE(leaf, nullptr);
    EXPECT_EQ(leaf->name(), "world/" + std::to_string(world.rank() / 2) + "/0");
  }
  std::vector<float> value{2.0f};
  leaf->all_reduce(value, DType::kF32, ReduceOp::kMax).wait();
  EXPECT_EQ(value[0], 2.0f);
  leaf->barrier().wait();
}

TEST(MpiSplit, ChildInheritsTheCollectiveCheck) {
  CommOptions options;
  options.check = CollectiveCheck::kMatchCalls;
  MpiCommunicator world(MPI_COMM_WORLD, options);
  std::unique_ptr<Communicator> child = world.split(0, world.rank());
  ASSERT_NE(child, nullptr);
  EXPECT_EQ(child->collective_check(), CollectiveCheck::kMatchCalls);
  child->barrier().wait();
}

}  // namespace
}  // namespace tessera
