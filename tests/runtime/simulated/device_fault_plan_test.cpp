// TESSERA_SIM_GPU_FAULT's grammar: each kind with and without an op, a count or a step; bad values
// refused naming the variable, the value, what is wrong and what to write.
#include "tessera/runtime/simulated/device_fault_plan.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace tessera {
namespace {

TEST(DeviceFaultPlan, ReadsEachKindAtACountOrAStep) {
  const DeviceFaultPlan oom = parse_device_fault_plan("oom@step3");
  EXPECT_EQ(oom.kind, DeviceFaultKind::kOutOfMemory);
  EXPECT_EQ(oom.step, 3);
  EXPECT_EQ(oom.count, 0);
  EXPECT_EQ(oom.op, "");
  const DeviceFaultPlan copy = parse_device_fault_plan("copy:copy_to_host_async@12");
  EXPECT_EQ(copy.kind, DeviceFaultKind::kCopy);
  EXPECT_EQ(copy.op, "copy_to_host_async");
  EXPECT_EQ(copy.count, 12);
  EXPECT_EQ(copy.step, 0);
  const DeviceFaultPlan kernel = parse_device_fault_plan("kernel:adamw_update@step4");
  EXPECT_EQ(kernel.kind, DeviceFaultKind::kKernel);
  EXPECT_EQ(kernel.op, "adamw_update");
  EXPECT_EQ(kernel.step, 4);
  EXPECT_EQ(kernel.text, "kernel:adamw_update@step4");
  const DeviceFaultPlan any_kernel = parse_device_fault_plan("kernel@1");
  EXPECT_EQ(any_kernel.op, "");
  EXPECT_EQ(any_kernel.count, 1);
}

TEST(DeviceFaultPlan, RefusesBadValuesSayingWhatToWrite) {
  const struct {
    const char* text;
    const char* problem;
  } bad[] = {
      {"oom", "no '@<when>'"},
      {"disk@3", "unknown kind 'disk'"},
      {"oom:gemm@3", "oom takes no op"},
      {"kernel:no_such_op@3", "'no_such_op' is not a kernel op (kernel ops: "},
      {"copy:copy@3", "'copy' is not a copy op (copy ops: copy_to_host, "},
      {"copy@0", "'0' is neither a positive count nor step<k>"},
      {"copy@-2", "'-2' is neither"},
      {"copy@3x", "'3x' is neither"},
      {"oom@step", "the step after 'step' must be a positive integer"},
      {"oom@step0", "the step after 'step' must be a positive integer"},
  };
  for (const auto& [text, problem] : bad) {
    try {
      parse_device_fault_plan(text);
      ADD_FAILURE() << "accepted " << text;
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind(std::string("TESSERA_SIM_GPU_FAULT = '") + text + "': ", 0), 0u) << message;
      EXPECT_NE(message.find(problem), std::string::npos) << "expected '" << problem << "' in: " << message;
      EXPECT_NE(message.find("write <kind>@<when>"), std::string::npos) << message;
    }
  }
}

TEST(DeviceFaultPlan, ComesFromTheEnvironment) {
  ::unsetenv(kDeviceFaultVariable);
  EXPECT_FALSE(device_fault_plan_from_environment().has_value());
  ::setenv(kDeviceFaultVariable, "", 1);
  EXPECT_FALSE(device_fault_plan_from_environment().has_value());
  ::setenv(kDeviceFaultVariable, "kernel:gelu_forward@step2", 1);
  const auto plan = device_fault_plan_from_environment();
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->op, "gelu_forward");
  EXPECT_EQ(plan->step, 2);
  ::setenv(kDeviceFaultVariable, "kernel@", 1);
  EXPECT_THROW(device_fault_plan_from_environment(), std::invalid_argument);
  ::unsetenv(kDeviceFaultVariable);
}

}  // namespace
}  // namespace tessera
