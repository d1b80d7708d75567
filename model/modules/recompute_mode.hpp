// RecomputeMode: what a TransformerBlock (through its attention and MLP) keeps from forward for
// backward. Set by the "selective" activation-checkpointing policy (apply_recompute).
#pragma once

namespace tessera {

enum class RecomputeMode {
  // Keep every intermediate backward reads (the default).
  kKeepAll,
  // Keep the matmul outputs (qkv, attention output, fc output) and the LayerNorm statistics;
  // backward recomputes the cheap element-wise results: both LayerNorm outputs, the softmax
  // probabilities and the GELU output.
  kElementwise,
};

}  // namespace tessera
