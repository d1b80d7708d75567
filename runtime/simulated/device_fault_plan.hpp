// DeviceFaultPlan: the fault TESSERA_SIM_GPU_FAULT plants in the simulated GPU, for tests of what a
// run does when its device fails. One fault per process, written <kind>@<when>:
//
//   kind   oom           a device allocation fails, as on a full GPU (std::bad_alloc, which Storage
//                        turns into OutOfMemoryError naming the bytes)
//          copy          a copy between host and device memory fails (copy_to_host, copy_from_host:
//                        DeviceError at the call; their _async forms: the copy is not made and the
//                        error is the stream's, reported at its next synchronization)
//          kernel        a kernel fails: the launch returns as if it worked, the op does not run,
//                        and the compute stream reports DeviceError naming the op at its next
//                        synchronization (as a GPU's asynchronous errors are reported)
//          copy:<op>     only that copy (copy_to_host, copy_from_host, copy_to_host_async,
//                        copy_from_host_async)
//          kernel:<op>   only launches of that Kernels op (runtime/kernel_ops.hpp, e.g. adamw_update)
//   when   <n>           the n-th such event of the process, counted from 1
//          step<k>       the first such event during step k of the training loop (1-based: the
//                        step count once it completes; Device::begin_step tells the device)
//
// e.g. TESSERA_SIM_GPU_FAULT=oom@step3, copy:copy_to_host_async@step3, kernel:adamw_update@step4,
// kernel@200. The fault fires once. Unset or empty: no fault.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tessera {

enum class DeviceFaultKind { kOutOfMemory, kCopy, kKernel };

const char* device_fault_kind_name(DeviceFaultKind kind);  // "oom", "copy", "kernel"

struct DeviceFaultPlan {
  DeviceFaultKind kind = DeviceFaultKind::kOutOfMemory;
  std::string op;          // copy and kernel: the op that fails; empty: any
  std::int64_t count = 0;  // > 0: the count-th matching event of the process
  std::int64_t step = 0;   // > 0: the first matching event during this step
  std::string text;        // as written, for messages ("kernel:adamw_update@step4")
};

inline constexpr const char* kDeviceFaultVariable = "TESSERA_SIM_GPU_FAULT";

// `text` in the grammar above. Throws std::invalid_argument naming TESSERA_SIM_GPU_FAULT, the value
// and what to write (an unknown kind or op, a count or step that is not a positive integer).
DeviceFaultPlan parse_device_fault_plan(const std::string& text);

// TESSERA_SIM_GPU_FAULT parsed; nullopt when it is unset or empty.
std::optional<DeviceFaultPlan> device_fault_plan_from_environment();

}  // namespace tessera
