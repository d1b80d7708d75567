// Tensor views, reshapes, host round trips and the memory tracker's byte accounting.
#include "tessera/runtime/tensor.hpp"

#include <gtest/gtest.h>

#include "tessera/runtime/device.hpp"

namespace tessera {
namespace {

TEST(Tensor, ViewsShareStorageAndOffsets) {
  auto device = make_cpu_device();
  Tensor flat = Tensor::zeros(*device, {10}, DType::kF32, MemoryCategory::kParameters);
  Tensor a = flat.view(2, {2, 3});
  std::vector<float> six = {1, 2, 3, 4, 5, 6};
  a.copy_from_host_f32(six);
  const std::vector<float> all = flat.to_host_f32();
  const std::vector<float> expected = {0, 0, 1, 2, 3, 4, 5, 6, 0, 0};
  EXPECT_EQ(all, expected);
  EXPECT_EQ(a.byte_offset(), 8u);
  EXPECT_EQ(a.reshape({6}).to_host_f32(), six);
  EXPECT_THROW(flat.view(8, {3}), std::out_of_range);
  EXPECT_THROW(a.reshape({5}), std::invalid_argument);
}

TEST(Tensor, Bf16StorageRoundsToNearestEven) {
  auto device = make_cpu_device();
  // 1 + 2^-8 is a tie between bf16 1.0 and 1.0078125: rounds to even (1.0).
  std::vector<float> values = {1.0f + 1.0f / 256.0f, 3.0f, -2.5f};
  Tensor t = Tensor::from_host(*device, values, {3}, DType::kBF16, MemoryCategory::kParameters);
  EXPECT_EQ(t.nbytes(), 6u);
  const std::vector<float> back = t.to_host_f32();
  EXPECT_EQ(back[0], 1.0f);
  EXPECT_EQ(back[1], 3.0f);
  EXPECT_EQ(back[2], -2.5f);
}

TEST(MemoryTracker, CountsExactBytesPerCategoryAndPeaks) {
  auto device = make_cpu_device();
  MemoryTracker& m = device->memory();
  {
    Tensor p = Tensor::empty(*device, {100}, DType::kF32, MemoryCategory::kParameters);
    Tensor g = Tensor::empty(*device, {50}, DType::kBF16, MemoryCategory::kGradients);
    EXPECT_EQ(m.current(MemoryCategory::kParameters), 400);
    EXPECT_EQ(m.current(MemoryCategory::kGradients), 100);
    EXPECT_EQ(m.current_total(), 500);
    Tensor view = p.view(10, {10});  // views allocate nothing
    EXPECT_EQ(m.current_total(), 500);
    {
      Tensor act = Tensor::empty(*device, {25}, DType::kF32, MemoryCategory::kActivations);
      EXPECT_EQ(m.peak_total(), 600);
    }
    EXPECT_EQ(m.current(MemoryCategory::kActivations), 0);
    EXPECT_EQ(m.peak(MemoryCategory::kActivations), 100);
  }
  EXPECT_EQ(m.current_total(), 0);
  EXPECT_EQ(m.peak_total(), 600);
  m.reset_peaks();
  EXPECT_EQ(m.peak_total(), 0);
  const std::string table = memory_summary(m);
  EXPECT_NE(table.find("optimizer state"), std::string::npos) << table;
  EXPECT_NE(table.find("total"), std::string::npos) << table;
}

}  // namespace
}  // namespace tessera
