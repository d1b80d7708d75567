// The simulated GPU's planted faults (TESSERA_SIM_GPU_FAULT) behave as a GPU's failures do: an
// allocation fails as on a full device (OutOfMemoryError naming the bytes), a synchronous copy
// fails at the call, an asynchronous one and a kernel fail quietly at issue and are reported at the
// stream's next synchronization, by a DeviceError naming the op — and the failure stays with the
// stream (a later synchronization, a synchronous copy, the device's synchronize all report it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "tessera/runtime/device_error.hpp"
#include "tessera/runtime/device_factory.hpp"
#include "tessera/runtime/kernels.hpp"
#include "tessera/runtime/out_of_memory.hpp"
#include "tessera/runtime/simulated/simulated_gpu_device.hpp"
#include "tessera/runtime/tensor.hpp"

namespace tessera {
namespace {

SimulatedGpuSettings with_fault(const std::string& text) {
  SimulatedGpuSettings settings;
  settings.fault = parse_device_fault_plan(text);
  return settings;
}

// `fn` throws DeviceError whose op is `op` and whose message holds each of `parts`.
template <typename Fn>
void expect_device_error(Fn fn, const std::string& op, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no DeviceError for " << op;
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.op(), op) << e.what();
    for (const std::string& part : parts)
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << "missing '" << part << "' in " << e.what();
  }
}

TEST(SimulatedGpuFaults, AllocationFailsAtTheNthDeviceBlockAsOnAFullGpu) {
  SimulatedGpuDevice device(with_fault("oom@3"));
  Tensor a = Tensor::zeros(device, {64}, DType::kF32, MemoryCategory::kWorkspace);
  Tensor pinned =
      Tensor::zeros(device, {64}, DType::kF32, MemoryCategory::kWorkspace, MemoryKind::kPinnedHost);  // not counted
  Tensor b = Tensor::zeros(device, {64}, DType::kF32, MemoryCategory::kWorkspace);
  try {
    Tensor c = Tensor::zeros(device, {1000}, DType::kF32, MemoryCategory::kActivations);
    FAIL() << "the third device block was allocated";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("out of memory allocating 3.91 KiB (4000 bytes) of device memory for"),
              std::string::npos)
        << e.what();
  }
  Tensor d = Tensor::zeros(device, {64}, DType::kF32, MemoryCategory::kWorkspace);  // the fault fired once
  EXPECT_EQ(d.to_host_f32(), std::vector<float>(64, 0.0f));
}

TEST(SimulatedGpuFaults, AllocationFailsDuringItsStep) {
  SimulatedGpuDevice device(with_fault("oom@step2"));
  device.begin_step(1);
  Tensor a = Tensor::zeros(device, {64}, DType::kF32, MemoryCategory::kWorkspace);
  device.begin_step(2);
  EXPECT_THROW(Tensor::zeros(device, {64}, DType::kF32, MemoryCategory::kWorkspace), OutOfMemoryError);
}

TEST(SimulatedGpuFaults, SynchronousCopyFailsAtTheCallNamingIt) {
  SimulatedGpuDevice device(with_fault("copy:copy_to_host@2"));
  const std::vector<float> values{1, 2, 3, 4};
  Tensor t = Tensor::from_host(device, values, {4}, DType::kF32, MemoryCategory::kWorkspace);
  EXPECT_EQ(t.to_host_f32(), values);  // the first copy_to_host
  std::vector<float> back(4, 0.0f);
  expect_device_error([&] { device.copy_to_host(back.data(), t.data(), 4 * sizeof(float)); }, "copy_to_host",
                      {"sim-gpu", "copy_to_host failed: the copy of 16 bytes from device to host memory was not made",
                       "(fault planted by TESSERA_SIM_GPU_FAULT=copy:copy_to_host@2)"});
  EXPECT_EQ(back, std::vector<float>(4, 0.0f)) << "a failed copy writes nothing";
  EXPECT_NO_THROW(device.synchronize()) << "a synchronous copy's failure is the call's, not a stream's";
}

TEST(SimulatedGpuFaults, AsynchronousCopyFailsAtTheStreamsNextSynchronization) {
  SimulatedGpuDevice device(with_fault("copy:copy_from_host_async@1"));
  Stream& copy = device.stream(StreamRole::kCopy);
  const std::vector<float> source(256, 1.5f);
  Tensor target = Tensor::zeros(device, {256}, DType::kF32, MemoryCategory::kWorkspace);
  device.copy_from_host_async(target.data(), source.data(), source.size() * sizeof(float), copy);  // no throw
  const Event done = copy.record();
  const std::vector<std::string> parts{
      "copy_from_host_async failed: the copy of 1024 bytes from host to device "
      "memory on the copy stream was not made",
      "reported at the stream's next synchronization"};
  expect_device_error([&] { done.synchronize(); }, "copy_from_host_async", parts);
  expect_device_error([&] { device.synchronize(); }, "copy_from_host_async", parts);  // it stays with the stream
  expect_device_error([&] { copy.synchronize(); }, "copy_from_host_async", parts);
  EXPECT_TRUE(std::isnan(target.to_host_f32()[0])) << "the copy was not made: its destination keeps NaN bytes";
}

TEST(SimulatedGpuFaults, KernelFailureIsReportedAtTheNextSynchronizationNamingTheOp) {
  SimulatedGpuDevice device(with_fault("kernel:add@2"));
  const std::vector<float> a{1, 2, 3, 4}, b{10, 20, 30, 40};
  Tensor da = Tensor::from_host(device, a, {4}, DType::kF32, MemoryCategory::kWorkspace);
  Tensor db = Tensor::from_host(device, b, {4}, DType::kF32, MemoryCategory::kWorkspace);
  Tensor out = Tensor::zeros(device, {4}, DType::kF32, MemoryCategory::kWorkspace);
  const Kernels& kernels = device.kernels();
  kernels.add(out.data_as<float>(), da.data_as<const float>(), db.data_as<const float>(), 4);
  EXPECT_EQ(out.to_host_f32(), (std::vector<float>{11, 22, 33, 44}));
  Tensor out2 = Tensor::zeros(device, {4}, DType::kF32, MemoryCategory::kWorkspace);
  EXPECT_NO_THROW(kernels.add(out2.data_as<float>(), da.data_as<const float>(), db.data_as<const float>(), 4))
      << "the launch reports nothing";
  kernels.scale(out.data_as<float>(), 2.0f, 4);  // later launches are queued as before
  const std::vector<std::string> parts{"sim-gpu", "kernel add failed on the compute stream",
                                       "(fault planted by TESSERA_SIM_GPU_FAULT=kernel:add@2)",
                                       "reported at the stream's next synchronization"};
  Stream& compute = device.stream(StreamRole::kCompute);
  expect_device_error([&] { compute.synchronize(); }, "kernel add", parts);
  expect_device_error([&] { compute.record().synchronize(); }, "kernel add", parts);
  expect_device_error([&] { device.synchronize(); }, "kernel add", parts);
  std::vector<float> host(4);
  expect_device_error([&] { device.copy_to_host(host.data(), out2.data(), sizeof(float)); }, "kernel add", parts);
}

TEST(SimulatedGpuFaults, TheFactoryReadsTheSettingAndRefusesABadOne) {
  ::setenv(kDeviceFaultVariable, "kernel:gelu@step2", 1);
  try {
    make_device(parse_device_choice("sim-gpu"));
    ADD_FAILURE() << "a bad TESSERA_SIM_GPU_FAULT was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("TESSERA_SIM_GPU_FAULT = 'kernel:gelu@step2': 'gelu' is not a kernel op"),
              std::string::npos)
        << e.what();
  }
  ::setenv(kDeviceFaultVariable, "oom@1", 1);
  auto device = make_device(parse_device_choice("sim-gpu"));
  ::unsetenv(kDeviceFaultVariable);
  EXPECT_THROW(Tensor::zeros(*device, {4}, DType::kF32, MemoryCategory::kWorkspace), OutOfMemoryError);
}

}  // namespace
}  // namespace tessera
