// make_device_world on the CUDA device: an NCCL communicator whose collectives run after the work
// queued on the device's compute stream (a collective issued behind a held compute stream does not
// complete, and reads what that work wrote), whose Work::wait() does not block the host, whose split
// communicators work on the same device, and whose bf16 wire buffers come from the device's pool
// (counted by its tracker). Compiled only with CUDA; skips, on every rank, when this node has fewer
// usable GPUs than ranks.
// tessera-test-ranks: 1 2
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tessera/comm/device_communicator.hpp"
#include "tessera/comm/mpi/mpi_communicator.hpp"
#include "tessera/launch/rank_device.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/memory_tracker.hpp"
#include "tessera/runtime/tensor.hpp"
#include "tests/runtime/stream_gate.hpp"
#include "tests/support/gpu_per_rank.hpp"

namespace tessera {
namespace {

class DeviceWorld : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = std::make_unique<MpiCommunicator>(MPI_COMM_WORLD);
    info_ = discover_rank_info(*host_, read_launcher_env(process_environment()));
    if (const std::string why = testing::why_not_one_gpu_per_rank(info_); !why.empty()) GTEST_SKIP() << why;
    device_ = make_rank_device(DeviceChoice::kCuda, info_);
    world_ = make_device_world(*device_, *host_, CommOptions{});
  }

  std::unique_ptr<MpiCommunicator> host_;
  RankInfo info_;
  std::unique_ptr<Device> device_;
  std::unique_ptr<Communicator> world_;
};

TEST_F(DeviceWorld, CollectivesFollowComputeAndWaitWithoutBlockingTheHost) {
  ASSERT_NE(world_, nullptr);
  EXPECT_EQ(world_->backend(), CommBackend::kNccl);
  EXPECT_EQ(world_->memory_space(), MemorySpace::kGpu);
  const int n = world_->size(), r = world_->rank();
  const std::int64_t count = 1 << 16;
  Tensor buf = Tensor::from_host(*device_, std::vector<float>(count, static_cast<float>(r + 1)), {count}, DType::kF32,
                                 MemoryCategory::kCommBuffers);
  // Everything below runs once before the gate closes: CUDA loads a kernel's module at its first launch
  // (lazy loading, the default since CUDA 12) and NCCL sets up at its first collective, either of which
  // may wait for the device to drain, and a stream held by a host function never drains.
  Tensor warm =
      Tensor::from_host(*device_, std::vector<float>(count, 1.0f), {count}, DType::kF32, MemoryCategory::kCommBuffers);
  device_->kernels().scale(warm.data_as<float>(), 2.0f, count);
  world_->all_reduce(Span(warm.data(), static_cast<std::size_t>(count)), DType::kF32, ReduceOp::kSum).wait();
  device_->stream(StreamRole::kCompute).synchronize();
  test::Gate gate;
  device_->stream(StreamRole::kCompute).launch_host_function([&gate] { gate.wait(); });
  device_->kernels().scale(buf.data_as<float>(), 2.0f, count);  // queued behind the gate
  Work work = world_->all_reduce(Span(buf.data(), static_cast<std::size_t>(count)), DType::kF32, ReduceOp::kSum);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(work.is_completed()) << "rank " << r << ": the collective completed before the compute work queued "
                                    << "ahead of it ran";
  const auto t0 = std::chrono::steady_clock::now();
  work.wait();  // the compute stream waits, not the host
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1))
      << "rank " << r << ": Work::wait blocked the host";
  gate.open();
  const std::vector<float> result = buf.to_host_f32();     // ordered after the collective by the wait
  const float expected = static_cast<float>(n * (n + 1));  // sum over p of 2 (p + 1)
  std::size_t wrong = 0;
  for (float x : result) wrong += x != expected ? 1 : 0;
  EXPECT_EQ(wrong, 0u) << "rank " << r << ": expected every element " << expected << ", first is " << result[0];
  EXPECT_TRUE(work.is_completed());
}

TEST_F(DeviceWorld, Bf16WireBuffersComeFromTheDevicesPool) {
  ASSERT_NE(world_, nullptr);
  const int n = world_->size(), r = world_->rank();
  const std::int64_t count = 1 << 20;
  Tensor buf = Tensor::from_host(*device_, std::vector<float>(count, static_cast<float>(r + 1)), {count}, DType::kF32,
                                 MemoryCategory::kGradients);
  MemoryTracker& tracker = device_->memory();
  const std::int64_t before = tracker.current(MemoryCategory::kCommBuffers);
  tracker.reset_peaks();
  world_->all_reduce_f32(Span(buf.data(), static_cast<std::size_t>(count)), DType::kBF16, ReduceOp::kSum).wait();
  device_->synchronize();
  EXPECT_GE(tracker.peak(MemoryCategory::kCommBuffers) - before, count * 2)
      << "rank " << r << ": the bf16 wire buffer (2 bytes per element) was not counted as comm buffers";
  EXPECT_EQ(tracker.current(MemoryCategory::kCommBuffers), before) << "rank " << r << ": the wire buffer was kept";
  const std::vector<float> result = buf.to_host_f32();
  EXPECT_EQ(result[0], static_cast<float>(n * (n + 1) / 2)) << "rank " << r;
}

TEST_F(DeviceWorld, SplitGroupsWorkOnTheSameDevice) {
  ASSERT_NE(world_, nullptr);
  const int r = world_->rank();
  std::unique_ptr<Communicator> alone = world_->split(r, 0);
  ASSERT_NE(alone, nullptr);
  EXPECT_EQ(alone->size(), 1);
  EXPECT_EQ(alone->memory_space(), MemorySpace::kGpu);
  Tensor buf =
      Tensor::from_host(*device_, std::vector<float>(64, 3.0f), {64}, DType::kF32, MemoryCategory::kCommBuffers);
  alone->all_reduce(Span(buf.data(), 64), DType::kF32, ReduceOp::kSum).wait();
  world_->barrier().wait();
  EXPECT_EQ(buf.to_host_f32(), std::vector<float>(64, 3.0f)) << "rank " << r;
}

}  // namespace
}  // namespace tessera
