// FaultInjector: the match count, the step and the one firing.
#include "tessera/runtime/simulated/fault_injector.hpp"

namespace tessera {

void FaultInjector::begin_step(std::int64_t step) {
  std::lock_guard lock(mutex_);
  step_ = step;
}

bool FaultInjector::fires(DeviceFaultKind kind, const char* op) {
  if (!plan_ || plan_->kind != kind || (!plan_->op.empty() && plan_->op != op)) return false;
  std::lock_guard lock(mutex_);
  if (fired_) return false;
  ++matched_;
  fired_ = plan_->step > 0 ? step_ == plan_->step : matched_ == plan_->count;
  return fired_;
}

std::string FaultInjector::origin() const {
  return plan_ ? "(fault planted by " + std::string(kDeviceFaultVariable) + "=" + plan_->text + ")" : "";
}

}  // namespace tessera
