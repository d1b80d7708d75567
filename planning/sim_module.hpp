// SimModule: the planner's shadow of Module. A shadow runs the same calls in the same order as its
// runtime module (runtime/modules/*.cpp) with SimTensors instead of Tensors, so it allocates, keeps
// and frees the same bytes at the same moments; only the arithmetic is missing. A shadow must be
// changed whenever its module changes what it allocates or keeps (tests/planning compare the
// prediction with the engine's tracker to catch a drift).
#pragma once

#include "planning/sim_tensor.hpp"

namespace tessera {

class SimModule {
 public:
  virtual ~SimModule() = default;
  SimModule() = default;
  SimModule(const SimModule&) = delete;
  SimModule& operator=(const SimModule&) = delete;

  virtual SimTensor forward(SimContext& ctx, const SimTensor& x) = 0;
  virtual SimTensor backward(SimContext& ctx, SimTensor dy) = 0;
  // Module::clear_saved(): drops what this shadow and its children keep for backward.
  virtual void clear_saved() = 0;
};

}  // namespace tessera
