// GEMM ceiling: the probe keeps its buffers (a measurement allocates, frees and copies nothing on
// the device), times at least warm-up + 3 GEMMs of its shape, and reports that shape's rate.
#include "tessera/runtime/gemm_ceiling.hpp"

#include <gtest/gtest.h>

#include <chrono>

#include "tessera/runtime/cpu/cpu_device.hpp"
#include "tessera/runtime/timed_device.hpp"

namespace tessera {
namespace {

TEST(GemmCeilingProbe, MeasuresItsShapeWithoutTouchingTheAllocator) {
  TimedDevice device(make_cpu_device());
  GemmCeilingProbe probe(device, 64, 48, 32);
  const std::int64_t held = device.memory().current_total();
  EXPECT_EQ(held, 4 * (64 * 32 + 32 * 48 + 64 * 48)) << "a (m,k), b (k,n) and c (m,n) in f32";
  device.reset_times();
  for (int i = 0; i < 2; ++i) {
    const GemmCeiling c = probe.measure(0.0);
    EXPECT_EQ(c.m, 64);
    EXPECT_EQ(c.n, 48);
    EXPECT_EQ(c.k, 32);
    EXPECT_GT(c.gflops, 0.0);
  }
  const MemoryOpTimes memory = device.memory_op_times();
  for (MemoryOp op : {MemoryOp::kAllocate, MemoryOp::kFree, MemoryOp::kFill, MemoryOp::kCopy}) {
    EXPECT_EQ(memory.calls_of(op), 0);
  }
  EXPECT_EQ(device.kernel_times().calls_of(KernelGroup::kGemm), 2 * (1 + 3)) << "warm-up + 3 timed, twice";
  EXPECT_EQ(device.memory().current_total(), held);
}

TEST(GemmCeiling, OneMeasurementRunsForTheAskedTimeAndHoldsNothingAfter) {
  TimedDevice device(make_cpu_device());
  const auto t0 = std::chrono::steady_clock::now();
  const GemmCeiling c = measure_gemm_ceiling(device, 32, 32, 32, 0.02);
  EXPECT_GE(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.02);
  EXPECT_EQ(c.m, 32);
  EXPECT_GT(c.gflops, 0.0);
  EXPECT_EQ(device.memory().current_total(), 0);
}

}  // namespace
}  // namespace tessera
