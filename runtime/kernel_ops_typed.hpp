// The compute ops of the Kernels table, in terms of TESSERA_ACT, the element type of activations,
// parameters and their gradients: kernel_ops.hpp includes this list twice, with TESSERA_ACT float
// (f32) and ::tessera::Bf16 (bf16), so each entry is two overloads. With bf16 every TESSERA_ACT
// tensor is bf16 in memory and the kernel computes in f32 (products and sums accumulate in f32,
// each result is rounded to bf16 once, to nearest even); the statistics kept for backward (mean,
// rstd, lse, delta) and the per-row losses are f32 for both. Backward ops that accumulate a
// parameter gradient (dweight +=) add to it in f32 and round the sum once.
// Not an include of its own: only kernel_ops.hpp includes it.
#ifndef TESSERA_ACT
#error "tessera/runtime/kernel_ops_typed.hpp is part of tessera/runtime/kernel_ops.hpp; include that"
#endif

// c (m,n) = alpha * op(a) @ op(b) + beta * c, row-major; op(a) is (m,k), op(b) is (k,n).
// lda/ldb/ldc are row strides of a, b, c as stored.
TESSERA_KERNEL_OP(gemm, kGemm,
                  (bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                   const TESSERA_ACT* a, std::int64_t lda, const TESSERA_ACT* b, std::int64_t ldb, float beta, TESSERA_ACT* c,
                   std::int64_t ldc),
                  (trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))

// out (n,oc) = inp (n,c) @ weight (oc,c)^T + bias (oc); bias may be null.
TESSERA_KERNEL_OP(linear_forward, kGemm,
                  (TESSERA_ACT* out, const TESSERA_ACT* inp, const TESSERA_ACT* weight, const TESSERA_ACT* bias, std::int64_t n, std::int64_t c,
                   std::int64_t oc),
                  (out, inp, weight, bias, n, c, oc))
// dinp (n,c) = dout (n,oc) @ weight (oc,c); dweight (oc,c) += dout^T @ inp; dbias (oc) += column sums
// of dout. dinp and dbias may be null (input needs no gradient / layer has no bias).
TESSERA_KERNEL_OP(linear_backward, kGemm,
                  (TESSERA_ACT* dinp, TESSERA_ACT* dweight, TESSERA_ACT* dbias, const TESSERA_ACT* dout, const TESSERA_ACT* inp, const TESSERA_ACT* weight,
                   std::int64_t n, std::int64_t c, std::int64_t oc),
                  (dinp, dweight, dbias, dout, inp, weight, n, c, oc))
// A linear layer with GELU after it (the MLP's fc), as one op so a backend can run the bias and
// GELU in the GEMM's epilogue: pre (n,oc) = inp (n,c) @ weight (oc,c)^T + bias (oc); out (n,oc) =
// gelu(pre). pre is kept for backward. The same bits as linear_forward then gelu_forward.
TESSERA_KERNEL_OP(linear_gelu_forward, kGemm,
                  (TESSERA_ACT* out, TESSERA_ACT* pre, const TESSERA_ACT* inp, const TESSERA_ACT* weight, const TESSERA_ACT* bias, std::int64_t n,
                   std::int64_t c, std::int64_t oc),
                  (out, pre, inp, weight, bias, n, c, oc))
// Its backward: dout (n,oc), the gradient of the GELU output, is overwritten with the gradient of
// pre (gelu'(pre) * dout); then as linear_backward from it: dinp (n,c) = dpre @ weight; dweight
// (oc,c) += dpre^T @ inp; dbias (oc) += column sums of dpre (in the pass that writes dpre). The
// same bits as gelu_backward then linear_backward. dinp and dbias may be null.
TESSERA_KERNEL_OP(linear_gelu_backward, kGemm,
                  (TESSERA_ACT* dinp, TESSERA_ACT* dweight, TESSERA_ACT* dbias, TESSERA_ACT* dout, const TESSERA_ACT* pre, const TESSERA_ACT* inp,
                   const TESSERA_ACT* weight, std::int64_t n, std::int64_t c, std::int64_t oc),
                  (dinp, dweight, dbias, dout, pre, inp, weight, n, c, oc))

// out (b,t,c) = wte[tokens[b,t]] (v,c) + wpe[t] (maxT,c). tokens (b,t) i32 in [0, v); a token
// outside throws std::out_of_range naming it before anything is read or written. wpe may be null (a
// model without learned positions, as Llama's): out = wte[tokens[b,t]].
TESSERA_KERNEL_OP(embedding_forward, kElementwise,
                  (TESSERA_ACT* out, const std::int32_t* tokens, const TESSERA_ACT* wte, const TESSERA_ACT* wpe, std::int64_t b,
                   std::int64_t t, std::int64_t c, std::int64_t v),
                  (out, tokens, wte, wpe, b, t, c, v))
// dwte (v,c) += scatter of dout rows by token; dwpe (maxT,c) += sum over batch of dout (b,t,c)
// (dwpe null: no position table). Deterministic: rows hitting the same token are added in (b,t) order. Tokens outside
// [0, v) throw std::out_of_range before anything is written.
TESSERA_KERNEL_OP(embedding_backward, kElementwise,
                  (TESSERA_ACT* dwte, TESSERA_ACT* dwpe, const TESSERA_ACT* dout, const std::int32_t* tokens, std::int64_t b,
                   std::int64_t t, std::int64_t c, std::int64_t v),
                  (dwte, dwpe, dout, tokens, b, t, c, v))
// Vocabulary-sharded embedding (tensor parallelism: wte split by rows across the ranks of a group,
// rank r holding rows [first, first + rows) of the full (vocab,c) table). out (b,t,c) = (first <=
// tok < first + rows ? wte[tok - first] : 0) + wpe[t], wte (rows,c) the shard, wpe (maxT,c) or null:
// summed over the group's shards, embedding_forward's output. tokens (b,t) i32 in [0, vocab); a token
// outside throws std::out_of_range naming it before anything is written. Each element is rounded
// once (a token outside the shard gives wpe's value exactly). With first = 0 and rows = vocab, the
// bits of embedding_forward.
TESSERA_KERNEL_OP(embedding_shard_forward, kElementwise,
                  (TESSERA_ACT* out, const std::int32_t* tokens, const TESSERA_ACT* wte, const TESSERA_ACT* wpe,
                   std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t first, std::int64_t rows,
                   std::int64_t vocab),
                  (out, tokens, wte, wpe, b, t, c, first, rows, vocab))
// Its backward: dwte (rows,c) += the dout (b,t,c) rows whose token lies in the shard, at row tok -
// first, rows of one token added in (b,t) order as embedding_backward adds them; dwpe (maxT,c) +=
// the sum over batch of dout (null: no position table). Tokens as embedding_shard_forward's, checked
// before anything is written. With first = 0 and rows = vocab, the bits of embedding_backward.
TESSERA_KERNEL_OP(embedding_shard_backward, kElementwise,
                  (TESSERA_ACT* dwte, TESSERA_ACT* dwpe, const TESSERA_ACT* dout, const std::int32_t* tokens,
                   std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t first, std::int64_t rows,
                   std::int64_t vocab),
                  (dwte, dwpe, dout, tokens, b, t, c, first, rows, vocab))

// Rotary position embedding and grouped-query heads, into the layout attention_forward reads.
// proj (b,t,(nh+2*nkv)*hs) holds [q (nh heads) | k (nkv heads) | v (nkv heads)] per position, head
// h in columns [h*hs, (h+1)*hs) of its part; qkv (b,t,3*nh*hs) is written as [rope(q) | rope(k) |
// v] with nh heads each: query head h reads key/value head h / (nh / nkv). rope rotates the pairs
// (j, j + hs/2) of each head by the angle t * theta^(-2j/hs), t the position (transformers'
// rotate_half convention; runtime/math/rotary_math.hpp). hs is even and nkv divides nh.
TESSERA_KERNEL_OP(rotary_qkv_forward, kElementwise,
                  (TESSERA_ACT* qkv, const TESSERA_ACT* proj, std::int64_t b, std::int64_t t, std::int64_t nh, std::int64_t nkv,
                   std::int64_t hs, float theta),
                  (qkv, proj, b, t, nh, nkv, hs, theta))
// dproj (b,t,(nh+2*nkv)*hs) written from dqkv (b,t,3*nh*hs): the rotation undone on q and k, and
// each key/value head's gradient the sum over the query heads that read it, added in head order.
TESSERA_KERNEL_OP(rotary_qkv_backward, kElementwise,
                  (TESSERA_ACT* dproj, const TESSERA_ACT* dqkv, std::int64_t b, std::int64_t t, std::int64_t nh, std::int64_t nkv,
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
                  (TESSERA_ACT* out, float* lse, const TESSERA_ACT* qkv, std::int64_t b, std::int64_t t, std::int64_t c,
                   std::int64_t nh, void* scratch),
                  (out, lse, qkv, b, t, c, nh, scratch))
// dqkv (b,t,3c) = gradient w.r.t. qkv (written, not accumulated) from dout (b,t,c) and the forward's
// qkv, out and lse; the probabilities are recomputed from q, k and lse. delta (b,nh,t) f32 is
// workspace (it receives rowsum(dout * out) per head); scratch as attention_forward's.
TESSERA_KERNEL_OP(attention_backward, kAttention,
                  (TESSERA_ACT* dqkv, float* delta, const TESSERA_ACT* dout, const TESSERA_ACT* qkv, const TESSERA_ACT* out, const float* lse,
                   std::int64_t b, std::int64_t t, std::int64_t c, std::int64_t nh, void* scratch),
                  (dqkv, delta, dout, qkv, out, lse, b, t, c, nh, scratch))

// GELU, tanh approximation (GPT-2). out (n) = gelu(inp); dinp (n) = gelu'(inp) * dout. dinp may alias dout.
TESSERA_KERNEL_OP(gelu_forward, kElementwise, (TESSERA_ACT* out, const TESSERA_ACT* inp, std::int64_t n), (out, inp, n))
TESSERA_KERNEL_OP(gelu_backward, kElementwise, (TESSERA_ACT* dinp, const TESSERA_ACT* inp, const TESSERA_ACT* dout, std::int64_t n),
                  (dinp, inp, dout, n))

// ReLU (runtime/math/relu_math.hpp): out (n) = relu(inp); dinp (n) = dout where inp > 0, else 0.
// dinp may alias dout.
TESSERA_KERNEL_OP(relu_forward, kElementwise, (TESSERA_ACT* out, const TESSERA_ACT* inp, std::int64_t n), (out, inp, n))
TESSERA_KERNEL_OP(relu_backward, kElementwise, (TESSERA_ACT* dinp, const TESSERA_ACT* inp, const TESSERA_ACT* dout, std::int64_t n),
                  (dinp, inp, dout, n))
// SiLU (runtime/math/silu_math.hpp): out (n) = inp sigmoid(inp); dinp (n) = silu'(inp) * dout. dinp
// may alias dout.
TESSERA_KERNEL_OP(silu_forward, kElementwise, (TESSERA_ACT* out, const TESSERA_ACT* inp, std::int64_t n), (out, inp, n))
TESSERA_KERNEL_OP(silu_backward, kElementwise, (TESSERA_ACT* dinp, const TESSERA_ACT* inp, const TESSERA_ACT* dout, std::int64_t n),
                  (dinp, inp, dout, n))
// Dropout (runtime/math/dropout_math.hpp): out (n) = inp * scale where element i is kept under
// `mask`, else 0; the mask is a function of (mask.key, i) alone, so the backward is this op again on
// dout with the same mask. out may alias inp.
TESSERA_KERNEL_OP(dropout_apply, kElementwise,
                  (TESSERA_ACT* out, const TESSERA_ACT* inp, std::int64_t n, const DropoutMask& mask),
                  (out, inp, n, mask))

// SwiGLU (Llama's MLP): inp (n,2f) holds [gate | up] per row; out (n,f) = silu(gate) * up, silu(x)
// = x sigmoid(x) (runtime/math/silu_math.hpp). Backward writes dinp (n,2f) = [dout * up *
// silu'(gate) | dout * silu(gate)] from dout (n,f) and the forward's inp.
TESSERA_KERNEL_OP(swiglu_forward, kElementwise, (TESSERA_ACT* out, const TESSERA_ACT* inp, std::int64_t n, std::int64_t f),
                  (out, inp, n, f))
TESSERA_KERNEL_OP(swiglu_backward, kElementwise,
                  (TESSERA_ACT* dinp, const TESSERA_ACT* dout, const TESSERA_ACT* inp, std::int64_t n, std::int64_t f),
                  (dinp, dout, inp, n, f))

// out (n) = a + b; out may alias a or b (the residual stream's adds).
TESSERA_KERNEL_OP(add, kElementwise, (TESSERA_ACT* out, const TESSERA_ACT* a, const TESSERA_ACT* b, std::int64_t n), (out, a, b, n))

// Fused softmax + cross-entropy over rows of logits (n,v) with targets (n) i32 in [0, v) or
// kIgnoredTarget (runtime/kernels.hpp: that row's loss and lse are 0, its dlogits row 0).
// losses (n) = logsumexp(row) - row[target]; lse (n) = logsumexp(row) kept for backward.
TESSERA_KERNEL_OP(cross_entropy_forward, kLoss,
                  (float* losses, float* lse, const TESSERA_ACT* logits, const std::int32_t* targets, std::int64_t n,
                   std::int64_t v),
                  (losses, lse, logits, targets, n, v))
// dlogits (n,v) = (softmax(row) - onehot(target)) * dloss; dlogits may alias logits (in place).
TESSERA_KERNEL_OP(cross_entropy_backward, kLoss,
                  (TESSERA_ACT* dlogits, const TESSERA_ACT* logits, const float* lse, const std::int32_t* targets, float dloss,
                   std::int64_t n, std::int64_t v),
                  (dlogits, logits, lse, targets, dloss, n, v))
// Vocabulary-sharded cross-entropy (tensor parallelism: the LM head split by vocabulary rows, each
// rank holding columns [first, first + v) of the full (n,vocab) logits). Per rank, the forward
// writes lse (n) f32 = logsumexp of the row's v local logits, computed as cross_entropy_forward
// computes its lse (a shard of the whole vocabulary gives its bits), and target_logit (n) f32 = the
// target's logit, widened, when the target lies in [first, first + v), else 0. The group then
// gathers the lse parts and sums target_logit (one non-zero term) and cross_entropy_shard_combine
// gives the losses and the global lse. A kIgnoredTarget row: lse 0 and target_logit 0. Any other
// target outside [0, vocab) throws std::out_of_range naming it (the CUDA table, as its
// cross_entropy_forward, reads nothing out of range instead and writes NaN).
TESSERA_KERNEL_OP(cross_entropy_shard_forward, kLoss,
                  (float* lse, float* target_logit, const TESSERA_ACT* logits, const std::int32_t* targets,
                   std::int64_t n, std::int64_t v, std::int64_t first, std::int64_t vocab),
                  (lse, target_logit, logits, targets, n, v, first, vocab))
// dlogits (n,v) = (exp(logit - lse[row]) - [target == first + j]) * dloss, lse (n) the GLOBAL
// log-sum-exp (cross_entropy_shard_combine's); a kIgnoredTarget row is 0. dlogits may alias logits.
// With first = 0 and v the whole vocabulary, the bits of cross_entropy_backward.
TESSERA_KERNEL_OP(cross_entropy_shard_backward, kLoss,
                  (TESSERA_ACT* dlogits, const TESSERA_ACT* logits, const float* lse, const std::int32_t* targets,
                   float dloss, std::int64_t n, std::int64_t v, std::int64_t first),
                  (dlogits, logits, lse, targets, dloss, n, v, first))

// Squared error (runtime/math/squared_error_math.hpp): losses (n) f32 = (pred - target)^2, targets
// f32 whatever the compute dtype (they are data); dpred (n) = 2 (pred - target) dloss, written (may
// alias pred).
TESSERA_KERNEL_OP(squared_error_forward, kLoss,
                  (float* losses, const TESSERA_ACT* pred, const float* targets, std::int64_t n),
                  (losses, pred, targets, n))
TESSERA_KERNEL_OP(squared_error_backward, kLoss,
                  (TESSERA_ACT* dpred, const TESSERA_ACT* pred, const float* targets, float dloss, std::int64_t n),
                  (dpred, pred, targets, dloss, n))

