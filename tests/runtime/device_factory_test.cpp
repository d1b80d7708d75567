// make_device / parse_device_choice: every accepted spelling, the error for anything else (naming
// the setting, the value and the accepted values), auto falling back to the CPU device, cuda in a
// build without a CUDA device backend and in one whose backend finds no GPU (one line naming the
// reason), and the registry holding the always-built backends. Runs in every build.
#include "tessera/runtime/device_factory.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "tessera/runtime/device_registry.hpp"

namespace tessera {
namespace {

TEST(DeviceFactory, ParsesEveryChoice) {
  EXPECT_EQ(parse_device_choice("auto"), DeviceChoice::kAuto);
  EXPECT_EQ(parse_device_choice("cpu"), DeviceChoice::kCpu);
  EXPECT_EQ(parse_device_choice("cuda"), DeviceChoice::kCuda);
  EXPECT_EQ(parse_device_choice("meta"), DeviceChoice::kMeta);
  for (DeviceChoice c : {DeviceChoice::kAuto, DeviceChoice::kCpu, DeviceChoice::kCuda, DeviceChoice::kMeta}) {
    EXPECT_EQ(parse_device_choice(device_choice_name(c)), c) << device_choice_name(c);
  }
}

TEST(DeviceFactory, UnknownChoiceNamesSettingValueAndAcceptedValues) {
  for (const char* bad : {"gpu", "CPU", "", "cuda:0"}) {
    try {
      parse_device_choice(bad);
      ADD_FAILURE() << "expected std::invalid_argument for '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("device"), std::string::npos) << message;
      EXPECT_NE(message.find(std::string("'") + bad + "'"), std::string::npos) << message;
      EXPECT_NE(message.find("auto, cpu, cuda, meta"), std::string::npos) << message;
    }
  }
}

TEST(DeviceFactory, MakesTheCpuAndMetaDevices) {
  auto cpu = make_device(DeviceChoice::kCpu);
  EXPECT_EQ(cpu->kind(), DeviceKind::kCpu);
  EXPECT_EQ(cpu->memory_space(), MemorySpace::kHost);
  auto meta = make_device(DeviceChoice::kMeta);
  EXPECT_EQ(meta->kind(), DeviceKind::kMeta);
  EXPECT_FALSE(meta->holds_data());
  EXPECT_NE(cpu.get(), make_device(DeviceChoice::kCpu).get()) << "each call makes a new device";
  ASSERT_NE(find_device_backend(DeviceChoice::kCpu), nullptr);
  ASSERT_NE(find_device_backend(DeviceChoice::kMeta), nullptr);
  EXPECT_STREQ(find_device_backend(DeviceChoice::kCpu)->name, "cpu");
  EXPECT_STREQ(find_device_backend(DeviceChoice::kMeta)->name, "meta");
  EXPECT_EQ(find_device_backend(DeviceChoice::kAuto), nullptr);
}

TEST(DeviceFactory, AutoIsCudaWhenUsableElseCpu) {
  auto device = make_device(DeviceChoice::kAuto);
  const bool cuda = device_available(DeviceChoice::kCuda);
  EXPECT_EQ(device->kind(), cuda ? DeviceKind::kCuda : DeviceKind::kCpu);
  EXPECT_TRUE(device_available(DeviceChoice::kAuto));
  EXPECT_TRUE(device_available(DeviceChoice::kCpu));
  EXPECT_TRUE(device_available(DeviceChoice::kMeta));
}

TEST(DeviceFactory, CountsAndReasons) {
  EXPECT_EQ(device_count(DeviceChoice::kCpu), 1);
  EXPECT_EQ(device_count(DeviceChoice::kMeta), 1);
  EXPECT_EQ(device_unavailable_reason(DeviceChoice::kCpu), "");
  EXPECT_EQ(resolve_device_choice(DeviceChoice::kCpu), DeviceChoice::kCpu);
  const bool cuda = device_available(DeviceChoice::kCuda);
  EXPECT_EQ(resolve_device_choice(DeviceChoice::kAuto), cuda ? DeviceChoice::kCuda : DeviceChoice::kCpu);
  EXPECT_EQ(device_count(DeviceChoice::kCuda) > 0, cuda);
  EXPECT_EQ(device_unavailable_reason(DeviceChoice::kCuda).empty(), cuda)
      << device_unavailable_reason(DeviceChoice::kCuda);
  // Options the CPU device has no use for are ignored.
  EXPECT_EQ(make_device(DeviceChoice::kCpu, DeviceOptions{3, GemmMath::kBf16})->kind(), DeviceKind::kCpu);
}

TEST(DeviceFactory, CudaWithABackendButNoGpuNamesTheReasonInOneLine) {
  if (find_device_backend(DeviceChoice::kCuda) == nullptr) GTEST_SKIP() << "this build has no CUDA device backend";
  if (device_available(DeviceChoice::kCuda)) GTEST_SKIP() << "a GPU is usable here";
  EXPECT_EQ(make_device(DeviceChoice::kAuto)->kind(), DeviceKind::kCpu) << "auto falls back to the CPU";
  EXPECT_EQ(device_count(DeviceChoice::kCuda), 0);
  try {
    make_device(DeviceChoice::kCuda);
    ADD_FAILURE() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("device cuda: no usable GPU (", 0), 0u) << message;
    EXPECT_NE(message.find("cudaGetDeviceCount"), std::string::npos) << "names the failing call: " << message;
    EXPECT_NE(message.find("use the cpu device"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
}

TEST(DeviceFactory, CudaGpuIndexOutsideTheVisibleOnesIsRefused) {
  if (!device_available(DeviceChoice::kCuda)) GTEST_SKIP() << device_unavailable_reason(DeviceChoice::kCuda);
  auto gpu = make_device(DeviceChoice::kCuda);
  EXPECT_EQ(gpu->kind(), DeviceKind::kCuda);
  EXPECT_EQ(gpu->memory_space(), MemorySpace::kGpu);
  const int count = device_count(DeviceChoice::kCuda);
  try {
    make_device(DeviceChoice::kCuda, DeviceOptions{count, GemmMath::kF32});
    ADD_FAILURE() << "expected std::invalid_argument for GPU index " << count;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("GPU index " + std::to_string(count)), std::string::npos) << e.what();
  }
}

TEST(DeviceFactory, CudaWithoutABackendSaysToUseTheCpuDevice) {
  if (find_device_backend(DeviceChoice::kCuda) != nullptr) GTEST_SKIP() << "this build has a CUDA device backend";
  EXPECT_FALSE(device_available(DeviceChoice::kCuda));
  try {
    make_device(DeviceChoice::kCuda);
    ADD_FAILURE() << "expected std::runtime_error";
  } catch (const std::runtime_error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("no CUDA device backend"), std::string::npos) << message;
    EXPECT_NE(message.find("use the cpu device"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
  }
}

}  // namespace
}  // namespace tessera
