// FaultInjector: decides, event by event, whether the simulated GPU's planted fault
// (DeviceFaultPlan, from TESSERA_SIM_GPU_FAULT) fires now. The device asks it at every device
// allocation, every copy between host and device memory and every kernel launch, and tells it the
// training loop's step; it counts the events that match the plan and says yes once — at the n-th
// match, or at the first match during the planned step. Thread-safe (the copy engine, an async
// save's thread and the host ask too).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "tessera/runtime/simulated/device_fault_plan.hpp"

namespace tessera {

class FaultInjector {
 public:
  // No plan: never fires.
  explicit FaultInjector(std::optional<DeviceFaultPlan> plan = std::nullopt) : plan_(std::move(plan)) {}

  // The training loop begins step `step` (1-based).
  void begin_step(std::int64_t step);
  // An event of `kind` (`op`: the copy or kernel op) is about to happen: true when it is the one
  // that fails (once per process at most).
  bool fires(DeviceFaultKind kind, const char* op = "");

  const std::optional<DeviceFaultPlan>& plan() const { return plan_; }
  // "(fault planted by TESSERA_SIM_GPU_FAULT=<plan>)", for the failure's message.
  std::string origin() const;

 private:
  const std::optional<DeviceFaultPlan> plan_;
  std::mutex mutex_;
  std::int64_t step_ = 0;     // the loop's current step; 0 before the first
  std::int64_t matched_ = 0;  // events that matched the plan's kind and op
  bool fired_ = false;
};

}  // namespace tessera
