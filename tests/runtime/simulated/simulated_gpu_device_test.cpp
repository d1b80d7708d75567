// The simulated discrete device keeps its promises: its memory faults when the host touches it, its
// kernels refuse host pointers and compute on device memory as the CPU kernels do, pinned host
// memory is reachable by its copies, and an asynchronous copy whose event is not waited for leaves
// NaN where the data would be (a missing wait is seen, not silently passed).
#include "tessera/runtime/simulated/simulated_gpu_device.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "tessera/runtime/device_factory.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/storage.hpp"
#include "tessera/runtime/tensor.hpp"

namespace tessera {
namespace {

TEST(SimulatedGpuDevice, IsADiscreteGpuDeviceFromTheFactory) {
  auto device = make_device(parse_device_choice("sim-gpu"));
  EXPECT_EQ(device->kind(), DeviceKind::kSimulatedGpu);
  EXPECT_EQ(device->memory_space(), MemorySpace::kGpu);
  EXPECT_FALSE(device->memory_is_host());
  EXPECT_TRUE(device->holds_data());
}

TEST(SimulatedGpuDeviceDeathTest, HostReadOfDeviceMemoryFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  SimulatedGpuDevice device;
  Tensor t = Tensor::zeros(device, {16}, DType::kF32, MemoryCategory::kWorkspace);
  const volatile float* p = t.data_as<float>();
  EXPECT_DEATH({ [[maybe_unused]] float x = p[3]; }, "");
}

TEST(SimulatedGpuDevice, KernelsRefuseHostPointersAndComputeOnDeviceMemory) {
  SimulatedGpuDevice device;
  const std::vector<float> a{1, 2, 3, 4}, b{10, 20, 30, 40};
  Tensor da = Tensor::from_host(device, a, {4}, DType::kF32, MemoryCategory::kWorkspace);
  Tensor db = Tensor::from_host(device, b, {4}, DType::kF32, MemoryCategory::kWorkspace);
  Tensor out = Tensor::zeros(device, {4}, DType::kF32, MemoryCategory::kWorkspace);
  device.kernels().add(out.data_as<float>(), da.data_as<const float>(), db.data_as<const float>(), 4);
  EXPECT_EQ(out.to_host_f32(), (std::vector<float>{11, 22, 33, 44}));

  std::vector<float> host(4);
  try {
    device.kernels().add(host.data(), da.data_as<const float>(), db.data_as<const float>(), 4);
    FAIL() << "a host pointer reached a device kernel";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("add"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not device memory"), std::string::npos) << e.what();
  }
}

TEST(SimulatedGpuDevice, PinnedHostMemoryIsReachableByCopiesAndFills) {
  SimulatedGpuDevice device;
  Tensor pinned = Tensor::zeros(device, {8}, DType::kF32, MemoryCategory::kOptimizerState, MemoryKind::kPinnedHost);
  float* host = pinned.data_as<float>();  // the host may touch pinned memory
  for (int i = 0; i < 8; ++i) host[i] = static_cast<float>(i);
  Tensor on_device = Tensor::zeros(device, {8}, DType::kF32, MemoryCategory::kWorkspace);
  device.copy(on_device.data(), pinned.data(), 8 * sizeof(float));
  EXPECT_EQ(on_device.to_host_f32(), (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  std::vector<float> plain(8);
  EXPECT_THROW(device.copy(on_device.data(), plain.data(), sizeof(float)), std::invalid_argument)
      << "ordinary host memory is not the device's to copy within";
}

TEST(SimulatedGpuDevice, AsyncCopyReadWithoutItsWaitIsNaN) {
  SimulatedGpuDevice device;
  Stream& copy = device.stream(StreamRole::kCopy);
  std::vector<float> source(1 << 16, 1.5f);
  Tensor target = Tensor::zeros(device, {1 << 16}, DType::kF32, MemoryCategory::kWorkspace);
  device.copy_from_host_async(target.data(), source.data(), source.size() * sizeof(float), copy);
  const Event done = copy.record();
  // However long the host takes, the copy has not run: nothing has waited for its event.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(done.query()) << "querying does not start the copy engine";
  std::vector<float> early(4);
  device.copy_to_host(early.data(), target.data(), early.size() * sizeof(float));  // no wait: a bug
  for (float v : early) EXPECT_TRUE(std::isnan(v)) << "a read that skipped the copy's event must see NaN";
  done.synchronize();
  std::vector<float> after(4);
  device.copy_to_host(after.data(), target.data(), after.size() * sizeof(float));
  EXPECT_EQ(after, (std::vector<float>(4, 1.5f)));

  // Device to host likewise: the host buffer is NaN until the event is waited for.
  std::vector<float> back(1 << 16, 0.0f);
  device.copy_to_host_async(back.data(), target.data(), back.size() * sizeof(float), copy);
  const Event back_done = copy.record();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(std::isnan(back[0]));
  back_done.synchronize();
  EXPECT_EQ(back[0], 1.5f);
}

TEST(SimulatedGpuDevice, AnotherStreamsWaitAndSynchronizeRunTheCopies) {
  SimulatedGpuDevice device;
  Stream& copy = device.stream(StreamRole::kCopy);
  std::vector<float> source(64, 2.5f);
  Tensor target = Tensor::zeros(device, {64}, DType::kF32, MemoryCategory::kWorkspace);
  device.copy_from_host_async(target.data(), source.data(), 64 * sizeof(float), copy);
  device.stream(StreamRole::kCompute).wait(copy.record());  // the compute stream's work follows the copy
  EXPECT_EQ(target.to_host_f32(), source);
  const std::vector<float> zeros(64, 0.0f);
  device.copy_from_host_async(target.data(), zeros.data(), 64 * sizeof(float), copy);
  device.synchronize();  // runs it too
  EXPECT_EQ(target.to_host_f32(), zeros);
}

TEST(SimulatedGpuDevice, FreedBlocksLeaveTheAddressSpace) {
  SimulatedGpuDevice device;
  const std::size_t before = device.address_space().bytes();
  {
    Tensor t = Tensor::zeros(device, {1 << 20}, DType::kF32, MemoryCategory::kWorkspace);
    EXPECT_GE(device.address_space().bytes(), before + (std::size_t{4} << 20));
  }
  device.synchronize();
  EXPECT_EQ(device.address_space().bytes(), before);
}

}  // namespace
}  // namespace tessera
