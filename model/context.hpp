// Context: what every Module::forward/backward call receives — the device to run on and the mode.
#pragma once

#include "tessera/runtime/device.hpp"

namespace tessera {

struct Context {
  explicit Context(Device& d) : device(d) {}

  Device& device;
  // Training: forward keeps what backward needs. Inference (false): forward keeps nothing.
  bool training = true;
};

}  // namespace tessera
