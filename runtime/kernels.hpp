// Kernels: the compute a Device offers, as one table of virtual functions. Modules call these and
// nothing else to touch tensor data, so a CUDA device slots in by implementing the same table.
//
// Conventions (every backend):
// - Pointers are device pointers of the Device the table belongs to; all floats are f32 unless the
//   signature says otherwise. Shapes are row-major and given in the comment on each argument.
// - Kernels never allocate and never communicate; scratch is passed in by the caller.
// - Backward kernels WRITE input gradients (dinp = ...) and ACCUMULATE parameter gradients
//   (dweight += ...), so gradient accumulation over micro-batches needs no extra buffer.
// - Results do not depend on the number of threads (fixed reduction order), so runs are
//   bit-reproducible.
#pragma once

#include <cstdint>
#include <span>

#include "tessera/precision/dtype.hpp"
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

class Kernels {
 public:
  virtual ~Kernels() = default;

  // c (m,n) = alpha * op(a) @ op(b) + beta * c, row-major; op(a) is (m,k), op(b) is (k,n).
  // lda/ldb/ldc are row strides of a, b, c as stored.
  virtual void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                    const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                    std::int64_t ldc) const = 0;

  // out (n,oc) = inp (n,c) @ weight (oc,c)^T + bias (oc); bias may be null.
  virtual void linear_forward(float* out, const float* inp, const float* weight, const float* bias,
                              std::int64_t n, std::int64_t c, std::int64_t oc) const = 0;
  // dinp (n,c) = dout (n,oc) @ weight (oc,c); dweight (oc,c) += dout^T @ inp; dbias (oc) += column sums
  // of dout. dinp and dbias may be null (input needs no gradient / layer has no bias).
  virtual void linear_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                               const float* weight, std::int64_t n, std::int64_t c, std::int64_t oc) const = 0;
  // A linear layer with GELU after it (the MLP's fc), as one op so a backend can run the bias and
  // GELU in the GEMM's epilogue: pre (n,oc) = inp (n,c) @ weight (oc,c)^T + bias (oc); out (n,oc) =
  // gelu(pre). pre is kept for backward. The same bits as linear_forward then gelu_forward.
  virtual void linear_gelu_forward(float* out, float* pre, const float* inp, const float* weight, const float* bias,
                                   std::int64_t n, std::int64_t c, std::int64_t oc) const = 0;
  // Its backward: dout (n,oc), the gradient of the GELU output, is overwritten with the gradient of
  // pre (gelu'(pre) * dout); then as linear_backward from it: dinp (n,c) = dpre @ weight; dweight
  // (oc,c) += dpre^T @ inp; dbias (oc) += column sums of dpre (in the pass that writes dpre). The
  // same bits as gelu_backward then linear_backward. dinp and dbias may be null.
  virtual void linear_gelu_backward(float* dinp, float* dweight, float* dbias, float* dout, const float* pre,
                                    const float* inp, const float* weight, std::int64_t n, std::int64_t c,
                                    std::int64_t oc) const = 0;

  // out (b,t,c) = wte[tokens[b,t]] (v,c) + wpe[t] (maxT,c). tokens (b,t) i32 in [0, v); a token
  // outside throws std::out_of_range naming it before anything is read or written.
  virtual void embedding_forward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe,
                                 std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t v) const = 0;
  // dwte (v,c) += scatter of dout rows by token; dwpe (maxT,c) += sum over batch of dout (b,t,c).
  // Deterministic: rows hitting the same token are added in (b,t) order. Tokens outside [0, v) throw
  // std::out_of_range before anything is written.
  virtual void embedding_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens,
                                  std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t v) const = 0;

  // out (n,c) = (inp - mean) * rstd * weight (c) + bias (c); mean (n) and rstd (n) kept for backward.
  virtual void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                                 const float* bias, std::int64_t n, std::int64_t c, float eps) const = 0;
  // dinp (n,c) = ...; dweight (c) += ...; dbias (c) += ...
  virtual void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                  const float* inp, const float* weight, const float* mean, const float* rstd,
                                  std::int64_t n, std::int64_t c) const = 0;
  // Residual add + LayerNorm in one pass: sum (n,c) = a + b (the residual stream, kept), out (n,c) =
  // layernorm(sum) with mean (n) and rstd (n). The same bits as add then layernorm_forward.
  virtual void residual_layernorm_forward(float* sum, float* out, float* mean, float* rstd, const float* a,
                                          const float* b, const float* weight, const float* bias, std::int64_t n,
                                          std::int64_t c, float eps) const = 0;
  // layernorm_backward with the residual stream's gradient added in the same pass: dinp (n,c) =
  // dresidual (n,c) + the LayerNorm input gradient of dout; dweight, dbias (c) += as
  // layernorm_backward. The same bits as layernorm_backward then add. dinp may alias dout (not dresidual).
  virtual void residual_layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                           const float* dresidual, const float* inp, const float* weight,
                                           const float* mean, const float* rstd, std::int64_t n,
                                           std::int64_t c) const = 0;

  // Causal multi-head self-attention. qkv (b,t,3c) holds [q | k | v] per position, head h in columns
  // [h*hs, (h+1)*hs) of each, hs = c/nh. out (b,t,c); probs (b,nh,t,t) softmax(q k^T / sqrt(hs)) with
  // the causal mask, kept for backward (entries above the diagonal are 0).
  virtual void attention_forward(float* out, float* probs, const float* qkv, std::int64_t b, std::int64_t t,
                                 std::int64_t c, std::int64_t nh) const = 0;
  // dqkv (b,t,3c) = gradient w.r.t. qkv; scratch (b,nh,t,t) is caller-provided workspace.
  virtual void attention_backward(float* dqkv, float* scratch, const float* dout, const float* qkv,
                                  const float* probs, std::int64_t b, std::int64_t t, std::int64_t c,
                                  std::int64_t nh) const = 0;

  // GELU, tanh approximation (GPT-2). out (n) = gelu(inp); dinp (n) = gelu'(inp) * dout. dinp may alias dout.
  virtual void gelu_forward(float* out, const float* inp, std::int64_t n) const = 0;
  virtual void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n) const = 0;

  // out (n) = a + b; out may alias a or b.
  virtual void add(float* out, const float* a, const float* b, std::int64_t n) const = 0;
  // x (n) *= s
  virtual void scale(float* x, float s, std::int64_t n) const = 0;

  // Fused softmax + cross-entropy over rows of logits (n,v) with targets (n) i32.
  // losses (n) = logsumexp(row) - row[target]; lse (n) = logsumexp(row) kept for backward.
  virtual void cross_entropy_forward(float* losses, float* lse, const float* logits, const std::int32_t* targets,
                                     std::int64_t n, std::int64_t v) const = 0;
  // dlogits (n,v) = (softmax(row) - onehot(target)) * dloss; dlogits may alias logits (in place).
  virtual void cross_entropy_backward(float* dlogits, const float* logits, const float* lse,
                                      const std::int32_t* targets, float dloss, std::int64_t n,
                                      std::int64_t v) const = 0;

  // Reductions write their result into device memory (no host round trip per call; the caller
  // gathers several results and copies them to the host once).
  // Sum of x (n) in double, written to out (one double in device memory). The CPU adds in index
  // order (the loss of a batch: n is its rows).
  virtual void sum(const float* x, std::int64_t n, double* out) const = 0;
  // out (1) f64 = sum of squares of x (n) in double, with a reduction order independent of thread
  // count and of x's alignment. n == 0 writes 0.
  virtual void sum_squares(const float* x, std::int64_t n, double* out) const = 0;
  // out (n) = a + b as add(), and sum_squares_out (1) f64 = the sum of squares of the new out, the
  // bits sum_squares(out, n) would write (a gradient accumulation that also yields the gradient
  // norm). out may alias a or b. Defined as exactly that composition; a backend overrides it to do
  // both in one pass over memory (the CPU does).
  virtual void add_sum_squares(float* out, const float* a, const float* b, std::int64_t n,
                               double* sum_squares_out) const {
    add(out, a, b, n);
    sum_squares(out, n, sum_squares_out);
  }
  // out (1) i32 = 1 when any element of x (n) is inf or nan, else 0.
  virtual void has_non_finite(const float* x, std::int64_t n, std::int32_t* out) const = 0;

  // AdamW on n elements: param, m, v updated in place from grad * s.grad_scale (decoupled weight
  // decay). Each element's result does not depend on where the range starts.
  virtual void adamw_update(float* param, const float* grad, float* m, float* v, std::int64_t n,
                            const AdamWScalars& s) const = 0;

  // 8-bit AdamW on n elements (a multiple of `block`) in blocks of `block` (<= kMaxQuantBlock):
  // param (n) f32 and grad (n) f32; m_codes (n) i8 and v_codes (n) u8 the dynamic-map codes, with
  // m_absmax and v_absmax (n / block) f32 one scale per block — all updated in place: per block,
  // dequantize (quantization_math.hpp), the AdamW element update (adamw_math.hpp), requantize
  // against the block's new absmax (values x 1/absmax). `segments` (host memory, sorted, relative to param) are the parameters
  // in the range: their elements are updated with `decay` or `no_decay`; elements outside every
  // segment (padding) are not.
  virtual void adamw8bit_update(float* param, const float* grad, std::int8_t* m_codes, float* m_absmax,
                                std::uint8_t* v_codes, float* v_absmax, std::int64_t n, std::int64_t block,
                                std::span<const ParamSegment> segments, const AdamWScalars& no_decay,
                                const AdamWScalars& decay) const = 0;

  // Element conversion between floating dtypes (f32, bf16, f16), round to nearest even.
  virtual void convert(const void* src, DType from, void* dst, DType to, std::int64_t n) const = 0;
};

}  // namespace tessera
