// CudnnAttention: causal multi-head self-attention through cuDNN's fused scaled-dot-product
// attention (flash attention, forward and backward), built with cuDNN's C++ graph frontend.
//
// The tensors of FusedAttention (fused_attention.hpp): q, k and v are read in place from qkv through
// strides (cuDNN sees each as (b,nh,t,hs) with strides (3tc, hs, 3c, 1)), and lse is cuDNN's softmax
// statistics. Backward runs cuDNN's deterministic algorithm, so a step gives the same bits every run.
//
// One graph is built per shape (b, t, c, nh) and direction, then cached: building costs
// milliseconds of host time, a launch microseconds. Whether a shape runs on cuDNN is decided once,
// for forward and backward together, so a forward on cuDNN is never followed by a backward that is
// not. The workspace each graph needs is queried and handed in by the caller.
//
// Ownership: one per CudaKernels, bound to its device and stream; calls one at a time.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "tessera/runtime/cuda/fused_attention.hpp"

namespace tessera {

class CudnnAttention final : public FusedAttention {
 public:
  CudnnAttention(int device, cudaStream_t stream);
  ~CudnnAttention() override;
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  std::string name() const override;  // "cuDNN 9.19.0" (the library loaded at run time)
  bool supports(const AttentionShape& shape, std::string* why = nullptr) override;
  std::size_t forward_workspace(const AttentionShape& shape) override;
  std::size_t backward_workspace(const AttentionShape& shape) override;
  void forward(__nv_bfloat16* out, float* lse, const __nv_bfloat16* qkv, const AttentionShape& shape,
               void* workspace) override;
  void backward(__nv_bfloat16* dqkv, const __nv_bfloat16* dout, const __nv_bfloat16* qkv, const __nv_bfloat16* out,
                const float* lse, const AttentionShape& shape, void* workspace) override;

  // Graphs built so far (forward and backward count one each).
  int graphs_built() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace tessera
