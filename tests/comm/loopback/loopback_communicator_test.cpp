// LoopbackCommunicator: rank 2 of 4 ranks with no peers. Arguments are checked as by the other
// backends; null spans with valid counts are accepted; no collective reads or writes memory
// (buffers of sentinel values stay as they were); every Work is completed at once; split refuses.
#include "tessera/comm/loopback/loopback_communicator.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace tessera {
namespace {

constexpr float kSentinel = -12345.5f;

// The exception's message when `call` throws E, "" when it does not throw.
template <class E, class F>
std::string thrown_message(F&& call) {
  try {
    call();
  } catch (const E& error) {
    return error.what();
  }
  return {};
}

// "" when every element is still kSentinel, else the first changed index with expected vs actual.
std::string changed(const std::vector<float>& buf, const std::string& label) {
  for (std::size_t i = 0; i < buf.size(); ++i) {
    if (std::memcmp(&buf[i], &kSentinel, sizeof(float)) != 0) {
      return label + ": index " + std::to_string(i) + " expected " + std::to_string(kSentinel) +
             " (untouched), actual " + std::to_string(buf[i]);
    }
  }
  return {};
}

TEST(LoopbackCommunicator, RankSizeNameAndMemorySpace) {
  LoopbackCommunicator comm(2, 4);
  EXPECT_EQ(comm.rank(), 2);
  EXPECT_EQ(comm.size(), 4);
  EXPECT_EQ(comm.name(), "loopback");
  EXPECT_EQ(comm.memory_space(), MemorySpace::kMeta);
  EXPECT_EQ(comm.backend(), CommBackend::kLoopback);
  EXPECT_STREQ(comm_backend_name(comm.backend()), "loopback");
  EXPECT_EQ(comm.collective_check(), CollectiveCheck::kOff);
  comm.set_collective_check(CollectiveCheck::kMatchCalls);
  EXPECT_EQ(comm.collective_check(), CollectiveCheck::kMatchCalls);

  LoopbackCommunicator named(0, 1, CommOptions{.name = "plan/shard"});
  EXPECT_EQ(named.name(), "plan/shard");
}

TEST(LoopbackCommunicator, RefusesARankOutsideTheGroup) {
  EXPECT_THROW(LoopbackCommunicator(4, 4), std::invalid_argument);
  EXPECT_THROW(LoopbackCommunicator(-1, 4), std::invalid_argument);
  EXPECT_THROW(LoopbackCommunicator(0, 0), std::invalid_argument);
}

TEST(LoopbackCommunicator, ArgumentErrorsAreThrownAsByTheOtherBackends) {
  LoopbackCommunicator comm(2, 4);
  std::vector<float> in(12), out(4);
  std::vector<std::int32_t> ints(4);

  const std::string scatter = thrown_message<std::invalid_argument>(
      [&] { comm.reduce_scatter(ConstSpan(in.data(), 12), Span(out.data(), 4), DType::kF32, ReduceOp::kSum); });
  EXPECT_NE(scatter.find("reduce_scatter on communicator 'loopback' (rank 2/4)"), std::string::npos) << scatter;
  EXPECT_NE(scatter.find("out.count * size() = 4 * 4 = 16"), std::string::npos) << scatter;

  const std::string gather = thrown_message<std::invalid_argument>(
      [&] { comm.all_gather(ConstSpan(out.data(), 4), Span(in.data(), 12), DType::kF32); });
  EXPECT_NE(gather.find("in.count * size() = 4 * 4 = 16"), std::string::npos) << gather;

  const std::string root =
      thrown_message<std::invalid_argument>([&] { comm.broadcast(Span(out.data(), 4), DType::kF32, 4); });
  EXPECT_NE(root.find("root 4 is not a rank"), std::string::npos) << root;

  const std::string avg = thrown_message<std::invalid_argument>(
      [&] { comm.all_reduce(Span(ints.data(), 4), DType::kI32, ReduceOp::kAvg); });
  EXPECT_NE(avg.find("avg needs a floating dtype"), std::string::npos) << avg;

  // Overlap other than the in-place layout (rank 2's slice starts at element 2 * 3 = 6).
  std::vector<float> full(12);
  const std::string overlap = thrown_message<std::invalid_argument>(
      [&] { comm.all_gather(ConstSpan(full.data() + 1, 3), Span(full.data(), 12), DType::kF32); });
  EXPECT_NE(overlap.find("overlap"), std::string::npos) << overlap;
  EXPECT_NO_THROW(comm.all_gather(ConstSpan(full.data() + 6, 3), Span(full.data(), 12), DType::kF32));

  // The _f32 collectives: the same shape checks, and a floating wire dtype.
  const std::string scatter_f32 = thrown_message<std::invalid_argument>(
      [&] { comm.reduce_scatter_f32(ConstSpan(in.data(), 12), Span(out.data(), 4), DType::kBF16, ReduceOp::kAvg); });
  EXPECT_NE(scatter_f32.find("reduce_scatter_f32 on communicator 'loopback' (rank 2/4)"), std::string::npos)
      << scatter_f32;
  EXPECT_NE(scatter_f32.find("out.count * size() = 4 * 4 = 16"), std::string::npos) << scatter_f32;
  const std::string wire = thrown_message<std::invalid_argument>(
      [&] { comm.all_reduce_f32(Span(in.data(), 12), DType::kI32, ReduceOp::kSum); });
  EXPECT_NE(wire.find("the wire dtype must be f32, bf16 or f16, got i32"), std::string::npos) << wire;
  EXPECT_NO_THROW(
      comm.reduce_scatter_f32(ConstSpan(full.data(), 12), Span(full.data() + 6, 3), DType::kF16, ReduceOp::kAvg));
}

TEST(LoopbackCommunicator, NullSpansWithValidCountsAreAccepted) {
  LoopbackCommunicator comm(2, 4);
  const std::vector<Work> works = {
      comm.all_reduce(Span(nullptr, 100), DType::kBF16, ReduceOp::kAvg),
      comm.reduce_scatter(ConstSpan(nullptr, 400), Span(nullptr, 100), DType::kF32, ReduceOp::kSum),
      comm.all_gather(ConstSpan(nullptr, 100), Span(nullptr, 400), DType::kF16),
      comm.all_reduce_f32(Span(nullptr, 100), DType::kBF16, ReduceOp::kAvg),
      comm.reduce_scatter_f32(ConstSpan(nullptr, 400), Span(nullptr, 100), DType::kBF16, ReduceOp::kAvg),
      comm.broadcast(Span(nullptr, 7), DType::kI32, 3),
      comm.barrier(),
  };
  for (std::size_t i = 0; i < works.size(); ++i) EXPECT_TRUE(works[i].is_completed()) << "work " << i;
  wait_all(works);
  // Counts are still checked when pointers are null.
  EXPECT_THROW(comm.reduce_scatter(ConstSpan(nullptr, 399), Span(nullptr, 100), DType::kF32, ReduceOp::kSum),
               std::invalid_argument);
}

TEST(LoopbackCommunicator, CollectivesLeaveBuffersUntouched) {
  LoopbackCommunicator comm(2, 4);
  std::vector<float> a(12, kSentinel), b(3, kSentinel);

  comm.all_reduce(Span(a.data(), a.size()), DType::kF32, ReduceOp::kSum).wait();
  EXPECT_EQ(changed(a, "all_reduce buf"), "");

  comm.reduce_scatter(ConstSpan(a.data(), 12), Span(b.data(), 3), DType::kF32, ReduceOp::kSum).wait();
  EXPECT_EQ(changed(a, "reduce_scatter in"), "");
  EXPECT_EQ(changed(b, "reduce_scatter out"), "");

  comm.all_reduce_f32(Span(a.data(), a.size()), DType::kBF16, ReduceOp::kAvg).wait();
  EXPECT_EQ(changed(a, "all_reduce_f32 buf"), "");

  comm.reduce_scatter_f32(ConstSpan(a.data(), 12), Span(b.data(), 3), DType::kBF16, ReduceOp::kAvg).wait();
  EXPECT_EQ(changed(a, "reduce_scatter_f32 in"), "");
  EXPECT_EQ(changed(b, "reduce_scatter_f32 out"), "");

  comm.all_gather(ConstSpan(b.data(), 3), Span(a.data(), 12), DType::kF32).wait();
  EXPECT_EQ(changed(a, "all_gather out"), "");
  EXPECT_EQ(changed(b, "all_gather in"), "");

  comm.broadcast(Span(a.data(), a.size()), DType::kF32, 0).wait();
  EXPECT_EQ(changed(a, "broadcast buf"), "");

  comm.barrier().wait();
}

TEST(LoopbackCommunicator, SplitSaysToBuildGroupsDirectly) {
  LoopbackCommunicator comm(2, 4);
  const std::string message = thrown_message<std::logic_error>([&] { comm.split(0, comm.rank()); });
  EXPECT_NE(message.find("cannot split"), std::string::npos) << message;
  EXPECT_NE(message.find("other ranks' colors"), std::string::npos) << message;
  EXPECT_NE(message.find("LoopbackCommunicator directly"), std::string::npos) << message;
}

}  // namespace
}  // namespace tessera
