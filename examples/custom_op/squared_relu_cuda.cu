// The GPU kernels of the custom op: compiled by nvcc when CUDA is available, this file registers the
// squared ReLU functors with elementwise_map, which then runs them on a CUDA device's compute stream.
#include <tessera/runtime/cuda/elementwise_map.cuh>

#include "squared_relu.hpp"

TESSERA_CUDA_ELEMENTWISE(SquaredReluForward, 1)
TESSERA_CUDA_ELEMENTWISE(SquaredReluBackward, 2)
