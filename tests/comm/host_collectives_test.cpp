// Host collectives without peers: on a loopback communicator the other ranks' values stay
// value-initialised and this rank's own value is kept; a GPU-memory communicator is refused with a
// message naming the communicator.
#include "tessera/comm/host_collectives.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/comm/communicator_base.hpp"
#include "tessera/comm/loopback/loopback_communicator.hpp"

namespace tessera {
namespace {

struct WithDefaults {
  std::int32_t a = 7;
  float b = 0.5f;
};

// Reports GPU memory; its collectives must never be reached.
class GpuStandIn final : public CommunicatorBase {
 public:
  GpuStandIn() : CommunicatorBase(CommOptions{.name = "gpu-world"}) { set_group(0, 2); }
  CommBackend backend() const override { return CommBackend::kNccl; }
  MemorySpace memory_space() const override { return MemorySpace::kGpu; }
  Work all_reduce(Span, DType, ReduceOp) override { throw std::logic_error("all_reduce reached"); }
  Work reduce_scatter(ConstSpan, Span, DType, ReduceOp) override { throw std::logic_error("reduce_scatter reached"); }
  Work all_reduce_f32(Span, DType, ReduceOp) override { throw std::logic_error("all_reduce_f32 reached"); }
  Work reduce_scatter_f32(ConstSpan, Span, DType, ReduceOp) override {
    throw std::logic_error("reduce_scatter_f32 reached");
  }
  Work all_gather(ConstSpan, Span, DType) override { throw std::logic_error("all_gather reached"); }
  Work broadcast(Span, DType, int) override { throw std::logic_error("broadcast reached"); }
  Work barrier() override { throw std::logic_error("barrier reached"); }
  std::unique_ptr<Communicator> split(int, int) override { throw std::logic_error("split reached"); }
};

template <class F>
std::string invalid_argument_message(F&& call) {
  try {
    call();
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "(nothing thrown)";
}

TEST(HostCollectivesOnLoopback, OtherRanksStayValueInitialised) {
  LoopbackCommunicator comm(2, 4);
  EXPECT_EQ(all_gather_values<std::int32_t>(comm, 42), (std::vector<std::int32_t>{0, 0, 42, 0}));
  const std::vector<WithDefaults> structs = all_gather_values(comm, WithDefaults{-1, 2.0f});
  ASSERT_EQ(structs.size(), 4u);
  for (int p = 0; p < 4; ++p) {
    EXPECT_EQ(structs[p].a, p == 2 ? -1 : 7) << "slot " << p;
    EXPECT_EQ(structs[p].b, p == 2 ? 2.0f : 0.5f) << "slot " << p;
  }

  EXPECT_EQ(broadcast_value(comm, 5, 2), 5) << "the root keeps its own value";
  EXPECT_EQ(broadcast_value(comm, 5, 0), 0) << "another root's value is unknown: value-initialised";
  EXPECT_EQ(broadcast_string(comm, "from rank two", 2), "from rank two");
  EXPECT_EQ(broadcast_string(comm, "from rank two", 0), "");

  EXPECT_EQ(sum_in_rank_order(comm, 0.1), 0.1);
}

TEST(HostCollectivesOnLoopback, ArgumentsAreStillChecked) {
  LoopbackCommunicator comm(0, 2);
  EXPECT_THROW(broadcast_value(comm, 1, 2), std::invalid_argument);
  EXPECT_THROW(broadcast_string(comm, "x", -1), std::invalid_argument);
}

TEST(HostCollectives, RefuseAGpuCommunicator) {
  GpuStandIn gpu;
  const std::string gather = invalid_argument_message([&] { all_gather_values(gpu, 1); });
  EXPECT_NE(gather.find("all_gather_values on communicator 'gpu-world'"), std::string::npos) << gather;
  EXPECT_NE(gather.find("GPU memory"), std::string::npos) << gather;
  const std::string value = invalid_argument_message([&] { broadcast_value(gpu, 1, 0); });
  EXPECT_NE(value.find("broadcast_value on communicator 'gpu-world'"), std::string::npos) << value;
  const std::string text = invalid_argument_message([&] { broadcast_string(gpu, "x", 0); });
  EXPECT_NE(text.find("broadcast_string on communicator 'gpu-world'"), std::string::npos) << text;
  const std::string sum = invalid_argument_message([&] { sum_in_rank_order(gpu, 1.0); });
  EXPECT_NE(sum.find("sum_in_rank_order on communicator 'gpu-world'"), std::string::npos) << sum;
}

}  // namespace
}  // namespace tessera
