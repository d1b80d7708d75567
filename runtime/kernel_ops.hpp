// The Kernels ops: the one list that the Kernels interface and every backend's declarations (cpu,
// cuda, meta, timed) are generated from, so a backend cannot miss or misspell an op. Each entry is
//
//   TESSERA_KERNEL_OP(name, group, (typed parameters), (parameter names))
//
// with `group` the op's KernelGroup (timed_kernels.hpp: what bench_train's breakdown counts it as).
// Include this file with TESSERA_KERNEL_OP defined; it undefines it at the end, so it has no include
// guard and is included once per use:
//
//   #define TESSERA_KERNEL_OP(name, group, params, args) void name params const override;
//   #include "tessera/runtime/kernel_ops.hpp"
//
// The conventions every op follows (pointers of the table's device, f32 unless the signature says
// otherwise, kernels never allocate, backward writes input gradients and accumulates parameter
// gradients, results independent of the thread count) are in kernels.hpp.
#ifndef TESSERA_KERNEL_OP
#error "define TESSERA_KERNEL_OP(name, group, params, args) before including tessera/runtime/kernel_ops.hpp"
#endif

// c (m,n) = alpha * op(a) @ op(b) + beta * c, row-major; op(a) is (m,k), op(b) is (k,n).
// lda/ldb/ldc are row strides of a, b, c as stored.
TESSERA_KERNEL_OP(gemm, kGemm,
                  (bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                   const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                   std::int64_t ldc),
                  (trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))

// out (n,oc) = inp (n,c) @ weight (oc,c)^T + bias (oc); bias may be null.
TESSERA_KERNEL_OP(linear_forward, kGemm,
                  (float* out, const float* inp, const float* weight, const float* bias, std::int64_t n, std::int64_t c,
                   std::int64_t oc),
                  (out, inp, weight, bias, n, c, oc))
// dinp (n,c) = dout (n,oc) @ weight (oc,c); dweight (oc,c) += dout^T @ inp; dbias (oc) += column sums
// of dout. dinp and dbias may be null (input needs no gradient / layer has no bias).
TESSERA_KERNEL_OP(linear_backward, kGemm,
                  (float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                   std::int64_t n, std::int64_t c, std::int64_t oc),
                  (dinp, dweight, dbias, dout, inp, weight, n, c, oc))
// A linear layer with GELU after it (the MLP's fc), as one op so a backend can run the bias and
// GELU in the GEMM's epilogue: pre (n,oc) = inp (n,c) @ weight (oc,c)^T + bias (oc); out (n,oc) =
// gelu(pre). pre is kept for backward. The same bits as linear_forward then gelu_forward.
TESSERA_KERNEL_OP(linear_gelu_forward, kGemm,
                  (float* out, float* pre, const float* inp, const float* weight, const float* bias, std::int64_t n,
                   std::int64_t c, std::int64_t oc),
                  (out, pre, inp, weight, bias, n, c, oc))
// Its backward: dout (n,oc), the gradient of the GELU output, is overwritten with the gradient of
// pre (gelu'(pre) * dout); then as linear_backward from it: dinp (n,c) = dpre @ weight; dweight
// (oc,c) += dpre^T @ inp; dbias (oc) += column sums of dpre (in the pass that writes dpre). The
// same bits as gelu_backward then linear_backward. dinp and dbias may be null.
TESSERA_KERNEL_OP(linear_gelu_backward, kGemm,
                  (float* dinp, float* dweight, float* dbias, float* dout, const float* pre, const float* inp,
                   const float* weight, std::int64_t n, std::int64_t c, std::int64_t oc),
                  (dinp, dweight, dbias, dout, pre, inp, weight, n, c, oc))

// out (b,t,c) = wte[tokens[b,t]] (v,c) + wpe[t] (maxT,c). tokens (b,t) i32 in [0, v); a token
// outside throws std::out_of_range naming it before anything is read or written. wpe may be null (a
// model without learned positions, as Llama's): out = wte[tokens[b,t]].
TESSERA_KERNEL_OP(embedding_forward, kElementwise,
                  (float* out, const std::int32_t* tokens, const float* wte, const float* wpe, std::int64_t b,
                   std::int64_t t, std::int64_t c, std::int64_t v),
                  (out, tokens, wte, wpe, b, t, c, v))
// dwte (v,c) += scatter of dout rows by token; dwpe (maxT,c) += sum over batch of dout (b,t,c)
// (dwpe null: no position table). Deterministic: rows hitting the same token are added in (b,t) order. Tokens outside
// [0, v) throw std::out_of_range before anything is written.
TESSERA_KERNEL_OP(embedding_backward, kElementwise,
                  (float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, std::int64_t b,
                   std::int64_t t, std::int64_t c, std::int64_t v),
                  (dwte, dwpe, dout, tokens, b, t, c, v))

// out (n,c) = (inp - mean) * rstd * weight (c) + bias (c); mean (n) and rstd (n) kept for backward.
TESSERA_KERNEL_OP(layernorm_forward, kElementwise,
                  (float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                   std::int64_t n, std::int64_t c, float eps),
                  (out, mean, rstd, inp, weight, bias, n, c, eps))
// dinp (n,c) = ...; dweight (c) += ...; dbias (c) += ...
TESSERA_KERNEL_OP(layernorm_backward, kElementwise,
                  (float* dinp, float* dweight, float* dbias, const float* dout, const float* inp, const float* weight,
                   const float* mean, const float* rstd, std::int64_t n, std::int64_t c),
                  (dinp, dweight, dbias, dout, inp, weight, mean, rstd, n, c))
// Residual add + LayerNorm in one pass: sum (n,c) = a + b (the residual stream, kept), out (n,c) =
// layernorm(sum) with mean (n) and rstd (n). The same bits as add then layernorm_forward.
TESSERA_KERNEL_OP(residual_layernorm_forward, kElementwise,
                  (float* sum, float* out, float* mean, float* rstd, const float* a, const float* b,
                   const float* weight, const float* bias, std::int64_t n, std::int64_t c, float eps),
                  (sum, out, mean, rstd, a, b, weight, bias, n, c, eps))
// layernorm_backward with the residual stream's gradient added in the same pass: dinp (n,c) =
// dresidual (n,c) + the LayerNorm input gradient of dout; dweight, dbias (c) += as
// layernorm_backward. The same bits as layernorm_backward then add. dinp may alias dout (not dresidual).
TESSERA_KERNEL_OP(residual_layernorm_backward, kElementwise,
                  (float* dinp, float* dweight, float* dbias, const float* dout, const float* dresidual,
                   const float* inp, const float* weight, const float* mean, const float* rstd, std::int64_t n,
                   std::int64_t c),
                  (dinp, dweight, dbias, dout, dresidual, inp, weight, mean, rstd, n, c))

// RMSNorm (Llama): out (n,c) = (inp * rstd) * weight (c), rstd (n) = 1 / sqrt(mean(inp^2) + eps)
// kept for backward. The row formulas are runtime/math/rmsnorm_math.hpp's.
TESSERA_KERNEL_OP(rmsnorm_forward, kElementwise,
                  (float* out, float* rstd, const float* inp, const float* weight, std::int64_t n, std::int64_t c,
                   float eps),
                  (out, rstd, inp, weight, n, c, eps))
// With xhat = inp * rstd and g = weight * dout per row: dinp (n,c) = rstd * (g - xhat * mean(g *
// xhat)); dweight (c) += column sums of dout * xhat, each column summed in row order. dinp may alias dout.
TESSERA_KERNEL_OP(rmsnorm_backward, kElementwise,
                  (float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                   const float* rstd, std::int64_t n, std::int64_t c),
                  (dinp, dweight, dout, inp, weight, rstd, n, c))

// Rotary position embedding and grouped-query heads, into the layout attention_forward reads.
// proj (b,t,(nh+2*nkv)*hs) holds [q (nh heads) | k (nkv heads) | v (nkv heads)] per position, head
// h in columns [h*hs, (h+1)*hs) of its part; qkv (b,t,3*nh*hs) is written as [rope(q) | rope(k) |
// v] with nh heads each: query head h reads key/value head h / (nh / nkv). rope rotates the pairs
// (j, j + hs/2) of each head by the angle t * theta^(-2j/hs), t the position (transformers'
// rotate_half convention; runtime/math/rotary_math.hpp). hs is even and nkv divides nh.
TESSERA_KERNEL_OP(rotary_qkv_forward, kElementwise,
                  (float* qkv, const float* proj, std::int64_t b, std::int64_t t, std::int64_t nh, std::int64_t nkv,
                   std::int64_t hs, float theta),
                  (qkv, proj, b, t, nh, nkv, hs, theta))
// dproj (b,t,(nh+2*nkv)*hs) written from dqkv (b,t,3*nh*hs): the rotation undone on q and k, and
// each key/value head's gradient the sum over the query heads that read it, added in head order.
TESSERA_KERNEL_OP(rotary_qkv_backward, kElementwise,
                  (float* dproj, const float* dqkv, std::int64_t b, std::int64_t t, std::int64_t nh, std::int64_t nkv,
                   std::int64_t hs, float theta),
                  (dproj, dqkv, b, t, nh, nkv, hs, theta))

// Causal multi-head self-attention, tiled with an online softmax: no (t,t) tensor is read or
// written. qkv (b,t,3c) holds [q | k | v] per position, head h in columns [h*hs, (h+1)*hs) of each,
// hs = c/nh. out (b,t,c) = softmax(q k^T / sqrt(hs)) v with the causal mask; lse (b,nh,t) f32 the
// log-sum-exp of each row of scaled scores, kept with out for backward (-inf for a row whose every
// score is -inf, whose out is then 0). The row statistics are runtime/math/online_softmax_math.hpp's.
// scratch: attention_scratch_bytes(b, t, c, nh) bytes of device memory (null when that is 0), which
// a table with a fused library kernel uses for its bf16 copies and the library's workspace.
TESSERA_KERNEL_OP(attention_forward, kAttention,
                  (float* out, float* lse, const float* qkv, std::int64_t b, std::int64_t t, std::int64_t c,
                   std::int64_t nh, void* scratch),
                  (out, lse, qkv, b, t, c, nh, scratch))
// dqkv (b,t,3c) = gradient w.r.t. qkv (written, not accumulated) from dout (b,t,c) and the forward's
// qkv, out and lse; the probabilities are recomputed from q, k and lse. delta (b,nh,t) f32 is
// workspace (it receives rowsum(dout * out) per head); scratch as attention_forward's.
TESSERA_KERNEL_OP(attention_backward, kAttention,
                  (float* dqkv, float* delta, const float* dout, const float* qkv, const float* out, const float* lse,
                   std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh, void* scratch),
                  (dqkv, delta, dout, qkv, out, lse, b, t, c, nh, scratch))

// GELU, tanh approximation (GPT-2). out (n) = gelu(inp); dinp (n) = gelu'(inp) * dout. dinp may alias dout.
TESSERA_KERNEL_OP(gelu_forward, kElementwise, (float* out, const float* inp, std::int64_t n), (out, inp, n))
TESSERA_KERNEL_OP(gelu_backward, kElementwise, (float* dinp, const float* inp, const float* dout, std::int64_t n),
                  (dinp, inp, dout, n))

// SwiGLU (Llama's MLP): inp (n,2f) holds [gate | up] per row; out (n,f) = silu(gate) * up, silu(x)
// = x sigmoid(x) (runtime/math/silu_math.hpp). Backward writes dinp (n,2f) = [dout * up *
// silu'(gate) | dout * silu(gate)] from dout (n,f) and the forward's inp.
TESSERA_KERNEL_OP(swiglu_forward, kElementwise, (float* out, const float* inp, std::int64_t n, std::int64_t f),
                  (out, inp, n, f))
TESSERA_KERNEL_OP(swiglu_backward, kElementwise,
                  (float* dinp, const float* dout, const float* inp, std::int64_t n, std::int64_t f),
                  (dinp, dout, inp, n, f))

// out (n) = a + b; out may alias a or b.
TESSERA_KERNEL_OP(add, kElementwise, (float* out, const float* a, const float* b, std::int64_t n), (out, a, b, n))
// x (n) *= s
TESSERA_KERNEL_OP(scale, kOptimizer, (float* x, float s, std::int64_t n), (x, s, n))

// Fused softmax + cross-entropy over rows of logits (n,v) with targets (n) i32.
// losses (n) = logsumexp(row) - row[target]; lse (n) = logsumexp(row) kept for backward.
TESSERA_KERNEL_OP(cross_entropy_forward, kLoss,
                  (float* losses, float* lse, const float* logits, const std::int32_t* targets, std::int64_t n,
                   std::int64_t v),
                  (losses, lse, logits, targets, n, v))
// dlogits (n,v) = (softmax(row) - onehot(target)) * dloss; dlogits may alias logits (in place).
TESSERA_KERNEL_OP(cross_entropy_backward, kLoss,
                  (float* dlogits, const float* logits, const float* lse, const std::int32_t* targets, float dloss,
                   std::int64_t n, std::int64_t v),
                  (dlogits, logits, lse, targets, dloss, n, v))

// Reductions write their result into device memory (no host round trip per call; the caller
// gathers several results and copies them to the host once).
// Sum of x (n) in double, written to out (one double in device memory). The CPU adds in index
// order (the loss of a batch: n is its rows).
TESSERA_KERNEL_OP(sum, kLoss, (const float* x, std::int64_t n, double* out), (x, n, out))
// out (1) f64 = sum of squares of x (n) in double, with a reduction order independent of thread
// count and of x's alignment. n == 0 writes 0.
TESSERA_KERNEL_OP(sum_squares, kOptimizer, (const float* x, std::int64_t n, double* out), (x, n, out))
// out (n) = a + b as add(), and sum_squares_out (1) f64 = the sum of squares of the new out, the
// bits sum_squares(out, n) would write (a gradient accumulation that also yields the gradient
// norm). out may alias a or b. A backend may do both in one pass over memory (the CPU does).
TESSERA_KERNEL_OP(add_sum_squares, kOptimizer,
                  (float* out, const float* a, const float* b, std::int64_t n, double* sum_squares_out),
                  (out, a, b, n, sum_squares_out))
// out (1) i32 = 1 when any element of x (n) is inf or nan, else 0.
TESSERA_KERNEL_OP(has_non_finite, kOptimizer, (const float* x, std::int64_t n, std::int32_t* out), (x, n, out))

// AdamW on n elements: param, m, v updated in place from grad * s.grad_scale (decoupled weight
// decay). Each element's result does not depend on where the range starts.
TESSERA_KERNEL_OP(adamw_update, kOptimizer,
                  (float* param, const float* grad, float* m, float* v, std::int64_t n, const AdamWScalars& s),
                  (param, grad, m, v, n, s))

// 8-bit AdamW on n elements (a multiple of `block`) in blocks of `block` (<= kMaxQuantBlock):
// param (n) f32 and grad (n) f32; m_codes (n) i8 and v_codes (n) u8 the dynamic-map codes, with
// m_absmax and v_absmax (n / block) f32 one scale per block — all updated in place: per block,
// dequantize (quantization_math.hpp), the AdamW element update (adamw_math.hpp), requantize
// against the block's new absmax (values x 1/absmax). `segments` (host memory, sorted, relative to param) are the
// parameters in the range: their elements are updated with `decay` or `no_decay`; elements outside every segment
// (padding) are not.
TESSERA_KERNEL_OP(adamw8bit_update, kOptimizer,
                  (float* param, const float* grad, std::int8_t* m_codes, float* m_absmax, std::uint8_t* v_codes,
                   float* v_absmax, std::int64_t n, std::int64_t block, std::span<const ParamSegment> segments,
                   const AdamWScalars& no_decay, const AdamWScalars& decay),
                  (param, grad, m_codes, m_absmax, v_codes, v_absmax, n, block, segments, no_decay, decay))

// Element conversion between floating dtypes (f32, bf16, f16), round to nearest even.
TESSERA_KERNEL_OP(convert, kConversion, (const void* src, DType from, void* dst, DType to, std::int64_t n),
                  (src, from, dst, to, n))

#undef TESSERA_KERNEL_OP
