// elementwise_map: a program's functor over one and two inputs on the CPU device (f32, bf16 rounded
// once, in place), the simulated GPU giving the CPU's bits, the meta device doing nothing, and the
// refusals: mismatched operands, a tensor of another device.
#include "tessera/runtime/elementwise_map.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "tessera/runtime/device_factory.hpp"
#include "tessera/runtime/meta/meta_device.hpp"

namespace tessera {
namespace {

struct MapSquaredRelu {
  TESSERA_HD float operator()(float x) const { return x > 0.0f ? x * x : 0.0f; }
};
struct MapSquaredReluGrad {
  TESSERA_HD float operator()(float x, float dy) const { return x > 0.0f ? 2.0f * x * dy : 0.0f; }
};

const std::vector<float> kMapInputs{-2.0f, -0.5f, 0.0f, 0.25f, 1.5f, 3.0f, 1.0f / 3.0f};

Tensor map_tensor(Device& device, const std::vector<float>& v, DType dtype = DType::kF32) {
  return Tensor::from_host(device, v, {static_cast<std::int64_t>(v.size())}, dtype, MemoryCategory::kActivations);
}

TEST(ElementwiseMap, RunsAFunctorOnTheCpuDevice) {
  auto device = make_cpu_device();
  const Tensor x = map_tensor(*device, kMapInputs);
  Tensor y = Tensor::empty(*device, x.shape(), DType::kF32, MemoryCategory::kActivations);
  elementwise_map(*device, MapSquaredRelu{}, y, x);
  const std::vector<float> out = y.to_host_f32();
  for (std::size_t i = 0; i < kMapInputs.size(); ++i) EXPECT_EQ(out[i], MapSquaredRelu{}(kMapInputs[i])) << i;
  Tensor dy = map_tensor(*device, std::vector<float>(kMapInputs.size(), 0.5f));
  elementwise_map(*device, MapSquaredReluGrad{}, dy, x, dy);  // in place over dy
  const std::vector<float> grad = dy.to_host_f32();
  for (std::size_t i = 0; i < kMapInputs.size(); ++i) {
    EXPECT_EQ(grad[i], MapSquaredReluGrad{}(kMapInputs[i], 0.5f)) << i;
  }
}

TEST(ElementwiseMap, Bf16RoundsEachResultOnce) {
  auto device = make_cpu_device();
  const Tensor x = map_tensor(*device, kMapInputs, DType::kBF16);
  Tensor y = Tensor::empty(*device, x.shape(), DType::kBF16, MemoryCategory::kActivations);
  elementwise_map(*device, MapSquaredRelu{}, y, x);
  const std::vector<float> in = x.to_host_f32(), out = y.to_host_f32();
  for (std::size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], to_f32(from_f32<Bf16>(MapSquaredRelu{}(in[i])))) << i;
}

TEST(ElementwiseMap, SimulatedGpuGivesTheCpuBitsAndMetaDoesNothing) {
  auto cpu = make_cpu_device();
  auto gpu = make_device(DeviceChoice::kSimulatedGpu);
  auto run = [](Device& device) {
    const Tensor x = map_tensor(device, kMapInputs);
    Tensor y = Tensor::empty(device, x.shape(), DType::kF32, MemoryCategory::kActivations);
    elementwise_map(device, MapSquaredReluGrad{}, y, x, x);
    return y.to_host_f32();
  };
  EXPECT_EQ(run(*gpu), run(*cpu));
  auto meta = make_device(DeviceChoice::kMeta);
  Tensor m = Tensor::empty(*meta, {1 << 20}, DType::kF32, MemoryCategory::kActivations);
  elementwise_map(*meta, MapSquaredRelu{}, m, m);  // sizes only: nothing to compute
}

TEST(ElementwiseMap, RefusesMismatchedOperandsAndAnotherDevicesTensor) {
  auto device = make_cpu_device();
  auto other = make_cpu_device();
  const Tensor x = map_tensor(*device, kMapInputs);
  Tensor short_out = Tensor::empty(*device, {3}, DType::kF32, MemoryCategory::kActivations);
  try {
    elementwise_map(*device, MapSquaredRelu{}, short_out, x);
    FAIL() << "an input of another element count was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("every input must match the output's dtype and element count (f32 (3))"),
              std::string::npos)
        << e.what();
  }
  Tensor bf16_out = Tensor::empty(*device, x.shape(), DType::kBF16, MemoryCategory::kActivations);
  EXPECT_THROW(elementwise_map(*device, MapSquaredRelu{}, bf16_out, x), std::invalid_argument);
  Tensor elsewhere = Tensor::empty(*other, x.shape(), DType::kF32, MemoryCategory::kActivations);
  try {
    elementwise_map(*device, MapSquaredRelu{}, elsewhere, x);
    FAIL() << "a tensor of another device was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("a tensor lives on"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera
