// Kernels: the compute a Device offers, as one table of virtual functions. Modules call these and
// nothing else to touch tensor data, so a CUDA device slots in by implementing the same table. The
// ops are generated from one list, kernel_ops.hpp, as are every backend's declarations.
//
// Conventions (every backend):
// - Pointers are device pointers of the Device the table belongs to. The compute ops come in two
//   overloads, float* (f32) and Bf16* (bf16) tensors, with f32 statistics either way; the others
//   take f32 unless the signature says otherwise. Shapes are row-major and given in the comment on
//   each argument.
// - Kernels never allocate and never communicate; scratch is passed in by the caller (the sizes
//   that depend on the table, as attention's, are asked of it).
// - Backward kernels WRITE input gradients (dinp = ...) and ACCUMULATE parameter gradients
//   (dweight += ...), so gradient accumulation over micro-batches needs no extra buffer.
// - Results do not depend on the number of threads (fixed reduction order), so runs are
//   bit-reproducible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "tessera/precision/bf16.hpp"
#include "tessera/precision/dtype.hpp"
#include "tessera/runtime/math/dropout_math.hpp"
#include "tessera/runtime/param_segment.hpp"

namespace tessera {

// One AdamW step's scalars (bias corrections precomputed: 1 - beta^t). The update reads each
// gradient as grad * grad_scale (f32 product): the loss-scale division and the clipping factor
// applied inside the update, with the bits a separate scale() pass would give, but no pass of
// its own.
struct AdamWScalars {
  float lr = 0.0f;
  float beta1 = 0.9f;
  float beta2 = 0.95f;
  float eps = 1e-8f;
  float weight_decay = 0.0f;
  float bias_correction1 = 1.0f;
  float bias_correction2 = 1.0f;
  float grad_scale = 1.0f;
};

// The largest block an 8-bit optimizer kernel quantizes at once.
inline constexpr std::int64_t kMaxQuantBlock = 4096;

// A cross-entropy target that marks a position the loss leaves out (padding, a prompt's tokens):
// its loss, log-sum-exp and logit gradients are 0 (PyTorch's ignore_index).
inline constexpr std::int32_t kIgnoredTarget = -1;

// The table. Its ops, with their shapes and contracts, are listed in kernel_ops.hpp.
class Kernels {
 public:
  virtual ~Kernels() = default;

#define TESSERA_KERNEL_OP(name, group, params, args) virtual void name params const = 0;
#include "tessera/runtime/kernel_ops.hpp"

  // Bytes of device scratch attention_forward and attention_backward take at this shape on tensors of
  // `dtype` (f32 or bf16; the larger of the two directions): 0 for the kernels that need none; a
  // table with a fused library kernel (the CUDA table's cuDNN attention) the library's workspace,
  // and for f32 tensors the bf16 copies the library reads and writes.
  virtual std::size_t attention_scratch_bytes(std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh,
                                              DType dtype) const;
  // The attention kernel this table runs, in words, for the program's start-up line.
  virtual std::string attention_kernel() const;
  // (Defined out of line, in kernels.cpp: an inline body would be compiled into every per-level CPU
  // object, outside its namespace.)
};

}  // namespace tessera
