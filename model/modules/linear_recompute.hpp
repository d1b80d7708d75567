// Backward of a Linear layer given its input by the caller. For selective recomputation: the layer's
// parent ran it with a non-training Context (so it did not keep its input) and passes that input
// again, recomputed, at backward time. The GELU variant also serves Linear::backward_gelu (with the
// input the layer kept).
#pragma once

#include "tessera/model/context.hpp"
#include "tessera/model/module.hpp"

namespace tessera {

// dx = dy W (returned, (..., in) f32); W.grad += dy^T x; bias.grad += column sums of dy. The same
// kernel call as Linear::backward, so the gradients are bit-identical to an unwrapped backward.
// `linear` must be a Linear (throws std::invalid_argument naming its type otherwise);
// x (..., in) f32 is the forward input, dy (..., out) f32.
Tensor linear_backward_with_input(Context& ctx, Module& linear, const Tensor& dy, const Tensor& x);

// The same for a Linear followed by GELU (Linear::forward_gelu): dy (..., out) f32 is the gradient
// of the GELU output and is overwritten with the gradient of pre (..., out) f32, the kept
// pre-activation; then as above (one linear_gelu_backward kernel call).
Tensor linear_gelu_backward_with_input(Context& ctx, Module& linear, const Tensor& dy, const Tensor& pre,
                                       const Tensor& x);

}  // namespace tessera
