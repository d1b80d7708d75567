// FusedAttention: a library's fused causal self-attention (forward and backward) as the CUDA kernels'
// table uses it; cuDNN's SDPA (cudnn/cudnn_attention.hpp) is the one built today.
//
// Tensors are bf16 with f32 statistics, in the layout of the Kernels table's attention ops: qkv
// (b,t,3c) holds [q | k | v] per position, head h in columns [h*hs, (h+1)*hs) of each; out (b,t,c);
// lse (b,nh,t) f32 the log-sum-exp of each row of scaled scores. Scale 1/sqrt(hs), causal mask.
// Whether a shape is supported is decided once, for forward and backward together, so a forward on
// the library is never followed by a backward that is not.
#pragma once

#include <cuda_bf16.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>

namespace tessera {

struct AttentionShape {
  std::int64_t b = 0, t = 0, c = 0, nh = 0;
  auto operator<=>(const AttentionShape&) const = default;
};

class FusedAttention {
 public:
  virtual ~FusedAttention() = default;

  // The library and its version, e.g. "cuDNN 9.19.0".
  virtual std::string name() const = 0;
  // Whether the library runs `shape` (forward and backward); when not, why.
  virtual bool supports(const AttentionShape& shape, std::string* why = nullptr) = 0;
  // Workspace bytes of forward / backward for a supported shape.
  virtual std::size_t forward_workspace(const AttentionShape& shape) = 0;
  virtual std::size_t backward_workspace(const AttentionShape& shape) = 0;
  // out (b,t,c) and lse (b,nh,t) from qkv (b,t,3c); `workspace` holds forward_workspace(shape)
  // bytes. Queued on the stream the library was bound to; returns without waiting.
  virtual void forward(__nv_bfloat16* out, float* lse, const __nv_bfloat16* qkv, const AttentionShape& shape,
                       void* workspace) = 0;
  // dqkv (b,t,3c), written, from dout (b,t,c) and the forward's qkv, out and lse; `workspace` holds
  // backward_workspace(shape) bytes.
  virtual void backward(__nv_bfloat16* dqkv, const __nv_bfloat16* dout, const __nv_bfloat16* qkv,
                        const __nv_bfloat16* out, const float* lse, const AttentionShape& shape, void* workspace) = 0;
};

}  // namespace tessera
