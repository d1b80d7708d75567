// DeviceFaultPlan: TESSERA_SIM_GPU_FAULT's grammar, its checks and their messages.
#include "tessera/runtime/simulated/device_fault_plan.hpp"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <vector>

namespace tessera {
namespace {

constexpr const char* kGrammar =
    "write <kind>@<when>: kind oom, copy, kernel, copy:<op> or kernel:<op>; when n (the n-th such event, from 1) "
    "or step<k> (during step k), e.g. oom@step3, copy:copy_to_host_async@step3 or kernel:adamw_update@step4; or "
    "unset it";

const std::vector<std::string>& copy_ops() {
  static const std::vector<std::string> ops{"copy_to_host", "copy_from_host", "copy_to_host_async",
                                            "copy_from_host_async"};
  return ops;
}

const std::vector<std::string>& kernel_ops() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> names{
#define TESSERA_KERNEL_OP(name, group, params, args) #name,
#include "tessera/runtime/kernel_ops.hpp"
    };
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());  // f32 and bf16 overloads
    return names;
  }();
  return ops;
}

[[noreturn]] void refuse(const std::string& text, const std::string& problem) {
  throw std::invalid_argument(std::string(kDeviceFaultVariable) + " = '" + text + "': " + problem + "; " + kGrammar);
}

// A positive decimal integer, or 0 when `digits` is not one.
std::int64_t positive(const std::string& digits) {
  if (digits.empty() || digits.size() > 18 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return 0;
  }
  return std::strtoll(digits.c_str(), nullptr, 10);
}

std::string listed(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

}  // namespace

const char* device_fault_kind_name(DeviceFaultKind kind) {
  switch (kind) {
    case DeviceFaultKind::kOutOfMemory: return "oom";
    case DeviceFaultKind::kCopy: return "copy";
    case DeviceFaultKind::kKernel: return "kernel";
  }
  return "unknown";
}

DeviceFaultPlan parse_device_fault_plan(const std::string& text) {
  DeviceFaultPlan plan;
  plan.text = text;
  const std::size_t at = text.find('@');
  if (at == std::string::npos) refuse(text, "no '@<when>'");
  const std::string what = text.substr(0, at), when = text.substr(at + 1);
  const std::size_t colon = what.find(':');
  const std::string kind = what.substr(0, colon);
  if (kind == "oom") {
    plan.kind = DeviceFaultKind::kOutOfMemory;
  } else if (kind == "copy") {
    plan.kind = DeviceFaultKind::kCopy;
  } else if (kind == "kernel") {
    plan.kind = DeviceFaultKind::kKernel;
  } else {
    refuse(text, "unknown kind '" + kind + "'");
  }
  if (colon != std::string::npos) {
    plan.op = what.substr(colon + 1);
    if (plan.kind == DeviceFaultKind::kOutOfMemory) refuse(text, "oom takes no op");
    const std::vector<std::string>& ops = plan.kind == DeviceFaultKind::kCopy ? copy_ops() : kernel_ops();
    if (std::find(ops.begin(), ops.end(), plan.op) == ops.end()) {
      refuse(text, "'" + plan.op + "' is not a " + kind + " op (" + kind + " ops: " + listed(ops) + ")");
    }
  }
  if (when.rfind("step", 0) == 0) {
    plan.step = positive(when.substr(4));
    if (plan.step == 0) refuse(text, "the step after 'step' must be a positive integer");
  } else {
    plan.count = positive(when);
    if (plan.count == 0) refuse(text, "'" + when + "' is neither a positive count nor step<k>");
  }
  return plan;
}

std::optional<DeviceFaultPlan> device_fault_plan_from_environment() {
  const char* text = std::getenv(kDeviceFaultVariable);
  if (text == nullptr || *text == '\0') return std::nullopt;
  return parse_device_fault_plan(text);
}

}  // namespace tessera
