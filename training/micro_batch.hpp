// MicroBatch: the token ids of one forward/backward pass and the ids the model must predict.
#pragma once

#include "tessera/runtime/tensor.hpp"

namespace tessera {

struct MicroBatch {
  Tensor inputs;   // (B,T) i32
  Tensor targets;  // (B,T) i32
};

}  // namespace tessera
