// The normalisation ops of the Kernels table (LayerNorm, its fused residual forms, RMSNorm), in
// terms of TESSERA_ACT, the element type of the activations and their gradients, and TESSERA_PARAM,
// that of the norm's weight and bias and their gradients: kernel_ops.hpp includes this list three
// times, as (f32, f32), (bf16, bf16) and (bf16, f32) — bf16 activations normalised with f32 gains
// and biases, as a bf16-compute run keeps them (a gain near 1 moves by about the learning rate a
// step, below bf16's spacing there). Every kernel computes in f32; the statistics kept for backward
// (mean, rstd) are f32; each result is rounded to its tensor's type once; parameter gradients are
// added to in f32 and rounded once.
// Not an include of its own: only kernel_ops.hpp includes it.
#if !defined(TESSERA_ACT) || !defined(TESSERA_PARAM)
#error "tessera/runtime/kernel_ops_norm.hpp is part of tessera/runtime/kernel_ops.hpp; include that"
#endif

// out (n,c) = (inp - mean) * rstd * weight (c) + bias (c); mean (n) and rstd (n) kept for backward.
TESSERA_KERNEL_OP(layernorm_forward, kElementwise,
                  (TESSERA_ACT* out, float* mean, float* rstd, const TESSERA_ACT* inp, const TESSERA_PARAM* weight, const TESSERA_PARAM* bias,
                   std::int64_t n, std::int64_t c, float eps),
                  (out, mean, rstd, inp, weight, bias, n, c, eps))
// dinp (n,c) = ...; dweight (c) += ...; dbias (c) += ...
TESSERA_KERNEL_OP(layernorm_backward, kElementwise,
                  (TESSERA_ACT* dinp, TESSERA_PARAM* dweight, TESSERA_PARAM* dbias, const TESSERA_ACT* dout, const TESSERA_ACT* inp, const TESSERA_PARAM* weight,
                   const float* mean, const float* rstd, std::int64_t n, std::int64_t c),
                  (dinp, dweight, dbias, dout, inp, weight, mean, rstd, n, c))
// Residual add + LayerNorm in one pass: sum (n,c) = a + b (the residual stream, kept), out (n,c) =
// layernorm(sum) with mean (n) and rstd (n). The same bits as add then layernorm_forward.
TESSERA_KERNEL_OP(residual_layernorm_forward, kElementwise,
                  (TESSERA_ACT* sum, TESSERA_ACT* out, float* mean, float* rstd, const TESSERA_ACT* a, const TESSERA_ACT* b,
                   const TESSERA_PARAM* weight, const TESSERA_PARAM* bias, std::int64_t n, std::int64_t c, float eps),
                  (sum, out, mean, rstd, a, b, weight, bias, n, c, eps))
// layernorm_backward with the residual stream's gradient added in the same pass: dinp (n,c) =
// dresidual (n,c) + the LayerNorm input gradient of dout; dweight, dbias (c) += as
// layernorm_backward. The same bits as layernorm_backward then add. dinp may alias dout (not dresidual).
TESSERA_KERNEL_OP(residual_layernorm_backward, kElementwise,
                  (TESSERA_ACT* dinp, TESSERA_PARAM* dweight, TESSERA_PARAM* dbias, const TESSERA_ACT* dout, const TESSERA_ACT* dresidual,
                   const TESSERA_ACT* inp, const TESSERA_PARAM* weight, const float* mean, const float* rstd, std::int64_t n,
                   std::int64_t c),
                  (dinp, dweight, dbias, dout, dresidual, inp, weight, mean, rstd, n, c))

// RMSNorm (Llama): out (n,c) = (inp * rstd) * weight (c), rstd (n) = 1 / sqrt(mean(inp^2) + eps)
// kept for backward. The row formulas are runtime/math/rmsnorm_math.hpp's.
TESSERA_KERNEL_OP(rmsnorm_forward, kElementwise,
                  (TESSERA_ACT* out, float* rstd, const TESSERA_ACT* inp, const TESSERA_PARAM* weight, std::int64_t n, std::int64_t c,
                   float eps),
                  (out, rstd, inp, weight, n, c, eps))
// With xhat = inp * rstd and g = weight * dout per row: dinp (n,c) = rstd * (g - xhat * mean(g *
// xhat)); dweight (c) += column sums of dout * xhat, each column summed in row order. dinp may alias dout.
TESSERA_KERNEL_OP(rmsnorm_backward, kElementwise,
                  (TESSERA_ACT* dinp, TESSERA_PARAM* dweight, const TESSERA_ACT* dout, const TESSERA_ACT* inp, const TESSERA_PARAM* weight,
                   const float* rstd, std::int64_t n, std::int64_t c),
                  (dinp, dweight, dout, inp, weight, rstd, n, c))
