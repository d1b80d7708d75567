// DeviceError: a device operation failed — a copy between host and device, a kernel (reported, as a
// GPU reports it, at a later synchronization of its stream), a driver call — as opposed to a bad
// argument or an allocation that did not fit (OutOfMemoryError). It names the op that failed; the
// message says where and why. The training loop adds the step it happened in and programs what to
// do next. It derives from std::runtime_error, so code that catches runtime errors keeps working.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace tessera {

class DeviceError : public std::runtime_error {
 public:
  // `op`: the operation that failed ("copy_to_host_async", "kernel adamw_update", a driver call's
  // text); `message`: the whole text, naming the device, the op and the cause.
  DeviceError(std::string op, const std::string& message) : std::runtime_error(message), op_(std::move(op)) {}

  const std::string& op() const noexcept { return op_; }

  // The same error with `context` after its message: "<message>; <context>".
  DeviceError with_context(const std::string& context) const {
    return DeviceError(op_, std::string(what()) + "; " + context);
  }

 private:
  std::string op_;
};

}  // namespace tessera
