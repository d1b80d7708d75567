// TimedKernels: times add up per group and reset to zero. That every op is forwarded as itself with
// its arguments and counted once in its group: tests/runtime/kernel_ops_test.cpp, over the op list.
#include "tessera/runtime/timed_kernels.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "tessera/runtime/cpu/cpu_kernels.hpp"

namespace tessera {
namespace {

// Inputs and an output of 64 floats, for add and an 8x8 GEMM.
struct Buffers {
  std::vector<float> a = std::vector<float>(64, 0.25f), b = std::vector<float>(64, 0.5f);
  std::vector<float> c = std::vector<float>(64, 0.0f);
};

TEST(TimedKernels, TimesAccumulateUntilReset) {
  CpuKernels cpu;
  TimedKernels timed(cpu);
  Buffers x;
  for (int i = 0; i < 3; ++i) timed.add(x.c.data(), x.a.data(), x.b.data(), 64);
  timed.gemm(false, false, 8, 8, 8, 1.0f, x.a.data(), 8, x.b.data(), 8, 0.0f, x.c.data(), 8);
  KernelTimes t = timed.times();
  EXPECT_EQ(t.calls_of(KernelGroup::kElementwise), 3);
  EXPECT_EQ(t.calls_of(KernelGroup::kGemm), 1);
  EXPECT_GT(t.total_seconds(), 0.0);
  EXPECT_DOUBLE_EQ(t.total_seconds(), t.seconds_of(KernelGroup::kElementwise) + t.seconds_of(KernelGroup::kGemm));
  timed.reset();
  t = timed.times();
  EXPECT_EQ(t.total_seconds(), 0.0);
  for (KernelGroup g : kAllKernelGroups) EXPECT_EQ(t.calls_of(g), 0) << kernel_group_name(g);
}

}  // namespace
}  // namespace tessera
