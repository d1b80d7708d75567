// FaultInjector: fires once, at the n-th event matching the plan's kind and op, or at the first one
// during the planned step (not before it, not in a later step); no plan, no fault.
#include "tessera/runtime/simulated/fault_injector.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(FaultInjector, FiresOnceAtTheNthMatchingEvent) {
  FaultInjector faults(parse_device_fault_plan("kernel:gelu_forward@3"));
  EXPECT_FALSE(faults.fires(DeviceFaultKind::kKernel, "gelu_forward"));
  EXPECT_FALSE(faults.fires(DeviceFaultKind::kKernel, "add")) << "another op does not count";
  EXPECT_FALSE(faults.fires(DeviceFaultKind::kCopy, "gelu_forward")) << "another kind does not count";
  EXPECT_FALSE(faults.fires(DeviceFaultKind::kKernel, "gelu_forward"));
  EXPECT_TRUE(faults.fires(DeviceFaultKind::kKernel, "gelu_forward")) << "the third gelu_forward";
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(faults.fires(DeviceFaultKind::kKernel, "gelu_forward")) << "once only";
  EXPECT_EQ(faults.origin(), "(fault planted by TESSERA_SIM_GPU_FAULT=kernel:gelu_forward@3)");
}

TEST(FaultInjector, FiresAtTheFirstMatchingEventDuringItsStep) {
  FaultInjector faults(parse_device_fault_plan("oom@step2"));
  EXPECT_FALSE(faults.fires(DeviceFaultKind::kOutOfMemory)) << "before the first step";
  faults.begin_step(1);
  EXPECT_FALSE(faults.fires(DeviceFaultKind::kOutOfMemory));
  EXPECT_FALSE(faults.fires(DeviceFaultKind::kCopy, "copy_to_host"));
  faults.begin_step(2);
  EXPECT_FALSE(faults.fires(DeviceFaultKind::kCopy, "copy_to_host")) << "another kind in step 2";
  EXPECT_TRUE(faults.fires(DeviceFaultKind::kOutOfMemory));
  EXPECT_FALSE(faults.fires(DeviceFaultKind::kOutOfMemory));
  faults.begin_step(2);  // a reload runs step 2 again: the fault has fired already
  EXPECT_FALSE(faults.fires(DeviceFaultKind::kOutOfMemory));

  FaultInjector later(parse_device_fault_plan("copy@step2"));
  later.begin_step(3);  // a run resumed past step 2 never sees it
  EXPECT_FALSE(later.fires(DeviceFaultKind::kCopy, "copy_from_host"));
}

TEST(FaultInjector, WithoutAPlanNothingFires) {
  FaultInjector faults;
  faults.begin_step(1);
  EXPECT_FALSE(faults.fires(DeviceFaultKind::kOutOfMemory));
  EXPECT_FALSE(faults.fires(DeviceFaultKind::kKernel, "add"));
  EXPECT_EQ(faults.origin(), "");
}

}  // namespace
}  // namespace tessera
