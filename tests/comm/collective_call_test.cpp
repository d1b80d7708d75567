// CollectiveCall: unused fields do not make matching calls differ, descriptions name every field
// that matters, and the mismatch finder names both calls of each differing rank.
#include "tessera/comm/collective_call.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera {
namespace {

TEST(CollectiveCall, UnusedFieldsAreNormalised) {
  const auto a = make_collective_call(CollectiveKind::kAllGather, 3, 8, DType::kBF16, ReduceOp::kMax, 5);
  const auto b = make_collective_call(CollectiveKind::kAllGather, 3, 8, DType::kBF16, ReduceOp::kSum, -1);
  EXPECT_EQ(a, b);
  const auto c = make_collective_call(CollectiveKind::kBarrier, 4, 99, DType::kF16, ReduceOp::kAvg, 2);
  EXPECT_EQ(c, make_collective_call(CollectiveKind::kBarrier, 4, 0, DType::kF32, ReduceOp::kSum, -1));
}

TEST(CollectiveCall, Describe) {
  EXPECT_EQ(describe(make_collective_call(CollectiveKind::kAllReduce, 5, 1024, DType::kBF16, ReduceOp::kSum, -1)),
            "#5 all_reduce(count=1024, bf16, sum)");
  EXPECT_EQ(describe(make_collective_call(CollectiveKind::kBroadcast, 6, 8, DType::kF32, ReduceOp::kSum, 0)),
            "#6 broadcast(count=8, f32, root=0)");
  EXPECT_EQ(describe(make_collective_call(CollectiveKind::kBarrier, 7, 0, DType::kF32, ReduceOp::kSum, -1)),
            "#7 barrier()");
  EXPECT_EQ(describe(make_collective_call(CollectiveKind::kReduceScatterF32, 8, 512, DType::kBF16, ReduceOp::kAvg, -1)),
            "#8 reduce_scatter_f32(count=512, wire bf16, avg)");
}

TEST(CollectiveCall, MismatchNamesBothCalls) {
  const auto reduce = make_collective_call(CollectiveKind::kAllReduce, 2, 16, DType::kF32, ReduceOp::kSum, -1);
  const auto gather = make_collective_call(CollectiveKind::kAllGather, 2, 4, DType::kF32, ReduceOp::kSum, -1);
  std::vector<CollectiveCall> same{reduce, reduce, reduce};
  EXPECT_EQ(find_collective_mismatch(same, "world"), "");
  std::vector<CollectiveCall> calls{reduce, gather, reduce, gather};
  const std::string message = find_collective_mismatch(calls, "world/node");
  EXPECT_NE(message.find("'world/node'"), std::string::npos) << message;
  EXPECT_NE(
      message.find("rank 0 called #2 all_reduce(count=16, f32, sum) but rank 1 called #2 all_gather(count=4, f32)"),
      std::string::npos)
      << message;
  EXPECT_NE(message.find("rank 3 called"), std::string::npos) << message;
}

}  // namespace
}  // namespace tessera
