// Global gradient-norm clipping. The norm is sqrt of a sum of squares accumulated in double; a
// sharded engine adds its shards' partial sums across ranks and then uses clip_coefficient().
#pragma once

#include <vector>

#include "tessera/model/parameter.hpp"

namespace tessera {

class Device;

// Sum of squares of every parameter's grad, in parameter order (double accumulation).
double grad_sum_squares(Device& device, const std::vector<Parameter*>& parameters);

// The factor grads are multiplied by: min(1, max_norm / (norm + 1e-6)); 1 when max_norm <= 0 or
// the norm is not finite (the caller decides whether to skip the step).
float clip_coefficient(double norm, float max_norm);

// Computes the global norm, scales every grad by clip_coefficient, returns the norm before clipping.
double clip_grad_norm(Device& device, const std::vector<Parameter*>& parameters, float max_norm);

}  // namespace tessera
